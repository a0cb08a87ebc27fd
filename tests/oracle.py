"""Naive NumPy references ("oracles") for the search kernels and for locate.

These are written to be obviously correct, not fast: tests compare every
kernel against them. They follow the same call shape as the kernels::

    hamming_ends(text, batch, k, owned_lo, owned_hi) -> EndHits
    edit_ends(text, batch, k, owned_lo, owned_hi)    -> EndHits

and the definitions of DESIGN.md ("What a hit is"):

* Hamming: a hit at start s when s + m <= len(text) and the row differs from
  text[s:s+m] in at most k positions; its end is e = s + m.
* Edit: d(e) = min over s of ED(P, text[s:e]); every e with d(e) <= k.

An end e is reported only when its last character e - 1 lies in
[owned_lo, owned_hi).

Byte patterns (``batch.alphabet == "bytes"``) match raw text bytes by
equality (:data:`BYTE_MATCH`) instead of IUPAC masks against text codes.

For locate there are :func:`edit_distance`, :func:`smallest_start` (brute
force over every start) and :func:`cigar_errors` (checks a CIGAR and counts
its edits).
"""
from __future__ import annotations

import re

import numpy as np

from seqsift.kernels import EndHits

# MATCH[mask, code]: does a pattern position with IUPAC mask `mask` match text code `code`?
# Code 4 (NEVER) matches nothing; a mask of 0 (not an IUPAC letter) matches nothing.
MATCH = np.array([[((mask >> code) & 1) == 1 if code < 4 else False for code in range(5)]
                  for mask in range(256)], dtype=bool)
# BYTE_MATCH[pattern byte, text byte]: plain equality (--alphabet bytes).
BYTE_MATCH = np.eye(256, dtype=bool)


def match_table(batch) -> np.ndarray:
    """MATCH for DNA rows, BYTE_MATCH for byte rows."""
    return BYTE_MATCH if getattr(batch, "alphabet", "dna") == "bytes" else MATCH


