"""Output order: one stable sort for every job's rows, fast when they are nearly sorted already.

Workers return their rows sorted; the client then holds a few sorted runs
(one per pattern batch of a unit, and rows held back from the unit before),
not millions of rows to sort. :func:`sort_rows` orders rows by a list of
columns, lexicographically, stably:

1. the columns are packed into as few int64 keys as they fit (each column,
   less its smallest value, a digit in the base of its range); a column that
   only breaks ties between rows of equal earlier columns can be given
   relative to one of them (``end`` as ``end - start``: a range of a few
   bases, not of the whole chunk), so that the rows of any chunk need one key;
2. rows already in order cost one comparison pass and are returned as they are;
3. one key is sorted with NumPy's stable sort (timsort, which finds the
   sorted runs and merges them: as fast as a compiled merge of the runs,
   without loading Numba into a client that needs it for nothing else);
4. several keys (columns too wide to pack) with ``np.lexsort``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # rows are pandas frames; this module itself needs only NumPy
    import pandas as pd

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
    if not _first_difference_below(later, earlier).any():
        return None
    if keys.shape[0] == 1:
        return np.argsort(keys[0], kind="stable")
    return np.lexsort(keys[::-1])


def _first_difference_below(later: np.ndarray, earlier: np.ndarray) -> np.ndarray:
    """Per position, whether ``later`` < ``earlier`` lexicographically over the key rows."""
    below = np.zeros(later.shape[1], dtype=bool)
    equal_so_far = np.ones(later.shape[1], dtype=bool)
    for k in range(later.shape[0]):
        below |= equal_so_far & (later[k] < earlier[k])
        equal_so_far &= later[k] == earlier[k]
    return below


def sort_rows(rows: pd.DataFrame, columns: list[str], relative: dict[str, str] | None = None) -> pd.DataFrame:
    """``rows`` in the order of ``columns`` (stable; module docstring), with a fresh index.

    ``relative``: {column: earlier column}, a column sorted by its difference from an earlier one
    (the same order, since rows it sorts agree on the earlier column; step 1)."""
    relative = relative or {}
    for column, base in relative.items():
        if columns.index(base) > columns.index(column):
            raise ValueError(f"{column} can be relative only to a column sorted before it, not {base}")
    order = sort_order([rows[c].to_numpy() - rows[relative[c]].to_numpy() if c in relative else rows[c].to_numpy()
                        for c in columns])
    if order is None:
        return rows.reset_index(drop=True)
    return rows.take(order).reset_index(drop=True)
