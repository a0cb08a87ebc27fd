"""Planning the screen job: pairs bucketed by padded length, split into tasks.

Pairs are bucketed by the padded lengths (m, n) of their shorter and longer
sequence, (m, n) rounded up to 1/8 of their power of two, so a kernel launch
runs pairs of one shape and wastes at most about 12% of its cells on padding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CELLS_PER_TASK = {"cpu": (1 << 24, 1 << 29), "cuda": (1 << 30, 1 << 40)}
"""Bounds of the DP cells in one task (pairs x m x n), aiming at 4 tasks per worker between them. A
GPU task of 2^40 cells is about 0.2 s of sw-dpx on an H100: the issue-26 screen (3e13 cells) took
7.0-7.1 s in 52 such tasks against 7.8-8.0 s in 120 of 2^38 (benchmarks/README.md)."""

CODE_BYTES_PER_TASK = {"cpu": 64 << 20, "cuda": 4 << 30}
"""At most this many bytes of padded codes (pairs x (m + n)) in one task: what an algorithm without a
buffer kernel gathers (on the host for cpu, on the device for cuda); sw-dpx's kernels read the buffer itself."""


def pad_length(lengths) -> np.ndarray:
    """Lengths rounded up to a multiple of 2^(floor(log2 L) - 3) (at least 1): <= 12.5% padding."""
    lengths = np.maximum(np.asarray(lengths, dtype=np.int64), 1)
    step = np.maximum(1, (1 << np.maximum(0, np.floor(np.log2(lengths)).astype(np.int64) - 3)))
    return -(-lengths // step) * step


@dataclass(frozen=True)
class PairTask:
    """Pairs of one (m, n) bucket: zip(queries, targets), or their product (all-vs-all tile)."""

    index: int
    queries: np.ndarray  # int64 query indices
    targets: np.ndarray  # int64 target indices
    product: bool
    m: int               # padded length of the shorter sequences
    n: int               # padded length of the longer sequences

    @property
    def pairs(self) -> int:
        return len(self.queries) * len(self.targets) if self.product else len(self.queries)

    @property
    def cells(self) -> int:
        return self.pairs * self.m * self.n

    def pair_indices(self) -> tuple[np.ndarray, np.ndarray]:
        if self.product:
            return np.repeat(self.queries, len(self.targets)), np.tile(self.targets, len(self.queries))
        return self.queries, self.targets

    def pairs_at(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (query, target) indices at ``positions`` of pair_indices' order, without making all of it
        (a GPU tile has millions of pairs, of which a screen keeps a few)."""
        if self.product:
            return self.queries[positions // len(self.targets)], self.targets[positions % len(self.targets)]
        return self.queries[positions], self.targets[positions]


def _pairs_per_task(m: int, n: int, cell_budget: int, byte_budget: int, batch_pairs: int | None) -> int:
    if batch_pairs:
        return int(batch_pairs)
    pairs = min(cell_budget // (m * n), byte_budget // (m + n))
    return max(64, pairs // 64 * 64)   # whole words of 64 pairs where possible


def plan_tasks(query_lengths, target_lengths, all_vs_all: bool, cell_budget: int, byte_budget: int,
               batch_pairs: int | None = None) -> list[PairTask]:
    """Tasks covering every pair once, each of one (m, n) bucket and at most ~cell_budget cells."""
    ql = np.asarray(query_lengths, dtype=np.int64)
    tl = np.asarray(target_lengths, dtype=np.int64)
    tasks: list[PairTask] = []
    if not all_vs_all:
        pm = pad_length(np.minimum(ql, tl))
        pn = pad_length(np.maximum(ql, tl))
        order = np.lexsort((np.arange(len(ql)), pn, pm))
        keys = np.stack([pm[order], pn[order]], axis=1)
        cuts = np.flatnonzero(np.any(keys[1:] != keys[:-1], axis=1)) + 1
        for run in np.split(order, cuts):
            m, n = int(pm[run[0]]), int(pn[run[0]])
            step = _pairs_per_task(m, n, cell_budget, byte_budget, batch_pairs)
            for a in range(0, len(run), step):
                chunk = np.sort(run[a:a + step])
                tasks.append(PairTask(len(tasks), chunk, chunk, False, m, n))
        return tasks
    q_class, t_class = pad_length(ql), pad_length(tl)
    for qc in np.unique(q_class):
        queries = np.flatnonzero(q_class == qc)
        for tc in np.unique(t_class):
            targets = np.flatnonzero(t_class == tc)
            m, n = int(min(qc, tc)), int(max(qc, tc))
            step = _pairs_per_task(m, n, cell_budget, byte_budget, batch_pairs)
            t_step = min(len(targets), step)
            q_step = max(1, step // t_step)
            for a in range(0, len(queries), q_step):
                for b in range(0, len(targets), t_step):
                    tasks.append(PairTask(len(tasks), queries[a:a + q_step], targets[b:b + t_step], True, m, n))
    return tasks
