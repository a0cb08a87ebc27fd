"""Writes done in order on a thread of their own, so the client's thread goes on merging.

Used by the hit writer (``output.TableWriter``: naming rows and encoding TSV
or Parquet) and the resume store (``store.TaskStore.save_soon``: hashing and
writing a task's file); both release the GIL for most of their work.
"""
from __future__ import annotations

import queue
import threading


class BackgroundWrites:
    """Runs the writes handed over, in order, on one thread.

    The queue holds at most ``depth`` writes (the client waits past that).
    After the first write that fails, the rest are skipped, and the failure
    is raised in the client's thread: at its next :meth:`submit`, or at
    :meth:`wait` or :meth:`finish`. :meth:`cancel` skips what is queued.
    """

    def __init__(self, depth: int, name: str):
        self._queue: queue.Queue = queue.Queue(depth)
        self.failure: BaseException | None = None
        self._cancelled = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, write, *args) -> None:
        self._raise_failure()
        self._queue.put((write, args))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if self.failure is None and not self._cancelled:
                    write, args = item
                    try:
                        write(*args)
                    except BaseException as err:  # noqa: BLE001 (raised in the client's thread)
                        self.failure = err
            finally:
                self._queue.task_done()

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def wait(self) -> None:
        """Wait until every write handed over has run; raise what one failed with. The thread goes on."""
        self._queue.join()
        self._raise_failure()

    def stop(self) -> None:
        """Run the writes handed over, then end the thread (a failure stays in ``failure``)."""
        self._queue.put(None)
        self._thread.join()

    def finish(self) -> None:
        """Run the writes handed over and end the thread; raise what one failed with."""
        self.stop()
        self._raise_failure()

    def cancel(self) -> None:
        """Skip the writes still queued and wait for the one under way (its error is dropped)."""
        self._cancelled = True
        self.stop()
