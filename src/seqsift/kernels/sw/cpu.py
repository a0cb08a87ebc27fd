"""Smith-Waterman screening on CPU cores (Numba): ``sw-bpbc`` and ``sw-wordwise``.

The score of a pair (x, y) (DESIGN.md; Nishimura et al., Section III) is the
maximum over the linear-gap local alignment matrix

    H[i][j] = max(0, H[i-1][j-1] + w(x_i, y_j), H[i-1][j] - g, H[i][j-1] - g)
    w(x_i, y_j) = c1 if x_i == y_j (both in ACGT) else -c2,  H[-1][*] = H[*][-1] = 0

Characters arrive as text codes (seqsift.alphabet): A0 C1 G2 T3, and 4 for N
and every other byte, which mismatches everything, itself included.

``sw-bpbc`` is the paper's Bitwise Parallel Bulk Computation (Section IV):
the same DP for W = 32 or 64 pairs at once, one pair per bit of a machine
word ("pair instance"). A number of s bits is held *bit-sliced*: s words,
word b holding bit b of that number in every one of the W pairs. The DP cell
is then a small combinational circuit evaluated with bitwise operations:

* :func:`greaterthan`, :func:`max_b`, :func:`add_b`, :func:`ssub_b` and
  :func:`matching_b` are the functions of Section IV.A, and
  :func:`sw_cell_paper` is the paper's SW function built from them;
* :func:`sw_cell` is the cell the kernels run. It uses the same functions,
  reordered::

      max(0, A - g, B - g, C + w)  =  SSub_B(max_B(max_B(A, B), C + w + g), g)

  because subtracting g with saturation commutes with the maximum, and
  C + w + g is one addition of a constant chosen per pair by the match flag
  (c1 + g on a match, g - c2 on a mismatch; saturated at 0 when c2 > g):
  the paper's matching_B with c1' = c1 + g and c2' = c2 - g, computed by a
  single adder whose operand is selected bit by bit (:func:`add_select_b`)
  instead of an adder, a subtractor and a select. Counted as the paper does
  (two-input operations, Lemmas 2-5), that is 37s - 12 operations (s + 3
  more when c2 > g) against Theorem 6's 48s - 18; counted as the GPU runs it
  (three-input LOP3 instructions), 10s + 3 against 13s + 3, the mismatch
  flag included.

Inputs and scores change between wordwise (one value per byte or int) and
bit-sliced format by the bit transpose of Section II (Fig. 1, the ``swap``
and ``copy`` functions and Table I): :func:`transpose_rows`, used for W2B of
the characters (3-bit codes: the 2-bit base plus an N bit, so that N never
matches) and B2W of the scores.

``sw-wordwise`` is the conventional DP, one pair per loop iteration, the
"wordwise" implementation the paper compares with.

Numba note: arithmetic on uint32 array elements is typed uint64 by Numba;
only bitwise operations and left shifts are applied to words here, whose low
32 bits are exact, and stores truncate to the array's width, so the uint32
kernels compute exactly what 32-bit words would.
"""
from __future__ import annotations

import threading

import numpy as np
from numba import njit, prange
from numba.extending import overload

from .constants import CODE_N, DPX_LANE_MAX, PLANES


# --------------------------------------------------------------------------
# Bit-sliced arithmetic, Section IV.A. a, b, out: arrays of s words; word i
# holds bit i (LSB first) of the numbers of all pair instances. out may be the
# same array as a or b: every function reads bit i of its inputs before it
# writes bit i of out.
# --------------------------------------------------------------------------

@njit(cache=True, inline="always")
def greaterthan(a, b, s):
    """Word p with p = 1 where A > B and p = 0 where A < B (either where A == B).

    p runs the borrow of A - B from the least significant bit: a borrow
    leaves bit i when b_i + p > a_i. No borrow out of the top bit means A >= B.
    """
    p = ~a[0] & b[0]
    for i in range(1, s):
        p = (b[i] & p) | (~a[i] & (b[i] ^ p))
    return ~p


@njit(cache=True, inline="always")
def max_b(a, b, out, s):
    """out = max(A, B): select every bit by greaterthan (Lemma 2: 9s - 2 operations)."""
    p = greaterthan(a, b, s)
    for i in range(s):
        out[i] = (a[i] & p) | (b[i] & ~p)


@njit(cache=True, inline="always")
def add_b(a, b, out, s):
    """out = A + B mod 2^s; returns the carry out of the top bit.

    The paper's listing starts the carry as p = a_0 XOR b_0; the carry out of
    bit 0 is a_0 AND b_0, as here (the exhaustive test catches the difference).
    """
    out0 = a[0] ^ b[0]
    p = a[0] & b[0]
    out[0] = out0
    for i in range(1, s):
        ai = a[i]
        bi = b[i]
        out[i] = ai ^ bi ^ p
        p = (ai & (bi ^ p)) | (bi & p)
    return p


@njit(cache=True, inline="always")
def ssub_b(a, b, out, s):
    """out = max(A - B, 0), saturating subtraction (Lemma 4: 9s - 4 operations)."""
    a0 = a[0]
    b0 = b[0]
    out[0] = a0 ^ b0
    p = ~a0 & b0
    for i in range(1, s):
        ai = a[i]
        bi = b[i]
        out[i] = ai ^ bi ^ p
        p = (~ai & (bi ^ p)) | (bi & p)
    for i in range(s):
        out[i] = out[i] & ~p  # a borrow out of the top bit: A < B, the result is 0


@njit(cache=True, inline="always")
def at_least(a, t, s):
    """Word with 1 where A >= T (T bit-sliced in t): no borrow out of A - T; one operation per bit."""
    p = a[0] ^ a[0]  # zero of the word type
    for i in range(s):
        p = (t[i] & (~a[i] | p)) | (~a[i] & p)
    return ~p


@njit(cache=True, inline="always")
def mismatch_flag(x0, x1, xn, y0, y1, yn):
    """The paper's e (matching_B): 1 where the characters differ; an N on either side always differs."""
    return (x0 ^ y0) | (x1 ^ y1) | xn | yn


@njit(cache=True, inline="always")
def matching_b(c, e, k1, k2, out, r, t, s):
    """out = C + c1 where e = 0 (match), max(C - c2, 0) where e = 1 (Lemma 5).

    k1, k2: the constants c1 and c2, bit-sliced (word i all ones where bit i
    is set); r, t: scratch arrays of s words.
    """
    add_b(c, k1, r, s)
    ssub_b(c, k2, t, s)
    for i in range(s):
        out[i] = (r[i] & ~e) | (t[i] & e)


@njit(cache=True, inline="always")
def sw_cell_paper(a, b, c, e, k1, k2, kg, out, t1, t2, t3, s):
    """The paper's SW(A, B, C, x, y) = max(0, A - gap, B - gap, C + w(x, y)) (Theorem 6).

    A = H[i-1][j], B = H[i][j-1], C = H[i-1][j-1]; e the mismatch flag.
    out must not be a, b or c; t1, t2, t3 are scratch.
    """
    max_b(a, b, t1, s)            # T = max_B(A, B)
    ssub_b(t1, kg, t1, s)         # U = SSub_B(T, gap)
    matching_b(c, e, k1, k2, out, t2, t3, s)  # T = matching_B(C, x, y)
    max_b(out, t1, out, s)        # max_B(T, U)


@njit(cache=True, inline="always")
def add_select_b(c, e, k1, k2, sat, out, s):
    """out = C + (k2 where e else k1) mod 2^s, then 0 where ``sat`` and the sum went negative.

    The operand is chosen per pair instance, bit by bit: b_i = e ? k2_i : k1_i.
    With k2 = (g - c2) mod 2^s and c2 > g (``sat`` all ones), a mismatch
    subtracts c2 - g and the missing carry out marks C < c2 - g: saturate to
    0, as SSub_B does. A match never carries out (s is chosen so).
    """
    p = c[0] ^ c[0]  # zero of the word type
    for i in range(s):
        ci = c[i]
        bi = (e & k2[i]) | (~e & k1[i])
        out[i] = ci ^ bi ^ p
        p = (ci & (bi ^ p)) | (bi & p)
    negative = e & ~p & sat
    for i in range(s):
        out[i] = out[i] & ~negative


@njit(cache=True, inline="always")
def sw_cell(a, b, c, e, k1, k2, sat, kg, out, t1, s):
    """max(0, A - g, B - g, C + w) as SSub_B(max_B(max_B(A, B), C + w + g), g) (module docstring).

    k1 = c1 + g and k2 = (g - c2) mod 2^s bit-sliced, sat all ones when c2 > g,
    kg = g bit-sliced. out must not be a, b or c; t1 is scratch.
    """
    max_b(a, b, t1, s)                          # max(H[i-1][j], H[i][j-1])
    add_select_b(c, e, k1, k2, sat, out, s)     # H[i-1][j-1] + w + g, at least 0
    max_b(t1, out, t1, s)
    ssub_b(t1, kg, out, s)                      # ... - g, at least 0


