"""k-mismatch (Hamming) search: launchers with the common kernel call shape.

    kernel(text, batch, k, owned_lo, owned_hi) -> EndHits   (see kernels/__init__.py)

* :func:`scan_cpu`: every row against every owned window, early exit past k.
* :func:`pigeonhole_cpu`: exact seeds of k+1 pattern pieces looked up in a
  direct-address table, then verification (see hamming_cpu.py). Rows whose
  pieces are too short or too ambiguous to index are handed to the scan, so
  the result is always exactly the scan's.

The Numba code is in :mod:`seqsift.kernels.hamming_cpu`. This module also
holds :func:`run_buffered_tasks`, the small driver every CPU kernel of the
package uses to collect a variable number of hits from parallel tasks.
"""
from __future__ import annotations

import numba
import numpy as np

from .. import EndHits
from . import cpu as _cpu

# ---------------------------------------------------------------------------
# Shared launcher plumbing (also used by edit.py)
# ---------------------------------------------------------------------------

_SLOTS_BUDGET = 1 << 21
"""About how many hit slots the first pass of run_buffered_tasks preallocates."""


def prepare_inputs(text, batch, owned_lo: int, owned_hi: int):
    """Contiguous arrays of the right dtypes, and the owned range clipped to the text."""
    text = np.ascontiguousarray(text, dtype=np.uint8)
    if text.size and int(text.max()) > _cpu.NEVER:  # any other byte also matches nothing
        text = np.minimum(text, np.uint8(_cpu.NEVER))
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


def empty_pattern_hits(rows: np.ndarray, lo: int, hi: int) -> EndHits:
    """Hits of zero-length rows: the empty pattern occurs, with distance 0, at every owned end."""
    if rows.size == 0 or hi <= lo:
        return EndHits.empty()
    ends = np.arange(lo + 1, hi + 1, dtype=np.int64)
    return EndHits(np.repeat(rows.astype(np.int32), ends.size),
                   np.tile(ends, rows.size),
                   np.zeros(rows.size * ends.size, np.int16))


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
    target = 4 * numba.get_num_threads()
    segments = max(1, min(-(-target // len(rows)), span // max(1, min_span)))
    bounds = lo + (np.arange(segments + 1, dtype=np.int64) * span) // segments
    task_rows = np.repeat(rows, segments, axis=0)
    task_lo = np.tile(bounds[:-1], len(rows))
    task_hi = np.tile(bounds[1:], len(rows))
    return task_rows, task_lo, task_hi


# ---------------------------------------------------------------------------
# Launchers
# ---------------------------------------------------------------------------

def _scan_rows(text, masks, lengths, rows, k, lo, hi) -> EndHits:
    task_row, task_lo, task_hi = split_rows_over_text(rows, lo, hi, min_span=4096)
    return run_buffered_tasks(
        _cpu.scan_tasks, len(task_row),
        (text, masks, lengths, np.int64(k), task_row, task_lo, task_hi))


def _searchable_rows(lengths, n):
    """Split rows into zero-length ones and those that fit in the text (others cannot hit)."""
    zero = np.flatnonzero(lengths == 0)
    fit = np.flatnonzero((lengths > 0) & (lengths <= n))
    return zero, fit


def scan_cpu(text, batch, k, owned_lo, owned_hi) -> EndHits:
    """Hamming hits of every row: the plain scan (reference-quality, no index)."""
    text, masks, lengths, lo, hi = prepare_inputs(text, batch, owned_lo, owned_hi)
    if k < 0 or hi <= lo:
        return EndHits.empty()
    zero, fit = _searchable_rows(lengths, text.shape[0])
    return concat_hits([empty_pattern_hits(zero, lo, hi),
                        _scan_rows(text, masks, lengths, fit, k, lo, hi)])


def pigeonhole_cpu(text, batch, k, owned_lo, owned_hi) -> EndHits:
    """Hamming hits of every row: k+1-piece exact seeds, table lookup, verification.

    Same hits as :func:`scan_cpu`. Rows are grouped by key length (one table
    and one pass over the text per group); rows that cannot be indexed
    cheaply (k close to m, many IUPAC codes) are scanned.
    """
    text, masks, lengths, lo, hi = prepare_inputs(text, batch, owned_lo, owned_hi)
    if k < 0 or hi <= lo:
        return EndHits.empty()
    n = text.shape[0]
    zero, fit = _searchable_rows(lengths, n)
    parts = [empty_pattern_hits(zero, lo, hi)]
    if fit.size == 0:
        return concat_hits(parts)

    q, key_offset = _cpu.plan_keys(masks, lengths, np.int64(k), np.int64(_cpu.QMAX),
                                   np.int64(_cpu.QMIN), np.int64(_cpu.MAX_EXPANSION))
    q_fit = q[fit]
    parts.append(_scan_rows(text, masks, lengths, fit[q_fit == 0], k, lo, hi))

    threads = numba.get_num_threads()
    for key_length in np.unique(q_fit[q_fit > 0]):
        key_length = int(key_length)
        group_rows = fit[q_fit == key_length].astype(np.int64)
        table = _cpu.build_key_table(masks, group_rows, key_offset, np.int64(key_length),
                                     np.int64(_cpu.MAX_EXPANSION))
        # Keys start between the first owned window's start and the last owned end.
        m_max = int(lengths[group_rows].max())
        first = max(0, lo - m_max + 1)
        stop = min(n - key_length + 1, hi)
        if stop <= first:
            continue
        span = stop - first
        block = max(1 << 14, -(-span // (64 * threads)))
        block_lo = np.arange(first, stop, block, dtype=np.int64)
        block_hi = np.minimum(block_lo + block, stop)
        parts.append(run_buffered_tasks(
            _cpu.pigeonhole_tasks, block_lo.size,
            (text, masks, lengths, np.int64(k), np.int64(lo), np.int64(hi), np.int64(key_length),
             *table, group_rows, key_offset, block_lo, block_hi)))
    return concat_hits(parts)
