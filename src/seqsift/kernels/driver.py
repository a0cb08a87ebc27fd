"""The CPU launchers' shared plumbing: inputs, parallel tasks and their hits.

Every family's CPU launcher (kernels/<family>/__init__.py) prepares its
inputs with :func:`prepare_inputs`, cuts the rows and the owned range into
tasks with :func:`split_rows_over_text`, runs a parallel Numba kernel of its
``cpu.py`` through :func:`run_buffered_tasks` and joins the pieces with
:func:`concat_hits`.

The "buffered task" protocol every such Numba kernel follows: it runs a list
of tasks ``task_ids``; task ``i`` writes at most ``caps[i]`` hits into the
output arrays starting at ``out_offsets[i]`` and returns its *true* hit
count in ``counts[i]``. A task whose count exceeds its cap is simply run
again with a big enough buffer, so no hit is ever lost.
"""
from __future__ import annotations

import numpy as np

from ..alphabet import NEVER
from ..pattern_set import PatternBatch
from . import EndHits
from .threads import PARALLEL_REGIONS


_SLOTS_BUDGET = 1 << 21
"""About how many hit slots the first pass of run_buffered_tasks preallocates."""


def prepare_inputs(text, batch, owned_lo: int, owned_hi: int):
    """Contiguous arrays of the right dtypes, and the owned range clipped to the text."""
    text = np.ascontiguousarray(text, dtype=np.uint8)
    if text.size and int(text.max()) > NEVER:  # any other byte also matches nothing
        text = np.minimum(text, np.uint8(NEVER))
    masks = np.ascontiguousarray(batch.masks, dtype=np.uint8)
    lengths = np.ascontiguousarray(batch.lengths, dtype=np.int32)
    lo = max(0, int(owned_lo))
    hi = min(int(text.shape[0]), int(owned_hi))
    return text, masks, lengths, lo, hi


def concat_hits(parts: list[EndHits]) -> EndHits:
    parts = [p for p in parts if len(p)]
    if not parts:
        return EndHits.empty()
    if len(parts) == 1:
        return parts[0]
    return EndHits(np.concatenate([p.row for p in parts]),
                   np.concatenate([p.end for p in parts]),
                   np.concatenate([p.distance for p in parts]))


def run_buffered_tasks(kernel, n_tasks: int, args: tuple) -> EndHits:
    """Run a parallel Numba kernel that follows the buffered task protocol.

    The kernel is called as ``kernel(task_ids, out_offsets, caps, out_row,
    out_end, out_dist, *args)`` and returns the true hit count of each task.
    First every task gets a buffer of ``cap`` slots; tasks that found more
    hits than that are run once more into buffers of the exact size. Hits come
    back in task order.
    """
    if n_tasks == 0:
        return EndHits.empty()
    cap = max(64, min(1 << 16, _SLOTS_BUDGET // n_tasks))
    task_ids = np.arange(n_tasks, dtype=np.int64)
    offsets = task_ids * cap
    caps = np.full(n_tasks, cap, dtype=np.int64)
    row = np.empty(n_tasks * cap, np.int32)
    end = np.empty(n_tasks * cap, np.int64)
    dist = np.empty(n_tasks * cap, np.int16)
    with PARALLEL_REGIONS:
        counts = kernel(task_ids, offsets, caps, row, end, dist, *args)

    over = np.flatnonzero(counts > cap)
    kept = np.where(counts > cap, 0, counts)
    total = int(kept.sum())
    # Index of every kept hit in the first-pass buffers.
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(kept) - kept, kept)
    index = np.repeat(offsets, kept) + within
    parts = [EndHits(row[index], end[index], dist[index])]

    if over.size:
        exact = counts[over].astype(np.int64)
        offsets2 = np.cumsum(exact) - exact
        size = int(exact.sum())
        row2 = np.empty(size, np.int32)
        end2 = np.empty(size, np.int64)
        dist2 = np.empty(size, np.int16)
        with PARALLEL_REGIONS:
            kernel(over.astype(np.int64), offsets2, exact, row2, end2, dist2, *args)
        parts.append(EndHits(row2, end2, dist2))
    return concat_hits(parts)


def split_rows_over_text(rows: np.ndarray, lo: int, hi: int, min_span: int):
    """Tasks (rows, sub-range of [lo, hi)) so that few rows still keep every core busy.

    ``rows`` is one row per task (1-D) or a group of rows per task (2-D, one
    group per line). The owned range is cut into ``segments`` pieces of at
    least ``min_span`` ends, aiming at four tasks per thread overall. Returns
    ``(task_rows, task_lo, task_hi)``.
    """
    rows = np.asarray(rows, dtype=np.int64)
    span = hi - lo
    if len(rows) == 0 or span <= 0:
        z = np.empty(0, np.int64)
        return rows[:0], z, z
    import numba  # here, not above: a GPU launcher uses this module's NumPy helpers without Numba

    target = 4 * numba.get_num_threads()
    segments = max(1, min(-(-target // len(rows)), span // max(1, min_span)))
    bounds = lo + (np.arange(segments + 1, dtype=np.int64) * span) // segments
    task_rows = np.repeat(rows, segments, axis=0)
    task_lo = np.tile(bounds[:-1], len(rows))
    task_hi = np.tile(bounds[1:], len(rows))
    return task_rows, task_lo, task_hi


def subset_rows(batch, rows: np.ndarray) -> PatternBatch:
    """The batch of the given rows only (a family hands rows it cannot run to another)."""
    return PatternBatch(masks=batch.masks[rows], lengths=batch.lengths[rows],
                        pattern_index=batch.pattern_index[rows], strand=batch.strand[rows])
