"""The one way a job runs: checks, lock, writer, task store, cluster, ordered output, and its end.

Every job (search, crispr, screen) goes through :class:`JobRun`::

    with JobRun(output, formats=..., inputs=..., resume=..., wait_for_lock=..., client=JobClient(...)) as run:
        job = ...                         # read the inputs (a one-GPU cluster may start meanwhile)
        return run.run(job, layout=..., progress=...)

In order:

1. **checks**, before any work: the output (and side output, such as a
   summary) can be written where asked, is not one of the job's inputs, and
   ``resume`` has a file to resume beside;
2. **lock**: one job at a time per output file (``lock.OutputLock``:
   ``.FILE.seqsift-lock``; a second job stops with an error naming the
   first, or waits with ``wait_for_lock``);
3. **cluster**: the caller's client or the job's own (``clients.JobClient``);
4. **plan and task store**: the job resolves its task layout (a resumed
   job's saved sizes where the user gave none) and, for a file output, the
   store beside it (``store.TaskStore``) keeps every finished task for
   ``--resume``; tasks it already holds are not run again;
5. **writer**: the job's (``job.writer(output)``), writing beside the target
   and renaming into place only at the end; made right after the tasks are
   submitted, its imports (``WRITER_IMPORTS``) done meanwhile on a thread of
   their own;
6. **tasks**: every unit x batch is submitted at once (the job itself goes
   to the workers once, ``shared.on_workers``; on a Dask cluster, Dask
   retries a task that raised twice and reruns one whose worker died; task
   threads in this process, ``cluster.TaskThreads``, do neither); results
   come back with ``cluster.as_completed`` in any order; a unit's results go to the job's collector
   when all its batches are in (for ordered jobs, and all units before it);
   tasks that finish early wait in memory up to ``spill_rows`` rows, past
   that on disk (the store's files, or a private temporary folder), so the
   client never holds all results at once;
7. **the end**, in the order that never loses work: the output is complete
   and in place (and the side outputs), then its saved tasks are removed,
   then the lock is released (other jobs may take the output), and only
   then is the job's own cluster shut down.

If anything fails or the user presses Ctrl-C: the partial output is removed
(the target is left as it was), the saved tasks stay (the message says how
to resume), the lock is released and the cluster shut down.
"""
from __future__ import annotations

import importlib
import numbers
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from ..cluster import as_completed
from ..errors import InputError, note
from . import stages
from .job import Job, Plan
from .lock import OutputLock
from .output import check_output_path, real_target, refuse_overwriting_inputs, to_stdout
from .progress import open_progress
from .shared import on_workers

if TYPE_CHECKING:  # pandas and pyarrow load when a job runs, not with the command line
    import pandas as pd

WRITER_IMPORTS = ("pandas", "pyarrow")
"""What a job's writer and collector import: about half a second of a fresh process. They are imported on
a thread of their own from the start of :meth:`JobRun.run`, beside the job's first tasks, and the writer
is made once they are in. Where a one-GPU cluster was started ahead they wait for its ``prepare`` (CuPy's
import and the CUDA context): two threads of imports only take turns at the GIL, and the device's is on
the way to the first kernel, the writer's is not. Only the main thread gets Ctrl-C's KeyboardInterrupt: one that lands inside a
big import while the job's other threads import the same modules can leave a module lock held, and the
job hung at its end (seen in the command-line tests once the writer came after the submit)."""

SPILL_ROWS = 500_000
"""Rows the client keeps in memory while they wait (for their turn, or behind a search's open run of
hits) before they go to disk."""


