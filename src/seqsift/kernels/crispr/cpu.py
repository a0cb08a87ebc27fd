"""CPU (Numba) kernel of the CRISPR family: PAM candidates, then each guide row at each candidate.

Per strand: one pass over the chunk lists the positions where that strand's
PAM matches exactly (``_pam_candidates``); then every row of that strand is
checked at every candidate (``_check_candidates``). Without bulges a row is a
plain count of mismatches with an early exit past its limit. With bulges each
(type, size) fixes the protospacer's length and start; the best bulge position
j comes from a prefix count (row[0:j] against the protospacer's first bases)
plus a shifted suffix count, O(L) per (candidate, row, bulge size)
(``_best_bulge``), once a lower bound that holds wherever the bulge sits (each
row base at the smaller of its unshifted and shifted mismatch, less an RNA
bulge's unpaired bases) has not already passed the limit: for most pairs it has
within a few bases.

Rows of plain A/C/G/T guides take faster paths on words, 2 bits a base: each
candidate's text is packed once into one 64-bit word, and each row costs an
XOR, a fold of each base's two bits onto one, an OR of the window's non-ACGT
bases, and a popcount. Without bulges (``_check_packed``, rows of up to 32
bases) that popcount is the site's mismatches. With bulges
(``_check_packed_bulges``, rows of up to 32 less the bulge sizes) the word also
holds the bases a bulge shifts in, and the bound above is the popcount of the
AND of two such mismatch words: 100 guides with a DNA and an RNA bulge of 1 on
4 Mbp in 0.86 s on one core, against 6.2 s by the loop over the bases and
19.2 s without the bound (benchmarks/README.md).

Small bulge-free jobs of such rows skip Numba altogether (``vectorized.py``:
the same packed check in NumPy, chosen by ``small_job``).

Each task runs on one core (a worker process's thread, or one of the task
threads of an in-process CPU cluster: the kernels release the GIL), so the
kernel is serial; it writes into preallocated arrays and is rerun with room
for all hits if they did not fit.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import BULGE_DNA, BULGE_NONE, BULGE_RNA, GuideRows, SiteHits
from .vectorized import EVEN_BITS, PACK_MAX, pack_rows, packable

INITIAL_CAPACITY = 1 << 14


@njit(cache=True, nogil=True)
def _pam_candidates(text, pam):
    """Positions p with text[p:p+P] within the PAM's IUPAC sets (non-ACGT text never matches)."""
    n, length = text.shape[0], pam.shape[0]
    out = np.empty(max(0, n - length + 1), dtype=np.int64)
    count = 0
    for p in range(n - length + 1):
        ok = True
        for i in range(length):
            code = text[p + i]
            if code > 3 or not (pam[i] >> code) & 1:
                ok = False
                break
        if ok:
            out[count] = p
            count += 1
    return out[:count]


@njit(inline="always")
def _mismatch(mask, code) -> int:
    return 1 if code > 3 or not (mask >> code) & 1 else 0


@njit(inline="always")
def _site(option, dna_bulge, length, p, pam_right, pam_length, n, owned_lo, owned_hi):
    """(kind, size, g0, start, end) of bulge option ``option`` (0: none, 1..dna_bulge: a DNA bulge of that
    size, then the RNA sizes) for a row of ``length`` bases at PAM candidate p: the protospacer starts at
    text position g0, the site with its PAM is [start, end). kind is -1 where the option does not apply:
    an RNA bulge that cannot fit the row (it may hold neither its first nor its last base), or a site that
    leaves the text or whose last base lies outside [owned_lo, owned_hi)."""
    if option == 0:
        kind, size, span = BULGE_NONE, 0, length
    elif option <= dna_bulge:
        kind, size, span = BULGE_DNA, option, length + option
    else:
        kind, size = BULGE_RNA, option - dna_bulge
        span = length - size
        if length < size + 2:
            kind = -1
    if pam_right:
        g0 = p - span
        start, end = g0, p + pam_length
    else:
        g0 = p + pam_length
        start, end = p, g0 + span
    if start < 0 or end > n or end - 1 < owned_lo or end - 1 >= owned_hi:
        kind = -1
    return kind, size, g0, start, end


