"""Timing shared by the GPU benchmarks: CUDA events around whole calls, after a warm-up."""
from __future__ import annotations

import statistics

from seqsift.kernels import find_ends


def event_seconds(run, repeats: int, *, warm_up: bool = True, before=None) -> float:
    """Median seconds of ``repeats`` calls of run(), CUDA events around each, after one
    untimed warm-up call (compilation, allocation) unless ``warm_up`` is False;
    ``before()`` runs untimed ahead of each timed call (resetting a hit counter)."""
    import cupy

    if warm_up:
        run()
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def call_seconds(algorithm: str, text, batch, k: int, repeats: int) -> float:
    """Median seconds of a whole find_ends call over ``text`` (launcher, hit collection, copy to the
    host), CUDA events around each call, after one warm-up call (compilation, allocation)."""
    return event_seconds(lambda: find_ends(algorithm, "cuda", text, batch, k, 0, int(text.size)), repeats)
