"""argparse value types shared by the ``seqsift`` subcommands (cli.py, screen_cli.py).

Each raises ``argparse.ArgumentTypeError``, which the parser turns into the
one-line ``seqsift: error: ...`` of every other bad input.
"""
from __future__ import annotations

import argparse


def whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def positive_int(text: str) -> int:
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value
