"""The CRISPR CPU kernel in NumPy, for small bulge-free jobs of plain A/C/G/T guides of up to 32 bases.

Why a second CPU kernel: the first call of any Numba function in a process
costs about 0.7 s on this project's 2-core machine (Numba loads its typing
registries and LLVM even when the compiled kernels come from its disk
cache), more than a whole bacterial genome's search takes. For such a job
this module does the same work with whole NumPy arrays and Numba is never
called. Per (candidate, row) it is about 1.7x slower than ``cpu.py``'s
``_check_packed``, so :func:`seqsift.kernels.crispr.small_job` sends only
jobs below ``SMALL_JOB_PAIRS`` here.

The algorithm is ``_check_packed``'s (see ``cpu.py``): per strand, the PAM
candidates; each candidate's protospacer window packed once, 2 bits a base,
into a 64-bit word (``other`` marks its non-ACGT bases); per row, XOR with
the row's packed bases, fold each base's two bits onto one, OR ``other``,
mask to the row's bases (``care``), popcount. NumPy's ufuncs release the
GIL, so the task threads of an in-process cluster run in parallel.
"""
from __future__ import annotations

import numpy as np

from . import BULGE_NONE, GuideRows, SiteHits

PACK_MAX = 32
"""Longest row a 64-bit word packs (2 bits a base)."""
EVEN_BITS = np.uint64(0x5555555555555555)
_SINGLE_BASE_CODE = {1: 0, 2: 1, 4: 2, 8: 3}  # IUPAC mask of A, C, G, T -> text code


def packable(rows: GuideRows, row_ids: np.ndarray) -> np.ndarray:
    """Which of ``row_ids`` are plain A/C/G/T rows of at most PACK_MAX bases (bool per row id)."""
    masks, lengths = rows.masks[row_ids], rows.lengths[row_ids]
    inside = np.arange(masks.shape[1]) < lengths[:, None]
    single = np.isin(masks, (1, 2, 4, 8))
    return (lengths <= PACK_MAX) & (single | ~inside).all(axis=1)


def pack_rows(rows: GuideRows, row_ids: np.ndarray, window: int, pam_right: bool):
    """(codes, care) per row: 2-bit base codes and the even bit of each base the row covers.

    Rows sit in a ``window``-base word aligned to the protospacer's PAM end:
    the last ``L`` bases when the PAM is right of it, the first when left.
    """
    codes = np.zeros(len(row_ids), dtype=np.uint64)
    care = np.zeros(len(row_ids), dtype=np.uint64)
    for n, r in enumerate(row_ids):
        length = int(rows.lengths[r])
        offset = window - length if pam_right else 0
        for i in range(length):
            codes[n] |= np.uint64(_SINGLE_BASE_CODE[int(rows.masks[r, i])]) << np.uint64(2 * (offset + i))
            care[n] |= np.uint64(1) << np.uint64(2 * (offset + i))
    return codes, care


def pam_candidates(text: np.ndarray, pam: np.ndarray) -> np.ndarray:
    """Positions p with text[p:p+P] within the PAM's IUPAC sets (non-ACGT text never matches), int64."""
    n, length = text.shape[0], pam.shape[0]
    if n < length:
        return np.empty(0, dtype=np.int64)
    ok = np.ones(n - length + 1, dtype=bool)
    for i in range(length):
        codes = text[i:n - length + 1 + i]
        ok &= (codes <= 3) & ((int(pam[i]) >> np.minimum(codes, 3)) & 1).astype(bool)
    return np.flatnonzero(ok).astype(np.int64)


def find_sites_vectorized(text, rows: GuideRows, owned_lo: int, owned_hi: int) -> SiteHits:
    """Every bulge-free site of ``rows`` (all :func:`packable`) whose last base lies in [owned_lo, owned_hi)."""
    text = np.ascontiguousarray(text, dtype=np.uint8)
    n = text.shape[0]
    parts = []
    for strand in (0, 1):
        row_ids = np.flatnonzero(rows.strand == strand)
        if len(row_ids) == 0:
            continue
        candidates = pam_candidates(text, rows.pam_masks[strand])
        pam_right, pam_length = bool(rows.pam_right[strand]), rows.pam_length
        window = int(rows.lengths[row_ids].max())
        first = candidates - window if pam_right else candidates + pam_length  # the window's first base
        packed = np.zeros(len(candidates), dtype=np.uint64)
        other = np.zeros(len(candidates), dtype=np.uint64)  # non-ACGT bases, and bases beyond the text
        for i in range(window):
            at = first + i
            codes = np.where((at >= 0) & (at < n), text[np.clip(at, 0, max(n - 1, 0))], 4).astype(np.uint64)
            packed |= (codes & np.uint64(3)) << np.uint64(2 * i)
            other |= (codes >> np.uint64(2)) << np.uint64(2 * i)
        codes, care = pack_rows(rows, row_ids, window, pam_right)
        for length in np.unique(rows.lengths[row_ids]):
            start = candidates - length if pam_right else candidates
            end = candidates + pam_length if pam_right else candidates + pam_length + length
            inside = np.flatnonzero((start >= 0) & (end <= n) & (end - 1 >= owned_lo) & (end - 1 < owned_hi))
            packed_in, other_in = packed[inside], other[inside]
            for k in np.flatnonzero(rows.lengths[row_ids] == length):
                x = packed_in ^ codes[k]
                mismatches = np.bitwise_count((((x | (x >> np.uint64(1))) & EVEN_BITS) | other_in) & care[k])
                found = np.flatnonzero(mismatches <= rows.limit[row_ids[k]])
                parts.append((np.full(len(found), row_ids[k], np.int32), start[inside[found]],
                              np.full(len(found), pam_length + length, np.int32),
                              mismatches[found].astype(np.int16)))
    if not parts:
        return SiteHits.empty()
    row, start, length, mismatches = (np.concatenate([p[i] for p in parts]) for i in range(4))
    zeros = np.zeros(len(row), dtype=np.int8)
    return SiteHits(row, start.astype(np.int64), length.astype(np.int32), zeros + BULGE_NONE, zeros,
                    zeros.astype(np.int16), mismatches)
