"""The screen job's client side: its collectors (task rows -> pairs in order, strands folded) and writers.

Tasks come back in any order (buckets of pairs by length, not pair order),
so both collectors keep what they need until every task is in:

* :class:`ScoreTable` (every pair's score): one int32 per oriented pair, in a
  matrix (all-vs-all) or a vector, filled as tasks arrive; at the end the
  strands are folded and :class:`ScoreBlock` s of it come out in pair order
  (a file's writer makes them rows; the API's array takes them as they are);
* :class:`Survivors` (pairs >= the threshold, with alignments): the rows
  themselves; at the end, per pair the better strand (+ on ties), sorted by
  query, then target.

Rows carry indices (``query_index``, ``target_index``, ``minus``); the
writers name them: a file or stdout (TSV or Parquet, whole or not at all),
or for the Python API a NumPy array of scores or a DataFrame.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from ..runtime.output import FrameCollector, NameColumns, TableWriter, arrow_column, empty_frame
from .task import ALIGNMENT_COLUMNS, ScreenJob

DTYPES = {"query_index": np.int64, "query": object, "target_index": np.int64, "target": object, "strand": object,
          "score": np.int64, "query_start": np.int64, "query_end": np.int64, "target_start": np.int64,
          "target_end": np.int64, "cigar": object}
ROWS_PER_BLOCK = 1_000_000


@dataclass
class ScoreBlock:
    """Queries ``first ..`` of the folded score table: ``scores`` and ``minus`` (the better strand is -),
    a row of every target's per query (all-vs-all), else one value per pair."""

    first: int
    scores: np.ndarray
    minus: np.ndarray

    def __len__(self) -> int:
        return self.scores.size

    def rows(self) -> pd.DataFrame:
        """The block as index rows, in pair order."""
        queries = np.arange(self.first, self.first + self.scores.shape[0])
        if self.scores.ndim == 1:
            targets = queries
        else:
            targets = np.tile(np.arange(self.scores.shape[1]), len(queries))
            queries = np.repeat(queries, self.scores.shape[1])
        return pd.DataFrame({"query_index": queries, "target_index": targets,
                             "score": self.scores.reshape(-1).astype(np.int64), "minus": self.minus.reshape(-1)})