class JobRun:
    """One job's run (module docstring): a context for reading its inputs, then :meth:`run`."""

    def __init__(self, output, *, formats: tuple[str, ...], inputs: dict[str, object], client,
                 resume: bool = False, wait_for_lock: bool = False, side_outputs: dict[str, object] | None = None):
        self.output, self.client, self.resume = output, client, resume
        side_outputs = {what: path for what, path in (side_outputs or {}).items() if not to_stdout(path)}
        refuse_overwriting_inputs(output, inputs)
        check_output_path(output, formats)
        for what, path in side_outputs.items():
            refuse_overwriting_inputs(path, {**inputs, "output": output})
            check_output_path(path, None, what=what)
        if resume and to_stdout(output):
            raise InputError("resume needs an output file (-o): the saved tasks live beside it")
        self.beside = None if to_stdout(output) else real_target(output)
        self.locks: list[OutputLock] = []
        try:
            for path in ([] if to_stdout(output) else [output]) + list(side_outputs.values()):
                self.locks.append(OutputLock(real_target(path), wait=wait_for_lock, note=note))
        except BaseException:
            self._release_locks()
            raise

    def __enter__(self) -> "JobRun":
        return self

    def __exit__(self, *exc_info) -> None:
        self.client.discard()
        self._release_locks()

    def _release_locks(self) -> None:
        for lock in self.locks:
            lock.release()

    def run(self, job: Job, *, layout: dict, progress: bool = False, verbose: bool = False):
        """Run ``job`` to its end (module docstring, steps 3-7); the writer's result
        (the row count for a file, the in-memory result for the API). ``verbose``: say how the
        work was cut (the plan's notes)."""
        from .store import TaskStore

        imports = threading.Thread(target=_import_all, args=(WRITER_IMPORTS, self.client.ahead_prepared()),
                                   name="seqsift-imports", daemon=True)
        imports.start()
        writer = None

        def make_writer():
            nonlocal writer
            imports.join()
            writer = job.writer(self.output)
            return writer

        try:
            with self.client.running(job.backend) as client:
                plan = job.plan(client, self._layout(layout))
                for line in plan.notes if verbose else ():
                    note(line)
                store = (TaskStore.beside(self.beside, job.fingerprint(plan), self.resume, note=note)
                         if self.beside is not None else None)
                try:
                    run_tasks(job, plan, client, make_writer, store=store, progress=progress,
                              spill_rows=SPILL_ROWS)
                    stages.collect_workers(client)
                    writer.close()
                except BaseException:
                    if store is not None:
                        store.tell_how_to_resume(note)
                    raise
                if store is not None:
                    store.remove()
                self._release_locks()
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        return writer.result()

    def _layout(self, requested: dict) -> dict:
        """The sizes the user asked for; where none, a resumed job's saved ones (so that its tasks line up)."""
        from .store import TaskStore

        for key, value in requested.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
                raise InputError(f"{key.replace('_', ' ')} must be a whole number of at least 1, not {value!r}")
        saved = TaskStore.saved_layout(self.beside) if self.resume else {}
        return {key: saved.get(key) if value is None else value for key, value in requested.items()}


def _import_all(names: tuple[str, ...], after: Callable[[], None]) -> None:
    """Import ``names`` once ``after()`` returns; a failure is left for the import that needs the module
    to meet and report."""
    after()
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            pass


class EarlyTasks:
    """Results of tasks that finished before their unit's turn, in memory or on disk.

    Every task's rows are counted against ``spill_rows`` as they arrive, so a
    unit that never completes cannot pin its finished batches in memory. Past
    the budget, rows go to disk: with a job's ``store`` they are already there
    (the task's saved file, read back when their turn comes), else to Arrow
    IPC files in a private temporary folder. Tasks a resumed job saved earlier
    come from the store too.
    """

    def __init__(self, spill_rows: int, store=None):
        from .store import SpillFolder

        self.spill_rows = spill_rows
        self.store = store
        self.in_memory: dict[tuple[int, int], pd.DataFrame] = {}
        self.on_disk: dict[tuple[int, int], Path] = {}
        self.rows_in_memory = 0
        self._spill = SpillFolder()

    def put(self, key: tuple[int, int], rows: pd.DataFrame, due: bool = False) -> None:
        """Keep the rows of task ``key`` = (unit index, batch index) (with a store: saved there already);
        ``due``: they are taken at once (their unit is complete and its turn has come), so they stay in memory."""
        if due or self.rows_in_memory + len(rows) <= self.spill_rows:
            self.in_memory[key] = rows
            self.rows_in_memory += len(rows)
        elif self.store is None:
            self.on_disk[key] = self._spill.write(f"task-{key[0]}-{key[1]}", rows)

    def pop(self, key: tuple[int, int]) -> pd.DataFrame:
        if key in self.in_memory:
            rows = self.in_memory.pop(key)
            self.rows_in_memory -= len(rows)
            return rows
        if key in self.on_disk:
            return self._spill.take(self.on_disk.pop(key))
        return self.store.load(key)

    def close(self) -> None:
        self._spill.close()


