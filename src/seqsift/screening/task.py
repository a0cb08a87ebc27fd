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
    x_codes = np.empty((pairs, task.m), dtype=np.uint8)
    y_codes = np.empty((pairs, task.n), dtype=np.uint8)
    sw_kernels.gather_rows(sequences.codes, x_start, x_len, task.m, x_codes)
    sw_kernels.gather_rows(sequences.codes, y_start, y_len, task.n, y_codes)
    options = dict(word_bits=job.word_bits, min_length=int(x_len.max()))
    if job.threshold is None:
        return {"scores": sw_kernels.pair_scores(job.algorithm, job.backend, x_codes, y_codes, job.scoring,
                                                 **options)}
    # Screening: which pairs reach the threshold (a cheaper flag kernel), then
    # the scores of those few.
    keep = np.flatnonzero(sw_kernels.pairs_reaching(job.algorithm, job.backend, x_codes, y_codes, job.scoring,
                                                    job.threshold, **options))
    scores = sw_kernels.pair_scores(job.algorithm, job.backend, x_codes[keep], y_codes[keep], job.scoring,
                                    **options) if keep.size else np.zeros(0, np.int32)
    del x_codes, y_codes
    result = {"query": qi[keep], "target": ti[keep], "score": scores}
    if job.align:
        coords, cigars = sw_kernels.align(sequences.codes, q_start[keep], q_len[keep], t_start[keep], t_len[keep],
                                          scores, job.scoring)
        result["coords"] = coords
        result["cigar"] = cigars
    return result
