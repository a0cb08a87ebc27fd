"""Output order: one stable sort for every job's rows, fast when they are nearly sorted already.

Workers return their rows sorted; the client then holds a few sorted runs
(one per pattern batch of a unit, and rows held back from the unit before),
not millions of rows to sort. :func:`sort_rows` orders rows by a list of
columns, lexicographically, stably:

1. the columns are packed into as few int64 keys as they fit (each column,
   less its smallest value, a digit in the base of its range; usually one or
   two keys);
2. rows already in order cost one comparison pass and are returned as they are;
3. a few sorted runs (fewer than ``MAX_MERGED_RUNS``) are merged pairwise,
   bottom-up (a Numba kernel, ``log2(runs)`` passes);
4. anything else is sorted with ``np.lexsort`` over the keys.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

if TYPE_CHECKING:  # rows are pandas frames; this module itself needs only NumPy and Numba
    import pandas as pd

MAX_MERGED_RUNS = 64
"""Past this many sorted runs, a full sort is cheaper than merging them."""
KEY_LIMIT = 2.0 ** 62
"""A packed key's range stays below this (a margin below int64's 2**63 for float rounding)."""


def packed_keys(columns: list[np.ndarray]) -> list[np.ndarray]:
    """int64 keys that order the rows as ``columns`` do lexicographically (the first most significant).

    Consecutive columns share a key while the product of their value ranges
    stays below ``KEY_LIMIT``; a column whose range alone is wider gets a key
    of its own (its values, as int64).
    """
    count = len(columns[0]) if columns else 0
    keys: list[np.ndarray] = []
    key, span = None, 1.0
    for column in columns:
        column = np.asarray(column)
        low, high = (int(column.min()), int(column.max())) if count else (0, 0)
        width = float(high - low + 1)
        if key is not None and span * width >= KEY_LIMIT:
            keys.append(key)
            key, span = None, 1.0
        if width >= KEY_LIMIT:  # a column too wide to pack with anything
            keys.append(column.astype(np.int64))
            continue
        if key is None:
            key = np.zeros(count, dtype=np.int64)
        key *= high - low + 1
        key += column.astype(np.int64) - low
        span *= width
    if key is not None:
        keys.append(key)
    return keys


def sort_order(columns: list[np.ndarray]) -> np.ndarray | None:
    """The stable order of rows by ``columns`` (lexicographic), or None when they are in order already."""
    if not columns or len(columns[0]) < 2:
        return None
    keys = np.stack(packed_keys(columns))
    later, earlier = keys[:, 1:], keys[:, :-1]
    descents = np.flatnonzero(_first_difference_below(later, earlier)) + 1
    if descents.size == 0:
        return None
    if descents.size < MAX_MERGED_RUNS:
        return _merge_runs(keys, np.concatenate(([0], descents, [keys.shape[1]])))
    return np.lexsort(keys[::-1])


def _first_difference_below(later: np.ndarray, earlier: np.ndarray) -> np.ndarray:
    """Per position, whether ``later`` < ``earlier`` lexicographically over the key rows."""
    below = np.zeros(later.shape[1], dtype=bool)
    equal_so_far = np.ones(later.shape[1], dtype=bool)
    for k in range(later.shape[0]):
        below |= equal_so_far & (later[k] < earlier[k])
        equal_so_far &= later[k] == earlier[k]
    return below


def sort_rows(rows: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``rows`` in the order of ``columns`` (stable; module docstring), with a fresh index."""
    order = sort_order([rows[c].to_numpy() for c in columns])
    if order is None:
        return rows.reset_index(drop=True)
    return rows.take(order).reset_index(drop=True)


@njit(cache=True)
def _less(keys, a, b) -> bool:
    for k in range(keys.shape[0]):
        if keys[k, a] != keys[k, b]:
            return keys[k, a] < keys[k, b]
    return False


@njit(cache=True)
def _merge_runs(keys, bounds):
    """The order that merges the sorted runs [bounds[r], bounds[r + 1]) (stable: earlier runs first on ties)."""
    order = np.arange(keys.shape[1])
    scratch = np.empty_like(order)
    width = 1   # runs merged pairwise, bottom-up: log2(runs) passes
    runs = bounds.shape[0] - 1
    while width < runs:
        for r in range(0, runs, 2 * width):
            lo = bounds[r]
            mid = bounds[min(r + width, runs)]
            hi = bounds[min(r + 2 * width, runs)]
            a, b, out = lo, mid, lo
            while a < mid and b < hi:
                ia, ib = order[a], order[b]
                if _less(keys, ib, ia):
                    scratch[out] = ib
                    b += 1
                else:
                    scratch[out] = ia
                    a += 1
                out += 1
            while a < mid:
                scratch[out] = order[a]
                a += 1
                out += 1
            while b < hi:
                scratch[out] = order[b]
                b += 1
                out += 1
        order, scratch = scratch, order
        width *= 2
    return order
