"""Where a job's time goes: per-stage seconds, summed per process, off unless asked.

The end-to-end benchmark (benchmarks/bench_end_to_end.py) asks where the
wall time of a search goes: open/index, read, transfer, encode, kernel,
merge, locate/align, write. Each stage adds its seconds with
:func:`timed`; the sums live in this process (a Dask worker's, or the
client's). Timing is on in every process started with
``$SEQSIFT_STAGE_TIMES=1`` (worker processes inherit it), or after
:func:`enable`; at the end of each job ``seqsift.search`` adds the workers'
sums to the client's (:func:`collect_workers`), and :func:`take` reads them.
Worker stages are summed over task threads, so with two threads per GPU
they can add up to more than the wall time.

When off (the default) :func:`timed` is a shared no-op context and nothing
waits for the device: the only cost is one attribute test per stage. When
on, GPU stages synchronise the device at their end so that their seconds
are theirs, not the next stage's (:func:`synchronize_device`).
"""
from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from contextlib import contextmanager, nullcontext

STAGES = ("open", "read", "transfer", "encode", "kernel", "merge", "locate", "write")
"""The stage names, in pipeline order (``open`` = opening and indexing the reference)."""

_enabled = os.environ.get("SEQSIFT_STAGE_TIMES") == "1"
_seconds: dict[str, float] = defaultdict(float)
_lock = threading.Lock()
_OFF = nullcontext()


def enable(on: bool = True) -> None:
    """Start (or stop) adding stage seconds in this process; the sums start from zero."""
    global _enabled, _first_kernel_end
    with _lock:
        _seconds.clear()
        _enabled = on
        _first_kernel_end = None


def enabled() -> bool:
    return _enabled


def take() -> dict[str, float]:
    """This process's stage seconds since the last :func:`take` or :func:`enable`; reset to zero."""
    with _lock:
        taken = dict(_seconds)
        _seconds.clear()
    return taken


def collect_workers(client) -> None:
    """Move the workers' stage sums into this process's (a no-op when timing is off here)."""
    if not _enabled:
        return
    for sums in client.run(take).values():
        for stage, seconds in sums.items():
            add(stage, seconds)


def add(stage: str, seconds: float) -> None:
    if _enabled:
        with _lock:
            _seconds[stage] += seconds


KERNEL_CALLS = "kernel_calls"
"""Not a stage: how many times a job's tasks called their kernel (a count, summed like the stages),
what the benchmarks report beside the seconds (a reference's records should not add calls: issue 27)."""


_first_kernel_end: float | None = None


def count_kernel_call() -> None:
    """Count a kernel call that has ended; the first one's end is kept (:func:`first_kernel_end`)."""
    global _first_kernel_end
    if _enabled:
        with _lock:
            if _first_kernel_end is None:
                _first_kernel_end = time.time()
        add(KERNEL_CALLS, 1)


def first_kernel_end() -> float | None:
    """When (``time.time()``) the first kernel call counted in this process ended, with timing on: a
    command's time to its first kernel (issue 27), for tasks that run in the command's process."""
    return _first_kernel_end


@contextmanager
def _clock(stage: str, device: bool):
    began = time.perf_counter()
    try:
        yield
    finally:
        if device:
            synchronize_device()
        add(stage, time.perf_counter() - began)


def timed(stage: str, device: bool = False):
    """A context adding its duration to ``stage`` when timing is on (else a no-op).

    ``device``: the stage queues GPU work; wait for it before stopping the clock.
    """
    return _clock(stage, device) if _enabled else _OFF


def synchronize_device() -> None:
    """Wait for this thread's current CUDA stream (only called with timing on, on GPU workers)."""
    import cupy

    cupy.cuda.get_current_stream().synchronize()
