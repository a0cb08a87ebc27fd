"""``python -m seqsift`` is the ``seqsift`` command."""
from .cli import console_main

if __name__ == "__main__":
    console_main()
