"""The client side of a search: task results in reference order -> sorted rows.

:class:`OrderedMerger` takes each chunk group's rows in group order (the
runtime holds groups that finish early) and emits rows in output order,
(record, start, pattern, strand, end) in ``best`` mode or (record, end,
pattern, strand) in ``ends`` mode, holding back only what a later chunk could
still precede:

* a later chunk of the same record can only hold hits that end after its
  core start, so they start at or after ``core_start - halo``; rows before
  that ``frontier`` are final;
* edit-distance ``best`` runs that reach the end of a chunk's core stay
  *open* and are joined with the run that continues at the start of the next
  core (DESIGN.md: "best runs that touch a chunk boundary are joined in the
  merge"). The joined locus keeps the piece with the smaller distance, the
  left one on ties: exactly the locus a single unchunked scan reports.

Memory: the held-back rows are those within one halo of the frontier plus
rows behind an open run, never the whole result. An open run whose locus has
distance 0 is emitted at once (nothing can replace it), so it holds nothing
back. A run at a larger distance must hold back the rows after its locus
until it ends or improves (a later end at a smaller distance would move the
locus past them); those rows wait on disk past ``spill_rows`` and come back
part by part (:class:`_HeldRows`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from ..partitioning import Chunk, ChunkGroup, PackedRecords, adjacent
from .job import SearchJob
from ..runtime.order import sort_rows as sort_by_columns
from ..runtime.run import SPILL_ROWS
from ..runtime.store import SpillFolder


class SearchRows:
    """The search's collector (runtime.job.Collector): each group's batches joined, then merged."""

    def __init__(self, job: SearchJob, spill_rows: int = SPILL_ROWS):
        self.merger = OrderedMerger(job, spill_rows)

    def take(self, group, frames: list[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        rows = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        return self.merger.add_group(group, rows)

    def finish(self) -> Iterator[pd.DataFrame]:
        return self.merger.finish()

    def close(self) -> None:
        self.merger.close()


class OrderedMerger:
    def __init__(self, job: SearchJob, spill_rows: int = SPILL_ROWS):
        self.job = job
        self.position = "start" if job.reports_start else "end"
        self.held = _HeldRows(self.position, job.reports_start, spill_rows)  # final, not yet safe to emit
        self.open_runs: dict[tuple[int, int], pd.Series] = {}  # (pattern, strand) -> piece
        self.emitted_runs: set[tuple[int, int]] = set()  # open runs whose locus is already final
        self.previous_chunk: Chunk | None = None

    def add_group(self, group, rows: pd.DataFrame) -> Iterator[pd.DataFrame]:
        """Take one group's rows (any order); yield the rows that are now final, sorted."""
        if isinstance(group, PackedRecords):  # whole records: no run goes on past them
            self._close_open_runs()
            self.previous_chunk = None
            self.held.add(rows)
            yield from self.held.release(before=(group.stop, -1))
            return
        for chunk in group.chunks:
            chunk_rows = rows[rows["record"].to_numpy() == chunk.record_index] if len(group.chunks) > 1 else rows
            if self.job.joins_runs:
                chunk_rows = self._join_runs(chunk, chunk_rows)
            self.held.add(chunk_rows)
            self.previous_chunk = chunk
        yield from self.held.release(before=self._frontier(group))

    def finish(self) -> Iterator[pd.DataFrame]:
        """Close every open run and yield every remaining row."""
        self._close_open_runs()
        yield from self.held.release(before=None)

    def close(self) -> None:
        """Drop whatever is still held (a job that failed), on disk included."""
        self.held.close()

    # -- best-mode runs across chunk cores -----------------------------------

    def _join_runs(self, chunk: Chunk, pieces: pd.DataFrame) -> pd.DataFrame:
        """Join ``pieces`` with open runs; return the pieces no run crosses (ended runs go to ``held``)."""
        continues = self.previous_chunk is not None and adjacent(self.previous_chunk, chunk)
        if not continues:
            self._close_open_runs()
        still_open: dict[tuple[int, int], pd.Series] = {}
        still_emitted: set[tuple[int, int]] = set()
        final = []
        record_length = int(self.job.reference.lengths[chunk.record_index])
        touching = self._touches(chunk, pieces)
        if touching.any():
            for index in np.flatnonzero(touching):
                piece = pieces.iloc[index]
                key = (int(piece["pattern"]), int(piece["strand"]))
                emitted = False
                if continues and int(piece["first_end"]) == chunk.core_start + 1 and key in self.open_runs:
                    emitted = key in self.emitted_runs
                    piece = _join(self.open_runs.pop(key), piece)
                if int(piece["last_end"]) == chunk.owned_end and chunk.owned_end < record_length:
                    still_open[key] = piece
                    if not emitted and int(piece["distance"]) == 0:
                        # Distance 0 cannot improve (and the left piece wins ties), so the
                        # locus is final however far the run goes on: emit it now and keep
                        # only the run's end, to absorb its later pieces. Otherwise a run
                        # that never ends (a low-complexity pattern at a large k) would
                        # hold back every later row of the record (_frontier).
                        final.append(piece)
                        emitted = True
                    if emitted:
                        still_emitted.add(key)
                elif not emitted:
                    final.append(piece)
        self._close_open_runs()  # runs the chunk did not continue have ended
        self.open_runs, self.emitted_runs = still_open, still_emitted
        if final:   # loci of runs that ended: they may precede every row held so far
            self.held.add(pd.DataFrame(final), ahead=True)
        return pieces[~touching]

    @staticmethod
    def _touches(chunk: Chunk, pieces: pd.DataFrame) -> np.ndarray:
        """Pieces whose run reaches the first or the last end of the chunk's core."""
        return ((pieces["first_end"].to_numpy() == chunk.core_start + 1)
                | (pieces["last_end"].to_numpy() == chunk.owned_end))

    def _close_open_runs(self) -> None:
        closing = [piece for key, piece in self.open_runs.items() if key not in self.emitted_runs]
        if closing:
            self.held.add(pd.DataFrame(closing), ahead=True)
        self.open_runs, self.emitted_runs = {}, set()

    # -- ordered output -----------------------------------------------------------

    def _frontier(self, group: ChunkGroup) -> tuple[int, int] | None:
        """(record, position) before which no later row can fall."""
        last = group.chunks[-1]
        if last.owned_end >= int(self.job.reference.lengths[last.record_index]):
            return (last.record_index + 1, -1)   # the record is complete
        # The next chunk continues this record at core_start = last.owned_end.
        if self.job.reports_start:
            position = last.owned_end - self.job.halo
        else:
            position = last.owned_end + 1
        for key, piece in self.open_runs.items():
            if key not in self.emitted_runs:
                position = min(position, int(piece[self.position]))
        return (last.record_index, position)