def _owned(ends: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Ends whose last character e - 1 is a character of the text inside [lo, hi)."""
    return (ends - 1 >= max(lo, 0)) & (ends - 1 < hi)


def _collect(rows, ends, dists) -> EndHits:
    if not rows:
        return EndHits.empty()
    return EndHits(np.concatenate(rows).astype(np.int32),
                   np.concatenate(ends).astype(np.int64),
                   np.concatenate(dists).astype(np.int16))


def hamming_ends(text, batch, k, owned_lo, owned_hi) -> EndHits:
    """Every (row, end, mismatches) with at most k mismatches, by m vectorized passes per row."""
    text = np.asarray(text, dtype=np.uint8)
    n = text.shape[0]
    match = match_table(batch)
    rows, ends, dists = [], [], []
    for r in range(batch.rows):
        m = int(batch.lengths[r])
        if m > n or k < 0:
            continue
        windows = n - m + 1  # starts 0 .. n - m
        mismatches = np.zeros(windows, dtype=np.int64)
        for j in range(m):
            mismatches += ~match[batch.masks[r, j], text[j:j + windows]]
        starts = np.flatnonzero(mismatches <= k)
        e = starts + m
        keep = _owned(e, owned_lo, owned_hi)
        rows.append(np.full(int(keep.sum()), r))
        ends.append(e[keep])
        dists.append(mismatches[starts[keep]])
    return _collect(rows, ends, dists)


def edit_distances_to_ends(text, masks_row, free_start: bool = True, match: np.ndarray = MATCH) -> np.ndarray:
    """d(e) = min over s of ED(P, text[s:e]) for every e in 0..len(text).

    Dynamic programming one pattern row at a time (Sellers 1980), each row
    vectorized along the text. With D[i][e] the best cost of aligning P[:i]
    ending at text position e:

        D[0][e] = 0                      (free start in the text; or e, if not free_start)
        D[i][0] = i
        D[i][e] = min(D[i-1][e-1] + (P[i-1] != T[e-1]),  D[i-1][e] + 1,  D[i][e-1] + 1)

    The last term is a dependency along the row; with
    tmp[e] = min of the first two terms, it unrolls to
    D[i][e] = min over e' <= e of tmp[e'] + (e - e'), i.e. a cumulative
    minimum of tmp[e'] - e' plus e.
    """
    text = np.asarray(text, dtype=np.uint8)
    n = text.shape[0]
    position = np.arange(n + 1, dtype=np.int64)
    previous = np.zeros(n + 1, dtype=np.int64) if free_start else position.copy()  # row 0
    for i, mask in enumerate(masks_row, start=1):
        mismatch = ~match[mask, text]
        tmp = np.empty(n + 1, dtype=np.int64)
        tmp[0] = i
        tmp[1:] = np.minimum(previous[:-1] + mismatch, previous[1:] + 1)
        previous = np.minimum.accumulate(tmp - position) + position
    return previous


def edit_ends(text, batch, k, owned_lo, owned_hi) -> EndHits:
    """Every (row, end, d(end)) with d(end) <= k, from the full dynamic programming matrix."""
    text = np.asarray(text, dtype=np.uint8)
    rows, ends, dists = [], [], []
    hi = min(int(owned_hi), text.shape[0])
    if k < 0 or hi <= owned_lo:
        return EndHits.empty()
    for r in range(batch.rows):
        m = int(batch.lengths[r])
        d = edit_distances_to_ends(text[:hi], batch.masks[r, :m], match=match_table(batch))
        e = np.flatnonzero(d <= k)
        e = e[_owned(e, owned_lo, owned_hi)]
        rows.append(np.full(e.size, r))
        ends.append(e)
        dists.append(d[e])
    return _collect(rows, ends, dists)


# ---------------------------------------------------------------------------
# For locate
# ---------------------------------------------------------------------------

def edit_distance(masks_row, segment) -> int:
    """Global edit distance between a pattern (masks) and a text segment (codes):
    the dynamic programming of :func:`edit_distances_to_ends` with a fixed start."""
    return int(edit_distances_to_ends(segment, masks_row, free_start=False)[-1])


def smallest_start(masks_row, text, end: int, distance: int) -> int | None:
    """The smallest s with ED(P, text[s:end]) == distance, by trying the starts in order.

    Starts below end - m - distance are skipped: ED(P, text[s:end]) is at
    least the length difference end - s - m, which is then > distance.
    Returns None when no start reaches the distance.
    """
    first = max(0, end - len(masks_row) - distance)
    for s in range(first, end + 1):
        if edit_distance(masks_row, text[s:end]) == distance:
            return s
    return None


_CIGAR_RUN = re.compile(r"(\d+)([=XID])")


def cigar_errors(cigar: str, masks_row, segment, match: np.ndarray = MATCH) -> int:
    """Check that ``cigar`` aligns the whole pattern to the whole segment, and count its edits.

    '=' must pair matching characters, 'X' mismatching ones, 'I' consumes a
    pattern character only, 'D' a text character only. Raises ValueError on
    any inconsistency; returns the number of X + I + D operations.
    """
    runs = _CIGAR_RUN.findall(cigar)
    if "".join(a + b for a, b in runs) != cigar:
        raise ValueError(f"malformed CIGAR {cigar!r}")
    i = j = errors = 0
    for count, op in runs:
        count = int(count)
        if count <= 0:
            raise ValueError(f"empty run in {cigar!r}")
        for _ in range(count):
            if op in "=X":
                if i >= len(masks_row) or j >= len(segment):
                    raise ValueError(f"{cigar!r} runs past the pattern or the segment")
                same = bool(match[masks_row[i], segment[j]])
                if same != (op == "="):
                    raise ValueError(f"{cigar!r}: {op} at pattern {i}, text {j} is wrong")
                errors += op == "X"
                i += 1
                j += 1
            elif op == "I":
                i += 1
                errors += 1
            else:
                j += 1
                errors += 1
    if i != len(masks_row) or j != len(segment):
        raise ValueError(f"{cigar!r} covers {i} pattern / {j} text characters, "
                         f"not {len(masks_row)} / {len(segment)}")
    return errors


# --------------------------------------------------------------------------
# Smith-Waterman with affine gaps (issue 26): plain Python, strings in, no
# code shared with seqsift. A gap of length L scores -(gap_open + (L - 1)
# gap_extend) (parasail's convention); linear gaps are gap_open = gap_extend.
# Letters other than A, C, G, T (upper or lower case) mismatch everything.
# --------------------------------------------------------------------------

def _base_equal(a: str, b: str) -> bool:
    return a.upper() == b.upper() and a.upper() in "ACGT"


def sw_affine_score(x: str, y: str, match: int, mismatch: int, gap_open: int, gap_extend: int) -> int:
    """Best local alignment score by Gotoh's recurrences, with -infinity written out."""
    neg = float("-inf")
    m, n = len(x), len(y)
    H = [[0] * (n + 1) for _ in range(m + 1)]
    E = [[neg] * (n + 1) for _ in range(m + 1)]   # ends with a target base against a gap
    F = [[neg] * (n + 1) for _ in range(m + 1)]   # ends with a query base against a gap
    best = 0
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            E[i][j] = max(E[i][j - 1] - gap_extend, H[i][j - 1] - gap_open)
            F[i][j] = max(F[i - 1][j] - gap_extend, H[i - 1][j] - gap_open)
            w = match if _base_equal(x[i - 1], y[j - 1]) else -mismatch
            H[i][j] = max(0, H[i - 1][j - 1] + w, E[i][j], F[i][j])
            best = max(best, H[i][j])
    return int(best)


def sw_alignment_score(x: str, y: str, coords, cigar: str, match: int, mismatch: int, gap_open: int,
                       gap_extend: int) -> int:
    """Score of a reported local alignment, checked against its sequences.

    coords = (query start, query end, target start, target end), 0-based half
    open; cigar of =, X, I (query base only), D (target base only). Raises
    AssertionError if an = pairs unequal bases, an X equal ones, or the CIGAR
    does not consume exactly the two spans.
    """
    qs, qe, ts, te = (int(c) for c in coords)
    assert 0 <= qs <= qe <= len(x) and 0 <= ts <= te <= len(y), coords
    if cigar == "*":
        assert qs == qe and ts == te
        return 0
    i, j, score = qs, ts, 0
    for length, op in re.findall(r"(\d+)([=XID])", cigar):
        length = int(length)
        assert length > 0
        if op in "=X":
            for _ in range(length):
                equal = _base_equal(x[i], y[j])
                assert equal == (op == "="), (cigar, i, j)
                score += match if equal else -mismatch
                i += 1
                j += 1
        else:
            score -= gap_open + (length - 1) * gap_extend
            if op == "I":
                i += length
            else:
                j += length
    assert "".join(re.findall(r"\d+[=XID]", cigar)) == cigar, cigar
    assert (i, j) == (qe, te), (cigar, coords)
    return score
