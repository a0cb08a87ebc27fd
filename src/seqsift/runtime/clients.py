"""Where a job's tasks run: the caller's Dask client, or a cluster the job starts for itself.

``seqsift.cluster`` starts and joins clusters and knows nothing of jobs; this
module is the job's side of it: which backend (:func:`resolve_backend`), and
:class:`JobClient`, the client for one job's duration.

* a given ``client`` is used as it is, and left running;
* a one-GPU job whose tasks run in this process (no scheduler, one GPU: two
  task threads, ``cluster.TaskThreads``) starts them at once, on a thread of
  its own, while the job reads its inputs (``cluster.Connection(ahead=True)``);
  ``prepare`` runs there once they are up (the device, and for search the
  locating kernels, while the job reads);
* a CPU job that asks for ``threads_in_process`` (crispr: Numba kernels that
  release the GIL, small jobs for which worker processes would start slower
  than the job runs) gets task threads in this process (``TaskThreads``; Dask's
  in-process cluster when a dashboard is asked for);
* otherwise ``cluster.connect`` (worker processes, or a running scheduler).

Once the job's work is done, an error while its own cluster shuts down (or
Ctrl-C then) is a note, not an error: the output is already in place.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable

from .. import cluster, kernels
from ..cluster import Connection, count_gpus, cpu_cores, in_process_cluster, starts_in_process, task_threads
from ..errors import InputError, note

CLUSTER_OPTIONS = ("workers", "gpus", "scheduler", "scheduler_file", "dashboard")
"""The run options that say where a job runs (the CLI's "where to run" group)."""


def resolve_backend(backend: str) -> str:
    """``cpu`` or ``cuda``: ``auto`` is CUDA when a GPU is visible, else CPU with a notice."""
    if backend not in ("auto", *kernels.BACKENDS):
        raise InputError(f"unknown backend {backend!r} (choose auto, cpu or cuda)")
    if backend == "cpu":
        return "cpu"
    if count_gpus():
        return "cuda"
    if backend == "cuda":
        raise InputError("backend cuda: no GPU is visible (use --backend cpu or auto)")
    note("no GPU visible; running on CPU workers")
    return "cpu"


def client_has_gpus(client) -> bool:
    """Whether the workers of a given client see a GPU."""
    return any(client.run(count_gpus).values())


def backend_for(backend: str, client=None) -> str:
    """The backend a job runs on: ``auto`` on a given client is what its workers have."""
    if client is not None and backend == "auto" and not client_has_gpus(client):
        return "cpu"
    return resolve_backend(backend)


def check_gpu_indices(gpus) -> None:
    """``--gpus``: distinct indices of GPUs this machine has. (dask-cuda would start a worker for a missing
    one that dies at its first CUDA call, and the job would wait for it.)"""
    if not gpus:
        return
    listed = ",".join(str(g) for g in gpus)
    if len(set(gpus)) != len(gpus):
        raise InputError(f"--gpus {listed}: a GPU is named twice")
    have = cluster.machine_gpus()
    missing = [g for g in gpus if not 0 <= g < have]
    if missing:
        has = f"GPUs 0 to {have - 1}" if have > 1 else "GPU 0 alone" if have else "no GPU at all"
        raise InputError(f"--gpus {listed}: this machine has no GPU {missing[0]} (it has {has})")


class JobClient:
    """The client of one job (module docstring); ``with job_client as client`` for the job's tasks.

    ``start_ahead(backend, prepare)``: start a one-GPU in-process cluster now,
    if that is where the job will run; a job whose backend turns out to be
    another discards it (:meth:`discard`, also on any failure before ``with``).
    """

    def __init__(self, client=None, *, threads_in_process: bool = False, **options):
        unknown = set(options) - set(CLUSTER_OPTIONS)
        if unknown:
            raise TypeError(f"unknown cluster options: {', '.join(sorted(unknown))}")
        self.client = client
        self.options = {name: options.get(name) for name in CLUSTER_OPTIONS}
        self.options["dashboard"] = bool(self.options["dashboard"])
        self.threads_in_process = threads_in_process
        self._ahead: Connection | None = None

    def ahead_backend(self, backend: str) -> str | None:
        """"cuda" when the job's cluster will live in this process (one GPU, no scheduler, no given
        client), so that it can start while the inputs are read; else None."""
        if self.client is None and backend in ("auto", "cuda") and starts_in_process("cuda", **self.options):
            return "cuda"
        return None

    def start_ahead(self, backend: str, prepare: Callable[[], None] | None = None) -> None:
        """Start the job's cluster now when it lives in this process (module docstring)."""
        ahead = self.ahead_backend(backend)
        if ahead is not None:
            self._ahead = Connection(ahead, ahead=True, prepare=prepare, **self.options)

    def ahead_prepared(self) -> Callable[[], None]:
        """A function that returns once the cluster started ahead has run its ``prepare`` (at once
        without one): what a job's own imports wait for (JobRun.run)."""
        return self._ahead.wait_prepared if self._ahead is not None else lambda: None

    def discard(self) -> None:
        """Shut down a cluster started ahead that no job ran on."""
        if self._ahead is not None:
            self._ahead.discard()
            self._ahead = None

    @contextmanager
    def running(self, backend: str):
        """The client for the block: the given one, or the job's own cluster, shut down after it."""
        if self.client is not None:
            yield self.client
            return
        own = self._own(backend)
        client = own.__enter__()
        try:
            yield client
        except BaseException:
            if not own.__exit__(*sys.exc_info()):
                raise
            return
        try:
            own.__exit__(None, None, None)
        except (Exception, KeyboardInterrupt) as err:
            note(f"the job finished, but shutting down its cluster failed: {type(err).__name__}: {err}")

    def _own(self, backend: str):
        """A context manager for the job's own cluster (the one started ahead, if it is this backend's)."""
        if self._ahead is not None and self._ahead.backend == backend:
            ahead, self._ahead = self._ahead, None
            return ahead
        self.discard()
        if backend == "cuda":
            check_gpu_indices(self.options["gpus"])
        if self.threads_here(backend):
            return _threads_here(self.options["workers"] or cpu_cores(), self.options["dashboard"])
        return cluster.connect(backend, **self.options)  # looked up now: tests plant faults there

    def threads_here(self, backend: str) -> bool:
        """Whether the job's tasks run on threads in this process (``threads_in_process``, the CPU, and
        no given client or scheduler)."""
        options = self.options
        return (self.client is None and self.threads_in_process and backend == "cpu"
                and not (options["scheduler"] or options["scheduler_file"]))


@contextmanager
def _threads_here(threads: int, dashboard: bool):
    """Task threads in this process (cluster.task_threads; with a dashboard, cluster.in_process_cluster)."""
    if not dashboard:
        with task_threads(threads) as pool:
            yield pool
        return
    from distributed import Client

    threads_cluster = in_process_cluster(threads, dashboard=dashboard)
    interrupted = False
    try:
        with Client(threads_cluster) as client:
            yield client
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        cluster.close_cluster(threads_cluster, interrupted)
