"""The screen job: what it is (:class:`ScreenJob`, its side of the runtime's job protocol) and its worker
task, one bucket of pairs scored (and, above a threshold, aligned).

Task results are rows of pair indices into the *oriented* inputs (for
``strand="both"`` the queries followed by their reverse complements, see
run.py's ``Orientation``): ``query``, ``target``, ``score``, and with a
threshold and ``align`` the alignment's coordinates and CIGAR. The client's
collector (output.py) folds the two strands of a pair into the better one
and puts rows in pair order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..kernels import sw as sw_kernels
from ..kernels.sw import Scoring
from ..kernels.threads import use_worker_share
from ..runtime.job import Plan
from ..runtime.job import sequences_sha256
from .planning import CELLS_PER_TASK, CODE_BYTES_PER_TASK, PairTask, plan_tasks

ALIGNMENT_COLUMNS = ["query_start", "query_end", "target_start", "target_end", "cigar"]


@dataclass(frozen=True)
class WorkerSequences:
    """What the workers need of both inputs: one code buffer; queries first, then targets."""

    codes: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    queries: int

    def digest(self) -> str:
        """SHA-256 of the codes and where each sequence lies: what a resumed job's saved tasks were of."""
        import hashlib

        sha = hashlib.sha256(self.codes.tobytes())
        for array in (self.starts, self.lengths):
            sha.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
        sha.update(str(self.queries).encode())
        return sha.hexdigest()


@dataclass(frozen=True)
class ScreenJob:
    """Everything a task needs (sent to the workers once), and how the client collects and writes."""

    name = "screen"
    formats = ("tsv", "parquet")

    sequences: WorkerSequences     # the oriented queries, then the targets
    algorithm: str
    backend: str
    scoring: Scoring
    threshold: int | None
    align: bool
    word_bits: int | None
    all_vs_all: bool
    strand: str                    # "+", "-" or "both" (output.py folds the strands)
    query_names: tuple[str, ...]   # the queries and targets as given (output)
    target_names: tuple[str, ...]

    @property
    def query_lengths(self) -> np.ndarray:
        """Lengths of the queries as given (the oriented ones start with them)."""
        return self.sequences.lengths[:len(self.query_names)]

    def oriented_lengths(self) -> tuple[np.ndarray, np.ndarray]:
        q = self.sequences.queries
        return self.sequences.lengths[:q], self.sequences.lengths[q:]

    # -- the runtime's job protocol (runtime/job.py) ------------------------------------------

    def plan(self, client, layout: dict) -> Plan:
        """Pairs bucketed by padded length (planning.py), about 4 tasks per worker within CELLS_PER_TASK."""
        from ..cluster import worker_count

        ql, tl = self.oriented_lengths()
        budget = layout.get("cells_per_task")
        if budget is None:
            total = float(ql.sum()) * float(tl.sum()) if self.all_vs_all else float((ql * tl).sum())
            low, high = CELLS_PER_TASK[self.backend]
            budget = int(min(high, max(low, total / (4 * worker_count(client)))))
        batch_pairs = layout.get("batch_pairs")
        tasks = plan_tasks(ql, tl, self.all_vs_all, int(budget), CODE_BYTES_PER_TASK[self.backend], batch_pairs)
        return Plan(units=tasks, batches=[range(1)], weights=[t.cells for t in tasks],
                    layout={"cells_per_task": int(budget), "batch_pairs": batch_pairs}, ordered=False,
                    unit_name="cells", label="screening",
                    notes=[f"{sum(t.pairs for t in tasks):,} pairs in {len(tasks):,} tasks"])

    def fingerprint(self, plan: Plan) -> dict:
        scoring = {name: getattr(self.scoring, name) for name in self.scoring.__dataclass_fields__}
        return {"job": self.name, "sequences_sha256": self.sequences.digest(),
                "names_sha256": sequences_sha256(zip(self.query_names + self.target_names)),
                "parameters": {"scoring": scoring, "threshold": self.threshold, "align": self.align,
                               "all_vs_all": self.all_vs_all, "strand": self.strand},
                "layout": plan.layout}

    @staticmethod
    def task(job: "ScreenJob", pairs: PairTask, batch: range) -> pd.DataFrame:
        return run_screen_task(job, pairs)

    def collector(self, plan: Plan, spill_rows: int):
        from .output import ScoreTable, Survivors

        return ScoreTable(self) if self.threshold is None else Survivors(self)

    def writer(self, output):
        from .output import screen_writer

        return screen_writer(self, output)