class ScoreTable:
    """Every pair's score (module docstring); a runtime.job.Collector."""

    def __init__(self, job: ScreenJob):
        self.job = job
        queries = job.sequences.queries
        targets = len(job.sequences.lengths) - queries
        shape = (queries, targets) if job.all_vs_all else (queries,)
        self.scores = np.zeros(shape, dtype=np.int32)

    def take(self, task, frames: list[pd.DataFrame]):
        rows = frames[0]
        query, target = rows["query"].to_numpy(), rows["target"].to_numpy()
        if self.job.all_vs_all:
            self.scores[query, target] = rows["score"].to_numpy()
        else:
            self.scores[query] = rows["score"].to_numpy()
        return iter(())

    def folded(self) -> tuple[np.ndarray, np.ndarray]:
        """(score, minus) of the pairs as given: for ``both`` the better strand's (+ on ties)."""
        job, scores = self.job, self.scores
        if job.strand == "+":
            return scores, np.zeros(scores.shape, dtype=bool)
        if job.strand == "-":
            return scores, np.ones(scores.shape, dtype=bool)
        given = len(job.query_names)
        forward, reverse = scores[:given], scores[given:]
        return np.maximum(forward, reverse), reverse > forward

    def finish(self):
        """:class:`ScoreBlock` s of about ROWS_PER_BLOCK pairs, in pair order."""
        scores, minus = self.folded()
        self.scores = None
        per_block = max(1, ROWS_PER_BLOCK // max(1, len(self.job.target_names))) if self.job.all_vs_all \
            else max(1, len(scores))
        for first in range(0, len(scores), per_block):
            yield ScoreBlock(first, scores[first:first + per_block], minus[first:first + per_block])

    def close(self) -> None:
        self.scores = None


class Survivors:
    """The pairs that reach the threshold (module docstring); a runtime.job.Collector."""

    def __init__(self, job: ScreenJob):
        self.job = job
        self.parts: list[pd.DataFrame] = []

    def take(self, task, frames: list[pd.DataFrame]):
        self.parts.extend(frame for frame in frames if len(frame))
        return iter(())

    def finish(self):
        job = self.job
        rows = pd.concat(self.parts, ignore_index=True) if self.parts else _empty_task_rows(job)
        self.parts = []
        query, target = rows["query"].to_numpy().astype(np.int64), rows["target"].to_numpy().astype(np.int64)
        score = rows["score"].to_numpy().astype(np.int64)
        given_queries, given_targets = len(job.query_names), len(job.target_names)
        minus = np.full(len(query), job.strand == "-")
        if job.strand == "both":
            minus = query >= given_queries
            query = np.where(minus, query - given_queries, query)
            if not job.all_vs_all:
                target = np.where(minus, target - given_targets, target)
        # Per pair the better strand: sort by pair, then score descending, + before -.
        order = np.lexsort((minus, -score, target, query))
        first = np.ones(len(order), dtype=bool)
        first[1:] = (np.diff(query[order]) != 0) | (np.diff(target[order]) != 0)
        keep = order[first]
        folded = pd.DataFrame({"query_index": query[keep], "target_index": target[keep], "score": score[keep],
                               "minus": minus[keep]})
        if job.align:
            # Query coordinates on the reverse complement -> on the query as given.
            length = job.query_lengths[folded["query_index"].to_numpy()]
            on_minus = folded["minus"].to_numpy()
            start = rows["query_start"].to_numpy()[keep]
            end = rows["query_end"].to_numpy()[keep]
            folded["query_start"] = np.where(on_minus, length - end, start)
            folded["query_end"] = np.where(on_minus, length - start, end)
            for name in ("target_start", "target_end", "cigar"):
                folded[name] = rows[name].to_numpy()[keep]
        yield folded

    def close(self) -> None:
        self.parts = []


def _empty_task_rows(job: ScreenJob) -> pd.DataFrame:
    columns = {"query": np.int64, "target": np.int64, "score": np.int64}
    if job.align:
        columns.update({name: np.int64 for name in ALIGNMENT_COLUMNS[:4]}, cigar=object)
    return pd.DataFrame({name: np.empty(0, dtype=dtype) for name, dtype in columns.items()})


def output_columns(job: ScreenJob, api: bool) -> list[str]:
    """The columns of the output: files ``query target score [strand] [alignment]``; the API's
    DataFrame also the indices."""
    strand = ["strand"] if job.strand != "+" else []
    alignment = ALIGNMENT_COLUMNS if job.threshold is not None and job.align else []
    names = ["query_index", "query", "target_index", "target"] if api else ["query", "target"]
    return names + ["score", *strand, *alignment]


def named(rows: pd.DataFrame, names: dict[str, np.ndarray], columns: list[str]) -> pd.DataFrame:
    """Index rows -> the output's columns with the sequences' names (``names``: query and target names as
    object arrays; the Python API's frame)."""
    out = {}
    for column in columns:
        if column in ("query", "target"):
            out[column] = names[column][rows[f"{column}_index"].to_numpy()]
        elif column == "strand":
            out[column] = np.where(rows["minus"].to_numpy(), "-", "+").astype(object)
        else:
            out[column] = rows[column].to_numpy()
    return pd.DataFrame(out, columns=columns)


class ScreenFileWriter:
    """Named rows to a file or standard output (TSV or Parquet) through runtime.output.TableWriter."""

    def __init__(self, job: ScreenJob, output):
        self.columns = output_columns(job, api=False)
        self.table = TableWriter(output, self.columns, DTYPES, ScreenJob.formats)
        self._names = NameColumns(query=job.query_names, target=job.target_names, strand=("+", "-"))

    @property
    def count(self) -> int:
        return self.table.count

    def write(self, rows) -> None:
        """Index rows (Survivors), or a :class:`ScoreBlock` of every pair's score (ScoreTable)."""
        import pyarrow as pa

        if not len(rows):
            return
        rows = rows.rows() if isinstance(rows, ScoreBlock) else rows
        index = {"query": rows["query_index"], "target": rows["target_index"],
                 "strand": rows["minus"].to_numpy().astype(np.int8)}
        self.table.write_table(pa.table({column: self._names.take(column, index[column]) if column in self._names
                                         else arrow_column(rows[column]) for column in self.columns}))

    def close(self) -> None:
        self.table.close()

    def abort(self) -> None:
        self.table.abort()

    def result(self) -> int:
        return self.table.count


class ScoreArray:
    """The Python API's result without a threshold: a NumPy int32 array of scores, (queries,) or
    (queries, targets) for all-vs-all (for strand "both" the better strand's score)."""

    def __init__(self, job: ScreenJob):
        queries, targets = len(job.query_names), len(job.target_names)
        self.scores = np.zeros((queries, targets) if job.all_vs_all else (queries,), dtype=np.int32)
        self.count = 0

    def write(self, block: ScoreBlock) -> None:
        self.scores[block.first:block.first + block.scores.shape[0]] = block.scores
        self.count += len(block)

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def result(self) -> np.ndarray:
        return self.scores


def screen_writer(job: ScreenJob, output):
    """The writer for ``output`` (runtime.job.Writer): a file or stdout, else the API's array or DataFrame."""
    if output is not None:
        return ScreenFileWriter(job, output)
    if job.threshold is None:
        return ScoreArray(job)
    columns = output_columns(job, api=True)
    names = {"query": np.asarray(job.query_names, dtype=object), "target": np.asarray(job.target_names, dtype=object)}
    return FrameCollector(partial(named, names=names, columns=columns), partial(empty_frame, columns, DTYPES))
