"""Faults planted inside Dask worker processes (installed with ``client.run``).

Each installer wraps ``seqsift.kernels.find_ends`` in the worker process it
runs in; the engine's task calls it through the module, so the wrapper is
what runs. ``restore`` puts the real kernel back.
"""
from __future__ import annotations

import os
import time

import seqsift.kernels as kernels

_REAL_FIND_ENDS = kernels.find_ends


def restore() -> None:
    kernels.find_ends = _REAL_FIND_ENDS


def slow_kernels(seconds: float) -> None:
    """Every kernel call first sleeps, so tasks are still in flight when a worker dies."""

    def slow(*args, **kwargs):
        time.sleep(seconds)
        return _REAL_FIND_ENDS(*args, **kwargs)

    kernels.find_ends = slow


def fail_once(marker: str) -> None:
    """The first kernel call on any worker raises; the marker file records that it did."""

    def flaky(*args, **kwargs):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return _REAL_FIND_ENDS(*args, **kwargs)
        raise RuntimeError("planted fault: this task fails once")

    kernels.find_ends = flaky


def fail_past(text_length_limit: int, log: str, delay: float = 0.0) -> None:
    """Kernel calls on windows longer than the limit always fail (a job that cannot finish),
    ``delay`` seconds after they start: the client then has the quick tasks' results
    (and saves them) before the first failure ends the job."""

    def broken(algorithm, backend, text, *args, **kwargs):
        with open(log, "a") as handle:
            handle.write(f"{len(text)}\n")
        if len(text) > text_length_limit:
            time.sleep(delay)
            raise RuntimeError("planted fault: this task always fails")
        return _REAL_FIND_ENDS(algorithm, backend, text, *args, **kwargs)

    kernels.find_ends = broken


def count_calls(log: str) -> None:
    """Log one line per kernel call, to count the tasks a resumed job ran."""

    def counted(*args, **kwargs):
        with open(log, "a") as handle:
            handle.write("call\n")
        return _REAL_FIND_ENDS(*args, **kwargs)

    kernels.find_ends = counted


def count_reads(log: str) -> None:
    """Log one line per read of the reference file, to see what the chunk cache saves."""
    import seqsift.io.reference as reference

    real_read = reference.Reference.read

    def counted(self, *args, **kwargs):
        with open(log, "a") as handle:
            handle.write("read\n")
        return real_read(self, *args, **kwargs)

    reference.Reference.read = counted
