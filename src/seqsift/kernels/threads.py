"""How many Numba threads a CPU kernel may use in this thread.

A local CPU cluster runs several worker processes on one machine; each gets a
share of the cores in ``$SEQSIFT_NUMBA_THREADS`` (``seqsift.cluster``).
``NUMBA_NUM_THREADS`` cannot carry that share: Numba reads it once, when its
thread pool starts, and raises at the next compile if the variable changed
after that. ``numba.set_num_threads`` is the runtime setting, and it holds
per calling thread, so :func:`use_worker_share` is called by the kernels'
entry points in the thread that runs each task. Users of their own Dask
workers (SLURM) may set ``SEQSIFT_NUMBA_THREADS`` the same way.
"""
from __future__ import annotations

import os

SHARE_VARIABLE = "SEQSIFT_NUMBA_THREADS"


def use_worker_share() -> None:
    """Limit this thread's Numba parallel regions to the worker's share, if one is set."""
    share = os.environ.get(SHARE_VARIABLE)
    if not share:
        return
    import numba

    numba.set_num_threads(max(1, min(int(share), numba.config.NUMBA_NUM_THREADS)))
