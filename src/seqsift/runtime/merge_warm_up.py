"""The output sort's Numba kernel (order._merge_runs), called once ahead of a job's first rows.

Numba's first call in a process also readies its CPU target (0.5 s on the
2-core machine, in the client's thread at the first delivery): a one-GPU
job makes this call while it reads its inputs (numba_ahead.load_soon), and
on a fresh machine the kernel compiles in a child process. This module
imports NumPy alone; ``order`` (with Numba) when it is called.
"""
from __future__ import annotations

import numpy as np

from ..numba_ahead import WarmUp


def merge_once() -> None:
    """Rows in two sorted runs, as a task's frames are, merged."""
    from .order import sort_order

    columns = [np.array([0, 1, 0, 1], np.int32), np.array([1, 0, 1, 5], np.int64), np.zeros(4, np.int32),
               np.zeros(4, np.int8), np.array([5, 2, 4, 9], np.int64)]
    assert sort_order(columns) is not None


MERGE_WARM_UP = WarmUp(f"{__name__}:merge_once", ("seqsift.runtime.order:_merge_runs",))
