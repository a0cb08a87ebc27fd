"""Errors that are the user's to fix.

:class:`InputError` is raised for any problem with what the user handed us: a
missing or unreadable file, a file that is not FASTA, a bad pattern, a k that
makes no sense. The CLI catches it and prints::

    seqsift: error: <str(err)>

and exits non-zero, without a traceback. So ``str(err)`` must be a complete,
self-explanatory message on ONE line that names the file, and the line or
record where that applies. The convention used throughout seqsift is::

    <file>: line <n>: <what is wrong>
    <file>: record '<name>': <what is wrong>

Anything else that goes wrong (a bug, a crashed worker) stays an ordinary
exception with its traceback. :func:`note` tells the user something worth
knowing that is not an error (``seqsift: note: ...`` on stderr).
"""
from __future__ import annotations

import sys

from contextlib import contextmanager
from typing import Iterator

__all__ = ["InputError", "quote", "reading"]


class InputError(Exception):
    """A problem with the user's input; ``str()`` is a one-line message naming the file.

    Newlines in the message are replaced by spaces, so the "one line" promise
    holds even if a caller formats a multi-line text into it.
    """

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).splitlines()))


def quote(text: str | bytes, limit: int = 40) -> str:
    """``text`` as a short, safe, quoted snippet for an error message.

    Control characters and non-ASCII bytes are escaped (``repr`` style), so a
    binary file or a stray carriage return cannot break the one-line message,
    and anything past ``limit`` characters is cut and marked with ``...``.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="backslashreplace")
    shown = text if len(text) <= limit else text[:limit]
    quoted = repr(shown)
    if len(text) > limit:
        quoted = quoted[:-1] + "..." + quoted[-1]
    return quoted


@contextmanager
def reading(display: str) -> Iterator[None]:
    """Turn an operating-system error while reading a user's file into an InputError naming it."""
    try:
        yield
    except PermissionError:
        raise InputError(f"{display}: permission denied (cannot read the file)") from None
    except OSError as err:
        raise InputError(f"{display}: cannot read: {err.strerror or err}") from None


def note(message: str) -> None:
    """One ``seqsift: note: ...`` line on stderr."""
    print(f"seqsift: note: {message}", file=sys.stderr, flush=True)
