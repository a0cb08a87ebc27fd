"""Numba code for k-mismatch (Hamming) search on the CPU.

Two searches live here; ``__init__.py`` holds the launchers that prepare their
inputs and collect their outputs.

* :func:`scan_tasks` compares a pattern (one *row* of a PatternBatch) with
  every window of a text range, stopping a window as soon as it has more
  than ``k`` mismatches.

* :func:`pigeonhole_tasks` is the fast search for many patterns. A pattern
  of length ``m`` is cut into ``k + 1`` disjoint pieces; a window with at
  most ``k`` mismatches must match at least one piece exactly (pigeonhole
  principle). From each piece we take one *key* of ``q`` characters
  (``q <= QMAX``), store every key in a direct-address table indexed by its
  2-bit packed value, slide a rolling key over the text, and verify only
  the windows that some key points at. A window is reported only through
  the *first* of its row's keys that matches it exactly, so each hit is
  reported once.

Conventions shared by every function (see ``seqsift.alphabet``):

* text codes are uint8, A=0 C=1 G=2 T=3, and 4 (NEVER) matches nothing;
* pattern masks are 4-bit IUPAC masks: position ``j`` of row ``r`` matches
  text code ``c`` iff ``(masks[r, j] >> c) & 1``;
* an end ``e`` (exclusive) is owned when ``lo <= e - 1 < hi``.

Output convention for the parallel kernels (the "buffered task" protocol,
driven by ``kernels/driver.run_buffered_tasks``): each kernel runs a list of tasks
``task_ids``; task ``i`` writes at most ``caps[i]`` hits into the output
arrays starting at ``out_offsets[i]`` and returns its *true* hit count in
``counts[i]``. A task whose count exceeds its cap is simply run again with
a big enough buffer, so no hit is ever lost.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

NEVER = 4

QMAX = 9
"""Longest key (characters). The table has 4**QMAX buckets (1 MiB of int32
offsets for 9): bigger tables stop fitting in cache and the rolling lookup,
done at every text position, gets slower than the verifications it saves."""

QMIN = 3
"""Shortest useful key. A row whose pieces are shorter than this (k close to
m) is searched by the plain scan instead."""

MAX_EXPANSION = 256
"""Most table entries one row may create. An IUPAC piece stands for several
exact keys (a key holding one N stands for 4); a row whose pieces expand to
more keys than this, even with shorter keys, is searched by the plain scan."""


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------

@njit(cache=True, inline="always")
def window_mismatches(text, s, masks, row, m, limit):
    """Mismatches between row ``row`` (length ``m``) and ``text[s:s+m]``.

    Stops counting once the count exceeds ``limit`` (it then returns
    ``limit + 1``), which is what makes a failed window cheap.
    """
    mismatches = 0
    for j in range(m):
        if ((masks[row, j] >> text[s + j]) & 1) == 0:
            mismatches += 1
            if mismatches > limit:
                break
    return mismatches


@njit(cache=True, inline="always")
def key_matches(text, pos, masks, row, offset, q):
    """True when ``masks[row, offset:offset+q]`` matches ``text[pos:pos+q]`` exactly."""
    for j in range(q):
        if ((masks[row, offset + j] >> text[pos + j]) & 1) == 0:
            return False
    return True


@njit(cache=True, inline="always")
def popcount4(mask):
    """Number of text codes a 4-bit IUPAC mask matches (0..4)."""
    return (mask & 1) + ((mask >> 1) & 1) + ((mask >> 2) & 1) + ((mask >> 3) & 1)


# ---------------------------------------------------------------------------
# Plain scan
# ---------------------------------------------------------------------------

@njit(parallel=True, cache=True)
def scan_tasks(task_ids, out_offsets, caps, out_row, out_end, out_dist,
               text, masks, lengths, k, task_row, task_lo, task_hi):
    """Compare one row with every window whose end it owns (buffered task protocol).

    Task ``t`` searches row ``task_row[t]`` for the ends ``e`` with
    ``task_lo[t] <= e - 1 < task_hi[t]``; the launcher splits the owned range
    of the chunk into such sub-ranges so that few rows still use every core.
    """
    n = text.shape[0]
    counts = np.zeros(task_ids.shape[0], np.int64)
    for i in prange(task_ids.shape[0]):
        t = task_ids[i]
        row = task_row[t]
        m = np.int64(lengths[row])
        # e - 1 in [lo, hi)  <=>  s = e - m in [lo + 1 - m, hi - m]; also 0 <= s <= n - m.
        s_first = max(np.int64(0), task_lo[t] + 1 - m)
        s_last = min(n - m, task_hi[t] - m)
        base = out_offsets[i]
        cap = caps[i]
        found = 0
        for s in range(s_first, s_last + 1):
            d = window_mismatches(text, s, masks, row, m, k)
            if d <= k:
                if found < cap:
                    out_row[base + found] = row
                    out_end[base + found] = s + m
                    out_dist[base + found] = d
                found += 1
        counts[i] = found
    return counts


# ---------------------------------------------------------------------------
# Pigeonhole: planning the keys
# ---------------------------------------------------------------------------

@njit(cache=True)
def plan_keys(masks, lengths, k, qmax, qmin, max_expansion):
    """Choose, for every row, the key length and where each of its k+1 keys sits.

    Returns ``(q, key_offset)``:

    * ``q[r]``: key length of row ``r``, or 0 when the row must be scanned
      (pieces shorter than ``qmin``, or too many IUPAC expansions);
    * ``key_offset[r, i]``: pattern position of the first character of the
      key of piece ``i``.

    Piece ``i`` of a row of length ``m`` covers ``[i*m//(k+1), (i+1)*m//(k+1))``,
    so the pieces are disjoint and each is at least ``m // (k+1)`` long. A
    key is ``q`` consecutive characters inside its piece; among the possible
    places we take the one whose IUPAC masks expand to the fewest exact keys
    (leftmost on ties). If the row's keys expand to more than
    ``max_expansion`` entries we try shorter keys before giving up.
    """
    rows = lengths.shape[0]
    pieces = k + 1
    q_out = np.zeros(rows, np.int64)
    key_offset = np.zeros((rows, pieces), np.int64)
    for r in range(rows):
        m = np.int64(lengths[r])
        q = min(qmax, m // pieces)
        while q >= qmin:
            total = 0
            for i in range(pieces):
                lo = i * m // pieces
                hi = (i + 1) * m // pieces
                best = max_expansion + 1
                best_offset = lo
                for o in range(lo, hi - q + 1):
                    product = 1
                    for j in range(q):
                        product *= popcount4(masks[r, o + j])
                        if product > max_expansion:  # saturate: no overflow, no use going on
                            product = max_expansion + 1
                            break
                    if product < best:
                        best = product
                        best_offset = o
                key_offset[r, i] = best_offset
                total += best
                if total > max_expansion:
                    break
            if total <= max_expansion:
                q_out[r] = q
                break
            q -= 1
    return q_out, key_offset


@njit(cache=True)
def _expand_key(masks, row, offset, q, buffer):
    """Write every exact key (2-bit packed, first character most significant)
    matched by ``masks[row, offset:offset+q]`` into ``buffer``; return their number.

    The list is grown in place, one character at a time: each key so far is
    replaced by one key per text code the next mask allows. A mask of 0
    (a byte that is no IUPAC letter) matches nothing, so the key has no
    expansions at all.
    """
    count = 1
    buffer[0] = 0
    for j in range(q):
        mask = masks[row, offset + j]
        width = popcount4(mask)
        if width == 0:
            return 0
        # Walk backwards so that buffer[idx] is read before its slot is reused.
        for idx in range(count - 1, -1, -1):
            prefix = buffer[idx] * 4
            slot = idx * width
            for code in range(4):
                if (mask >> code) & 1:
                    buffer[slot] = prefix + code
                    slot += 1
        count *= width
    return count


@njit(cache=True)
def build_key_table(masks, group_rows, key_offset, q, max_expansion):
    """Direct-address table of the keys of the rows ``group_rows`` (all with key length ``q``).

    Returns ``(bucket_start, entry_group_row, entry_piece, entry_offset)`` in
    compressed-row form: the entries of key value ``v`` are
    ``bucket_start[v] : bucket_start[v + 1]``. An entry says: position
    ``entry_offset`` of the row ``group_rows[entry_group_row]`` starts the
    key of piece ``entry_piece``.
    """
    buckets = 1 << (2 * q)
    pieces = key_offset.shape[1]
    buffer = np.empty(max_expansion, np.int64)
    bucket_start = np.zeros(buckets + 1, np.int32)
    # Pass 1: count entries per bucket.
    for g in range(group_rows.shape[0]):
        row = group_rows[g]
        for i in range(pieces):
            n_keys = _expand_key(masks, row, key_offset[row, i], q, buffer)
            for x in range(n_keys):
                bucket_start[buffer[x] + 1] += 1
    for v in range(buckets):
        bucket_start[v + 1] += bucket_start[v]
    total = bucket_start[buckets]
    entry_group_row = np.empty(total, np.int32)
    entry_piece = np.empty(total, np.int32)
    entry_offset = np.empty(total, np.int32)
    fill = bucket_start[:-1].copy()
    # Pass 2: fill them (rows in order, so a bucket lists its rows in order).
    for g in range(group_rows.shape[0]):
        row = group_rows[g]
        for i in range(pieces):
            n_keys = _expand_key(masks, row, key_offset[row, i], q, buffer)
            for x in range(n_keys):
                slot = fill[buffer[x]]
                entry_group_row[slot] = g
                entry_piece[slot] = i
                entry_offset[slot] = key_offset[row, i]
                fill[buffer[x]] = slot + 1
    return bucket_start, entry_group_row, entry_piece, entry_offset


# ---------------------------------------------------------------------------
# Pigeonhole: the search
# ---------------------------------------------------------------------------

@njit(parallel=True, cache=True)
def pigeonhole_tasks(task_ids, out_offsets, caps, out_row, out_end, out_dist,
                     text, masks, lengths, k, lo, hi, q,
                     bucket_start, entry_group_row, entry_piece, entry_offset,
                     group_rows, key_offset, block_lo, block_hi):
    """Seed-and-verify search of one key table over text blocks (buffered task protocol).

    Task ``t`` handles the keys that *start* at text positions
    ``block_lo[t] <= p < block_hi[t]``. For each such position holding ``q``
    valid codes (no NEVER), every table entry with that key proposes the
    window ``s = p - entry_offset``; the window is verified (at most ``k``
    mismatches over the whole row) and then kept only if no earlier piece of
    the same row matches it exactly: that earlier piece's own key would have
    proposed the same window, and it has priority.
    """
    n = text.shape[0]
    key_mask = (np.int64(1) << (2 * q)) - 1
    counts = np.zeros(task_ids.shape[0], np.int64)
    for i in prange(task_ids.shape[0]):
        t = task_ids[i]
        base = out_offsets[i]
        cap = caps[i]
        found = 0
        key = np.int64(0)
        run = 0  # how many valid codes end at the current position
        first = block_lo[t]
        stop = min(block_hi[t] + q - 1, n)
        for p in range(first, stop):
            code = text[p]
            if code >= NEVER:
                run = 0
                key = 0
                continue
            key = ((key << 2) | code) & key_mask
            run += 1
            if run < q:
                continue
            key_start = p - q + 1
            for e in range(bucket_start[key], bucket_start[key + 1]):
                g = entry_group_row[e]
                row = group_rows[g]
                m = np.int64(lengths[row])
                s = key_start - entry_offset[e]
                if s < 0 or s + m > n:
                    continue
                last = s + m - 1
                if last < lo or last >= hi:
                    continue
                d = window_mismatches(text, s, masks, row, m, k)
                if d > k:
                    continue
                # Report through the first exactly matching piece only.
                duplicate = False
                for j in range(entry_piece[e]):
                    if key_matches(text, s + key_offset[row, j], masks, row, key_offset[row, j], q):
                        duplicate = True
                        break
                if duplicate:
                    continue
                if found < cap:
                    out_row[base + found] = row
                    out_end[base + found] = s + m
                    out_dist[base + found] = d
                found += 1
        counts[i] = found
    return counts
