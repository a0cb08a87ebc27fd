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

The exit statuses of the ``seqsift`` command live here too (``EXIT_*``), with
:func:`exit_now` and :func:`discard_standard_output`, how a run ends: this
module imports only the standard library, so the console entry and the
server's client half (server_client.py) use them without loading a job.
"""
from __future__ import annotations

import atexit
import os
import sys

from contextlib import contextmanager
from typing import Iterator

__all__ = ["InputError", "quote", "reading", "note", "EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_INTERRUPTED",
           "EXIT_BROKEN_PIPE", "exit_now", "discard_standard_output"]

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command ended by Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as shells report grep or cat writing to a closed pipe


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


def exit_now(code: int) -> None:
    """End this process with status ``code`` as soon as what it wrote is out, skipping the teardown.

    When ``cli.main`` returns, the job is over: its output is written, closed
    and renamed into place, its lock released, the cluster it started shut
    down and its worker processes gone. What a normal exit would still do is
    finalise the interpreter: join threads, run the ``atexit`` handlers, then
    free every module's objects one by one (CuPy's, Numba's, pandas', Dask's):
    0.7-0.9 s on the H100 after a 3 Gbp job, 0.2-0.3 s on a 2-core CPU
    machine after a small one, where the ``atexit`` handlers took under 5 ms
    of it (benchmarks/bench_startup.py measures the exit). Here the ``atexit``
    handlers still run (they remove temporary folders, flush logs, end
    multiprocessing's helpers), the standard streams are flushed, and
    ``os._exit`` ends the process; threads still running are daemons
    (Dask's, the progress bar's), which a normal exit does not wait for
    either. A reader gone from standard output at this last flush gives 141,
    and a flush that fails otherwise (disk full) a one-line error and 1, as
    anywhere else in a run.
    """
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = code or EXIT_BROKEN_PIPE
    except (OSError, ValueError) as err:  # disk full; stdout closed by the caller
        print(f"seqsift: error: writing standard output: {err}", file=sys.stderr)
        code = code or EXIT_FAILED
    try:
        sys.stderr.flush()
    except (OSError, ValueError):  # nowhere left to say anything
        pass
    os._exit(code)


def discard_standard_output() -> None:
    """Point standard output at /dev/null: the interpreter's final flush of what is still
    buffered would otherwise meet the closed pipe again and print "Exception ignored"."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout replaced by something without a descriptor
        pass
