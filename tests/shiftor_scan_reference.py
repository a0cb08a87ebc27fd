"""Mitani et al. 2017's operators and formulations, written literally: what tests/test_shiftor.py checks.

The paper: Mitani, Ino and Hagihara, "Parallelizing exact and approximate
string matching via inclusive scan on a GPU", IEEE TPDS 2017
(papers/mitani2017-shift-or-inclusive-scan.txt); definition, equation and
algorithm numbers are the paper's. Words and mask tables are those of
``seqsift.kernels.shiftor.cpu`` (bit i of a state is 0 when the first i + 1
pattern characters match; ``mask_tables``), whose tribrid CPU paths emulate
the GPU kernels. Here, for the tests only:

* the operators: dagger (Definition 1), <<_2 (Definition 2), (+)
  (Definition 3) and double-dagger (Definition 4), whose associativity
  (Theorems 1 and 3, Lemma 5) the scans rely on;
* the plain sequential algorithms: Shift-Or (Eq. (1)) and Wu-Manber
  (Eq. (2)), with d(e) = the first level whose state at e has bit m - 1 clear;
* the scan formulation: Algorithms 1 and 2 as whole-text inclusive scans
  (NumPy, Hillis-Steele), which must give the plain algorithms' states
  (Theorems 2 and 7).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from seqsift.kernels.shiftor.cpu import ALL_ONES, ONE, ZERO, shl, wm_initial_states, wm_step

# ---------------------------------------------------------------------------
# The operators (Definitions 1-4); wmask = the low w bits
# ---------------------------------------------------------------------------

@njit(cache=True)
def dagger(u1, x1, u2, x2, wmask):
    """Definition 1, Eq. (4): <u1, x1> dagger <u2, x2> = <u1 + u2, (x1 << u2) | x2>."""
    x1, x2, wmask = np.uint64(x1), np.uint64(x2), np.uint64(wmask)  # words, also when called from Python
    return u1 + u2, (shl(x1, u2) | x2) & wmask


@njit(cache=True)
def shift2(x, y, u, wmask):
    """Definition 2, Eq. (8): <x, y> <<_2 u = <x << u, y << u>."""
    x, y, wmask = np.uint64(x), np.uint64(y), np.uint64(wmask)
    return shl(x, u) & wmask, shl(y, u) & wmask


@njit(cache=True)
def uplus(x1, y1, x2, y2):
    """Definition 3, Eq. (9): <x1, y1> (+) <x2, y2> = <x1 | x2, (y1 & ~x2) | y2>."""
    x1, y1, x2, y2 = np.uint64(x1), np.uint64(y1), np.uint64(x2), np.uint64(y2)
    return x1 | x2, (y1 & ~x2) | y2


@njit(cache=True)
def ddagger(u1, x1, y1, u2, x2, y2, wmask):
    """Definition 4, Eq. (10): <u1, p1> ddagger <u2, p2> = <u1 + u2, (p1 <<_2 u2) (+) p2>."""
    sx, sy = shift2(x1, y1, u2, wmask)
    x, y = uplus(sx, sy, x2, y2)
    return u1 + u2, x, y


# ---------------------------------------------------------------------------
# Plain sequential algorithms
# ---------------------------------------------------------------------------

@njit(cache=True)
def shiftor_states(text, table, wmask):
    """R_1..R_n of Eq. (1) from R_0 = 1^w: out[j] = R_{j+1}, the state after text[j]."""
    out = np.empty(text.shape[0], np.uint64)
    state = wmask
    for j in range(text.shape[0]):
        state = ((state << ONE) | table[text[j]]) & wmask
        out[j] = state
    return out


@njit(cache=True)
def wu_manber_states(text, table, k, wmask):
    """R_{d,j} of Eq. (2) for every level and text position: out[d, j] = R_{d, j+1}."""
    out = np.empty((k + 1, text.shape[0]), np.uint64)
    states = wm_initial_states(k, wmask)
    for j in range(text.shape[0]):
        wm_step(states, table[text[j]], k, wmask)
        out[:, j] = states
    return out


@njit(cache=True)
def wu_manber_distances(text, table, m, k):
    """d(e) for e = 1..n (out[e - 1]) by plain Wu-Manber; k + 1 where d(e) > k."""
    states = wm_initial_states(k, ALL_ONES)
    last_bit = ONE << np.uint64(m - 1)
    out = np.empty(text.shape[0], np.int64)
    for j in range(text.shape[0]):
        wm_step(states, table[text[j]], k, ALL_ONES)
        best = k + 1
        for d in range(k + 1):
            if (states[d] & last_bit) == ZERO:
                best = d
                break
        out[j] = best
    return out


# ---------------------------------------------------------------------------
# The scan formulation, literally (NumPy; for the tests)
# ---------------------------------------------------------------------------

def _np_shl(x: np.ndarray, u) -> np.ndarray:
    u = np.broadcast_to(np.asarray(u, dtype=np.int64), x.shape)
    return np.where(u >= 64, np.uint64(0), x << np.minimum(u, 63).astype(np.uint64))


def shiftor_scan(text, table, wmask=ALL_ONES) -> np.ndarray:
    """Algorithm 1: <u_j, x_j> = A_0 dagger ... dagger A_j by a Hillis-Steele
    inclusive scan over the whole text; returns x_1..x_n (Theorem 2: = R_j)."""
    text = np.asarray(text)
    n = text.shape[0]
    u = np.ones(n + 1, dtype=np.int64)
    x = np.empty(n + 1, dtype=np.uint64)
    u[0], x[0] = 0, wmask                      # A_0 = <0, 1^m>
    x[1:] = table[text] & wmask                # A_j = <1, M_j>
    offset = 1
    while offset <= n:
        left_u, left_x = u[:-offset].copy(), x[:-offset].copy()
        right_u, right_x = u[offset:], x[offset:]
        x[offset:] = (_np_shl(left_x, right_u) | right_x) & wmask   # Eq. (4)
        u[offset:] = left_u + right_u
        offset *= 2
    return x[1:]


def shiftor_window_scan(text, table, m, wmask=ALL_ONES) -> np.ndarray:
    """Section 4.3: R_j = sum of A_l over l = j - m + 1 .. j only (bit m - 1 of it)."""
    text = np.asarray(text)
    out = np.empty(text.shape[0], dtype=np.uint64)
    for j in range(text.shape[0]):
        x = np.uint64(0)
        for c in text[max(0, j - m + 1): j + 1]:
            x = (shl(x, 1) | table[c]) & wmask
        if j + 1 < m:  # the window reaches back to A_0 = <0, 1^m>
            x |= shl(wmask, j + 1) & wmask
        out[j] = x
    return out


def wu_manber_scan(text, table, k, wmask=ALL_ONES) -> np.ndarray:
    """Algorithm 2: level 0 by Algorithm 1, level d = 1..k by the inclusive scan of
    A_{d,j} = <1, <~N_j, M_j & N_j>> under double-dagger; returns y[d, j] = y_{d, j+1}."""
    text = np.asarray(text)
    n = text.shape[0]
    masks = table[text] & wmask
    levels = np.empty((k + 1, n), dtype=np.uint64)
    levels[0] = shiftor_scan(text, table, wmask)
    for d in range(1, k + 1):
        previous = np.empty(n + 1, dtype=np.uint64)      # y_{d-1, j} for j = 0..n
        previous[0] = _np_shl(np.array([wmask]), d - 1)[0] & wmask  # 1^{m-d+1} 0^{d-1}
        previous[1:] = levels[d - 1]
        n_masks = previous[:-1] & (previous[:-1] << np.uint64(1)) & (previous[1:] << np.uint64(1)) & wmask
        u = np.ones(n + 1, dtype=np.int64)
        x = np.empty(n + 1, dtype=np.uint64)
        y = np.empty(n + 1, dtype=np.uint64)
        u[0], x[0], y[0] = 0, 0, _np_shl(np.array([wmask]), d)[0] & wmask  # A_{d,0}
        x[1:] = ~n_masks & wmask
        y[1:] = masks & n_masks
        offset = 1
        while offset <= n:
            lu, lx, ly = u[:-offset].copy(), x[:-offset].copy(), y[:-offset].copy()
            ru, rx, ry = u[offset:].copy(), x[offset:].copy(), y[offset:].copy()
            sx, sy = _np_shl(lx, ru) & wmask, _np_shl(ly, ru) & wmask     # Eq. (8)
            x[offset:] = sx | rx                                         # Eq. (9)
            y[offset:] = (sy & ~rx) | ry
            u[offset:] = lu + ru
            offset *= 2
        levels[d] = y[1:]
    return levels