@njit(inline="always")
def _best_bulge(text, masks, r, length, g0, kind, size, minus, limit, prefix, suffix):
    """(mismatches, bulge position j) of the best placement of a bulge of ``kind`` and ``size`` in row r's
    site whose protospacer starts at text position g0: row[0:j] against the text as it is, row[j:] (DNA)
    or row[j + size:] (RNA) against it shifted by +size or -size, j = 1..L - 1 (RNA: L - 1 - size); ties
    go to the first j (the last on the minus strand, within the limit). Row bases past the text count as
    mismatches."""
    n = text.shape[0]
    shift = size if kind == BULGE_DNA else -size
    # prefix[j]: mismatches of row[0:j] against text[g0:g0+j].
    for i in range(length):
        prefix[i + 1] = prefix[i] + (_mismatch(masks[r, i], text[g0 + i]) if g0 + i < n else 1)
    # suffix[t]: mismatches of row[t:] against the text shifted by +size (DNA) or -size (RNA).
    suffix[length] = 0
    for i in range(length - 1, -1, -1):
        t = g0 + i + shift
        suffix[i] = suffix[i + 1] + (_mismatch(masks[r, i], text[t]) if 0 <= t < n else 1)
    best, best_at = limit + 1, 0
    last_j = length - 1 if kind == BULGE_DNA else length - 1 - size
    for j in range(1, last_j + 1):
        tail = j if kind == BULGE_DNA else j + size
        mm = prefix[j] + suffix[tail]
        if mm < best or (mm == best and minus and mm <= limit):
            best, best_at = mm, j
    return best, best_at


@njit(inline="always")
def _put(count, row, start, end, kind, size, at, mm, out_row, out_start, out_length, out_type, out_size, out_at,
         out_mm):
    """One site into slot ``count`` of the out arrays, where it fits (the caller counts it either way)."""
    if count < out_row.shape[0]:
        out_row[count] = row
        out_start[count] = start
        out_length[count] = end - start
        out_type[count] = kind
        out_size[count] = size
        out_at[count] = at
        out_mm[count] = mm


@njit(cache=True, nogil=True)
def _check_candidates(text, candidates, masks, lengths, limits, row_ids, minus, pam_right, pam_length,
                      dna_bulge, rna_bulge, owned_lo, owned_hi, count,
                      out_row, out_start, out_length, out_type, out_size, out_at, out_mm):
    """Append every qualifying (candidate, row, bulge) to the out arrays from slot ``count``.

    Returns the new count; slots past the arrays' capacity are counted but not written.
    """
    n = text.shape[0]
    max_len = masks.shape[1]
    prefix = np.zeros(max_len + 1, dtype=np.int32)
    suffix = np.zeros(max_len + 2, dtype=np.int32)
    for c in range(candidates.shape[0]):
        p = candidates[c]
        for r_i in range(row_ids.shape[0]):
            r = row_ids[r_i]
            length = lengths[r]
            limit = limits[r]
            for option in range(1 + dna_bulge + rna_bulge):
                kind, size, g0, start, end = _site(option, dna_bulge, length, p, pam_right, pam_length, n,
                                                   owned_lo, owned_hi)
                if kind < 0:
                    continue
                best, best_at = limit + 1, 0
                if kind == BULGE_NONE:
                    mm = 0
                    for i in range(length):
                        mm += _mismatch(masks[r, i], text[g0 + i])
                        if mm > limit:
                            break
                    best = mm
                else:
                    # A lower bound first: wherever the bulge sits, row base i is counted against the text
                    # as it is (before the bulge) or shifted (after it), so it costs at least the smaller
                    # of the two; an RNA bulge leaves `size` row bases uncounted. Most (candidate, row)
                    # pairs pass the limit within a few bases and skip the exact search.
                    shift = size if kind == BULGE_DNA else -size
                    unpaired = size if kind == BULGE_RNA else 0
                    bound = 0
                    for i in range(length):
                        u, t = g0 + i, g0 + i + shift
                        if (u >= n or _mismatch(masks[r, i], text[u])) and (t < 0 or t >= n
                                                                          or _mismatch(masks[r, i], text[t])):
                            bound += 1
                            if bound - unpaired > limit:
                                break
                    if bound - unpaired > limit:
                        continue
                    best, best_at = _best_bulge(text, masks, r, length, g0, kind, size, minus, limit, prefix,
                                                suffix)
                if best > limit:
                    continue
                _put(count, r, start, end, kind, size, best_at, best, out_row, out_start, out_length, out_type,
                     out_size, out_at, out_mm)
                count += 1
    return count


