"""``python -m seqsift`` is the ``seqsift`` command."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
