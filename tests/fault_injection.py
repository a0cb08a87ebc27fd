"""Faults planted inside Dask worker processes (installed with ``client.run``).

Each installer wraps ``seqsift.kernels.find_ends`` in the worker process it
runs in; the engine's task calls it through the module, so the wrapper is
what runs. ``restore`` puts the real kernel back.

For the command line, where the test has no client to call ``client.run``
with, this module is also a Dask worker preload: run the command with
``DASK_DISTRIBUTED__WORKER__PRELOAD='["fault_injection"]'``, this folder on
``PYTHONPATH`` and ``SEQSIFT_PLANTED_FAULT`` naming the fault
(:func:`dask_setup`).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

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


def fail_past(text_length_limit: int, log: str, after_a_file_in: str | None = None,
              wait_limit_s: float = 120.0) -> None:
    """Kernel calls on windows longer than the limit always fail (a job that cannot finish).

    With ``after_a_file_in`` (a job's task store folder), a failing call first waits until
    a ``task-*`` file appears there: the client saves finished tasks one at a time, in the
    order their results arrive, so once it has begun saving one, that save completes before
    it sees any failure. The quick tasks are thus saved before the job fails, however
    busy the machine (``wait_limit_s`` only bounds a broken test). While it waits, the task
    leaves the worker's thread pool (``distributed.secede``), so the quick tasks queued
    behind it on a one-thread worker still run.
    """

    def broken(algorithm, backend, text, *args, **kwargs):
        with open(log, "a") as handle:
            handle.write(f"{len(text)}\n")
        if len(text) > text_length_limit:
            if after_a_file_in is not None:
                from distributed import secede

                secede()
                _wait_for(lambda: any(Path(after_a_file_in).glob("task-*")), wait_limit_s)
            raise RuntimeError("planted fault: this task always fails")
        return _REAL_FIND_ENDS(algorithm, backend, text, *args, **kwargs)

    kernels.find_ends = broken


def fail_always() -> None:
    """Every kernel call raises: a job that fails on the workers."""

    def broken(*args, **kwargs):
        raise RuntimeError("planted fault: every task fails")

    kernels.find_ends = broken


def hang(started_marker: str) -> None:
    """Every kernel call creates ``started_marker`` and never returns (a stuck task): a job
    is surely still running once the marker exists."""

    def stuck(*args, **kwargs):
        Path(started_marker).touch()
        while True:
            time.sleep(3600)

    kernels.find_ends = stuck


def _wait_for(condition, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


PLANTED_FAULTS = {"fail_always": fail_always, "hang": hang}


def dask_setup(worker) -> None:
    """Worker preload hook: install ``$SEQSIFT_PLANTED_FAULT`` (``name`` or ``name:argument``)."""
    name, _, argument = os.environ.get("SEQSIFT_PLANTED_FAULT", "").partition(":")
    if name:
        PLANTED_FAULTS[name](*([argument] if argument else []))


def count_calls(log: str) -> None:
    """Log one line per kernel call, to count the tasks a resumed job ran."""

    def counted(*args, **kwargs):
        with open(log, "a") as handle:
            handle.write("call\n")
        return _REAL_FIND_ENDS(*args, **kwargs)

    kernels.find_ends = counted


def count_reads(log: str) -> None:
    """Log one line per read of the reference file, to see what the chunk cache saves."""
    import seqsift.reference as reference

    real_read = reference.Reference.read

    def counted(self, *args, **kwargs):
        with open(log, "a") as handle:
            handle.write("read\n")
        return real_read(self, *args, **kwargs)

    reference.Reference.read = counted
