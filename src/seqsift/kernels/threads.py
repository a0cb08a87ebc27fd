"""How many Numba threads a CPU kernel may use in this thread, and one parallel region at a time.

A local CPU cluster runs several worker processes on one machine; each gets a
share of the cores in ``$SEQSIFT_NUMBA_THREADS`` (``seqsift.cluster``).
``NUMBA_NUM_THREADS`` cannot carry that share: Numba reads it once, when its
thread pool starts, and raises at the next compile if the variable changed
after that. ``numba.set_num_threads`` is the runtime setting, and it holds
per calling thread, so :func:`use_worker_share` is called by the kernels'
entry points in the thread that runs each task. Users of their own Dask
workers (SLURM) may set ``SEQSIFT_NUMBA_THREADS`` the same way.

Task threads of one process (crispr's on the CPU, a GPU worker's, a user's
threaded Dask worker) take turns at Numba's parallel regions
(:data:`PARALLEL_REGIONS`).
"""
from __future__ import annotations

import os
import threading

SHARE_VARIABLE = "SEQSIFT_NUMBA_THREADS"


def use_worker_share() -> None:
    """Limit this thread's Numba parallel regions to the worker's share, if one is set."""
    share = os.environ.get(SHARE_VARIABLE)
    if not share:
        return
    import numba

    numba.set_num_threads(max(1, min(int(share), numba.config.NUMBA_NUM_THREADS)))


PARALLEL_REGIONS = threading.RLock()
"""Held through every Numba parallel region that task threads of one process may enter at once: the CPU
search kernels (``driver.run_buffered_tasks``), the packing of many records (``encode``), the CPU locate,
the CPU screen kernels and screen's alignments.

Where neither OpenMP (libgomp) nor TBB is installed, Numba runs parallel regions on its ``workqueue``
threading layer, which aborts the whole process ("Concurrent access has been detected") when two threads
run regions at once: a CPU crispr job did, packing two tasks' tens of thousands of records at once. Each
region runs on all of the worker's cores, so taking turns costs no throughput."""