@njit(inline="always")
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(inline="always")
def _pack(text, first, width):
    """(packed, other): text[first:first + width] 2 bits a base in one word, and the even bit of each base
    that is not A/C/G/T or lies outside the text."""
    n = text.shape[0]
    packed = np.uint64(0)
    other = np.uint64(0)
    for i in range(width):
        t = first + i
        code = text[t] if 0 <= t < n else 4
        if code > 3:
            other |= np.uint64(1) << np.uint64(2 * i)
        else:
            packed |= np.uint64(code) << np.uint64(2 * i)
    return packed, other


@njit(inline="always")
def _mismatch_bits(packed, other, codes, care):
    """The even bit of each base a row covers (``care``) where its code differs from the text's, or the
    text's base is no A/C/G/T."""
    x = packed ^ codes
    return (((x | (x >> np.uint64(1))) & EVEN_BITS) | other) & care


@njit(inline="always")
def _shifted(word, by):
    """``word`` with base i + by at base i (by > 0: further along the text; bases shifted in are 0)."""
    return word >> np.uint64(2 * by) if by >= 0 else word << np.uint64(-2 * by)


@njit(cache=True, nogil=True)
def _check_packed(text, candidates, window, row_ids, codes, care, lengths, limits, pam_right, pam_length,
                  owned_lo, owned_hi, count, out_row, out_start, out_length, out_type, out_size, out_at, out_mm):
    """No bulges, A/C/G/T rows of at most 32 bases: one packed word per candidate, a popcount per row."""
    n = text.shape[0]
    for c in range(candidates.shape[0]):
        p = candidates[c]
        g0 = p - window if pam_right else p + pam_length
        if pam_right and (p + pam_length - 1 < owned_lo or p + pam_length - 1 >= owned_hi):
            continue
        packed, other = _pack(text, g0, window)   # (bases beyond the text: no row's site reaches them)
        for k in range(row_ids.shape[0]):
            length = lengths[row_ids[k]]
            if pam_right:
                start, end = p - length, p + pam_length
            else:
                start, end = p, g0 + length
                if end - 1 < owned_lo or end - 1 >= owned_hi:
                    continue
            if start < 0 or end > n:
                continue
            mm = _popcount(_mismatch_bits(packed, other, codes[k], care[k]))
            if mm > limits[row_ids[k]]:
                continue
            _put(count, row_ids[k], start, end, BULGE_NONE, 0, 0, mm, out_row, out_start, out_length, out_type,
                 out_size, out_at, out_mm)
            count += 1
    return count


@njit(cache=True, nogil=True)
def _check_packed_bulges(text, candidates, window, row_ids, codes, care, masks, lengths, limits, minus, pam_right,
                         pam_length, dna_bulge, rna_bulge, owned_lo, owned_hi, count,
                         out_row, out_start, out_length, out_type, out_size, out_at, out_mm):
    """:func:`_check_candidates` for A/C/G/T rows of at most 32 - dna_bulge - rna_bulge bases, on words.

    Each candidate's text around its protospacer is packed once, 2 bits a base, wide enough for every
    shift a bulge makes (``window`` + dna_bulge + rna_bulge bases). A row (``codes``, ``care``: packed
    by pack_rows in a ``window``-base word, lifted here into the wide one) then gets each alignment's
    mismatches as one word: its popcount is the site without a bulge, and the popcount of the AND of a
    bulge's unshifted and shifted words is _check_candidates' lower bound, in a few instructions
    instead of a loop over the bases. The few (candidate, row, bulge) it does not rule out get the
    exact search (:func:`_best_bulge`).
    """
    n = text.shape[0]
    max_len = masks.shape[1]
    prefix = np.zeros(max_len + 1, dtype=np.int32)
    suffix = np.zeros(max_len + 2, dtype=np.int32)
    width = window + dna_bulge + rna_bulge
    if width > PACK_MAX:
        raise ValueError("rows too long for a packed word with these bulges")
    # Word base 0 is text position p - window - dna_bulge (PAM right of the protospacer) or its first base
    # less rna_bulge (PAM left), so a row's site without a bulge starts `lift` bases further than where
    # pack_rows put the row.
    lift = np.uint64(2 * (dna_bulge if pam_right else rna_bulge))
    for c in range(candidates.shape[0]):
        p = candidates[c]
        packed, other = _pack(text, p - window - dna_bulge if pam_right else p + pam_length - rna_bulge, width)
        for k in range(row_ids.shape[0]):
            r = row_ids[k]
            length = lengths[r]
            limit = limits[r]
            row_codes, row_care = codes[k] << lift, care[k] << lift
            for option in range(1 + dna_bulge + rna_bulge):
                kind, size, g0, start, end = _site(option, dna_bulge, length, p, pam_right, pam_length, n,
                                                   owned_lo, owned_hi)
                if kind < 0:
                    continue
                if kind == BULGE_NONE:
                    best, best_at = _popcount(_mismatch_bits(packed, other, row_codes, row_care)), 0
                else:
                    # Where the unshifted and the shifted alignment lie, in bases from the site without a
                    # bulge: the PAM's side of the protospacer keeps its place, the other end moves.
                    if pam_right:
                        unshifted, shifted = (-size if kind == BULGE_DNA else size), 0
                    else:
                        unshifted, shifted = 0, (size if kind == BULGE_DNA else -size)
                    both = (_mismatch_bits(_shifted(packed, unshifted), _shifted(other, unshifted), row_codes,
                                           row_care)
                            & _mismatch_bits(_shifted(packed, shifted), _shifted(other, shifted), row_codes,
                                             row_care))
                    if _popcount(both) - (size if kind == BULGE_RNA else 0) > limit:
                        continue
                    best, best_at = _best_bulge(text, masks, r, length, g0, kind, size, minus, limit, prefix,
                                                suffix)
                if best > limit:
                    continue
                _put(count, r, start, end, kind, size, best_at, best, out_row, out_start, out_length, out_type,
                     out_size, out_at, out_mm)
                count += 1
    return count


