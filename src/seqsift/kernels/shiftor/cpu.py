"""Shift-Or and Wu-Manber as inclusive scans, on the CPU (NumPy and Numba).

The paper: Mitani, Ino and Hagihara, "Parallelizing exact and approximate
string matching via inclusive scan on a GPU", IEEE TPDS 2017
(papers/mitani2017-shift-or-inclusive-scan.txt). Equation, definition and
algorithm numbers below are the paper's.

Bit-vectors are 64-bit words holding w = 32 or 64 bits (``wmask``). As in
the paper, bit i of a state is 0 ("active") when the first i + 1 pattern
characters match the text ending here, and the mask B[c] of a text byte c has
bit i set when pattern position i does NOT match c (:func:`mask_tables`).

What is here:

* the mask tables B[c], an aggregate applied to a state (Theorem 6) and one
  Wu-Manber step (Eq. (2));
* the CPU paths of the three algorithms (Numba, parallel over segments):
  :func:`tribrid_exact_tasks` and :func:`tribrid_wm_tasks` emulate the GPU
  kernels of ``shiftor.cu`` step by step (segments with a halo, tiles of
  warps x 32 lanes x alpha characters, per-thread local scans, warp scans
  with static shifts, the block combination of Table 1 when warps > 1 (the
  GPU runs one warp per segment), phase 3 or the wildcard extension), so the
  GPU's formulation itself is tested in CI;
  :func:`segmented_wm_tasks` is GBPR: plain Wu-Manber per segment plus a
  halo of m + k - 1 characters.

Parallel kernels follow the buffered task protocol of ``driver.run_buffered_tasks``.
The paper's operators (Definitions 1-4), the plain Shift-Or and Wu-Manber and
the scan formulation written literally (Algorithms 1 and 2) are in
tests/shiftor_scan_reference.py, with the tests of Theorems 1-7.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

ZERO = np.uint64(0)
ONE = np.uint64(1)
ALL_ONES = ~np.uint64(0)
LANES = 32
CODES = 256


# ---------------------------------------------------------------------------
# Words and mask tables
# ---------------------------------------------------------------------------

@njit(cache=True, inline="always")
def shl(x, u):
    """x << u for a non-negative int u; 0 once u reaches 64 (every bit shifted out)."""
    if u >= 64:
        return ZERO
    return x << np.uint64(u)


@njit(cache=True, inline="always")
def low_bits(count):
    """A word with its ``count`` lowest bits set (count in 0..64)."""
    if count >= 64:
        return ALL_ONES
    return (ONE << np.uint64(count)) - ONE


def mask_tables(masks: np.ndarray, lengths: np.ndarray, alphabet: str = "dna") -> np.ndarray:
    """B[row, c] (rows x 256 uint64): bit i set when position i of the row does NOT match byte c.

    DNA: text codes 0-3 match by the row's IUPAC masks, every other byte (code
    4 = N and the rest) matches nothing. Bytes: plain equality. Bits >= m are 0.
    """
    masks = np.asarray(masks, dtype=np.uint8)
    rows = masks.shape[0]
    tables = np.zeros((rows, CODES), dtype=np.uint64)
    codes = np.arange(CODES, dtype=np.int64)
    for row in range(rows):
        m = int(lengths[row])
        if m > 64:
            raise ValueError(f"Shift-Or words hold at most 64 pattern characters, not {m}")
        row_masks = masks[row, :m].astype(np.int64)[:, None]
        if alphabet == "bytes":
            matches = row_masks == codes[None, :]
        else:
            matches = (codes[None, :] < 4) & (((row_masks >> np.minimum(codes, 7)[None, :]) & 1) == 1)
        weights = np.uint64(1) << np.arange(m, dtype=np.uint64)
        tables[row] = np.bitwise_or.reduce(np.where(~matches, weights[:, None], np.uint64(0)), axis=0) \
            if m else np.uint64(0)
    return tables


# ---------------------------------------------------------------------------
# Aggregates and Wu-Manber steps (what the tribrid kernels below compute with)
# ---------------------------------------------------------------------------

@njit(cache=True, inline="always")
def apply_pair(state, u, x, y, wmask):
    """An aggregate <u, <x, y>> applied to a state: ((state << u) & ~x) | y (Theorem 6)."""
    return ((shl(state, u) & ~x) | y) & wmask


@njit(cache=True, inline="always")
def wm_step(states, mask, k, wmask):
    """One text character of Eq. (2) on states[0..k] (in place)."""
    previous_old = states[0]
    states[0] = ((states[0] << ONE) | mask) & wmask
    for d in range(1, k + 1):
        old = states[d]
        states[d] = (((old << ONE) | mask) & previous_old & (previous_old << ONE)
                     & (states[d - 1] << ONE)) & wmask
        previous_old = old


@njit(cache=True)
def wm_initial_states(k, wmask):
    """R_{d,0} = 1^{m-d} 0^d for d = 0..k (Eq. (2))."""
    states = np.empty(k + 1, np.uint64)
    for d in range(k + 1):
        states[d] = shl(ALL_ONES, d) & wmask
    return states


# ---------------------------------------------------------------------------
# The tribrid scheme on the CPU (the GPU kernels' formulation, shiftor.cu)
# ---------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _report(out_row, out_end, out_dist, base, cap, count, row, end, distance):
    if count < cap:
        out_row[base + count] = row
        out_end[base + count] = end
        out_dist[base + count] = distance
    return count + 1


@njit(cache=True)
def _warp_scan_x(scanned, warp, alpha, word_bits, wmask):
    """Hillis-Steele inclusive scan under dagger over one warp's lanes (in place).
    Step s combines with the lane 2^s below; the right operand then covers
    alpha * 2^s characters, a static shift. Steps stop once it reaches w."""
    s = 1
    while s < LANES and alpha * s < word_bits:
        for lane in range(LANES - 1, s - 1, -1):  # downwards: partners still hold the old values
            i = warp * LANES + lane
            scanned[i] = (shl(scanned[i - s], alpha * s) | scanned[i]) & wmask
        s *= 2


@njit(cache=True)
def _warp_scan_pairs(xs, ys, warp, alpha, word_bits, wmask):
    """The same scan under double-dagger (Eq. (10)) on pairs <x, y>."""
    s = 1
    while s < LANES and alpha * s < word_bits:
        for lane in range(LANES - 1, s - 1, -1):
            i = warp * LANES + lane
            u = alpha * s
            ys[i] = ((shl(ys[i - s], u) & ~xs[i]) | ys[i]) & wmask
            xs[i] = (shl(xs[i - s], u) | xs[i]) & wmask
        s *= 2


@njit(cache=True)
def _exact_segment(text, table, m, word_bits, alpha, warps, segment_lo, segment_hi, report_lo, report_hi,
                   row, out_row, out_end, out_dist, base, cap):
    """exact-shiftor-scan over the tiles [segment_lo, segment_hi) of one row (one GPU block)."""
    n = text.shape[0]
    wmask = low_bits(word_bits)
    wildcard = m + alpha - 1 <= word_bits
    last_bit = ONE << np.uint64(m - 1)
    lanes = LANES * warps
    tile = lanes * alpha
    # Grid level: the exact state before the segment from its m - 1 characters of halo.
    carry = wmask
    for p in range(max(0, segment_lo - (m - 1)), segment_lo):
        carry = ((carry << ONE) | table[text[p]]) & wmask
    local = np.empty((lanes, alpha), np.uint64)
    scanned = np.empty(lanes, np.uint64)
    before = np.empty(lanes, np.uint64)
    warp_aggregate = np.empty(warps, np.uint64)
    count = 0
    for tile_lo in range(segment_lo, segment_hi, tile):
        # Phase 1 (thread): sequential Shift-Or from the identity <0, 0>.
        for lane in range(lanes):
            x = ZERO
            for i in range(alpha):
                p = tile_lo + lane * alpha + i
                x = ((x << ONE) | table[text[p] if p < n else 0]) & wmask
                local[lane, i] = x
            scanned[lane] = x
        # Phase 2 (warp) and the warp aggregates.
        for warp in range(warps):
            _warp_scan_x(scanned, warp, alpha, word_bits, wmask)
            warp_aggregate[warp] = scanned[warp * LANES + LANES - 1]
        # Block level: each warp's prefix from the tile carry and the earlier warps.
        for warp in range(warps):
            prefix = carry
            for j in range(warp):
                prefix = (shl(prefix, LANES * alpha) | warp_aggregate[j]) & wmask
            for lane in range(LANES):
                i = warp * LANES + lane
                # exact state before this lane: the prefix, or the previous lane's exact state
                before[i] = prefix if lane == 0 else scanned[i - 1]
                covered = (lane + 1) * alpha  # characters this lane's scan already holds
                if covered < word_bits:
                    scanned[i] = (scanned[i] | shl(prefix, covered)) & wmask
        carry = scanned[lanes - 1]
        # Ends: the wildcard extension (Fig. 5) or phase 3 (Fig. 4).
        for lane in range(lanes):
            first = tile_lo + lane * alpha
            if wildcard:
                ends = (~scanned[lane] >> np.uint64(m - 1)) & low_bits(alpha)
                if ends != ZERO:
                    for i in range(alpha):
                        end = first + alpha - i
                        if (ends >> np.uint64(i)) & ONE and report_lo <= end - 1 < report_hi:
                            count = _report(out_row, out_end, out_dist, base, cap, count, row, end, 0)
            else:
                for i in range(alpha):
                    state = (shl(before[lane], i + 1) | local[lane, i]) & wmask
                    end = first + i + 1
                    if (state & last_bit) == ZERO and report_lo <= end - 1 < report_hi:
                        count = _report(out_row, out_end, out_dist, base, cap, count, row, end, 0)
    return count


@njit(cache=True)
def _wm_segment(text, table, m, k, word_bits, alpha, warps, segment_lo, segment_hi, report_lo, report_hi,
                row, out_row, out_end, out_dist, base, cap):
    """edit-wm-scan over the tiles [segment_lo, segment_hi) of one row (one GPU warp, or
    a block of ``warps`` warps). With the wildcard extension (m + alpha - 1 <= w) the
    distances come from the exact state at each lane's last character (shiftor.cu,
    wm_scan) and the last level skips phase 3."""
    n = text.shape[0]
    wmask = low_bits(word_bits)
    wildcard = m + alpha - 1 <= word_bits
    last_bit = ONE << np.uint64(m - 1)
    lanes = LANES * warps
    tile = lanes * alpha
    # Grid level: exact states of every level before the segment (m + k - 1 halo characters).
    carry = wm_initial_states(k, wmask)
    for p in range(max(0, segment_lo - (m + k - 1)), segment_lo):
        wm_step(carry, table[text[p]], k, wmask)
    next_carry = carry.copy()
    masks = np.empty((lanes, alpha), np.uint64)
    state = np.empty((lanes, alpha), np.uint64)     # exact states of the current level
    n_masks = np.empty((lanes, alpha), np.uint64)
    xs = np.empty(lanes, np.uint64)
    ys = np.empty(lanes, np.uint64)
    before = np.empty(lanes, np.uint64)             # exact state before each lane, this level
    before_previous = np.empty(lanes, np.uint64)    # ... and the level below
    lane_end = np.empty(lanes, np.uint64)           # exact state at each lane's last character, this level
    distance = np.empty((lanes, alpha), np.int64)
    aggregate_x = np.empty(warps, np.uint64)
    aggregate_y = np.empty(warps, np.uint64)
    count = 0
    for tile_lo in range(segment_lo, segment_hi, tile):
        for lane in range(lanes):
            for i in range(alpha):
                p = tile_lo + lane * alpha + i
                masks[lane, i] = table[text[p] if p < n else 0] & wmask
                distance[lane, i] = -1
        for d in range(k + 1):
            # Phase 1: local scans from the identity (level 0: dagger; level d: pairs).
            for lane in range(lanes):
                x = ZERO
                y = ZERO
                if d == 0:
                    for i in range(alpha):
                        x = ((x << ONE) | masks[lane, i]) & wmask
                else:
                    left = before_previous[lane]
                    for i in range(alpha):
                        # Algorithm 2, line 5: N_j = y_{d-1,j-1} & (y_{d-1,j-1} << 1) & (y_{d-1,j} << 1)
                        n_masks[lane, i] = left & (left << ONE) & (state[lane, i] << ONE) & wmask
                        left = state[lane, i]
                        # line 7: A_{d,j} = <1, <~N_j, M_j & N_j>>
                        x = ((x << ONE) | ~n_masks[lane, i]) & wmask
                        y = (((y << ONE) | masks[lane, i]) & n_masks[lane, i]) & wmask
                xs[lane] = x
                ys[lane] = y
            # Phase 2: warp scans; block level: the exact state before each lane.
            for warp in range(warps):
                if d == 0:
                    _warp_scan_x(xs, warp, alpha, word_bits, wmask)
                else:
                    _warp_scan_pairs(xs, ys, warp, alpha, word_bits, wmask)
                aggregate_x[warp] = xs[warp * LANES + LANES - 1]
                aggregate_y[warp] = ys[warp * LANES + LANES - 1]
            for warp in range(warps):
                prefix = carry[d]
                for j in range(warp):
                    if d == 0:
                        prefix = (shl(prefix, LANES * alpha) | aggregate_x[j]) & wmask
                    else:
                        prefix = apply_pair(prefix, LANES * alpha, aggregate_x[j], aggregate_y[j], wmask)
                inclusive_before = prefix
                for lane in range(LANES):
                    i = warp * LANES + lane
                    covered = (lane + 1) * alpha
                    if d == 0:
                        inclusive = (xs[i] | shl(prefix, covered)) & wmask
                    else:
                        inclusive = apply_pair(prefix, covered, xs[i], ys[i], wmask)
                    before[i] = inclusive_before
                    lane_end[i] = inclusive
                    inclusive_before = inclusive
                if warp == warps - 1:
                    next_carry[d] = inclusive_before
            # Phase 3: re-run level d from the exact state before each lane (Eq. (2)),
            # except at the last level with the wildcard extension.
            for lane in range(lanes):
                if not (wildcard and d == k):
                    z = before[lane]
                    for i in range(alpha):
                        if d == 0:
                            z = ((z << ONE) | masks[lane, i]) & wmask
                        else:
                            z = (((z << ONE) | masks[lane, i]) & n_masks[lane, i]) & wmask
                        state[lane, i] = z
                        if not wildcard and (z & last_bit) == ZERO and distance[lane, i] < 0:
                            distance[lane, i] = d
                if wildcard:
                    # bit m - 1 + j of the state at the lane's last character: d(e) <= d
                    # for the end j characters earlier (|d(e) - d(e + 1)| <= 1).
                    for j in range(alpha):
                        i = alpha - 1 - j
                        if (lane_end[lane] >> np.uint64(m - 1 + j)) & ONE == ZERO and distance[lane, i] < 0:
                            distance[lane, i] = d
                before_previous[lane] = before[lane]
        carry[:] = next_carry
        for lane in range(lanes):
            for i in range(alpha):
                end = tile_lo + lane * alpha + i + 1
                if distance[lane, i] >= 0 and report_lo <= end - 1 < report_hi:
                    count = _report(out_row, out_end, out_dist, base, cap, count, row, end, distance[lane, i])
    return count


@njit(parallel=True, cache=True)
def tribrid_exact_tasks(task_ids, out_offsets, caps, out_row, out_end, out_dist,
                        text, tables, lengths, word_bits, task_rows, task_lo, task_hi,
                        report_lo, report_hi, alpha, warps):
    """exact-shiftor-scan: one task = one row over one segment of whole tiles."""
    counts = np.zeros(task_ids.shape[0], np.int64)
    for t in prange(task_ids.shape[0]):
        task = task_ids[t]
        row = task_rows[task]
        counts[t] = _exact_segment(text, tables[row], np.int64(lengths[row]), np.int64(word_bits[row]), alpha,
                                   warps, task_lo[task], task_hi[task], report_lo, report_hi, row,
                                   out_row, out_end, out_dist, out_offsets[t], caps[t])
    return counts


@njit(parallel=True, cache=True)
def tribrid_wm_tasks(task_ids, out_offsets, caps, out_row, out_end, out_dist,
                     text, tables, lengths, word_bits, k, task_rows, task_lo, task_hi,
                     report_lo, report_hi, alpha, warps):
    """edit-wm-scan: one task = one row over one segment of whole tiles."""
    counts = np.zeros(task_ids.shape[0], np.int64)
    for t in prange(task_ids.shape[0]):
        task = task_ids[t]
        row = task_rows[task]
        counts[t] = _wm_segment(text, tables[row], np.int64(lengths[row]), k, np.int64(word_bits[row]), alpha,
                                warps, task_lo[task], task_hi[task], report_lo, report_hi, row,
                                out_row, out_end, out_dist, out_offsets[t], caps[t])
    return counts


@njit(parallel=True, cache=True)
def segmented_wm_tasks(task_ids, out_offsets, caps, out_row, out_end, out_dist,
                       text, tables, lengths, k, task_rows, task_lo, task_hi, alpha):
    """edit-wm-segmented (GBPR): one task = one row over one segment [lo, hi), by plain
    Wu-Manber from m + k - 1 characters before it (rounded down to a multiple of alpha)."""
    counts = np.zeros(task_ids.shape[0], np.int64)
    for t in prange(task_ids.shape[0]):
        task = task_ids[t]
        row = task_rows[task]
        m = np.int64(lengths[row])
        table = tables[row]
        lo = task_lo[task]
        hi = task_hi[task]
        start = max(0, lo - (m + k - 1))
        start -= start % alpha
        states = wm_initial_states(k, ALL_ONES)
        last_bit = ONE << np.uint64(m - 1)
        count = 0
        for p in range(start, hi):
            wm_step(states, table[text[p]], k, ALL_ONES)
            if p >= lo and (states[k] & last_bit) == ZERO:
                best = k
                for d in range(k):
                    if (states[d] & last_bit) == ZERO:
                        best = d
                        break
                count = _report(out_row, out_end, out_dist, out_offsets[t], caps[t], count, row, p + 1, best)
        counts[t] = count
    return counts
