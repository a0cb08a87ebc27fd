"""Timing shared by the GPU benchmarks: CUDA events around whole calls, after a warm-up."""
from __future__ import annotations

import statistics

from seqsift.kernels import find_ends


def call_seconds(algorithm: str, text, batch, k: int, repeats: int) -> float:
    """Median seconds of a whole find_ends call over ``text`` (launcher, hit collection, copy to the
    host), CUDA events around each call, after one warm-up call (compilation, allocation)."""
    import cupy

    find_ends(algorithm, "cuda", text, batch, k, 0, int(text.size))
    times = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        find_ends(algorithm, "cuda", text, batch, k, 0, int(text.size))
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)