def run_screen_task(job: ScreenJob, task: PairTask) -> pd.DataFrame:
    """Scores of a task's pairs; with a threshold, only the survivors (and their alignments)."""
    use_worker_share()
    sequences = job.sequences
    qi, ti = task.pair_indices()
    q_start, q_len = sequences.starts[qi], sequences.lengths[qi]
    t_start, t_len = sequences.starts[sequences.queries + ti], sequences.lengths[sequences.queries + ti]
    swap = t_len < q_len   # the shorter sequence is the kernel's x
    x_start, x_len = np.where(swap, t_start, q_start), np.where(swap, t_len, q_len)
    y_start, y_len = np.where(swap, q_start, t_start), np.where(swap, q_len, t_len)
    pairs = len(qi)
    # auto: the measured-fastest algorithm for this task's length bucket (kernels/planner.py)
    algorithm = sw_kernels.choose_sw_algorithm(job.backend, job.algorithm, job.scoring, task.m, task.n)
    x_codes = np.empty((pairs, task.m), dtype=np.uint8)
    y_codes = np.empty((pairs, task.n), dtype=np.uint8)
    sw_kernels.gather_rows(sequences.codes, x_start, x_len, task.m, x_codes)
    sw_kernels.gather_rows(sequences.codes, y_start, y_len, task.n, y_codes)
    options = dict(word_bits=job.word_bits, min_length=int(x_len.max()))
    if job.threshold is None:
        scores = sw_kernels.pair_scores(algorithm, job.backend, x_codes, y_codes, job.scoring, **options)
        return pd.DataFrame({"query": qi, "target": ti, "score": scores.astype(np.int64)})
    # Screening: pairs whose base counts bound their score below the threshold
    # are out without any DP (exact); which of the others reach it (a cheaper
    # flag kernel where the algorithm has one), then the scores of those few.
    keep = np.flatnonzero(sw_kernels.pairs_reaching(algorithm, job.backend, x_codes, y_codes, job.scoring,
                                                    job.threshold, bound=_score_bound(sequences, task, job),
                                                    **options))
    scores = sw_kernels.pair_scores(algorithm, job.backend, x_codes[keep], y_codes[keep], job.scoring,
                                    **options) if keep.size else np.zeros(0, np.int32)
    del x_codes, y_codes
    rows = {"query": qi[keep], "target": ti[keep], "score": scores.astype(np.int64)}
    if job.align:
        coords, cigars = sw_kernels.align(sequences.codes, q_start[keep], q_len[keep], t_start[keep], t_len[keep],
                                          scores, job.scoring)
        for k, name in enumerate(ALIGNMENT_COLUMNS[:4]):
            rows[name] = coords[:, k].astype(np.int64)
        rows["cigar"] = np.asarray(cigars, dtype=object)
    return pd.DataFrame(rows)


def _score_bound(sequences: WorkerSequences, task: PairTask, job: ScreenJob) -> np.ndarray | None:
    """sw_kernels.composition_bound of each of the task's pairs (in pair_indices order), from base
    counts taken once per sequence; None for threshold 0 (every pair passes)."""
    if not job.threshold:
        return None
    def counts(indices):
        return sw_kernels.base_counts(sequences.codes, sequences.starts[indices], sequences.lengths[indices])
    if task.product:
        q_counts = counts(task.queries)
        t_counts = counts(sequences.queries + task.targets)
        x_counts = np.repeat(q_counts, len(task.targets), axis=0)
        y_counts = np.tile(t_counts, (len(task.queries), 1))
    else:
        x_counts = counts(task.queries)
        y_counts = counts(sequences.queries + task.targets)
    return sw_kernels.composition_bound(x_counts, y_counts, job.scoring)
