"""Running a search job on a Dask cluster and streaming its rows to a writer.

Tasks are chunk groups x pattern batches. They are submitted at once (the
job itself goes to the workers once, as a task result: ``shared.on_workers``;
Dask reruns a task whose worker died, and retries one that raised), results come back with ``as_completed``
in whatever order they finish, and each chunk group's rows go to the
:class:`OrderedMerger` in reference order as soon as every pattern batch of
that group, and of every group before it, is in. Groups that finish early
wait in the job's TaskStore (file output), or in memory and past
``spill_rows`` rows on disk, so the client never holds all hits at once.
"""
from __future__ import annotations

import os
import pickle
import sys
import tempfile
from pathlib import Path

import pandas as pd
from distributed import Client, as_completed

from ..partitioning import plan_chunks
from .job import SearchJob
from .merge import OrderedMerger
from .shared import on_workers
from .task import run_task

SPILL_ROWS = 500_000
"""Rows of early-finished groups kept in client memory before they go to disk."""


class _EarlyGroups:
    """Rows of groups that completed before their turn, in memory or spilled."""

    def __init__(self, spill_rows: int):
        self.spill_rows = spill_rows
        self.in_memory: dict[int, pd.DataFrame] = {}
        self.on_disk: dict[int, Path] = {}
        self.rows_in_memory = 0
        self._spill_dir: tempfile.TemporaryDirectory | None = None

    def put(self, group_index: int, rows: pd.DataFrame) -> None:
        if self.rows_in_memory + len(rows) > self.spill_rows:
            if self._spill_dir is None:
                self._spill_dir = tempfile.TemporaryDirectory(prefix="seqsift-spill-")
            path = Path(self._spill_dir.name) / f"group-{group_index}.pkl"
            with open(path, "wb") as handle:
                pickle.dump(rows, handle, protocol=pickle.HIGHEST_PROTOCOL)
            self.on_disk[group_index] = path
        else:
            self.in_memory[group_index] = rows
            self.rows_in_memory += len(rows)

    def pop(self, group_index: int) -> pd.DataFrame | None:
        if group_index in self.in_memory:
            rows = self.in_memory.pop(group_index)
            self.rows_in_memory -= len(rows)
            return rows
        if group_index in self.on_disk:
            path = self.on_disk.pop(group_index)
            with open(path, "rb") as handle:
                rows = pickle.load(handle)
            path.unlink()
            return rows
        return None

    def close(self) -> None:
        if self._spill_dir is not None:
            self._spill_dir.cleanup()


def run_job(job: SearchJob, client: Client, writer, *, chunk_size: int, pattern_batch_size: int,
            progress: bool = False, store=None, spill_rows: int = SPILL_ROWS) -> int:
    """Run ``job`` on ``client`` and write its rows, sorted, to ``writer``; return the row count.

    With a :class:`~seqsift.engine.store.TaskStore`, every finished task is
    saved there first, and tasks it already holds (a resumed job) are not run.
    """
    groups = plan_chunks(job.reference.lengths, chunk_size, job.halo, min_length=job.shortest_hit)
    pattern_ranges = job.patterns.batches(pattern_batch_size)
    merger = OrderedMerger(job)
    early = _EarlyGroups(spill_rows)
    unfinished_batches = {group.index: len(pattern_ranges) for group in groups}
    saved = store.saved() if store is not None else set()
    for group_index, _ in saved:
        unfinished_batches[group_index] -= 1
    parts: dict[int, list[pd.DataFrame]] = {}
    next_group = 0

    def group_rows(group_index: int) -> pd.DataFrame:
        if store is not None:
            frames = [store.load((group_index, b)) for b in range(len(pattern_ranges))]
            return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        return early.pop(group_index)

    def merge_finished_prefix() -> None:
        nonlocal next_group
        while next_group < len(groups) and unfinished_batches[next_group] == 0:
            for final in merger.add_group(groups[next_group], group_rows(next_group)):
                writer.write(final)
            next_group += 1

    job_on_workers = on_workers(client, job, "seqsift-job")
    futures = {}
    for group in groups:
        for batch_index, pattern_range in enumerate(pattern_ranges):
            if (group.index, batch_index) in saved:
                continue
            future = client.submit(run_task, job_on_workers, group, pattern_range, pure=False, retries=2,
                                   key=f"seqsift-search-{group.index}-{batch_index}-{os.urandom(4).hex()}")
            futures[future] = (group, batch_index)
    bar = _progress_bar(len(futures), sum(g.bases for g in groups) * len(pattern_ranges), progress)
    if bar is not None and saved:
        bar.update(sum(groups[g].bases for g, _ in saved))
    try:
        merge_finished_prefix()
        # Results are fetched one at a time (not with_results=True, which would pull
        # every finished result into this process ahead of the writer).
        for future in as_completed(futures):
            rows = future.result()
            group, batch_index = futures.pop(future)
            if bar is not None:
                bar.update(group.bases)
            if store is not None:
                store.save((group.index, batch_index), rows)
            else:
                parts.setdefault(group.index, []).append(rows)
                if len(parts[group.index]) == len(pattern_ranges):
                    group_parts = parts.pop(group.index)
                    early.put(group.index, group_parts[0] if len(group_parts) == 1
                              else pd.concat(group_parts, ignore_index=True))
            unfinished_batches[group.index] -= 1
            merge_finished_prefix()
        for final in merger.finish():
            writer.write(final)
    finally:
        for future in futures:
            future.cancel()
        early.close()
        if bar is not None:
            bar.close()
    return writer.count


def _progress_bar(tasks: int, bases: int, enabled: bool):
    """A tqdm bar on stderr counting searched bases; it shows only after 2 s."""
    if not enabled or tasks == 0:
        return None
    from tqdm import tqdm

    interactive = sys.stderr.isatty()
    return tqdm(total=bases, unit="bp", unit_scale=True, desc="searching", file=sys.stderr,
                delay=2.0, dynamic_ncols=True, leave=False,
                mininterval=0.5 if interactive else 30.0)  # a batch job's log gets a line per 30 s