class _HeldRows:
    """Rows that are final but may not be written yet, kept as parts in arrival order.

    Each part remembers its smallest (record, position). :meth:`release`
    yields, sorted, every row before a given (record, position), part by
    part: a part's rows come out as soon as no later part can hold a smaller
    one, so only about one part is in memory at a time even when a run that
    stayed open for a whole record finally lets everything go. Past
    ``spill_rows`` rows in memory a new part goes to disk (Arrow IPC) until
    its turn. Parts of ended runs' loci are put ahead (``add(ahead=True)``):
    they may precede every held row, and would otherwise keep every part
    before them in memory.
    """

    def __init__(self, position: str, reports_start: bool, spill_rows: int):
        self.position = position
        self.reports_start = reports_start
        self.spill_rows = spill_rows
        self.parts: list[_Part] = []
        self.rows_in_memory = 0
        self._spill = SpillFolder()
        self._spilled = 0

    def add(self, rows: pd.DataFrame, ahead: bool = False) -> None:
        if len(rows) == 0:
            return
        part = _Part(self._smallest(rows), len(rows), rows, None)
        self.rows_in_memory += len(rows)
        if ahead:
            self.parts.insert(0, part)
        else:
            self.parts.append(part)

    def release(self, before: tuple[int, int] | None) -> Iterator[pd.DataFrame]:
        """Every held row whose (record, position) is smaller than ``before`` (None: all), in output order."""
        due = [part for part in self.parts if before is None or part.smallest < before]
        if not due:
            self._spill_past_budget()
            return
        self.parts = [part for part in self.parts if not (before is None or part.smallest < before)]
        # Parts not due start at or after ``before``: only the due parts still to come bound a release.
        later_smallest = [None] * len(due)
        bound = before
        for i in range(len(due) - 1, -1, -1):
            later_smallest[i] = bound
            bound = due[i].smallest if bound is None else min(bound, due[i].smallest)
        carried = None
        for part, limit in zip(due, later_smallest):
            rows = self._take(part)
            carried = rows if carried is None else pd.concat([carried, rows], ignore_index=True)
            if limit is None:
                safe = np.ones(len(carried), dtype=bool)
            else:
                records = carried["record"].to_numpy()
                positions = carried[self.position].to_numpy()
                safe = (records < limit[0]) | ((records == limit[0]) & (positions < limit[1]))
            if safe.any():
                yield sort_rows(carried[safe], self.reports_start)
                carried = carried[~safe]
        if carried is not None and len(carried):
            self.parts.insert(0, _Part(self._smallest(carried), len(carried), carried, None))
            self.rows_in_memory += len(carried)
        self._spill_past_budget()

    def _spill_past_budget(self) -> None:
        """Past ``spill_rows`` in memory, the newest parts (the last to be due) go to disk."""
        for part in reversed(self.parts):
            if self.rows_in_memory <= self.spill_rows:
                break
            if part.rows is not None:
                part.path = self._spill.write(f"held-{self._spilled}", part.rows)
                part.rows = None
                self.rows_in_memory -= part.count
                self._spilled += 1

    def _take(self, part: "_Part") -> pd.DataFrame:
        if part.rows is not None:
            self.rows_in_memory -= part.count
            return part.rows
        return self._spill.take(part.path)

    def _smallest(self, rows: pd.DataFrame) -> tuple[int, int]:
        records = rows["record"].to_numpy()
        first = records.min()
        return int(first), int(rows[self.position].to_numpy()[records == first].min())

    def close(self) -> None:
        self.parts = []
        self.rows_in_memory = 0
        self._spill.close()


@dataclass
class _Part:
    smallest: tuple[int, int]     # (record, position) of its first row in output order
    count: int
    rows: pd.DataFrame | None     # in memory, or
    path: Path | None             # spilled


ORDER_COLUMNS = ["record", "start", "pattern", "strand", "end"]
ENDS_ORDER_COLUMNS = ["record", "end", "pattern", "strand"]
"""The output order (DESIGN.md), ``best`` and ``ends`` mode."""


def sort_rows(rows: pd.DataFrame, reports_start: bool) -> pd.DataFrame:
    """``rows`` in the search's output order (runtime.order.sort_rows: a few sorted runs are merged;
    ``end`` breaks ties of one start, so it is sorted as ``end - start``, a pattern's length or so)."""
    if reports_start:
        return sort_by_columns(rows, ORDER_COLUMNS, relative={"end": "start"})
    return sort_by_columns(rows, ENDS_ORDER_COLUMNS)


def _join(left: pd.Series, right: pd.Series) -> pd.Series:
    """One run from two adjacent pieces: the better locus, the left one on ties."""
    best = left if int(left["distance"]) <= int(right["distance"]) else right
    joined = best.copy()
    joined["first_end"] = left["first_end"]
    joined["last_end"] = right["last_end"]
    return joined
