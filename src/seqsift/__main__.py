"""``python -m seqsift`` is the ``seqsift`` command."""
from .console import main

if __name__ == "__main__":
    main()
