"""Numba emulation of the row-parallel X-matrix DP of edit-rowdp (rowdp.cu).

Ho, Oh & Kim (2017), papers/ho2017-levenshtein-warp-shuffle.txt: the X
matrix of equation (2) and the row recurrence of equation (3), computed one
DP row at a time over a whole tile of text as the GPU does (there every
column of a row is a thread; here the columns of a row are a loop, which is
the same computation because row i reads only row i - 1). rowdp.cu's header
proves the recurrence, its IUPAC form (X_i(j) = max over the mask's codes
of X[c][j]) and the bounded form used by both kernels:

* cells are kept saturated at k + 1 (S = min(D, k + 1));
* X is looked for only in the k + 1 columns [j - k, j], stored as the
  distance delta = j - X_i(j), k + 1 when there is none;
* a tile starts m + k characters before its first reported end with
  D[i][0] = i there.

This module computes X by equation (2) itself (one pass left to right, the
paper's sequential form) and then applies the window, so that the tests run
the GPU's exact recurrence, window and tiling against the oracle.

Tasks follow the buffered task protocol of ``kernels/driver.py``: task ``i``
writes at most ``caps[i]`` hits from ``out_offsets[i]`` and returns its true
hit count.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

NEVER = 4  # text code that matches nothing


@njit(cache=True)
def x_matrix(tile_text, width):
    """Equation (2) over a tile: x[c, j] = last column x <= j with tile_text[x - 1] == c, 0 if none."""
    x = np.zeros((4, width + 1), np.int32)
    for j in range(1, width + 1):
        for c in range(4):
            x[c, j] = x[c, j - 1]
        code = tile_text[j - 1]
        if code < NEVER:
            x[code, j] = j
    return x


@njit(cache=True, inline="always")
def x_distance(x, j, mask, k):
    """delta = j - X_i(j) for pattern position i with IUPAC ``mask``, k + 1 past the window."""
    last = 0  # X_i(j) = max over the codes of the mask of X[c][j]
    for c in range(4):
        if (mask >> c) & 1 and x[c, j] > last:
            last = x[c, j]
    if last == 0 or j - last > k:
        return k + 1
    return j - last


@njit(cache=True, inline="always")
def rowdp_cell(prev, j, i, a, b, delta, k):
    """Equation (3) for cell (i, j), saturated at k + 1 (rowdp.cu, rowdp_cell).

    a = D[i-1][j-1], b = D[i-1][j], delta = j - X_i(j), prev = row i - 1.
    """
    if delta == 0:  # X = j: T[j-1] matches P[i-1]
        return a
    window = min(k + 1, j)
    if delta < window:
        c = prev[j - delta - 1] + delta - 1  # D[i-1][X-1] + (j - 1 - X)
    else:
        c = i + j - 1                        # X = 0 (or past the window: saturates)
    return min(1 + min(min(a, b), c), k + 1)


@njit(cache=True)
def tile_ends(text, pattern, m, k, tile_lo, tile_hi, out_row, out_end, out_dist, row, base, cap):
    """Rows 1..m of the DP of one tile (ends with e - 1 in [tile_lo, tile_hi)); returns its hit count."""
    read_lo = max(0, tile_lo - m - k)
    width = tile_hi - read_lo
    tile_text = text[read_lo:tile_hi]
    x = x_matrix(tile_text, width)
    prev = np.zeros(width + 1, np.int32)  # row 0: D[0][j] = 0
    cur = np.empty(width + 1, np.int32)
    for i in range(1, m + 1):
        mask = pattern[i - 1]
        cur[0] = i  # D[i][0] = i
        # Every column of row i reads only row i - 1 (the GPU's threads of one row).
        for j in range(1, width + 1):
            delta = x_distance(x, j, mask, k)
            cur[j] = rowdp_cell(prev, j, i, prev[j - 1], prev[j], delta, k)
        prev, cur = cur, prev  # the barrier between rows
    found = 0
    for j in range(tile_lo - read_lo + 1, width + 1):
        if prev[j] <= k:
            if found < cap:
                out_row[base + found] = row
                out_end[base + found] = read_lo + j
                out_dist[base + found] = prev[j]
            found += 1
    return found


@njit(parallel=True, cache=True)
def rowdp_tasks(task_ids, out_offsets, caps, out_row, out_end, out_dist,
                text, masks, lengths, k, task_row, task_lo, task_hi, tile_span):
    """Task t: the ends of row ``task_row[t]`` with e - 1 in [task_lo[t], task_hi[t]),
    in tiles of ``tile_span`` owned ends (each with its own warm-up)."""
    counts = np.zeros(task_ids.shape[0], np.int64)
    for i in prange(task_ids.shape[0]):
        t = task_ids[i]
        row = task_row[t]
        m = np.int64(lengths[row])
        pattern = masks[row]
        found = 0
        for tile_lo in range(task_lo[t], task_hi[t], tile_span):
            tile_hi = min(tile_lo + tile_span, task_hi[t])
            found += tile_ends(text, pattern, m, k, tile_lo, tile_hi, out_row, out_end, out_dist,
                               row, out_offsets[i] + found, max(np.int64(0), caps[i] - found))
        counts[i] = found
    return counts
