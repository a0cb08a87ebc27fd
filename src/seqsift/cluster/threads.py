"""Task threads in this process, without Dask: the "cluster" of a job that runs here.

A one-GPU job runs its tasks on two threads of the calling process (one
reads and uploads a chunk while the other's kernel runs), and a CPU crispr
job on threads whose Numba kernels release the GIL. Dask's in-process
cluster did the same through a scheduler, a worker and an event loop: on
the H100 host, importing distributed took 0.5-1.1 s of the command's start
and the first task began 0.9 s after it was submitted (issue 27's
timeline). :class:`TaskThreads` is the part of ``distributed.Client`` the
runtime uses, and nothing else:

* ``submit(function, *args)``: a ``concurrent.futures.Future``; arguments
  that are futures of this pool are passed as their results (the job's
  shared value, ``runtime.shared.on_workers``); Dask's keyword options
  (``key``, ``pure``, ``retries``) are accepted and mean nothing here;
* ``run(function)``: ``function()`` in this process, as ``{name: result}``
  (``Client.run`` runs it on every worker);
* :func:`as_completed` in ``cluster/__init__`` takes either kind of future.

Tasks are taken in the order they were submitted. A task that raises hands
its exception to its future: no retry (a task that raised here raises again;
Dask's retries are for a worker process that died).

The threads are daemons: a task in the middle of a long kernel never holds
the process's exit back after Ctrl-C (its results are dropped anyway).
``close(wait=False)`` cancels the tasks not started and returns at once.
"""
from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Callable

PROCESS = "this process"
"""The one "worker" name :meth:`TaskThreads.run` answers with."""


class TaskThreads:
    """``threads`` daemon threads taking submitted calls in order (module docstring)."""

    def __init__(self, threads: int, *, name: str = "seqsift-task"):
        if threads < 1:
            raise ValueError(f"task threads: at least 1, not {threads}")
        self.threads = threads
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        self._workers = [threading.Thread(target=self._take_calls, name=f"{name}-{i}", daemon=True)
                         for i in range(threads)]
        for worker in self._workers:
            worker.start()

    def submit(self, function: Callable, *args, key=None, pure=None, retries=None) -> Future:
        """``function(*args)`` on a task thread, as a future (the keywords are Dask's: ignored)."""
        if self._closed:
            raise RuntimeError("these task threads are closed")
        future: Future = Future()
        self._calls.put((future, function, args))
        return future

    def run(self, function: Callable) -> dict:
        """``function()`` here, answered as ``Client.run`` answers: {worker: result}."""
        return {PROCESS: function()}

    def close(self, wait: bool = True) -> None:
        """Take no more calls and cancel the waiting ones; with ``wait``, until the running ones end."""
        self._closed = True
        while True:
            try:
                future, _, _ = self._calls.get_nowait()
            except queue.Empty:
                break
            future.cancel()
        for _ in self._workers:
            self._calls.put(None)
        if wait:
            for worker in self._workers:
                if worker is not threading.current_thread():
                    worker.join()

    def __enter__(self) -> "TaskThreads":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close(wait=exc_info[0] is None)

    def _take_calls(self) -> None:
        while True:
            call = self._calls.get()
            if call is None:
                return
            _run_call(*call)
            del call  # the task's inputs are not held while this thread waits for the next


def _run_call(future: Future, function: Callable, args: tuple) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        args = tuple(arg.result() if isinstance(arg, Future) else arg for arg in args)
        result = function(*args)
    except BaseException as err:  # noqa: BLE001 (handed to the caller through the future)
        future.set_exception(err)
    else:
        future.set_result(result)
