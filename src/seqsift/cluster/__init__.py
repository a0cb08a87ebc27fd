"""Getting a Dask client: a local cluster on this machine, or a running one.

This package starts and connects clusters and knows nothing of kernels or
search jobs (DESIGN.md, "cluster").

* GPUs visible and ``backend="cuda"``: a ``dask_cuda.LocalCUDACluster`` with
  one worker per GPU (``gpus`` picks which), :data:`GPU_TASK_THREADS` task
  threads each. When the job's one GPU is the only one visible,
  :func:`connect` runs those task threads in this process instead, without Dask (:class:`threads.TaskThreads`;
  with ``dashboard=True``, Dask's in-process cluster, whose dashboard shows
  them): measured on CPU, a worker process costs 1.3 s to start, 0.8 s to
  stop and its first task loads seqsift again (2.6 s per job in all)
  (benchmarks/README.md, "The local cluster"), and on the H100 host
  distributed's import and scheduler cost a command 1-2 s more (threads.py).
  The chunk cache then lives in this process, so a second search from
  Python finds the genome still on the GPU. ``SEQSIFT_GPU_WORKER_PROCESS=1``
  restores the process.
* otherwise a ``distributed.LocalCluster`` of CPU worker processes, one thread
  each; the cores are shared among the workers' Numba thread pools
  (``SEQSIFT_NUMBA_THREADS`` in each worker's environment, applied by the
  kernels in the thread that runs a task: see ``kernels.threads``).
* ``scheduler`` (an address) or ``scheduler_file``: connect to a running
  cluster, e.g. ``dask cuda worker`` processes started by SLURM; it is left
  running afterwards.

Local clusters are private to the user who starts them:

* they listen on 127.0.0.1 only, and speak TLS with credentials made up for
  the cluster and held in memory (``Security.temporary()``): on a shared
  login node another user can reach the port but cannot submit work, since
  the scheduler and workers accept only peers holding the cluster's
  certificate;
* without ``dashboard=True`` the scheduler and workers serve no HTTP routes
  (no dashboard, no Prometheus or JSON endpoints), on a port the system
  picks, so a busy 8787 never matters;
* their worker processes never see Ctrl-C (SIGINT stays blocked in them, see
  :func:`_interrupts_deferred`): only the client handles it and shuts the
  cluster down, so an interrupted job ends without worker tracebacks or
  leftover processes;
* their log messages below CRITICAL are silenced: a failed task's exception,
  with the worker's traceback, reaches the client, which reports it (the
  command line writes it to a log file and prints one line);
* without ``dashboard=True`` their servers run no sampling profiler and poll
  the system rarely (:func:`_quiet_settings`): in an in-process worker both
  took the GIL from the task threads every few milliseconds, and nobody
  looks at their numbers without a dashboard.

Dask and distributed are imported when a Dask cluster is needed, not with
this module: ``seqsift --help``, a job whose arguments are wrong and a job on
task threads never load them. A one-GPU job's task threads start while the job
reads its reference (:class:`Connection`), so a job that fails on its
reference or patterns there has started them, and shuts them down.
"""
from __future__ import annotations

import functools
import importlib.util
import logging
import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

from .threads import TaskThreads

if TYPE_CHECKING:
    from distributed import Client, LocalCluster

DASHBOARD_ADDRESS = "127.0.0.1:8787"
NO_DASHBOARD_ADDRESS = "127.0.0.1:0"
"""Where the scheduler's (route-less) HTTP server listens without a dashboard: any free port."""

GPU_TASK_THREADS = 4
"""Task threads per GPU worker. While one thread's kernels run, the others read their next chunks
into pinned buffers, upload and encode them, and turn hits into rows, so the GPU waits less for the
host. On the H100 host (benchmarks/README.md, 2026-11-28), 4 threads instead of 2 took the
hg38-shaped edit job from 3.80-4.43 to 3.59-4.22 s and the Hamming job from 4.66-4.70 to 4.32-4.50 s
(each pair of runs alternated, every one faster), and left crispr and screen as they were.
``kernels.cuda.STAGING_THREADS`` allocates their pinned buffers together and must equal this."""

NUMBA_THREADS_VARIABLE = "SEQSIFT_NUMBA_THREADS"
"""Environment variable with a CPU worker's share of the cores for Numba's pool."""


def count_gpus() -> int:
    """GPUs this process can see (0 when there is no driver or no dask-cuda).

    The count dask-cuda's ``get_n_gpus`` gives (``CUDA_VISIBLE_DEVICES``, else
    NVML's device count), without importing dask-cuda, and asked of NVML once
    per process: a job asks twice (``auto`` backend, in-process worker or not).
    Unlike dask-cuda's, an empty ``CUDA_VISIBLE_DEVICES`` or one that starts
    with ``-1`` counts no GPU, as CUDA sees none.
    """
    if importlib.util.find_spec("dask_cuda") is None:
        return 0
    return _gpus_visible(os.environ.get("CUDA_VISIBLE_DEVICES"))