def submit_tasks(client, job: Job, plan: Plan, saved: set) -> dict:
    """Submit ``job.task(job, unit, batch)`` for every unit x batch not in ``saved``; future -> (unit, batch index)."""
    job_on_workers = on_workers(client, job, f"seqsift-{job.name}-job")
    futures = {}
    for unit in plan.units:
        for batch_index, batch in enumerate(plan.batches):
            if (unit.index, batch_index) in saved:
                continue
            future = client.submit(type(job).task, job_on_workers, unit, batch, pure=False, retries=2,
                                   key=f"seqsift-{job.name}-{unit.index}-{batch_index}-{os.urandom(4).hex()}")
            futures[future] = (unit, batch_index)
    return futures


def _timed(rows: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """The collector's output rows, its work on them counted as the ``merge`` stage (stages.py)."""
    while True:
        with stages.timed("merge"):
            final = next(rows, None)
        if final is None:
            return
        yield final


def run_tasks(job: Job, plan: Plan, client, make_writer, *, store=None, progress: bool = False,
              spill_rows: int = SPILL_ROWS) -> int:
    """Run every task of ``plan`` on ``client`` and write the job's rows to the writer ``make_writer()``
    returns; the row count.

    The writer is made once the tasks are submitted, beside the collector, so that the tasks do not
    wait for it (JobRun.run imports what it needs meanwhile, on a thread of its own: ``WRITER_IMPORTS``).

    With a :class:`~seqsift.runtime.store.TaskStore`, every finished task is
    handed to its saver thread (the collector takes the rows from memory
    meanwhile), and tasks it already holds (a resumed job) are not run.
    """
    units, batches = plan.units, plan.batches
    planned = {(unit.index, b) for unit in units for b in range(len(batches))}
    saved = store.saved() & planned if store is not None else set()
    # Submitted first: the tasks start while the writer and the collector are made (their imports, on a first job).
    futures = submit_tasks(client, job, plan, saved)
    try:
        writer = make_writer()
        collector = job.collector(plan, spill_rows)
        early = EarlyTasks(spill_rows, store)
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    unfinished = {unit.index: len(batches) for unit in units}
    for unit_index, _ in saved:
        unfinished[unit_index] -= 1
    next_unit = 0

    def deliver(unit) -> None:
        frames = [early.pop((unit.index, b)) for b in range(len(batches))]
        for rows in _timed(collector.take(unit, frames)):
            writer.write(rows)

    def unit_done(unit) -> None:
        """All of ``unit``'s batches are in: deliver it (ordered: with every complete unit after it)."""
        nonlocal next_unit
        if not plan.ordered:
            deliver(unit)
            return
        while next_unit < len(units) and unfinished[units[next_unit].index] == 0:
            deliver(units[next_unit])
            next_unit += 1

    # A unit is counted once: each task covers its weight for one of the batches.
    share = 1 / len(batches)
    bar = open_progress(progress and bool(futures), sum(plan.weights), unit=plan.unit_name, label=plan.label,
                        already_done=sum(plan.weights[u] * share for u, _ in saved))
    finished = False
    try:
        for unit in units:  # a resumed job's units that were saved whole
            if unfinished[unit.index] == 0 and (not plan.ordered or unit.index == next_unit):
                unit_done(unit)
        # Results are fetched one at a time (not Dask's with_results=True, which would pull
        # every finished result into this process ahead of the writer).
        for future in as_completed(client, futures):
            rows = future.result()
            unit, batch_index = futures.pop(future)
            bar.advance(plan.weights[unit.index] * share)
            if store is not None:
                store.save_soon((unit.index, batch_index), rows)
            unfinished[unit.index] -= 1
            completes = unfinished[unit.index] == 0
            early.put((unit.index, batch_index), rows,
                      due=completes and (not plan.ordered or unit.index == units[next_unit].index))
            if completes:
                unit_done(unit)
        for rows in _timed(collector.finish()):
            writer.write(rows)
        finished = True
    finally:
        for future in futures:
            future.cancel()
        early.close()
        collector.close()
        bar.close(ok=finished)
    return writer.count