def find_sites_cpu(text, rows: GuideRows, dna_bulge: int, rna_bulge: int, owned_lo: int, owned_hi: int) -> SiteHits:
    """The CPU kernel behind :func:`seqsift.kernels.crispr.find_sites`."""
    text = np.ascontiguousarray(text, dtype=np.uint8)
    capacity = INITIAL_CAPACITY
    strands = [(s, np.flatnonzero(rows.strand == s).astype(np.int64)) for s in (0, 1)]
    strands = [(s, ids) for s, ids in strands if len(ids)]
    candidates = {s: _pam_candidates(text, rows.pam_masks[s]) for s, _ in strands}
    while True:
        out = SiteHits(np.empty(capacity, np.int32), np.empty(capacity, np.int64), np.empty(capacity, np.int32),
                       np.empty(capacity, np.int8), np.empty(capacity, np.int8), np.empty(capacity, np.int16),
                       np.empty(capacity, np.int16))
        count = 0
        outs = (out.row, out.start, out.length, out.bulge_type, out.bulge_size, out.bulge_at, out.mismatches)
        for s, row_ids in strands:
            pam_right = bool(rows.pam_right[s])
            general, general_candidates = row_ids, candidates[s]
            # A/C/G/T rows short enough that a candidate's text, with every shift a bulge makes, fits a word
            plain = packable(rows, row_ids) & (rows.lengths[row_ids] <= PACK_MAX - dna_bulge - rna_bulge)
            if plain.any():
                fast = row_ids[plain]
                window = int(rows.lengths[fast].max())
                codes, care = pack_rows(rows, fast, window, pam_right)
                if dna_bulge == 0 and rna_bulge == 0:
                    count = _check_packed(text, candidates[s], window, fast, codes, care, rows.lengths, rows.limit,
                                          pam_right, rows.pam_length, owned_lo, owned_hi, count, *outs)
                else:
                    count = _check_packed_bulges(text, candidates[s], window, fast, codes, care, rows.masks,
                                                 rows.lengths, rows.limit, s == 1, pam_right, rows.pam_length,
                                                 dna_bulge, rna_bulge, owned_lo, owned_hi, count, *outs)
                general = row_ids[~plain]
            if len(general):
                count = _check_candidates(text, general_candidates, rows.masks, rows.lengths, rows.limit, general,
                                          s == 1, pam_right, rows.pam_length, dna_bulge, rna_bulge,
                                          owned_lo, owned_hi, count, *outs)
        if count <= capacity:
            return SiteHits(*(getattr(out, f)[:count] for f in SiteHits.__dataclass_fields__))
        capacity = count
