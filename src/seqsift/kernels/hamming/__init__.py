"""k-mismatch (Hamming) search: launchers with the common kernel call shape.

    kernel(text, batch, k, owned_lo, owned_hi) -> EndHits   (see kernels/__init__.py)

* :func:`scan_cpu`: every row against every owned window, early exit past k.
* :func:`pigeonhole_cpu`: exact seeds of k+1 pattern pieces looked up in a
  direct-address table, then verification (see cpu.py). Rows whose
  pieces are too short or too ambiguous to index are handed to the scan, so
  the result is always exactly the scan's.

The Numba code is in ``cpu.py``, the CUDA launchers in ``cuda.py``; the
parallel tasks run through ``kernels/driver.py``.
"""
from __future__ import annotations

import numpy as np

from .. import EndHits
from ..driver import (concat_hits, prepare_inputs, run_buffered_tasks,
                      split_rows_over_text)

# ---------------------------------------------------------------------------
# Launchers
# ---------------------------------------------------------------------------

def _scan_rows(text, masks, lengths, rows, k, lo, hi) -> EndHits:
    from . import cpu as _cpu  # Numba: imported by the CPU paths only

    task_row, task_lo, task_hi = split_rows_over_text(rows, lo, hi, min_span=4096)
    return run_buffered_tasks(
        _cpu.scan_tasks, len(task_row),
        (text, masks, lengths, np.int64(k), task_row, task_lo, task_hi))


def _searchable_rows(lengths, n):
    """The rows that fit in the text (others cannot hit)."""
    return np.flatnonzero((lengths > 0) & (lengths <= n))


def scan_cpu(text, batch, k, owned_lo, owned_hi) -> EndHits:
    """Hamming hits of every row: the plain scan (reference-quality, no index)."""
    text, masks, lengths, lo, hi = prepare_inputs(text, batch, owned_lo, owned_hi)
    if k < 0 or hi <= lo:
        return EndHits.empty()
    fit = _searchable_rows(lengths, text.shape[0])
    return _scan_rows(text, masks, lengths, fit, k, lo, hi)


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
    fit = _searchable_rows(lengths, n)
    if fit.size == 0:
        return EndHits.empty()
    import numba

    from . import cpu as _cpu  # Numba: imported by the CPU paths only

    parts = []
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


# The CUDA launchers (cuda.py; CuPy is imported only when one runs).
from .cuda import block as block_cuda, packed as packed_cuda, thread as thread_cuda, tiled as tiled_cuda  # noqa: E402