@functools.lru_cache(maxsize=None)
def _gpus_visible(cuda_visible_devices: str | None) -> int:
    if cuda_visible_devices is not None:
        # CUDA takes the entries up to the first that names no device: "" and "-1", the usual ways to
        # hide every GPU, leave none (dask-cuda's count says 1, and auto chose CUDA where CUDA has no device).
        entries = [entry.strip() for entry in cuda_visible_devices.split(",")]
        return next((i for i, entry in enumerate(entries) if not entry or entry.startswith("-")), len(entries))
    return _nvml_device_count()


def machine_gpus() -> int:
    """GPUs this machine has, whatever CUDA_VISIBLE_DEVICES hides: the indices ``--gpus`` may name
    (dask-cuda gives each worker its own CUDA_VISIBLE_DEVICES from them). 0 without a driver."""
    return _nvml_device_count()


def _nvml_device_count() -> int:
    """NVML's device count, from its C library through ctypes (what pynvml wraps: pynvml's import alone
    took 0.1 s of each GPU command's main thread on the H100 host, before it read its inputs). 0 where
    there is no driver."""
    import ctypes

    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        count = ctypes.c_uint(0)
        if nvml.nvmlInit_v2() != 0 or nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return 0
        return int(count.value)
    except (OSError, AttributeError):  # no driver, no NVML: no usable GPU
        return 0


def cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@contextmanager
def connect(backend: str = "cpu", *, workers: int | None = None, gpus: Sequence[int] | None = None,
            scheduler: str | None = None, scheduler_file: str | None = None,
            dashboard: bool = False) -> Iterator[Client | TaskThreads]:
    """A client for the job's duration (Dask's, or :class:`TaskThreads` for one GPU in this process);
    a local cluster is shut down afterwards."""
    if _kept is not None and _kept.backend == backend and not (scheduler or scheduler_file or workers or gpus):
        yield _kept.client  # seqsift serve's cluster: it outlives the job
        return
    if backend == "cuda" and gpu_worker_in_process(gpus) and not dashboard:
        with task_threads(GPU_TASK_THREADS) as threads:
            yield threads
        return
    from distributed import Client

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
    interrupted = False
    try:
        # Not ``with Client(...)``: its context variable must be reset in the thread that set it, and
        # a cluster started ahead (Connection) is shut down from the job's thread.
        client = Client(cluster)
        try:
            yield client
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            client.close()
    finally:
        with _interrupts_deferred():  # a second Ctrl-C must not leave the cluster half closed
            close_cluster(cluster, interrupted)


@contextmanager
def task_threads(threads: int) -> Iterator[TaskThreads]:
    """:class:`TaskThreads` for the block; after Ctrl-C they are left to end on their own (close_cluster)."""
    pool = TaskThreads(threads)
    interrupted = False
    try:
        yield pool
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        pool.close(wait=not interrupted)


def as_completed(client, futures: Iterable):
    """``futures`` of ``client`` (Dask's, or TaskThreads') as they finish."""
    if isinstance(client, TaskThreads):
        from concurrent.futures import as_completed as finished
    else:
        from distributed import as_completed as finished
    return finished(futures)


def close_cluster(cluster, interrupted: bool = False) -> None:
    """Shut ``cluster`` down; after Ctrl-C, without waiting for the tasks its in-process workers are
    running (their threads finish the kernel under way on their own; a job's results are dropped
    anyway): a CPU crispr task with bulges runs for seconds, and Ctrl-C must end the job at once."""
    if interrupted:
        from distributed import Worker

        for worker in list(getattr(cluster, "workers", {}).values()):
            if isinstance(worker, Worker):  # in this process (a Nanny's worker is its own process: killed)
                try:
                    cluster.sync(worker.close, executor_wait=False, timeout=1)
                except Exception:  # noqa: BLE001 (closing as best we can; cluster.close() follows)
                    pass
    cluster.close()


