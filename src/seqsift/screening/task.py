"""The screen job's worker task: one bucket of pairs scored (and, above a threshold, aligned)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import sw as sw_kernels
from ..kernels.sw import Scoring
from ..kernels.threads import use_worker_share
from .planning import PairTask


@dataclass(frozen=True)
class WorkerSequences:
    """What the workers need of both inputs: one code buffer; queries first, then targets."""

    codes: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    queries: int


@dataclass(frozen=True)
class ScreenJob:
    algorithm: str
    backend: str
    scoring: Scoring
    threshold: int | None
    align: bool
    word_bits: int | None


def run_screen_task(sequences: WorkerSequences, task: PairTask, job: ScreenJob) -> dict:
    """Scores of a task's pairs; with a threshold, only the survivors (and their alignments)."""
    use_worker_share()
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
        return {"scores": sw_kernels.pair_scores(algorithm, job.backend, x_codes, y_codes, job.scoring, **options)}
    # Screening: pairs whose base counts bound their score below the threshold
    # are out without any DP (exact); which of the others reach it (a cheaper
    # flag kernel where the algorithm has one), then the scores of those few.
    keep = np.flatnonzero(sw_kernels.pairs_reaching(algorithm, job.backend, x_codes, y_codes, job.scoring,
                                                    job.threshold, bound=_score_bound(sequences, task, job),
                                                    **options))
    scores = sw_kernels.pair_scores(algorithm, job.backend, x_codes[keep], y_codes[keep], job.scoring,
                                    **options) if keep.size else np.zeros(0, np.int32)
    del x_codes, y_codes
    result = {"query": qi[keep], "target": ti[keep], "score": scores}
    if job.align:
        coords, cigars = sw_kernels.align(sequences.codes, q_start[keep], q_len[keep], t_start[keep], t_len[keep],
                                          scores, job.scoring)
        result["coords"] = coords
        result["cigar"] = cigars
    return result


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