# --------------------------------------------------------------------------
# Bit transpose, Section II (Fig. 1 and Table I)
# --------------------------------------------------------------------------

def block_masks(width: int, dtype) -> np.ndarray:
    """For each level k = width/2, ..., 2, 1: the mask of the low k bits of every 2k-bit block."""
    ones = (1 << width) - 1
    masks, k = [], width // 2
    while k >= 1:
        masks.append(ones // ((1 << k) + 1))   # e.g. width 32, k 8: 0x00FF00FF
        k //= 2
    return np.array(masks, dtype=dtype)


@njit(cache=True, inline="always")
def _needed(row, k, rows):
    """Whether ``row`` must be kept exact at level k so that rows < ``rows`` come out right.

    The levels after k exchange bits between rows that differ in bits < k only,
    so row r feeds an output row < ``rows`` when r agrees with some such row
    above bit k - 1.
    """
    high = ~(k - 1)
    return (row & high) <= ((rows - 1) & high)


@njit(cache=True)
def transpose_rows(a, width, rows, masks, shifts):
    """Transpose the width x width bit matrix ``a`` in place (Section II).

    Afterwards bit k of a[r] is bit r of the original a[k], for r < ``rows``
    (rows >= ``rows`` are left unspecified when fewer are asked for). Level k
    exchanges the high k-bit half of each 2k block of a[i] with the low half
    of a[i + k]: the paper's swap (7 operations) where both rows are needed
    later, its copy (4 operations) where only a[i] is, its mirror where only
    a[i + k] is, nothing where neither is. For 3-bit codes in 32-bit words
    (rows = 3) that is 29 copies and 3 swaps instead of 80 swaps.

    masks, shifts: per level, as :func:`block_masks` and the level k, in the
    word's dtype.
    """
    level = 0
    k = width // 2
    while k >= 1:
        mask = masks[level]
        shift = shifts[level]
        for i in range(width):
            if i & k:
                continue
            need_a = _needed(i, k, rows)
            need_b = _needed(i + k, k, rows)
            if need_a and need_b:      # swap(A, B, k, b)
                t = ((a[i] >> shift) & mask) ^ (a[i + k] & mask)
                a[i] = a[i] ^ (t << shift)
                a[i + k] = a[i + k] ^ t
            elif need_a:               # copy(A, B, k, b)
                a[i] = (a[i] & mask) | ((a[i + k] & mask) << shift)
            elif need_b:
                a[i + k] = (a[i + k] & ~mask) | ((a[i] >> shift) & mask)
        level += 1
        k //= 2


def transpose_tables(width: int):
    """(masks, shifts) arrays for :func:`transpose_rows` with words of ``width`` bits."""
    dtype = np.uint32 if width == 32 else np.uint64
    levels = int(np.log2(width))
    shifts = np.array([width >> (level + 1) for level in range(levels)], dtype=dtype)
    return block_masks(width, dtype), shifts


@njit(parallel=True, cache=True)
def w2b(codes, pairs, length_out, word, masks, shifts, planes):
    """W2B: text codes (pairs x L, one byte each) -> planes[group, plane, position].

    Group g holds pairs g*W .. g*W + W - 1 (W = word bits), one per bit.
    Positions past a row's end and pairs past ``pairs`` become N. Plane 0 is
    bit 0 of the base code, plane 1 bit 1, plane 2 the N bit.
    """
    width = word.shape[0]
    groups = planes.shape[0]
    length_in = codes.shape[1]
    for g in prange(groups):
        a = np.empty_like(word)
        for pos in range(length_out):
            for k in range(width):
                pair = g * width + k
                code = CODE_N
                if pair < pairs and pos < length_in:
                    code = codes[pair, pos]
                    if code > CODE_N:
                        code = CODE_N
                a[k] = code
            transpose_rows(a, width, PLANES, masks, shifts)
            for plane in range(PLANES):
                planes[g, plane, pos] = a[plane]


@njit(parallel=True, cache=True)
def b2w(sliced, pairs, word, masks, shifts, scores):
    """B2W: bit-sliced scores (groups x s words) -> one int per pair."""
    width = word.shape[0]
    groups, s = sliced.shape
    for g in prange(groups):
        a = np.zeros_like(word)
        for b in range(s):
            a[b] = sliced[g, b]
        transpose_rows(a, width, width, masks, shifts)
        for k in range(width):
            pair = g * width + k
            if pair < pairs:
                scores[pair] = a[k]


# --------------------------------------------------------------------------
# sw-bpbc on the CPU: the paper's "BPBC sequential for SWA", one word group
# (32 or 64 pairs) per prange iteration, columns left to right.
# --------------------------------------------------------------------------

@njit(parallel=True, cache=True)
def bpbc_sliced(x_planes, y_planes, k1, k2, sat, kg, threshold, paper_cell, out):
    """Bit-sliced best scores of every group: out[g] = max over H, s words.

    x_planes: (groups, 3, m) rows; y_planes: (groups, 3, n) columns;
    k1, k2, kg: s-word constants of :func:`sw_cell`; sat: one word.
    threshold: empty, or T bit-sliced (s words): then out[g, 0] is the word
    with bit k set when pair k reaches T somewhere (the GPU's sw_reach
    kernels: s only has to hold T - 1 + c1 + g, see sw.cu).
    paper_cell: run the paper's own SW function, :func:`sw_cell_paper`, with
    k1, k2, kg = c1, c2, g (same scores, more operations; for tests and comparison).
    """
    groups, _, m = x_planes.shape
    n = y_planes.shape[2]
    s = k1.shape[0]
    satw = sat[0]
    reach = threshold.shape[0] > 0
    for g in prange(groups):
        col = np.zeros((m, s), dtype=out.dtype)  # col[i] = H[i][j - 1]
        up = np.zeros(s, dtype=out.dtype)        # H[i - 1][j]
        diag = np.zeros(s, dtype=out.dtype)      # H[i - 1][j - 1]
        cell = np.zeros(s, dtype=out.dtype)
        t1 = np.zeros(s, dtype=out.dtype)        # scratch of the cell functions
        t2 = np.zeros(s, dtype=out.dtype)
        t3 = np.zeros(s, dtype=out.dtype)
        best = np.zeros(s, dtype=out.dtype)
        reached = best[0]
        for j in range(n):
            y0 = y_planes[g, 0, j]
            y1 = y_planes[g, 1, j]
            yn = y_planes[g, 2, j]
            for b in range(s):
                up[b] = 0
                diag[b] = 0
            for i in range(m):
                e = mismatch_flag(x_planes[g, 0, i], x_planes[g, 1, i], x_planes[g, 2, i], y0, y1, yn)
                left = col[i]
                if paper_cell:
                    sw_cell_paper(up, left, diag, e, k1, k2, kg, cell, t1, t2, t3, s)
                else:
                    sw_cell(up, left, diag, e, k1, k2, satw, kg, cell, t1, s)
                if reach:
                    reached |= at_least(cell, threshold, s)
                else:
                    max_b(best, cell, best, s)
                for b in range(s):
                    diag[b] = left[b]
                    left[b] = cell[b]
                    up[b] = cell[b]
        if reach:
            out[g, 0] = reached
        else:
            for b in range(s):
                out[g, b] = best[b]


# --------------------------------------------------------------------------
# sw-wordwise on the CPU: one pair per prange iteration
# --------------------------------------------------------------------------

@njit(parallel=True, cache=True)
def wordwise_scores(x_codes, y_codes, c1, c2, gap, scores):
    """scores[p] = SW score of x_codes[p] against y_codes[p] (code 4: mismatch)."""
    pairs, m = x_codes.shape
    n = y_codes.shape[1]
    for p in prange(pairs):
        col = np.zeros(m, np.int32)  # H[i][j - 1]
        best = 0
        for j in range(n):
            yj = y_codes[p, j]
            diag = 0  # H[i - 1][j - 1]
            up = 0    # H[i - 1][j]
            for i in range(m):
                xi = x_codes[p, i]
                w = c1 if (xi == yj and xi < CODE_N) else -c2
                left = col[i]
                h = max(0, diag + w, max(up, left) - gap)
                diag = left
                col[i] = h
                up = h
                if h > best:
                    best = h
        scores[p] = best


# --------------------------------------------------------------------------
# Gathering pairs into padded code matrices (worker side, no per-pair Python)
# --------------------------------------------------------------------------

@njit(parallel=True, cache=True)
def gather_rows(codes, starts, lengths, width, out):
    """out[p, :lengths[p]] = codes[starts[p]:starts[p] + lengths[p]], the rest N."""
    for p in prange(starts.shape[0]):
        start = starts[p]
        length = lengths[p]
        for q in range(width):
            out[p, q] = codes[start + q] if q < length else CODE_N


# --------------------------------------------------------------------------
# Alignment of the survivors, on the host
# --------------------------------------------------------------------------

OP_MATCH, OP_MISMATCH, OP_INSERTION, OP_DELETION = 0, 1, 2, 3  # as locate.cpu: = X I D

ALIGN_OK = 0
ALIGN_SCORE_DIFFERS = 1   # the DP's best is not the given score (a bug somewhere)
ALIGN_TOO_LARGE = 2       # the traceback matrix would exceed the cell limit


@njit(cache=True, inline="always")
def _w(a, b, c1, c2):
    return c1 if (a == b and a < CODE_N) else -c2


@njit(cache=True)
def _trace_linear(x, y, i1, j1, score, c1, c2, gap, max_cells, ops, base):
    """Pass 2 of a linear-gap alignment whose end (i1, j1) (1-based, score > 0) pass 1 found.

    The DP runs backwards from that end over the reversed prefixes, global at
    the end and free at the start:

        R[a][b] = best score of x[i1-a:i1] against y[j1-b:j1] ending at (i1, j1)

    and the start is the cell with R == score of smallest a, then smallest b
    (any such alignment is an optimal local one). Its traceback runs from the
    start to the end, so the operations come out in forward order; ties prefer
    the diagonal, then I, then D. Returns (qstart, qend, tstart, tend, ops, status).

    Only part of R is filled. R <= score everywhere (an alignment ending at
    (i1, j1) is a local one), and an alignment with R == score (an optimal
    one) has I + D <= G = (c1 * i1 - score) // g gap positions (score =
    c1 M - c2 X - g (I + D), M <= i1): its cells have |b - a| <= G and
    b <= i1 + G. So the columns go up to min(j1, i1 + G + 1), and row a only
    over the band |b - a| <= G; a cell beside the band reads -g (a + b), the
    all-gap alignment's score, at most R. Every computed value is then at
    most R, and exact on every cell of an optimal alignment (all in the band),
    so the cells holding the score are the full matrix's; so are the moves
    where the traceback goes: a neighbour reaching a cell's maximum lies on
    an optimal alignment, hence in the band with its exact value. g = 0: no
    bound (every column up to j1, no band).
    """
    if gap > 0:
        band = (c1 * i1 - score) // gap   # >= 0: score <= c1 * min(i1, j1)
        width = min(j1, i1 + band + 1)
    else:
        width = j1
        band = i1 + j1 + 1                # every cell
    rows = i1 + 1
    cols = width + 1
    if rows * cols > max_cells:
        return 0, 0, 0, 0, 0, ALIGN_TOO_LARGE
    moves = np.empty((rows, cols), np.uint8)   # 0 diagonal, 1 I (query only), 2 D (target only)
    prev = np.empty(cols, np.int64)
    cur = np.empty(cols, np.int64)
    hi = min(cols - 1, band)
    for b in range(hi + 1):
        prev[b] = -gap * b
        moves[0, b] = 2
    sa = -1
    sb = -1
    if prev[0] == score:
        sa = 0
        sb = 0
    a = 1
    while sa < 0 and a < rows:
        lo = max(0, a - band)
        top = min(cols - 1, a + band)
        if lo > top:
            break
        if top > hi:
            prev[top] = -gap * (a - 1 + top)   # above the band of row a - 1
        hi = top
        if lo == 0:
            cur[0] = -gap * a
            moves[a, 0] = 1
            first = 1
        else:
            cur[lo - 1] = -gap * (a + lo - 1)  # left of the band
            first = lo
        xa = x[i1 - a]
        gain = (c1 + c2) if xa < CODE_N else 0   # w(xa, yb) = -c2 + gain where yb == xa
        left = cur[first - 1]                    # kept in a register along the row
        for b in range(first, hi + 1):
            d = prev[_U(b - 1)] - c2 + gain * (xa == y[_U(j1 - b)])   # no branch: random pairs mispredict
            ins = prev[_U(b)] - gap
            dele = left - gap
            v = max(d, ins)
            mv = 1 if ins > d else 0
            mv = 2 if dele > v else mv
            left = max(v, dele)
            cur[_U(b)] = left
            moves[_U(a), _U(b)] = mv
        for b in range(lo, hi + 1):
            if cur[b] == score:
                sa = a
                sb = b
                break
        prev, cur = cur, prev
        a += 1
    if sa < 0:
        return 0, 0, 0, 0, 0, ALIGN_SCORE_DIFFERS
    a = sa
    b = sb
    count = 0
    while a > 0 or b > 0:
        mv = moves[a, b]
        if mv == 0:
            ops[base + count] = OP_MATCH if (x[i1 - a] == y[j1 - b] and x[i1 - a] < CODE_N) else OP_MISMATCH
            a -= 1
            b -= 1
        elif mv == 1:
            ops[base + count] = OP_INSERTION
            a -= 1
        else:
            ops[base + count] = OP_DELETION
            b -= 1
        count += 1
    return i1 - sa, i1, j1 - sb, j1, count, ALIGN_OK


# --------------------------------------------------------------------------
# Affine gaps (Gotoh). A gap of length L scores -(O + (L - 1) E), parasail's
# convention; linear gaps are O = E = g.
#
#   E[i][j] = max(E[i][j-1] - E, H[i][j-1] - O)      gap in x (target bases only: D)
#   F[i][j] = max(F[i-1][j] - E, H[i-1][j] - O)      gap in y (query bases only: I)
#   H[i][j] = max(0, H[i-1][j-1] + w(x_i, y_j), E[i][j], F[i][j])
#
# with H = 0 and E = F = -inf outside the matrix. -inf may be taken as -O:
# H >= 0 makes H - O >= -O >= (-O) - E, so E and F never fall below -O.
# --------------------------------------------------------------------------

@njit(parallel=True, cache=True)
def gotoh_scores(x_codes, y_codes, c1, c2, gap_open, gap_extend, scores):
    """sw-gotoh on the CPU: scores[p] = affine-gap SW score of x_codes[p] against y_codes[p]."""
    pairs, m = x_codes.shape
    n = y_codes.shape[1]
    for p in prange(pairs):
        h_col = np.zeros(m, np.int64)                 # H[i][j - 1]
        e_col = np.full(m, -gap_open, np.int64)       # E[i][j - 1]
        best = 0
        for j in range(n):
            yj = y_codes[p, j]
            diag = 0                                  # H[i - 1][j - 1]
            up = 0                                    # H[i - 1][j]
            f = -gap_open                             # F[i - 1][j]
            for i in range(m):
                xi = x_codes[p, i]
                w = c1 if (xi == yj and xi < CODE_N) else -c2
                e = max(e_col[i] - gap_extend, h_col[i] - gap_open)
                f = max(f - gap_extend, up - gap_open)
                h = max(0, diag + w, e, f)
                diag = h_col[i]
                h_col[i] = h
                e_col[i] = e
                up = h
                if h > best:
                    best = h
        scores[p] = best


# --------------------------------------------------------------------------
# sw-dpx and sw-dpx-affine: the CPU path runs the GPU kernels' arithmetic
# (dpx.cu) lane by lane, so that their 16-bit lanes, biases and saturation
# flags are tested without a GPU. Every value is a signed 16-bit lane; the
# only addition that can wrap is the one inside VIADDMNMX (diagonal + score),
# which wraps modulo 2^16 as add.s16x2 does.
#
# Stored values carry a bias (dpx.cu explains the choice): Z = H + B + c2
# (the cell's result), Y = Z - c2 (its diagonal use), and for the linear cell
# W = Z - g, for the affine cell A = Z - O, Ec = E + B + c2, Fc = F + B + c2.
# The score per cell is s'' = s + c2, which is c1 + c2 on a match and 0
# otherwise (the byte-permute table of dpx.cu). Then
#
#   P  = max(Y_diag + s'', B + c2)                  = max(H_diag + s, 0) + B + c2
#   linear:  Z = max(P, W_up, W_left)
#   affine:  Ec = max(Ec - E, A_left), Fc = max(Fc - E, A_up), Z = max(P, Ec, Fc)
#
# A pair whose best Z exceeds 32767 - c1 may have wrapped: flagged (score -1)
# and rescored by sw-gotoh's 32-bit kernel.
# --------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _wrap16(v):
    return ((v + 32768) & 0xFFFF) - 32768


@njit(parallel=True, cache=True)
def dpx_lanes(x_codes, y_codes, c1, c2, gap_open, gap_extend, bias, affine, scores):
    """The 16-bit lanes of sw-dpx (linear cell, gap_open = gap_extend = g) or sw-dpx-affine;
    scores[p] = the score, or -1 where the lane may have wrapped (rescore it)."""
    pairs, m = x_codes.shape
    n = y_codes.shape[1]
    k = c1 + c2
    base = bias + c2
    limit = DPX_LANE_MAX - c1
    for p in prange(pairs):
        y_col = np.full(m, bias, np.int64)                   # Y[i][j - 1]
        g_col = np.full(m, base - gap_open, np.int64)        # W or A of [i][j - 1]
        e_col = np.full(m, base - gap_open, np.int64)        # Ec[i][j - 1] (affine)
        best = base
        for j in range(n):
            yj = y_codes[p, j]
            diag = bias                                      # Y[i - 1][j - 1]
            g_up = base - gap_open                           # W / A of [i - 1][j]
            f = base - gap_open                              # Fc[i - 1][j]
            for i in range(m):
                xi = x_codes[p, i]
                s = k if (xi == yj and xi < CODE_N) else 0
                pv = max(_wrap16(diag + s), base)
                if affine:
                    e = max(e_col[i] - gap_extend, g_col[i])
                    f = max(f - gap_extend, g_up)
                    z = max(pv, e, f)
                    e_col[i] = e
                else:
                    z = max(pv, g_up, g_col[i])
                diag = y_col[i]
                y_col[i] = z - c2
                g_col[i] = z - gap_open
                g_up = z - gap_open
                if z > best:
                    best = z
        scores[p] = -1 if best > limit else best - base


# --------------------------------------------------------------------------
# Affine alignment of the survivors, on the host: three-state traceback.
# --------------------------------------------------------------------------

@njit(cache=True)
def _trace_affine(x, y, i1, j1, score, c1, c2, go, ge, max_cells, ops, base):
    """Pass 2 of an affine-gap alignment whose end (i1, j1) (1-based, score > 0) pass 1 found.

    It fills the three Gotoh matrices over rows 1..i1 and the columns
    j1 - width .. j1 that an alignment ending there can reach, keeping for
    each cell where H, E and F came from; the traceback walks from (i1, j1)
    in state H until H is 0. Ties prefer the diagonal, then F (I), then E (D);
    inside a gap, extending before opening. Returns (qstart, qend, tstart, tend, ops, status).

    The window. An optimal alignment ending at (i1, j1) (score = c1 M - c2 X
    - gaps, M <= i1) has G <= (c1 * i1 - score - O) // E + 1 gap positions
    when O >= E (G positions cost at least O + (G - 1) E; none when
    c1 * i1 - score < O), so it spans at most i1 + G target bases, and each
    of its cells (a, b) (b counted from the window's first column) lies in
    the band |(width - b) - (i1 - a)| <= G. Only the band is filled; a cell
    beside it reads H = 0 and E = F = -O, the values at the window's edge,
    which are at most the true ones (H >= 0 and E, F >= -O everywhere). So
    every computed value is at most the full matrix's, and exact on the cells
    of optimal alignments (all in the band): the traceback, which only visits
    such cells and whose ties are between such cells, is the full matrix's.
    E = 0 (or O < E, which Scoring.check refuses): the window of a gap of any
    length (E = 0), or c1 * i1 / E deletions (O < E), and no band.
    """
    if ge > 0 and go >= ge:
        spare = c1 * i1 - score          # >= 0: score <= c1 * min(i1, j1)
        band = (spare - go) // ge + 1 if spare >= go else 0
        width = min(j1, i1 + band + 1)
    elif ge > 0:
        gaps = (c1 * i1 - go) // ge + 1 if c1 * i1 >= go else 0
        width = min(j1, i1 + gaps + 1)
        band = i1 + j1 + 1               # every cell
    else:
        width = j1   # extension free: any length
        band = i1 + j1 + 1
    j0 = j1 - width
    rows = i1 + 1
    cols = width + 1
    if rows * cols > max_cells:
        return 0, 0, 0, 0, 0, ALIGN_TOO_LARGE
    off = width - i1   # the end's diagonal: b - a at (i1, width)
    # moves bits: 0-1 H source (0 stop/zero, 1 diagonal, 2 F, 3 E); bit 2: E extends; bit 3: F extends
    moves = np.zeros((rows, cols), np.uint8)
    hprev = np.zeros(cols, np.int64)
    hcur = np.zeros(cols, np.int64)
    fprev = np.full(cols, -go, np.int64)
    fcur = np.full(cols, -go, np.int64)
    end_h = -1
    for a in range(1, rows):
        lo = max(1, a + off - band)
        hi = min(cols - 1, a + off + band)
        if lo > hi:
            continue   # rows above the band: nothing written, the edge values stay
        hcur[lo - 1] = 0
        fcur[lo - 1] = -go
        e = -go
        xa = x[a - 1]
        gain = (c1 + c2) if xa < CODE_N else 0   # w(xa, yb) = -c2 + gain where yb == xa
        left = 0                            # H[a][lo - 1], kept in a register along the row
        for b in range(lo, hi + 1):
            e_ext = e - ge
            e_open = left - go
            mv = 4 if e_ext >= e_open else 0
            e = max(e_ext, e_open)
            f_ext = fprev[_U(b)] - ge
            f_open = hprev[_U(b)] - go
            mv |= 8 if f_ext >= f_open else 0
            f = max(f_ext, f_open)
            d = hprev[_U(b - 1)] - c2 + gain * (xa == y[_U(j0 + b - 1)])
            src = 1 if d > 0 else 0
            h = max(d, 0)
            src = 2 if f > h else src
            h = max(h, f)
            src = 3 if e > h else src
            h = max(h, e)
            left = h
            hcur[_U(b)] = h
            fcur[_U(b)] = f
            moves[_U(a), _U(b)] = mv | src
        hprev, hcur = hcur, hprev
        fprev, fcur = fcur, fprev
        if a == rows - 1:
            end_h = hprev[cols - 1]
    if end_h != score:
        return 0, 0, 0, 0, 0, ALIGN_SCORE_DIFFERS
    # Traceback from (i1, j1) = (rows - 1, cols - 1), ops collected backwards.
    a = rows - 1
    b = cols - 1
    state = 0   # 0 H, 2 F (in an I run), 3 E (in a D run)
    count = 0
    while True:
        mv = moves[a, b]
        if state == 0:
            src = mv & 3
            if src == 0:
                break
            if src == 1:
                xa = x[a - 1]
                ops[base + count] = OP_MATCH if (xa == y[j0 + b - 1] and xa < CODE_N) else OP_MISMATCH
                count += 1
                a -= 1
                b -= 1
            else:
                state = src
        elif state == 2:     # F: a query base against no target base (I), moving up
            ops[base + count] = OP_INSERTION
            count += 1
            extend = (mv & 8) != 0
            a -= 1
            if not extend:
                state = 0
        else:                # E: a target base against no query base (D), moving left
            ops[base + count] = OP_DELETION
            count += 1
            extend = (mv & 4) != 0
            b -= 1
            if not extend:
                state = 0
    # reverse the ops into forward order
    lo = base
    hi = base + count - 1
    while lo < hi:
        t = ops[lo]
        ops[lo] = ops[hi]
        ops[hi] = t
        lo += 1
        hi -= 1
    return a, i1, j0 + b, j0 + width, count, ALIGN_OK


@njit(cache=True)
def _end_of_best(x, y, c1, c2, go, ge):
    """(i1, j1, best): the first cell in row-major order (1-based) holding the best H.

    The scalar pass 1 (int64), for pairs whose scores may not fit the lanes of
    :func:`_pass1_group`. Linear gaps are go = ge = g: E and F then equal
    H[i][j-1] - g and H[i-1][j] - g, so H is the linear DP's.
    """
    m = x.shape[0]
    n = y.shape[0]
    hrow = np.zeros(n + 1, np.int64)     # H[i - 1][*], then H[i][*]
    frow = np.full(n + 1, -go, np.int64)  # F[i - 1][*]
    best = 0
    i1 = 0
    j1 = 0
    for i in range(1, m + 1):
        diag = 0          # H[i - 1][j - 1]
        e = -go           # E[i][j - 1]
        left = 0          # H[i][j - 1]
        xi = x[i - 1]
        for j in range(1, n + 1):
            up = hrow[j]
            e = max(e - ge, left - go)
            f = max(frow[j] - ge, up - go)
            h = max(0, diag + _w(xi, y[j - 1], c1, c2), e, f)
            diag = up
            hrow[j] = h
            frow[j] = f
            left = h
            if h > best:
                best = h
                i1 = i
                j1 = j
    return i1, j1, best


# --------------------------------------------------------------------------
# Pass 1 across pairs: inter-sequence SIMD (Rognes, "Faster Smith-Waterman
# database searches with inter-sequence SIMD parallelisation", BMC
# Bioinformatics 12:221, 2011, SWIPE). LANES pairs run the same DP at once,
# one pair per lane; each cell is a loop over the lanes of contiguous arrays
# of one integer type, without branches, which LLVM turns into vector
# instructions (32 int16 lanes: one AVX-512 register or two AVX2 ones).
#
# The lanes of a group are padded to the group's longest query (rows) and
# target (columns): query padding and N are code 4, target padding and N code
# 5, so a lane compares its two codes with one == and N never matches. The
# pairs are sorted by (query length, target length) before grouping, so that
# padding stays small.
#
# Why padding never moves a lane's end (the first cell in row-major order
# holding the best H). A real cell (i <= m, j <= n) depends only on cells
# (i' <= i, j' <= j), all real: real cells keep their values. A padded cell
# (i > m or j > n) scores a mismatch, -c2 <= 0, on its diagonal, and its E
# and F are H of a cell to its left or above minus O + (L - 1) E >= 0 (or
# -O <= 0); so with c2, O, E >= 0 (linear gaps: O = E = g), which the planner
# checks before it uses the lanes,
#     H(padded) <= max(0, H of cells before it in row-major order)
# and by induction H(padded) <= the lane's best among the real cells before
# it. A padded cell therefore never holds a new best, and one holding the
# best comes after a real cell that does. This holds for a mismatch of 0 and
# for gaps of 0 alike (equal, never greater).
#
# Where the best is. A strict "h > best" per cell would need per-lane state
# carried from cell to cell, which keeps LLVM from vectorizing; instead every
# column j keeps colbest[j], its largest H so far, and colrow[j], the first
# row reaching it (strict >, rows in increasing order). The lane's end is
# then the smallest (colrow[j], j) among the real columns with
# colbest[j] == best: column j* of the end records exactly its row (no cell
# above it reaches the best, none below exceeds it), and every other record
# is a cell holding the best, hence not before the end in row-major order
# (padded rows and columns included, by the paragraph above).
#
# Layout. The DP runs over strips of at most _STRIP columns (memory stays
# O(strip) per group however long the targets, and a strip stays in cache);
# a strip is one flat array with a row of K * LANES values per column slot s
# (slot 0 is the column before the strip), field f of lane k at
# s * K * LANES + f * LANES + k: constant strides, so that LLVM proves the
# fields of neighbouring slots apart (a 2-D array's runtime stride would hide
# that). Rows go in blocks of ROWS (the query padded to a multiple of ROWS):
# per slot and lane the block's rows run one after another, each taking its
# up and diagonal values from the row before in registers, so that ROWS
# independent chains of "left" dependencies (a store and a load apart) overlap
# instead of one. The H row before the block and the block's last row use
# two fields that swap roles from block to block (one call per parity, the
# fields as constants). The last column's H (and E) of every row is kept for
# the next strip in edge arrays. Indices are cast to unsigned so that Numba
# emits no negative-index wraparound. Measured on a Zen 4 core (150 x 2,000
# int16 lanes): 5.7 Gcells/s linear with one row at a time, 11 with blocks of
# 4 rows (2 rows 8.7, 6 rows 12, 8 rows 11); strips of 64 to 2,048 columns
# within 5% of each other.
#
# Lane width. Every H of a lane is at most c1 * min(m, n) (at most that many
# matches; padded cells never exceed the best), and every intermediate is at
# least -max(c2, O + E); row numbers up to the padded query length are
# stored. int16 lanes are used where these fit, int32 where they fit that,
# and the scalar :func:`_end_of_best` otherwise (:func:`plan_groups`).
# --------------------------------------------------------------------------

LANES = 32
"""Pairs per pass-1 group (one per SIMD lane)."""

_STRIP = 256    # columns per strip of pass 1
ROWS = 4        # query rows per block of pass 1
# Fields of a strip slot: H of the row before the block and of the block's last row (two fields that
# swap roles from block to block), H of the block's other rows, colbest, colrow, the target code;
# affine strips also E of every row of the block and F of the last one.
_P0, _P1 = 0, 1
_HL = 2                     # _HL + r: H of row r < ROWS - 1 of the block
_CB = _HL + ROWS - 1
_CR = _CB + 1
_TC = _CR + 1
_K_LINEAR = _TC + 1         # fields of a linear strip
_EL = _K_LINEAR             # _EL + r: E of row r of the block
_FV = _EL + ROWS
_K_AFFINE = _FV + 1         # fields of an affine strip
_T_N = 5        # target-side code of N and of padding (the query side uses CODE_N)
_U = np.uint64  # index type without wraparound

KIND_INT16, KIND_INT32, KIND_SCALAR = 0, 1, 2
"""How pass 1 runs for a group (:func:`plan_groups`)."""


def _as_lane(ref, v):
    """v converted to ref's dtype (wrapping), in jitted code; ``ref`` an array."""
    return v


@overload(_as_lane, inline="always")
def _ol_as_lane(ref, v):
    lane = ref.dtype

    def impl(ref, v):
        return lane(v)
    return impl


@njit(cache=True, inline="always")
def _block_linear(S, Q, i, width, pa, pb, c1, mc2, g, zero):
    """Rows i .. i + ROWS - 1 of a linear strip: H[i - 1] in field pa, H[i + ROWS - 1] into field pb.

    Per column slot and lane, the block's rows run one after the other, so
    a row's up and diagonal values come from the row before it in registers.
    """
    stride = _K_LINEAR * LANES
    qo = (i - 1) * LANES
    for s in range(1, width + 1):
        r0 = s * stride
        rp = r0 - stride
        for k in range(LANES):
            t = S[_U(r0 + _TC * LANES + k)]
            up = S[_U(r0 + pa * LANES + k)]
            diag = S[_U(rp + pa * LANES + k)]
            cb = S[_U(r0 + _CB * LANES + k)]
            cr = S[_U(r0 + _CR * LANES + k)]
            for r in range(ROWS):
                lf = _HL + r if r < ROWS - 1 else pb
                left = S[_U(rp + lf * LANES + k)]
                w = c1 if Q[_U(qo + r * LANES + k)] == t else mc2
                d = _as_lane(S, diag + w)
                gp = _as_lane(S, max(up, left) - g)
                h = max(max(d, zero), gp)
                S[_U(r0 + lf * LANES + k)] = h
                cr = _as_lane(S, i + r) if h > cb else cr
                cb = max(h, cb)
                diag = left
                up = h
            S[_U(r0 + _CB * LANES + k)] = cb
            S[_U(r0 + _CR * LANES + k)] = cr


@njit(cache=True, inline="always")
def _block_affine(S, Q, i, width, pa, pb, c1, mc2, go, ge, zero):
    """:func:`_block_linear` with affine gaps: E per row along the slots, F down the rows."""
    stride = _K_AFFINE * LANES
    qo = (i - 1) * LANES
    for s in range(1, width + 1):
        r0 = s * stride
        rp = r0 - stride
        for k in range(LANES):
            t = S[_U(r0 + _TC * LANES + k)]
            up = S[_U(r0 + pa * LANES + k)]
            diag = S[_U(rp + pa * LANES + k)]
            f = S[_U(r0 + _FV * LANES + k)]
            cb = S[_U(r0 + _CB * LANES + k)]
            cr = S[_U(r0 + _CR * LANES + k)]
            for r in range(ROWS):
                lf = _HL + r if r < ROWS - 1 else pb
                left = S[_U(rp + lf * LANES + k)]
                w = c1 if Q[_U(qo + r * LANES + k)] == t else mc2
                e = max(_as_lane(S, S[_U(rp + (_EL + r) * LANES + k)] - ge), _as_lane(S, left - go))
                f = max(_as_lane(S, f - ge), _as_lane(S, up - go))
                d = _as_lane(S, diag + w)
                h = max(max(d, zero), max(e, f))
                S[_U(r0 + lf * LANES + k)] = h
                S[_U(r0 + (_EL + r) * LANES + k)] = e
                cr = _as_lane(S, i + r) if h > cb else cr
                cb = max(h, cb)
                diag = left
                up = h
            S[_U(r0 + _FV * LANES + k)] = f
            S[_U(r0 + _CB * LANES + k)] = cb
            S[_U(r0 + _CR * LANES + k)] = cr


@njit(cache=True, inline="always")
def _block(S, Q, Hb, Eb, i, width, pa, pb, affine, c1, mc2, go, ge, zero):
    """One block of rows: slot 0 (the column before the strip) from the edge arrays, the rows,
    and the strip's last column back into the edge arrays for the next strip."""
    stride = _K_AFFINE * LANES if affine else _K_LINEAR * LANES
    last = width * stride
    for r in range(ROWS):
        lf = _HL + r if r < ROWS - 1 else pb
        for k in range(LANES):
            S[lf * LANES + k] = Hb[(i + r) * LANES + k]
            if affine:
                S[(_EL + r) * LANES + k] = Eb[(i + r) * LANES + k]
    if affine:
        _block_affine(S, Q, i, width, pa, pb, c1, mc2, go, ge, zero)
    else:
        _block_linear(S, Q, i, width, pa, pb, c1, mc2, go, zero)
    for r in range(ROWS):
        lf = _HL + r if r < ROWS - 1 else pb
        for k in range(LANES):
            Hb[(i + r) * LANES + k] = S[last + lf * LANES + k]
            if affine:
                Eb[(i + r) * LANES + k] = S[last + (_EL + r) * LANES + k]


@njit(cache=True, inline="always")
def _pass1_group(proto, codes, q_start, q_len, t_start, t_len, lanes, c1, c2, go, ge, affine, best, bi, bj):
    """Pass 1 of up to LANES pairs at once in lanes of proto's dtype (int16 or int32).

    lanes[k]: the pair of lane k, or -1. best[k], bi[k], bj[k]: the lane's
    best H and its first cell in row-major order (1-based; 0, 0 when the best
    is 0), as :func:`_end_of_best` returns them. Linear gaps: go = ge = g.
    The rows are padded to a multiple of ROWS as well.
    """
    m = 0
    n = 0
    for k in range(LANES):
        best[k] = 0
        bi[k] = 0
        bj[k] = 0
        p = lanes[k]
        if p >= 0:
            m = max(m, q_len[p])
            n = max(n, t_len[p])
    if m == 0 or n == 0:
        return
    m = (m + ROWS - 1) // ROWS * ROWS
    Q = np.empty(m * LANES, proto.dtype)    # Q[(i - 1) * LANES + k]: query code of row i
    for k in range(LANES):
        p = lanes[k]
        length = q_len[p] if p >= 0 else 0
        for i in range(m):
            c = codes[q_start[p] + i] if i < length else CODE_N
            Q[i * LANES + k] = min(c, CODE_N)
    stride = _K_AFFINE * LANES if affine else _K_LINEAR * LANES
    strip = min(n, _STRIP)
    S = np.zeros((strip + 1) * stride, proto.dtype)
    Hb = np.zeros((m + 1) * LANES, proto.dtype)                     # H[i][j0 - 1]: 0 left of the matrix
    Eb = np.full((m + 1) * LANES, _as_lane(proto, -go), proto.dtype)  # E[i][j0 - 1]: -O left of the matrix
    c1_ = _as_lane(proto, c1)
    mc2 = _as_lane(proto, -c2)
    go_ = _as_lane(proto, go)
    ge_ = _as_lane(proto, ge)
    zero = _as_lane(proto, 0)
    for j0 in range(0, n, strip):       # the strip holds columns j0 + 1 .. j0 + width (1-based)
        width = min(strip, n - j0)
        for k in range(LANES):
            p = lanes[k]
            length = t_len[p] if p >= 0 else 0
            S[_P0 * LANES + k] = 0      # H[0][j0]
            for s in range(1, width + 1):
                j = j0 + s - 1
                c = codes[t_start[p] + j] if j < length else _T_N
                r = s * stride
                S[r + _TC * LANES + k] = _T_N if c >= CODE_N else c
                S[r + _P0 * LANES + k] = 0          # H[0][j]
                S[r + _CB * LANES + k] = 0
                S[r + _CR * LANES + k] = 0
                if affine:
                    S[r + _FV * LANES + k] = -go    # F[0][j]
        i = 1
        while i <= m:
            _block(S, Q, Hb, Eb, i, width, _P0, _P1, affine, c1_, mc2, go_, ge_, zero)
            if i + ROWS <= m:
                _block(S, Q, Hb, Eb, i + ROWS, width, _P1, _P0, affine, c1_, mc2, go_, ge_, zero)
            i += 2 * ROWS
        for k in range(LANES):
            p = lanes[k]
            if p < 0:
                continue
            real = min(width, t_len[p] - j0)
            b = best[k]
            ri = bi[k]
            rj = bj[k]
            for s in range(1, real + 1):
                r = s * stride
                cb = np.int64(S[r + _CB * LANES + k])
                cr = np.int64(S[r + _CR * LANES + k])
                if cb > b or (cb == b and cr < ri):
                    b = cb
                    ri = cr
                    rj = j0 + s
            best[k] = b
            bi[k] = ri
            bj[k] = rj


# Pass 1 of one gap model, each a function of its own that the parallel drivers below call, rather than
# inlined into them: the gap model is a constant inside it (the other model's blocks are dropped), and the
# inlining and typing of pass 1 happen once, outside the driver's parallel loop, whose passes (type
# inference, parfor lowering) had run over all of it. A fresh machine's first compile of the linear driver:
# 12.3 -> 9.1 s, affine 16.4 -> 13.5 s (2 cores; benchmarks/README.md); the cells run as fast as before.

@njit(cache=True)
def _pass1_linear(proto, codes, q_start, q_len, t_start, t_len, lanes, c1, c2, g, best, bi, bj):
    _pass1_group(proto, codes, q_start, q_len, t_start, t_len, lanes, c1, c2, g, g, False, best, bi, bj)


@njit(cache=True)
def _pass1_affine(proto, codes, q_start, q_len, t_start, t_len, lanes, c1, c2, go, ge, best, bi, bj):
    _pass1_group(proto, codes, q_start, q_len, t_start, t_len, lanes, c1, c2, go, ge, True, best, bi, bj)


@njit(cache=True, inline="always")
def _finish(p, result, coords, op_counts, status):
    qs, qe, ts, te, count, bad = result
    coords[p, 0] = qs
    coords[p, 1] = qe
    coords[p, 2] = ts
    coords[p, 3] = te
    op_counts[p] = count
    status[p] = bad


@njit(cache=True)
def _pass2_linear(codes, q_start, q_len, t_start, t_len, scores, lanes, best, bi, bj, c1, c2, g, max_cells,
                  op_offsets, ops, op_counts, coords, status):
    """Pass 2 (:func:`_trace_linear`) of every pair of a group whose pass 1 gave best, bi, bj:
    coords, op_counts, status and the ops of each pair written."""
    for k in range(LANES):
        p = lanes[k]
        if p < 0:
            continue
        score = np.int64(scores[p])
        result = (0, 0, 0, 0, 0, ALIGN_OK if best[k] == score else ALIGN_SCORE_DIFFERS)
        if best[k] == score and score > 0:
            x = codes[q_start[p]:q_start[p] + q_len[p]]
            y = codes[t_start[p]:t_start[p] + t_len[p]]
            result = _trace_linear(x, y, bi[k], bj[k], score, c1, c2, g, max_cells, ops, op_offsets[p])
        _finish(p, result, coords, op_counts, status)


@njit(cache=True)
def _pass2_affine(codes, q_start, q_len, t_start, t_len, scores, lanes, best, bi, bj, c1, c2, go, ge, max_cells,
                  op_offsets, ops, op_counts, coords, status):
    """:func:`_pass2_linear` with affine gaps (:func:`_trace_affine`)."""
    for k in range(LANES):
        p = lanes[k]
        if p < 0:
            continue
        score = np.int64(scores[p])
        result = (0, 0, 0, 0, 0, ALIGN_OK if best[k] == score else ALIGN_SCORE_DIFFERS)
        if best[k] == score and score > 0:
            x = codes[q_start[p]:q_start[p] + q_len[p]]
            y = codes[t_start[p]:t_start[p] + t_len[p]]
            result = _trace_affine(x, y, bi[k], bj[k], score, c1, c2, go, ge, max_cells, ops, op_offsets[p])
        _finish(p, result, coords, op_counts, status)


@njit(cache=True, inline="always")
def _keep_best(lanes, best, scores):
    """scores[p] = pass 1's best H for each pair p of a group: its score (a screen without alignments)."""
    for k in range(LANES):
        p = lanes[k]
        if p >= 0:
            scores[p] = best[k]


# One driver per gap model, each specialized per lane type (proto's dtype) when first called, so that a
# run compiles only the pass 1 it uses (:func:`_pass1_linear` or :func:`_pass1_affine`). Each serves
# both jobs: with ``trace`` it aligns pairs of known scores (pass 2 after pass 1: kernels.sw.align), without
# it it scores them (pass 1 alone, into ``scores``: sw-lanes), so that a screen that aligns its survivors
# compiles one driver. The drivers release the GIL (nogil): kernels.sw.align runs one at a time (its lock)
# while a GPU screen's other task thread goes on launching kernels.

@njit(parallel=True, cache=True, nogil=True)
def _lanes_linear(proto, codes, q_start, q_len, t_start, t_len, scores, groups, run, c1, c2, g, trace,
                  max_cells, op_offsets, ops, op_counts, coords, status):
    """Pass 1 of the groups groups[run] (groups[g]: LANES pair indices, -1 for none) in parallel, in
    lanes of proto's dtype, then pass 2 (``trace``) or the scores; linear gaps."""
    for t in prange(run.shape[0]):
        lanes = groups[run[t]]
        best = np.zeros(LANES, np.int64)
        bi = np.zeros(LANES, np.int64)
        bj = np.zeros(LANES, np.int64)
        _pass1_linear(proto, codes, q_start, q_len, t_start, t_len, lanes, c1, c2, g, best, bi, bj)
        if trace:
            _pass2_linear(codes, q_start, q_len, t_start, t_len, scores, lanes, best, bi, bj, c1, c2, g,
                          max_cells, op_offsets, ops, op_counts, coords, status)
        else:
            _keep_best(lanes, best, scores)


@njit(parallel=True, cache=True, nogil=True)
def _lanes_affine(proto, codes, q_start, q_len, t_start, t_len, scores, groups, run, c1, c2, go, ge, trace,
                  max_cells, op_offsets, ops, op_counts, coords, status):
    """:func:`_lanes_linear` with affine gaps."""
    for t in prange(run.shape[0]):
        lanes = groups[run[t]]
        best = np.zeros(LANES, np.int64)
        bi = np.zeros(LANES, np.int64)
        bj = np.zeros(LANES, np.int64)
        _pass1_affine(proto, codes, q_start, q_len, t_start, t_len, lanes, c1, c2, go, ge, best, bi, bj)
        if trace:
            _pass2_affine(codes, q_start, q_len, t_start, t_len, scores, lanes, best, bi, bj, c1, c2, go, ge,
                          max_cells, op_offsets, ops, op_counts, coords, status)
        else:
            _keep_best(lanes, best, scores)


@njit(parallel=True, cache=True, nogil=True)
def _scalar_pairs(codes, q_start, q_len, t_start, t_len, scores, groups, run, c1, c2, go, ge, affine, trace,
                  max_cells, op_offsets, ops, op_counts, coords, status):
    """:func:`_lanes_linear` and :func:`_lanes_affine` with the scalar int64 pass 1 (:func:`_end_of_best`),
    pair by pair."""
    for t in prange(run.shape[0]):
        lanes = groups[run[t]]
        best = np.zeros(LANES, np.int64)
        bi = np.zeros(LANES, np.int64)
        bj = np.zeros(LANES, np.int64)
        for k in range(LANES):
            p = lanes[k]
            if p >= 0:
                x = codes[q_start[p]:q_start[p] + q_len[p]]
                y = codes[t_start[p]:t_start[p] + t_len[p]]
                bi[k], bj[k], best[k] = _end_of_best(x, y, c1, c2, go, ge)
        if not trace:
            _keep_best(lanes, best, scores)
        elif affine:
            _pass2_affine(codes, q_start, q_len, t_start, t_len, scores, lanes, best, bi, bj, c1, c2, go, ge,
                          max_cells, op_offsets, ops, op_counts, coords, status)
        else:
            _pass2_linear(codes, q_start, q_len, t_start, t_len, scores, lanes, best, bi, bj, c1, c2, go,
                          max_cells, op_offsets, ops, op_counts, coords, status)


INT16_MAX = 32767
INT32_MAX = 2 ** 31 - 1


def plan_groups(q_len, t_len, c1, c2, go, ge, threads=None):
    """(groups, kinds, run_order) for :func:`_lanes_linear` (affine) and :func:`_scalar_pairs`.

    Pairs sorted by (query length, target length) fill groups of LANES (fewer
    per group when there are too few pairs to give every thread a group).
    kinds[g]: int16 lanes where every score and intermediate of the group fits
    them (module notes: H <= c1 * min(m, n), intermediates >= -max(c2, O + E),
    rows <= m), int32 where those fit, else the scalar pass 1; the scalar one
    also for negative penalties, where the padding argument fails.
    run_order: the groups in a fixed shuffled order, so that threads taking
    contiguous chunks get groups of mixed sizes.
    """
    from numba import get_num_threads

    q_len = np.asarray(q_len, np.int64)
    t_len = np.asarray(t_len, np.int64)
    pairs = q_len.shape[0]
    threads = get_num_threads() if threads is None else threads
    per = min(LANES, max(1, -(-pairs // max(1, threads))))
    count = -(-pairs // per) if pairs else 0
    order = np.lexsort((t_len, q_len))
    groups = np.full((count, LANES), -1, np.int64)
    slots = np.full(count * per, -1, np.int64)
    slots[:pairs] = order
    groups[:, :per] = slots.reshape(count, per)
    real = groups >= 0
    shortest = np.where(real, np.minimum(q_len[groups], t_len[groups]), 0).max(axis=1, initial=0)
    rows = (np.where(real, q_len[groups], 0).max(axis=1, initial=0) + ROWS - 1) // ROWS * ROWS   # padded
    bound = float(max(c1, 0)) * shortest.astype(np.float64)
    low = max(int(c2), int(go) + int(ge))
    kinds = np.full(count, KIND_SCALAR, np.int8)
    if min(int(c1), int(c2), int(go), int(ge)) >= 0:
        fits32 = (bound <= INT32_MAX) & (rows <= INT32_MAX) & (int(c1) <= INT32_MAX) & (low <= 2 ** 30)
        fits16 = (bound <= INT16_MAX) & (rows <= INT16_MAX) & (int(c1) <= INT16_MAX) & (low <= 2 ** 14)
        kinds[fits32] = KIND_INT32
        kinds[fits16] = KIND_INT16
    run_order = np.random.default_rng(0).permutation(count).astype(np.int64)
    return groups, kinds, run_order


COLD_SCALAR_CELLS = 2e9
"""Up to this many cells (query x target, summed over the pairs), alignments use the scalar pass 1
while the lane drivers are not compiled yet (a fresh machine): their first compile takes 10-15 s
more than the scalar driver's (2 cores, empty Numba cache), the time the scalar pass takes over
about 2e9 cells on two threads."""


def _lanes_compiled(affine: bool) -> bool:
    """Whether the lane driver of this gap model costs no compile: compiled in this process, or in
    Numba's on-disk cache."""
    from ...numba_ahead import in_cache

    driver = _lanes_affine if affine else _lanes_linear
    return bool(driver.signatures) or in_cache(driver)


def compile_lanes_soon(affine: bool) -> threading.Event:
    """The lane driver's first compile in a child process, then its load here, on a thread of its own
    (numba_ahead), once per process; the event is set once the driver is loaded. Without it a machine
    whose batches all stay under COLD_SCALAR_CELLS never compiled the lanes and ran the scalar pass 1 for
    good: on the H100 host the issue's 100,000 x 1,000 screen took 37 s with its alignments, 11 s without."""
    from ...numba_ahead import WarmUp, load_once

    gaps = "affine" if affine else "linear"
    return load_once(f"sw-lanes-{gaps}", [WarmUp(f"{__name__}:lanes_once", (f"{__name__}:_lanes_{gaps}",), gaps)])


def lanes_ready(affine: bool, wait: bool = False) -> bool:
    """Whether the lane driver of this gap model costs no compile (:func:`_lanes_compiled`). Where it
    would, its compile starts in the background (:func:`compile_lanes_soon`), and with ``wait`` this
    returns (True) once the driver is loaded."""
    if _lanes_compiled(affine):
        return True
    loaded = compile_lanes_soon(affine)
    if wait:
        loaded.wait()
    return wait


def lanes_once(gaps: str) -> None:
    """Two small pairs aligned through the int16 lane driver of ``gaps`` ("linear" or "affine"), past
    the cold rule: what compiles (or loads) that driver for the argument types of every batch."""
    codes = np.tile(np.arange(4, dtype=np.uint8), 6)   # ACGT x 6: query [0, 8), target [8, 24)
    start = np.array([0, 0], np.int64)
    q_len, t_start, t_len = np.array([8, 8], np.int64), np.array([8, 8], np.int64), np.array([16, 16], np.int64)
    c1, c2, go, ge = (2, 1, 5, 2) if gaps == "affine" else (2, 1, 1, 1)
    scores = np.full(2, 8 * c1, np.int64)   # the query lies whole in the target
    room = q_len + t_len
    _in_lanes(codes, start, q_len, t_start, t_len, scores, c1, c2, go, ge, gaps == "affine", True, 1 << 20,
              np.cumsum(room) - room, np.empty(int(room.sum()) + 1, np.uint8), np.zeros(2, np.int64),
              np.zeros((2, 4), np.int64), np.zeros(2, np.int8), cold_rule=False)


def _in_lanes(codes, q_start, q_len, t_start, t_len, scores, c1, c2, go, ge, affine, trace, max_cells,
              op_offsets, ops, op_counts, coords, status, cold_rule: bool = True):
    """Plan the groups, then run each kind's driver on its groups. On a machine that has not compiled the
    lane drivers (unless ``cold_rule`` is off) their compile starts in the background; a small batch of
    alignments (COLD_SCALAR_CELLS) runs all scalar meanwhile, anything else waits for it.
    ``trace``: align (pass 2); else the scores.

    Scores always wait: a screen's batches are many and small, and every way of scoring them meanwhile
    cost more than the wait on a fresh 2-core machine (the first 1,000 x 100 screen at 2/1/1: 21.1-22.0 s
    waiting, 38.9 s by the scalar pass meanwhile, 40.0-51.7 s by sw-gotoh meanwhile, 29.1 s by sw-bpbc
    before sw-lanes; each time the lanes' compile shared the cores with the work). The price is the
    small screens': at 2/3/5/2 with the q-gram filter, 27.8 s waiting against 11.4 s by sw-gotoh before.
    Once compiled (Numba's cache), the same screens take 5.4-5.9 s and 3.6-3.7 s (18.1 s and 3.9-4.1 s)."""
    groups, kinds, run_order = plan_groups(q_len, t_len, c1, c2, go, ge)
    cells = float(np.dot(np.asarray(q_len, np.float64), np.asarray(t_len, np.float64)))
    if cold_rule and not lanes_ready(bool(affine), wait=not trace or cells > COLD_SCALAR_CELLS):
        kinds[:] = KIND_SCALAR
    c1, c2, go, ge, max_cells = (np.int64(v) for v in (c1, c2, go, ge, max_cells))
    data = (codes, q_start, q_len, t_start, t_len, scores, groups)
    out = (op_offsets, ops, op_counts, coords, status)
    for kind, proto in ((KIND_INT16, np.int16), (KIND_INT32, np.int32), (KIND_SCALAR, None)):
        run = run_order[kinds[run_order] == kind]
        if run.size == 0:
            continue
        if proto is None:
            _scalar_pairs(*data, run, c1, c2, go, ge, bool(affine), trace, max_cells, *out)
        elif affine:
            _lanes_affine(np.zeros(0, proto), *data, run, c1, c2, go, ge, trace, max_cells, *out)
        else:
            _lanes_linear(np.zeros(0, proto), *data, run, c1, c2, go, trace, max_cells, *out)


def align_pairs(codes, q_start, q_len, t_start, t_len, scores, c1, c2, gap, max_cells,
                op_offsets, ops, op_counts, coords, status):
    """Alignments of many (query, target) pairs with known scores, in parallel (linear gaps).

    codes: all sequences' text codes, concatenated; pair p is query
    codes[q_start[p]:+q_len[p]] and target codes[t_start[p]:+t_len[p]].
    Pair p may write up to q_len + t_len ops from op_offsets[p].
    coords[p] = (query start, query end, target start, target end).
    Each alignment is two passes: pass 1 finds the end (the first cell in
    row-major order holding the best H), LANES pairs at once
    (:func:`_pass1_group`); pass 2 the start and the operations (:func:`_trace_linear`).
    """
    _in_lanes(codes, q_start, q_len, t_start, t_len, scores, c1, c2, gap, gap, False, True, max_cells,
              op_offsets, ops, op_counts, coords, status)


def align_pairs_affine(codes, q_start, q_len, t_start, t_len, scores, c1, c2, go, ge, max_cells,
                       op_offsets, ops, op_counts, coords, status):
    """:func:`align_pairs` with affine gaps (gap of length L: -(go + (L - 1) ge)); pass 2 is
    :func:`_trace_affine`."""
    _in_lanes(codes, q_start, q_len, t_start, t_len, scores, c1, c2, go, ge, True, True, max_cells,
              op_offsets, ops, op_counts, coords, status)


def score_pairs(codes, q_start, q_len, t_start, t_len, c1, c2, go, ge, affine, scores):
    """scores[p] (int64) = the Smith-Waterman score of each (query, target) pair, as :func:`align_pairs`
    lays them out: pass 1 alone, LANES pairs at once (sw-lanes). Linear gaps: go = ge = g."""
    nothing = np.zeros(0, np.int64)   # pass 2's outputs, unused: typed as align_pairs passes them
    _in_lanes(codes, q_start, q_len, t_start, t_len, scores, c1, c2, go, ge, affine, False, np.int64(0),
              nothing, np.zeros(0, np.uint8), nothing, np.zeros((0, 4), np.int64), np.zeros(0, np.int8))


@njit(parallel=True, cache=True)
def count_bases(codes, starts, lengths, counts):
    """counts[k, b] = occurrences of base code b (0..3) in codes[starts[k]:starts[k] + lengths[k]]."""
    for k in prange(starts.shape[0]):
        start = starts[k]
        for q in range(lengths[k]):
            c = codes[start + q]
            if c < CODE_N:
                counts[k, c] += 1


# --------------------------------------------------------------------------
# The q-gram filter of threshold screening (kernels/sw/__init__.py, QgramFilter)
# --------------------------------------------------------------------------

@njit(cache=True)
def _qgram_words(codes, start, length, q, words):
    """words[j] = the word of codes[start + j:start + j + q] (2 bits a base), or -1 where it holds N, for
    every j < length - q + 1; returns that count (0 when length < q)."""
    mask = (1 << (2 * q)) - 1
    word, run = 0, 0
    for p in range(length):
        c = codes[start + p]
        run = run + 1 if c < CODE_N else 0
        word = ((word << 2) | (c & 3)) & mask
        if p >= q - 1:
            words[p - q + 1] = word if run >= q else -1
    return max(length - q + 1, 0)


@njit(cache=True)
def _index_qgrams(codes, start, length, q, heads, positions, words):
    """Bucket the q-grams of codes[start:start + length] by word (none holding N): afterwards the
    positions of word w are positions[heads[w - 1]:heads[w]] (heads[-1] read as 0)."""
    grams = _qgram_words(codes, start, length, q, words)
    heads[:] = 0
    for i in range(grams):
        if words[i] >= 0:
            heads[words[i]] += 1
    total = 0
    for w in range(heads.shape[0]):   # exclusive prefix sums: heads[w] = where word w's bucket begins
        count = heads[w]
        heads[w] = total
        total += count
    for i in range(grams):            # each position at its bucket's next slot: heads[w] then ends at the
        if words[i] >= 0:             # bucket's end, which is where word w + 1's begins
            positions[heads[words[i]]] = i
            heads[words[i]] += 1


@njit(cache=True)
def _passing_bins(x_words, grams, m, y_heads, y_positions, n, q, width_shift, need, bins):
    """(first, last) bin b whose bins b and b + 1 of 2**width_shift diagonals hold ``need`` q-gram hits
    between them, (-1, -1) where none does: x's words (:func:`_qgram_words`, ``grams`` of them, x of length
    m) walked through y's index (:func:`_index_qgrams`, y of length n), each hit (i, j) counted on diagonal
    j - i + m - q (so that every one is >= 0)."""
    count = ((n + m) >> width_shift) + 2
    bins[:count] = 0
    for i in range(grams):
        word = x_words[i]
        if word >= 0:
            for e in range(y_heads[word - 1] if word > 0 else 0, y_heads[word]):
                bins[(y_positions[e] - i + m - q) >> width_shift] += 1
    first_bin, last_bin = -1, -1
    for b in range(count - 1):
        if bins[b] + bins[b + 1] >= need:
            if first_bin < 0:
                first_bin = b
            last_bin = b
    return first_bin, last_bin


@njit(parallel=True, cache=True, nogil=True)
def _index_every(codes, starts, lengths, q, heads, positions, position_start):
    """Each sequence k's q-gram index (:func:`_index_qgrams`) in heads[k] and
    positions[position_start[k]:position_start[k + 1]]."""
    for k in prange(starts.shape[0]):
        words = np.empty(max(lengths[k], 1), np.int64)
        _index_qgrams(codes, starts[k], lengths[k], q, heads[k], positions[position_start[k]:position_start[k + 1]],
                      words)


@njit(parallel=True, cache=True, nogil=True)
def qgram_filter(codes, x_start, x_len, y_start, y_len, q, width_shift, need, product, first, last):
    """first[p], last[p] (flattened (x, y) for a product, x-major): pair p's first and last passing bin
    (:func:`_passing_bins`), -1 where none passes, which proves its score below the threshold (QgramFilter).
    Each y is indexed, and x's q-grams are walked through it: a product indexes every y once (as qgram.cu's
    tiles kernel does), a list of pairs each pair's y."""
    if product:
        y_count = y_start.shape[0]
        position_start = np.zeros(y_count + 1, np.int64)
        position_start[1:] = np.cumsum(np.maximum(y_len, 1))
        heads = np.empty((y_count, 1 << (2 * q)), np.int64)
        positions = np.empty(position_start[-1], np.int64)
        _index_every(codes, y_start, y_len, q, heads, positions, position_start)
        longest_y = y_len.max() if y_count else 0
        for i in prange(x_start.shape[0]):
            words = np.empty(max(x_len[i], 1), np.int64)
            grams = _qgram_words(codes, x_start[i], x_len[i], q, words)
            bins = np.empty(((longest_y + x_len[i]) >> width_shift) + 2, np.int64)
            for k in range(y_count):
                p = i * y_count + k
                first[p], last[p] = _passing_bins(words, grams, x_len[i], heads[k],
                                                  positions[position_start[k]:position_start[k + 1]], y_len[k], q,
                                                  width_shift, need, bins)
    else:
        for i in prange(x_start.shape[0]):
            heads = np.empty(1 << (2 * q), np.int64)
            positions = np.empty(max(y_len[i], 1), np.int64)
            y_words = np.empty(max(y_len[i], 1), np.int64)
            _index_qgrams(codes, y_start[i], y_len[i], q, heads, positions, y_words)
            words = np.empty(max(x_len[i], 1), np.int64)
            grams = _qgram_words(codes, x_start[i], x_len[i], q, words)
            bins = np.empty(((y_len[i] + x_len[i]) >> width_shift) + 2, np.int64)
            first[i], last[i] = _passing_bins(words, grams, x_len[i], heads, positions, y_len[i], q, width_shift,
                                              need, bins)
