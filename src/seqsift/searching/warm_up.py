"""The Numba kernels a GPU search's host side calls, called once with the job's argument types.

A GPU-searched chunk's hits are located on the host (kernels.align_cpu:
starts, CIGARs, aligned text). Numba
keeps one compiled version per argument type, so each function here calls
a kernel as a task does: on read-only raw bytes through the code table, as
a task's window holds them. :func:`warm_up_locate` makes these calls ahead
of the first task's hits, on a thread of its own, through ``numba_ahead``
(on an empty cache the kernels compile first in child processes, which
import this module), and a task waits for it (:func:`warmed_up`) before it
locates. This module imports NumPy alone (the kernels' modules, with Numba,
when it calls them): a one-GPU job imports it first thing, before it
readies the device.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import numba_ahead
from ..alphabet import TEXT_CODE_ARRAY
from ..numba_ahead import WarmUp

_ALIGN = "seqsift.kernels.align_cpu"


def locate_warm_ups(metric: str) -> list[WarmUp]:
    """What a GPU-searched chunk's hits need of Numba, each its own child process on a fresh machine:
    the metric's locating kernel, and the CIGAR and span kernels."""
    ops = f"{_ALIGN}:{'hamming_ops' if metric == 'hamming' else 'edit_ops'}"
    return [WarmUp(f"{__name__}:locate_once", (ops,), metric),
            WarmUp(f"{__name__}:spans_once", (f"{_ALIGN}:cigar_bytes", f"{_ALIGN}:_copy_spans"))]


def _raw_text() -> np.ndarray:
    raw = np.frombuffer(b"ACGTACGT", np.uint8)  # read-only, as a task's window
    assert not raw.flags.writeable
    return raw


def locate_once(metric: str) -> None:
    """The metric's locating kernel alone (align_cpu.locate_ops, as kernels.locate_packed calls it)."""
    from ..kernels import align_cpu
    from ..pattern_set import PatternSet

    batch = PatternSet(("warm-up",), ("ACGT",)).oriented(range(1), (0,))
    zero = np.zeros(1, np.int64)
    align_cpu.locate_ops(metric, _raw_text(), batch.masks, batch.lengths, zero, zero + 4, zero,
                         code_of=TEXT_CODE_ARRAY, lowest=zero)


def spans_once() -> None:
    """A located hit's CIGAR text and its aligned text (align_cpu.cigar_bytes and _copy_spans, on the
    arrays locate_ops returns and on the raw bytes)."""
    from .. import kernels
    from ..kernels import align_cpu

    one = np.ones(1, np.int64)
    align_cpu.cigar_buffer(np.zeros(4, np.uint8), one - 1, one * 4)
    kernels.gather_spans(_raw_text(), one - 1, one * 4)


def warm_up_locate(metric: str, after: threading.Event | None = None) -> None:
    """Load the kernels that locate and sort a GPU-searched chunk's hits, in a background thread, once
    per process; a task waits for it before its first locate (:func:`warmed_up`).

    Numba loads compiled kernels from its disk cache on their first call: in
    a fresh CLI process that took about a second of the first task that had
    hits (H100 host, benchmarks/README.md), and on a fresh machine, with no
    cache, it compiles them first (numba_ahead: in parallel child processes).
    A one-GPU job starts this while it reads its inputs
    (searching._prepare_worker), its loads here ``after`` the device is
    ready; a task starts it otherwise, where it overlaps the task's upload
    and search.
    """
    numba_ahead.load_once(f"locate-{metric}", locate_warm_ups(metric), after)


def warmed_up(metric: str) -> None:
    """Wait for a warm-up under way (a task compiling the same kernels meanwhile would hold the GIL
    for seconds beside it, for nothing)."""
    done = numba_ahead.loading(f"locate-{metric}")
    if done is not None:
        done.wait()
