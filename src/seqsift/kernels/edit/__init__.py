"""k-differences (edit distance) search: launchers with the common kernel call shape.

    kernel(text, batch, k, owned_lo, owned_hi) -> EndHits   (see kernels/__init__.py)

* :func:`myers_cpu`: Myers' bit-vector search (Numba, cpu.py), one
  64-bit word for rows of length <= 64 (four rows per task, advanced
  together), Hyyrö's blocks with Ukkonen's cutoff beyond. Rows run in parallel; when there are few rows, each row's text is
  also cut into segments (each restarts m + k characters early, which is
  exact for every d(e) <= k), so that every core has work.
"""
from __future__ import annotations

import numpy as np

from .. import EndHits
from ..driver import (concat_hits, prepare_inputs, run_buffered_tasks,
                      split_rows_over_text)


LANES = 4
"""Rows of length <= 64 are searched four at a time (cpu.myers_word4_tasks)."""


def _row_groups(rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Rows in groups of LANES (one line each, -1 padding), similar lengths together."""
    rows = rows[np.argsort(lengths[rows], kind="stable")]
    groups = np.full((-(-rows.size // LANES), LANES), -1, dtype=np.int64)
    groups.flat[:rows.size] = rows
    return groups


def myers_cpu(text, batch, k, owned_lo, owned_hi) -> EndHits:
    """Every (row, end, d(end)) with d(end) <= k and end - 1 in [owned_lo, owned_hi)."""
    from . import cpu as _cpu  # Numba: imported by the CPU path only

    text, masks, lengths, lo, hi = prepare_inputs(text, batch, owned_lo, owned_hi)
    if k < 0 or hi <= lo:
        return EndHits.empty()
    short = np.flatnonzero((lengths > 0) & (lengths <= 64))
    long = np.flatnonzero(lengths > 64)
    parts = []
    # Four rows per task when there are enough of them; the lone-row kernel
    # otherwise (its text is then cut into segments for the cores).
    if short.size >= LANES:
        word_kernel, word_rows = _cpu.myers_word4_tasks, _row_groups(short, lengths)
    else:
        word_kernel, word_rows = _cpu.myers_word_tasks, short
    for kernel, rows in ((word_kernel, word_rows), (_cpu.myers_blocks_tasks, long)):
        if rows.size == 0:
            continue
        # Each segment re-reads m + k characters before its first end: keep
        # segments several times longer than that.
        overlap = int(lengths[rows[rows >= 0]].max()) + k
        task_rows, task_lo, task_hi = split_rows_over_text(rows, lo, hi,
                                                           min_span=max(1 << 14, 8 * overlap))
        parts.append(run_buffered_tasks(
            kernel, len(task_rows),
            (text, masks, lengths, np.int64(k), task_rows, task_lo, task_hi)))
    return concat_hits(parts)


# The CUDA launcher (cuda.py; CuPy is imported only when it runs).
from .cuda import myers as myers_cuda  # noqa: E402
