"""Getting a Dask client: a local cluster on this machine, or a running one.

This package starts and connects clusters and knows nothing of kernels or
search jobs (DESIGN.md, "cluster").

* GPUs visible and ``backend="cuda"``: a ``dask_cuda.LocalCUDACluster`` with
  one worker per GPU (``gpus`` picks which), two task threads each. When the
  job's one GPU is the only one visible, :func:`connect` runs that worker in
  this process instead (:func:`in_process_gpu_cluster`): measured on CPU, a
  worker process costs 1.3 s to start, 0.8 s to stop and its first task
  loads seqsift again (2.6 s per job in all), the in-process worker 0.08 s
  (benchmarks/README.md, "The local cluster"). The worker's chunk cache then
  lives in this process, so a second search from Python finds the genome
  still on the GPU. ``SEQSIFT_GPU_WORKER_PROCESS=1`` restores the process.
* otherwise a ``distributed.LocalCluster`` of CPU worker processes, one thread
  each; the cores are shared among the workers' Numba thread pools
  (``SEQSIFT_NUMBA_THREADS`` in each worker's environment, applied by the
  kernels in the thread that runs a task: see ``kernels.threads``).
* ``scheduler`` (an address) or ``scheduler_file``: connect to a running
  cluster, e.g. ``dask cuda worker`` processes started by SLURM; it is left
  running afterwards.

Local clusters bind to 127.0.0.1 and run no dashboard unless asked.
"""
from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from typing import Iterator, Sequence

from distributed import Client, LocalCluster

DASHBOARD_ADDRESS = "127.0.0.1:8787"

NUMBA_THREADS_VARIABLE = "SEQSIFT_NUMBA_THREADS"
"""Environment variable with a CPU worker's share of the cores for Numba's pool."""


def count_gpus() -> int:
    """GPUs this process can see (0 when there is no driver or no dask-cuda)."""
    try:
        from dask_cuda.utils import get_n_gpus

        return int(get_n_gpus())
    except Exception:  # no driver, no NVML, no dask-cuda: no usable GPU
        return 0


def cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@contextmanager
def connect(backend: str = "cpu", *, workers: int | None = None, gpus: Sequence[int] | None = None,
            scheduler: str | None = None, scheduler_file: str | None = None,
            dashboard: bool = False) -> Iterator[Client]:
    """A client for the job's duration; a local cluster is shut down afterwards."""
    if scheduler or scheduler_file:
        client = Client(scheduler_file=scheduler_file) if scheduler_file else Client(scheduler)
        try:
            yield client
        finally:
            client.close()
        return
    if backend == "cuda" and gpu_worker_in_process(gpus):
        cluster = in_process_gpu_cluster(dashboard=dashboard)
    else:
        cluster = local_cluster(backend, workers=workers, gpus=gpus, dashboard=dashboard)
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()


def local_cluster(backend: str, *, workers: int | None = None, gpus: Sequence[int] | None = None,
                  dashboard: bool = False):
    """Start a local cluster for ``backend`` ("cpu" or "cuda")."""
    dashboard_address = DASHBOARD_ADDRESS if dashboard else None
    if backend == "cuda":
        from dask_cuda import LocalCUDACluster

        visible = ",".join(str(g) for g in gpus) if gpus else None
        # Two threads per GPU worker: one task reads its chunk from the file while
        # another's kernel runs, so the GPU does not wait for the host.
        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, host="127.0.0.1", threads_per_worker=2,
                                dashboard_address=dashboard_address, silence_logs=logging.ERROR)
    cores = cpu_cores()
    n_workers = workers or cores
    numba_threads_per_worker = max(1, cores // n_workers)
    # Not NUMBA_NUM_THREADS: a worker process may already have imported Numba and
    # started its thread pool before the Nanny applies ``env`` (a console script
    # is re-imported in every spawned worker), and Numba then refuses the new
    # value at the next compile. seqsift's own variable is read when a task runs.
    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                        dashboard_address=dashboard_address, silence_logs=logging.ERROR,
                        env={NUMBA_THREADS_VARIABLE: str(numba_threads_per_worker)})


def gpu_worker_in_process(gpus: Sequence[int] | None) -> bool:
    """Whether a local CUDA job's worker runs in this process: one GPU visible, none picked."""
    if os.environ.get("SEQSIFT_GPU_WORKER_PROCESS") == "1" or gpus:
        return False
    return count_gpus() == 1


def in_process_gpu_cluster(*, dashboard: bool = False) -> LocalCluster:
    """One worker with two task threads in this process, for this process's one GPU.

    No worker process to start, no connection to open: the scheduler and the
    worker talk in memory (``inproc://``), nothing listens on the network
    unless the dashboard is asked for (on 127.0.0.1). A worker that dies here
    takes the client with it, so there is no Dask retry on a lost worker: on
    one GPU there was no other worker to retry on.
    """
    return LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                        dashboard_address=DASHBOARD_ADDRESS if dashboard else None,
                        silence_logs=logging.ERROR)


def worker_count(client: Client) -> int:
    return max(1, len(client.scheduler_info(n_workers=-1).get("workers", {})))