class Connection:
    """:func:`connect` for one job, started when the job asks for its client or, with ``ahead``, at once
    on a thread of its own.

    ``ahead`` is for a cluster that lives in this process (:func:`starts_in_process`):
    a job reads its reference meanwhile, which on a first run is the longest wait
    before its first task (on the H100, 3.1 Gbp: 1.5 s from plain FASTA, 7-9 s from
    gzip), and Dask's imports and the cluster's start fit inside it. A cluster of
    worker processes is always started from the job's own thread (Ctrl-C stays blocked
    in its workers: :func:`_interrupts_deferred`). ``with connection as client``:
    the job's client, shut down at the block's end as ``connect``'s; ``discard()``:
    shuts down a cluster started ahead for a job that ended before it asked.

    ``prepare``, with ``ahead``: a function the start thread calls once the
    cluster is up, for the caller's own work that can be done ahead (the
    cluster is in this process, so this process is its worker's); the job
    gets its client meanwhile, without waiting for it. What it raises is
    dropped: it may only do early what the job does anyway, and the job
    meets the same error where it can report it. ``wait_prepared()`` returns
    once it has ended (at once without it).
    """

    def __init__(self, backend: str, *, ahead: bool = False, prepare: Callable[[], None] | None = None,
                 **options):
        self.backend = backend
        self._context = connect(backend, **options)
        self._entered = False
        self._client = self._error = None
        self._thread = None
        self._prepare = prepare
        self._up = threading.Event()  # set once the client is made (or failed)
        if ahead:
            self._thread = threading.Thread(target=self._start, name="seqsift-cluster-start", daemon=True)
            self._thread.start()

    def _start(self) -> None:
        try:
            self._client = self._context.__enter__()
        except BaseException as err:  # raised in the job's thread when it asks for the client
            self._error = err
            return
        finally:
            self._up.set()
        if self._prepare is not None:
            try:
                self._prepare()
            except Exception:
                pass

    def wait_prepared(self) -> None:
        """Return once the start thread's ``prepare`` has ended, its last step (at once where there is none)."""
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> "Client":
        self._entered = True
        if self._thread is None:
            return self._context.__enter__()
        self._up.wait()
        if self._error is not None:
            raise self._error
        return self._client

    def __exit__(self, *exc_info) -> bool | None:
        return self._context.__exit__(*exc_info)

    def discard(self) -> None:
        """Shut down a cluster started ahead that the job never asked for (nothing otherwise)."""
        if self._entered or self._thread is None:
            return
        self._entered = True
        self._thread.join()
        if self._error is None:
            self._context.__exit__(None, None, None)


def starts_in_process(backend: str, *, gpus: Sequence[int] | None = None, scheduler: str | None = None,
                      scheduler_file: str | None = None, **_) -> bool:
    """Whether :func:`connect` would start the job's cluster inside this process (one GPU, no scheduler)."""
    return backend == "cuda" and not (scheduler or scheduler_file) and gpu_worker_in_process(gpus)


@dataclass(frozen=True)
class _KeptCluster:
    client: object
    backend: str


_kept: _KeptCluster | None = None


@contextmanager
def keep_for_jobs(client, backend: str) -> Iterator[None]:
    """For the block, :func:`connect` hands ``client`` to every job of this process that asks for a
    local ``backend`` cluster (no scheduler, GPU list or worker count of its own) and leaves it
    running afterwards: ``seqsift serve`` keeps one cluster, and what its worker has read, for
    every run it takes (server.py)."""
    global _kept
    _kept = _KeptCluster(client, backend)
    try:
        yield
    finally:
        _kept = None


@contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Block SIGINT in this thread for the block, so that every thread and process started in it
    (the cluster's event loop, the nannies' process-starting threads, the worker processes
    and the workers they restart later) is born with SIGINT blocked, for good.

    A blocked signal stays blocked across fork and exec, so Python in a worker never turns
    Ctrl-C into a KeyboardInterrupt traceback, from its first instruction (an ignore handler
    set by a preload would leave its start-up open). This thread is unblocked again at the
    end: a Ctrl-C pressed while the cluster was starting is delivered then, once the cluster
    is whole and can be shut down cleanly (a half-started one ends in Dask's atexit
    AssertionError). Outside the main thread, or where signal masks do not exist, it does
    nothing.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    # The first worker start would otherwise launch multiprocessing's resource tracker,
    # and launching it unblocks SIGINT in the launching thread (the cluster's event loop),
    # so every later worker would be born with Ctrl-C deliverable again.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _quiet_settings(dashboard: bool) -> dict:
    """Dask settings for a cluster seqsift starts: without a dashboard, no HTTP routes, no profiler,
    and a system monitor that polls once every few seconds instead of twice a second.

    * the worker's sampling profiler (``distributed.worker.profile``) walks
      every task thread's stack each 10 ms, and on Python 3.12 a watcher
      thread samples the event loop as often: on the H100, in the in-process
      worker, both took the GIL from the threads feeding the GPU;
    * the system monitor reads psutil's CPU, memory, disk and network
      counters (and samples the GIL where gilknocker is installed) for the
      dashboard's plots; the worker's memory limits use their own reading.

    The settings are read while the scheduler and workers are made (a nanny
    passes its copy to the worker processes it starts, restarted ones too).
    """
    if dashboard:
        return {}
    return {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": [],
            "distributed.worker.profile.enabled": False,
            "distributed.admin.system-monitor.interval": "5s",
            "distributed.admin.system-monitor.disk": False,
            "distributed.admin.system-monitor.gil.enabled": False}


