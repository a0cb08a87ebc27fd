"""Running a search job on a Dask cluster and streaming its rows to a writer.

Tasks are chunk groups x pattern batches. They are submitted at once (the
job itself goes to the workers once, as a task result: ``shared.on_workers``;
Dask reruns a task whose worker died, and retries one that raised), results come back with ``as_completed``
in whatever order they finish, and each chunk group's rows go to the
:class:`OrderedMerger` in reference order as soon as every pattern batch of
that group, and of every group before it, is in. Tasks that finish early
wait in memory, and past ``spill_rows`` rows on disk (in the job's
TaskStore, which saves every task for ``--resume`` when the output is a
file, or in a temporary folder), so the client never holds all hits at once.
Progress (``seqsift.progress``) counts the genome's bases once.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pandas as pd
from distributed import Client, as_completed

from ..cluster import worker_count
from ..partitioning import plan_chunks
from ..progress import open_progress
from . import stages
from .job import SearchJob
from .merge import SPILL_ROWS, OrderedMerger
from .shared import on_workers
from .store import SpillFolder
from .task import run_task


class _EarlyTasks:
    """Rows of tasks that finished before their group's turn to merge, in memory or on disk.

    Every task's rows are counted against ``spill_rows`` as they arrive, also
    while other pattern batches of the same group are still running, so a
    group that never completes cannot pin its finished batches in memory.
    Past the budget, rows go to disk: with a job's ``store`` they are already
    there (the task's saved file, read back when their turn comes), else to
    Arrow IPC files in a private temporary folder. Tasks a resumed job saved
    earlier come from the store too.
    """

    def __init__(self, spill_rows: int, store=None):
        self.spill_rows = spill_rows
        self.store = store
        self.in_memory: dict[tuple[int, int], pd.DataFrame] = {}
        self.on_disk: dict[tuple[int, int], Path] = {}
        self.rows_in_memory = 0
        self._spill = SpillFolder()

    def put(self, key: tuple[int, int], rows: pd.DataFrame) -> None:
        """Keep the rows of task ``key`` = (group index, batch index) (with a store: saved there already)."""
        if self.rows_in_memory + len(rows) <= self.spill_rows:
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


CHUNK_LIMITS = {"cpu": (100_000, 4_000_000), "cuda": (1_000_000, 64_000_000)}
"""Default chunk cores lie in these bounds, aiming at 4 tasks per worker."""


def default_chunk_size(backend: str, reference_lengths, client: Client) -> int:
    """A chunk core giving each worker about 4 tasks, within ``CHUNK_LIMITS[backend]``."""
    low, high = CHUNK_LIMITS[backend]
    total = int(sum(int(n) for n in reference_lengths))
    return min(high, max(low, total // (4 * worker_count(client)) + 1))


def submit_tasks(client: Client, task, job, groups, batch_ranges, saved, name: str) -> dict:
    """Submit ``task(job, group, batch_range)`` for every chunk group x batch not in ``saved``.

    The job goes to the workers once (``shared.on_workers``); Dask retries a
    task that raised twice and reruns one whose worker died. Returns
    future -> (group, batch index).
    """
    job_on_workers = on_workers(client, job, f"{name}-job")
    futures = {}
    for group in groups:
        for batch_index, batch_range in enumerate(batch_ranges):
            if (group.index, batch_index) in saved:
                continue
            future = client.submit(task, job_on_workers, group, batch_range, pure=False, retries=2,
                                   key=f"{name}-{group.index}-{batch_index}-{os.urandom(4).hex()}")
            futures[future] = (group, batch_index)
    return futures


def _timed_merge(rows: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """The merger's output rows, the merger's work on them counted as the ``merge`` stage (stages.py)."""
    while True:
        with stages.timed("merge"):
            final = next(rows, None)
        if final is None:
            return
        yield final


def run_job(job: SearchJob, client: Client, writer, *, chunk_size: int, pattern_batch_size: int,
            progress: bool = False, store=None, spill_rows: int | None = None) -> int:
    """Run ``job`` on ``client`` and write its rows, sorted, to ``writer``; return the row count.

    With a :class:`~seqsift.engine.store.TaskStore`, every finished task is
    handed to its saver thread (the merge takes the rows from memory
    meanwhile), and tasks it already holds (a resumed job) are not run.
    """
    groups = plan_chunks(job.reference.lengths, chunk_size, job.halo, min_length=job.shortest_hit)
    pattern_ranges = job.patterns.batches(pattern_batch_size)
    spill_rows = SPILL_ROWS if spill_rows is None else spill_rows
    merger = OrderedMerger(job, spill_rows)
    early = _EarlyTasks(spill_rows, store)
    unfinished_batches = {group.index: len(pattern_ranges) for group in groups}
    planned = {(group.index, b) for group in groups for b in range(len(pattern_ranges))}
    saved = store.saved() & planned if store is not None else set()
    for group_index, _ in saved:
        unfinished_batches[group_index] -= 1
    next_group = 0

    def group_rows(group_index: int) -> pd.DataFrame:
        keys = [(group_index, b) for b in range(len(pattern_ranges))]
        frames = [early.pop(key) for key in keys]
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

    def merge_finished_prefix() -> None:
        nonlocal next_group
        while next_group < len(groups) and unfinished_batches[next_group] == 0:
            for final in _timed_merge(merger.add_group(groups[next_group], group_rows(next_group))):
                writer.write(final)
            next_group += 1

    futures = submit_tasks(client, run_task, job, groups, pattern_ranges, saved, "seqsift-search")
    # The genome is counted once: a task covers its group's bases for one of the pattern batches.
    share = 1 / len(pattern_ranges)
    bar = open_progress(progress and bool(futures), sum(g.bases for g in groups), unit="bp", label="searching",
                        already_done=sum(groups[g].bases * share for g, _ in saved))
    finished = False
    try:
        merge_finished_prefix()
        # Results are fetched one at a time (not with_results=True, which would pull
        # every finished result into this process ahead of the writer).
        for future in as_completed(futures):
            rows = future.result()
            group, batch_index = futures.pop(future)
            bar.advance(group.bases * share)
            if store is not None:
                store.save_soon((group.index, batch_index), rows)
            early.put((group.index, batch_index), rows)
            unfinished_batches[group.index] -= 1
            merge_finished_prefix()
        for final in _timed_merge(merger.finish()):
            writer.write(final)
        finished = True
    finally:
        for future in futures:
            future.cancel()
        early.close()
        merger.close()
        bar.close(ok=finished)
    return writer.count

