"""Numba code for k-differences search: Myers' bit-vector algorithm.

References (the equations cited in the comments):

* G. Myers, "A fast bit-vector algorithm for approximate string matching
  based on dynamic programming", J. ACM 46(3), 1999.
* H. Hyyrö, "A bit-vector algorithm for computing Levenshtein and Damerau
  edit distances", Nordic J. Computing 10, 2003 (the formulation used here).

The dynamic programming matrix of the *search* problem (Sellers) is

    D[0][j] = 0                     (free start anywhere in the text)
    D[i][0] = i
    D[i][j] = min(D[i-1][j-1] + (P[i-1] != T[j-1]), D[i-1][j] + 1, D[i][j-1] + 1)

and d(e) = D[m][e]. Adjacent cells differ by -1, 0 or +1, so a column is
stored as two bit-vectors of its vertical deltas Delta_v[i] = D[i][j] - D[i-1][j]:

    Pv bit i-1 set  <=>  Delta_v[i] = +1        Mv bit i-1 set  <=>  Delta_v[i] = -1

and one text character advances the whole column with a dozen word
operations. Only D[m][j] (the "score") is kept explicitly: it changes by the
horizontal delta of the last row, read from bit m-1 of Ph / Mh.

Pattern equality vectors ("Peq", Myers 1999 section 3): bit i of Peq[c] is
set when pattern position i matches text code c. They are built from the
IUPAC masks, so an N in the pattern sets its bit in all four; Peq[4] (text
code NEVER) is 0: N in the text matches nothing.

Rows of length <= 64 take one word; four such rows are advanced together per
text character (:func:`myers_word4_tasks`) for instruction-level parallelism.
Patterns longer than 64 use ceil(m/64) words ("blocks", Myers 1999 section
4; Hyyrö 2003): a block is advanced like a single word, except that the
horizontal delta of the row above its first row (``hin``: +1, 0 or -1) comes
in from the block above, and the delta of its last row (``hout``) goes out to
the block below. Blocks far below every cell <= k are not computed at all
(Ukkonen's cutoff, as in Myers 1999 section 4.2), see :func:`_search_blocks`.

Parallel kernels follow the buffered task protocol of ``kernels/driver.py``: task
``i`` writes at most ``caps[i]`` hits from ``out_offsets[i]`` and returns its
true hit count.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

ZERO = np.uint64(0)
ONE = np.uint64(1)
ALL_ONES = ~np.uint64(0)
WORD = 64


@njit(cache=True, inline="always")
def advance_block(pv, mv, eq, hin, high):
    """Advance one block of the column by one text character.

    pv, mv: vertical delta vectors of the previous column (Pv, Mv)
    eq:     Peq[c] of this block for the text character c
    hin:    horizontal delta (-1, 0, +1) of the row just above the block
    high:   the bit of the block's last row (1 << 63 for a full block)

    Returns the new (pv, mv) and the horizontal delta of the block's last
    row, hout. With hin = 0 this is exactly the single-word step of Myers
    (1999), Fig. 3 / Hyyrö (2003) Fig. 3.
    """
    # Xv: cells whose vertical delta may be 0 or -1 after this column:
    # a match on the diagonal, or a -1 vertical delta in the previous column.
    xv = eq | mv
    # A -1 coming in from above acts, for the horizontal deltas, like a match
    # in the block's first row (Hyyrö 2003, block version of Xh).
    if hin < 0:
        eq |= ONE
    # Xh: cells whose horizontal delta may be 0 or -1. The addition carries a
    # match down a run of +1 vertical deltas (Myers 1999, Lemma 4 / eq. for Xh).
    xh = (((eq & pv) + pv) ^ pv) | eq
    # Horizontal deltas of this column (Myers 1999: Ph = Mv | ~(Xh | Pv), Mh = Pv & Xh).
    ph = mv | ~(xh | pv)
    mh = pv & xh
    hout = 0
    if (ph & high) != ZERO:
        hout = 1
    elif (mh & high) != ZERO:
        hout = -1
    # Shift the horizontal deltas down one row; the first row receives hin.
    ph = ph << ONE
    mh = mh << ONE
    if hin < 0:
        mh |= ONE
    elif hin > 0:
        ph |= ONE
    # New vertical deltas (Myers 1999: Pv = Mh | ~(Xv | Ph), Mv = Ph & Xv).
    new_pv = mh | ~(xv | ph)
    new_mv = ph & xv
    return new_pv, new_mv, hout


# ---------------------------------------------------------------------------
# Rows of length 1..64: one word per column
# ---------------------------------------------------------------------------
#
# Layout: a row of length m occupies the TOP m bits of the word (pattern
# position j at bit 64 - m + j), so its last row is always bit 63 whatever m
# is. The 64 - m low bits are padding rows that match every text code and
# start with vertical delta 0: they stay all-zero rows for ever
# (D = min(D[above][j-1] + 0, ...) = 0), i.e. they behave exactly like the
# all-zero row 0 of the search problem. The score is then always read from
# bit 63, which keeps the four-row kernel below within the CPU's registers.


@njit(cache=True, inline="always")
def _word_peq(masks, row, m, peq, lane):
    """Fill peq[c, lane] for a row of length m <= 64 in the top-aligned layout."""
    pad = WORD - m
    padding = (ONE << np.uint64(pad)) - ONE if pad > 0 else ZERO
    for c in range(4):
        peq[c, lane] = padding
    peq[4, lane] = padding  # text code NEVER matches no pattern position, only padding
    for j in range(m):
        mask = masks[row, j]
        for c in range(4):
            if (mask >> c) & 1:
                peq[c, lane] |= ONE << np.uint64(pad + j)


@njit(cache=True, inline="always")
def _initial_pv(m):
    """Vertical deltas of column 0 (D[i] = i on pattern rows): +1 on the top m bits only."""
    return ALL_ONES << np.uint64(WORD - m) if m < WORD else ALL_ONES


@njit(cache=True, inline="always")
def _word_step(eq, pv, mv, score):
    """One text character for one single-word row: advance_block with hin = 0
    (the search problem's row 0 is all zeros) and the last row at bit 63."""
    xv = eq | mv
    xh = (((eq & pv) + pv) ^ pv) | eq
    ph = mv | ~(xh | pv)
    mh = pv & xh
    # Branch-free score update: +1 / -1 from the last row's horizontal delta.
    score += np.int64(ph >> np.uint64(WORD - 1)) - np.int64(mh >> np.uint64(WORD - 1))
    ph = ph << ONE
    mh = mh << ONE
    return mh | ~(xv | ph), ph & xv, score


@njit(parallel=True, cache=True)
def myers_word_tasks(task_ids, out_offsets, caps, out_row, out_end, out_dist,
                     text, masks, lengths, k, task_row, task_lo, task_hi):
    """Rows of length 1..64, one row per task.

    Task ``t`` reports the ends e of row ``task_row[t]`` with
    ``task_lo[t] <= e - 1 < task_hi[t]`` and d(e) <= k. It starts its column
    ``m + k`` characters before its first end: an alignment of cost <= k
    spans at most m + k text characters, so d(e) <= k never depends on
    text before e - m - k, and starting fresh there (column of D[i] = i) gives
    exactly d(e) for every reported end. That is what lets one long text be
    cut into independent segments when there are few rows.
    """
    counts = np.zeros(task_ids.shape[0], np.int64)
    for i in prange(task_ids.shape[0]):
        t = task_ids[i]
        row = task_row[t]
        m = np.int64(lengths[row])
        peq = np.empty((5, 1), np.uint64)
        _word_peq(masks, row, m, peq, 0)
        pv = _initial_pv(m)
        mv = ZERO
        score = m
        first_end = task_lo[t]
        base = out_offsets[i]
        cap = caps[i]
        found = 0
        for p in range(max(np.int64(0), first_end - m - k), task_hi[t]):
            pv, mv, score = _word_step(peq[text[p], 0], pv, mv, score)
            if score <= k and p >= first_end:
                if found < cap:
                    out_row[base + found] = row
                    out_end[base + found] = p + 1
                    out_dist[base + found] = score
                found += 1
        counts[i] = found
    return counts


@njit(cache=True)
def _search_word4(text, k, peq, rows, live, lengths, first_end, stop,
                  out_row, out_end, out_dist, base, cap):
    """The loop of :func:`myers_word4_tasks` for one task; returns its hit count.

    (A function of its own: compiled outside the parallel region, the four
    lanes' state stays in registers.)
    """
    pv0 = _initial_pv(np.int64(lengths[rows[0]]))
    pv1 = _initial_pv(np.int64(lengths[rows[1]]))
    pv2 = _initial_pv(np.int64(lengths[rows[2]]))
    pv3 = _initial_pv(np.int64(lengths[rows[3]]))
    mv0 = mv1 = mv2 = mv3 = ZERO
    s0 = np.int64(lengths[rows[0]])
    s1 = np.int64(lengths[rows[1]])
    s2 = np.int64(lengths[rows[2]])
    s3 = np.int64(lengths[rows[3]])
    m_max = max(max(s0, s1), max(s2, s3))
    found = 0
    # Warm-up: the m_max + k characters before the first end, nothing to report.
    for p in range(max(np.int64(0), first_end - m_max - k), first_end):
        c = text[p]
        pv0, mv0, s0 = _word_step(peq[c, 0], pv0, mv0, s0)
        pv1, mv1, s1 = _word_step(peq[c, 1], pv1, mv1, s1)
        pv2, mv2, s2 = _word_step(peq[c, 2], pv2, mv2, s2)
        pv3, mv3, s3 = _word_step(peq[c, 3], pv3, mv3, s3)
    for p in range(first_end, stop):
        c = text[p]
        pv0, mv0, s0 = _word_step(peq[c, 0], pv0, mv0, s0)
        pv1, mv1, s1 = _word_step(peq[c, 1], pv1, mv1, s1)
        pv2, mv2, s2 = _word_step(peq[c, 2], pv2, mv2, s2)
        pv3, mv3, s3 = _word_step(peq[c, 3], pv3, mv3, s3)
        if min(min(s0, s1), min(s2, s3)) <= k:
            # Rare: at least one lane has a hit at this end.
            for lane in range(4):
                score = s0 if lane == 0 else s1 if lane == 1 else s2 if lane == 2 else s3
                if score <= k and live[lane]:
                    if found < cap:
                        out_row[base + found] = rows[lane]
                        out_end[base + found] = p + 1
                        out_dist[base + found] = score
                    found += 1
    return found


@njit(parallel=True, cache=True)
def myers_word4_tasks(task_ids, out_offsets, caps, out_row, out_end, out_dist,
                      text, masks, lengths, k, task_rows, task_lo, task_hi):
    """Rows of length 1..64, four rows per task, all four advanced per text character.

    The same algorithm as :func:`myers_word_tasks`. One row's step is a chain
    of about a dozen dependent operations, which leaves most of the CPU's
    execution units idle; four independent rows fill them (about twice the
    throughput). ``task_rows[t]`` holds four rows; -1 marks an unused lane,
    which runs a copy of lane 0 and reports nothing. The segment starts
    ``m_max + k`` characters early, which is exact for every row of the task.
    """
    counts = np.zeros(task_ids.shape[0], np.int64)
    for i in prange(task_ids.shape[0]):
        t = task_ids[i]
        rows = np.empty(4, np.int64)
        live = np.empty(4, np.bool_)
        peq = np.empty((5, 4), np.uint64)  # peq[c, lane]
        for lane in range(4):
            live[lane] = task_rows[t, lane] >= 0
            rows[lane] = task_rows[t, lane] if live[lane] else task_rows[t, 0]
            _word_peq(masks, rows[lane], np.int64(lengths[rows[lane]]), peq, lane)
        counts[i] = _search_word4(text, k, peq, rows, live, lengths, task_lo[t], task_hi[t],
                                  out_row, out_end, out_dist, out_offsets[i], caps[i])
    return counts


# ---------------------------------------------------------------------------
# Rows of any length: blocks of 64 rows
# ---------------------------------------------------------------------------

@njit(cache=True)
def _search_blocks(text, masks, row, m, k, first_end, stop,
                   out_row, out_end, out_dist, base, cap):
    """Rows of any length: ceil(m/64) blocks with Ukkonen's cutoff. Returns the hit count.

    ``last`` is the last block being computed. The invariant (Ukkonen 1985,
    Myers 1999 section 4.2) is that every cell of the blocks below ``last``
    exceeds k in the current column. Cells <= k only ever derive from cells
    <= k, so those blocks cannot change any cell <= k and need no work.

    * A block is dropped when its last row's score is >= k + 64: each of its
      (at most 64) rows is then > k.
    * Block ``last + 1`` must start when one of its cells may reach <= k in
      this column. Since it was > k in the previous column, its first row
      can only reach k through the diagonal from D[r][j-1] = k with a match,
      or from the row above, D[r][j] = k - 1 (hin = -1), where r is the last
      row of block ``last``. Its previous column is then taken as
      D[r][j-1] + 1, + 2, ... (Pv all ones): an upper bound of the true
      values, all of which are > k, so no cell <= k is affected.
    """
    words = (m + WORD - 1) // WORD
    # Peq laid out [code, block] so a column reads one contiguous run.
    peq = np.zeros((5, words), np.uint64)
    for j in range(m):
        mask = masks[row, j]
        for c in range(4):
            if (mask >> c) & 1:
                peq[c, j // WORD] |= ONE << np.uint64(j % WORD)
    full_high = ONE << np.uint64(WORD - 1)
    last_high = ONE << np.uint64((m - 1) % WORD)
    pv = np.full(words, ALL_ONES, np.uint64)
    mv = np.zeros(words, np.uint64)
    # score[b]: D at the last row of block b, in the current column.
    score = np.empty(words, np.int64)
    for b in range(words):
        score[b] = min((b + 1) * WORD, m)
    # Initially (D[i] = i) block b has a cell <= k iff its first row 64b+1 <= k.
    last = min(words - 1, max(0, (k - 1) // WORD))
    found = 0
    for p in range(max(np.int64(0), first_end - m - k), stop):
        c = text[p]
        hin = 0  # the search problem's row 0 is all zeros: no horizontal change above block 0
        for b in range(last + 1):
            high = last_high if b == words - 1 else full_high
            pv[b], mv[b], hout = advance_block(pv[b], mv[b], peq[c, b], hin, high)
            score[b] += hout
            hin = hout
        if (last < words - 1 and score[last] - hin <= k
                and ((peq[c, last + 1] & ONE) != ZERO or hin < 0)):
            # Start the next block (see the docstring for why this is exact).
            previous_last_row = score[last] - hin
            last += 1
            high = last_high if last == words - 1 else full_high
            width = min(WORD, m - last * WORD)
            pv[last] = ALL_ONES
            mv[last] = ZERO
            pv[last], mv[last], hout = advance_block(pv[last], mv[last], peq[c, last], hin, high)
            score[last] = previous_last_row + width + hout
        else:
            while last > 0 and score[last] >= k + WORD:
                last -= 1
        if last == words - 1 and score[last] <= k and p >= first_end:
            if found < cap:
                out_row[base + found] = row
                out_end[base + found] = p + 1
                out_dist[base + found] = score[last]
            found += 1
    return found


@njit(parallel=True, cache=True)
def myers_blocks_tasks(task_ids, out_offsets, caps, out_row, out_end, out_dist,
                       text, masks, lengths, k, task_row, task_lo, task_hi):
    """Rows of any length (used for m > 64); tasks as in :func:`myers_word_tasks`."""
    counts = np.zeros(task_ids.shape[0], np.int64)
    for i in prange(task_ids.shape[0]):
        t = task_ids[i]
        row = task_row[t]
        counts[i] = _search_blocks(text, masks, row, np.int64(lengths[row]), k,
                                   task_lo[t], task_hi[t],
                                   out_row, out_end, out_dist, out_offsets[i], caps[i])
    return counts