def local_cluster(backend: str, *, workers: int | None = None, gpus: Sequence[int] | None = None,
                  dashboard: bool = False):
    """Start a local cluster for ``backend`` ("cpu" or "cuda"), private to this user (module docstring)."""
    import dask

    cluster = None
    try:
        with _interrupts_deferred(), dask.config.set(_quiet_settings(dashboard)):
            cluster = _start_local_cluster(backend, workers=workers, gpus=gpus, dashboard=dashboard)
    except BaseException:  # a Ctrl-C delivered as the block ends: close what was started
        if cluster is not None:
            with _interrupts_deferred():
                cluster.close()
        raise
    return cluster


def _http_options(dashboard: bool) -> dict:
    """LocalCluster's arguments for the scheduler's HTTP server: the dashboard on 8787 when asked,
    else a route-less server on any free port (Dask's scheduler starts one anyway, by default
    on 8787, and warns in four lines when another cluster holds that port)."""
    if dashboard:
        return {"dashboard_address": DASHBOARD_ADDRESS}
    return {"dashboard_address": None,
            "scheduler_kwargs": {"dashboard": False, "dashboard_address": NO_DASHBOARD_ADDRESS}}


def _start_local_cluster(backend: str, *, workers: int | None, gpus: Sequence[int] | None, dashboard: bool):
    from distributed import LocalCluster, Security

    common = dict(host="127.0.0.1", security=Security.temporary(), silence_logs=logging.CRITICAL,
                  **_http_options(dashboard))
    if backend == "cuda":
        from dask_cuda import LocalCUDACluster

        visible = ",".join(str(g) for g in gpus) if gpus else None
        # Several threads per GPU worker: tasks read their chunks from the file while
        # another's kernel runs, so the GPU does not wait for the host.
        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, threads_per_worker=GPU_TASK_THREADS, **common)
    cores = cpu_cores()
    n_workers = workers or cores
    numba_threads_per_worker = max(1, cores // n_workers)
    # Not NUMBA_NUM_THREADS: a worker process may already have imported Numba and
    # started its thread pool before the Nanny applies ``env`` (a console script
    # is re-imported in every spawned worker), and Numba then refuses the new
    # value at the next compile. seqsift's own variable is read when a task runs.
    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                        env={NUMBA_THREADS_VARIABLE: str(numba_threads_per_worker)}, **common)


def gpu_worker_in_process(gpus: Sequence[int] | None) -> bool:
    """Whether a local CUDA job's worker runs in this process: one GPU visible, none picked."""
    if os.environ.get("SEQSIFT_GPU_WORKER_PROCESS") == "1" or gpus:
        return False
    return count_gpus() == 1


def in_process_gpu_cluster(*, dashboard: bool = False) -> LocalCluster:
    """One worker with GPU_TASK_THREADS task threads in this process, for this process's one GPU, when a dashboard
    is asked for (else :class:`TaskThreads`, without Dask).

    A worker that dies here takes the client with it, so there is no Dask
    retry on a lost worker: on one GPU there was no other worker to retry on.
    """
    return in_process_cluster(GPU_TASK_THREADS, dashboard=dashboard)


def in_process_cluster(threads: int, *, dashboard: bool = False) -> LocalCluster:
    """One worker with ``threads`` task threads in this process.

    No worker process to start, no connection to open: the scheduler and the
    worker talk in memory (``inproc://``), nothing listens on the network
    unless the dashboard is asked for (on 127.0.0.1). For work whose tasks
    release the GIL (GPU kernels, Numba kernels compiled ``nogil``).

    No memory limit (``memory_limit=0``): the worker shares this process with
    the client, so the process's memory is not the worker's to police (it
    would pause or spill for the client's merge buffers), and the limit's
    monitor would read psutil every 100 ms.
    """
    import dask
    from distributed import LocalCluster

    with dask.config.set(_quiet_settings(dashboard)):
        return LocalCluster(n_workers=1, threads_per_worker=threads, processes=False, memory_limit=0,
                            silence_logs=logging.CRITICAL, **_http_options(dashboard))


def worker_count(client: Client | TaskThreads) -> int:
    if isinstance(client, TaskThreads):
        return 1
    return max(1, len(client.scheduler_info(n_workers=-1).get("workers", {})))
