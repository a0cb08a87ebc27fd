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

Note: the loops write into buffers made once (``out=``) rather than making
a temporary array per step. In Dask's worker processes (which set
MALLOC_TRIM_THRESHOLD_) every large temporary is a fresh mmap of zeroed
pages, and the kernel ran 5x slower there than in a plain process.
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
    ok, matches = np.ones(n - length + 1, dtype=bool), np.empty(n - length + 1, dtype=bool)
    for i in range(length):  # into buffers made once: see the module's note
        letter_matches = np.zeros(256, dtype=bool)  # text code -> within the letter's set (codes 4+ never)
        letter_matches[:4] = [(int(pam[i]) >> code) & 1 for code in range(4)]
        np.take(letter_matches, text[i:n - length + 1 + i], out=matches, mode="clip")
        np.logical_and(ok, matches, out=ok)
    return np.flatnonzero(ok).astype(np.int64)


_BASE_BITS = np.array([0, 1, 2, 3] + [0] * 252, dtype=np.uint64)     # text code -> its 2 bits (non-ACGT: 0)
_OTHER_BIT = np.array([0, 0, 0, 0] + [1] * 252, dtype=np.uint64)     # text code -> 1 where not A/C/G/T


def _packed_windows(text: np.ndarray, first: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(packed, other): base i of text[first:first+window] in bits 2i..2i+1 of ``packed``; ``other``'s bit 2i
    set where that base is not A/C/G/T or lies outside the text."""
    padded = np.concatenate([np.full(window, 4, np.uint8), text, np.full(window, 4, np.uint8)])
    packed, other = np.zeros(len(first), np.uint64), np.zeros(len(first), np.uint64)
    at, codes, bits = np.empty_like(first), np.empty(len(first), np.uint8), np.empty(len(first), np.uint64)
    for i in range(window):  # into buffers made once: see the module's note
        np.add(first, window + i, out=at)
        np.take(padded, at, out=codes, mode="clip")  # "raise" would buffer "out"
        for table, word in ((_BASE_BITS, packed), (_OTHER_BIT, other)):
            np.take(table, codes, out=bits, mode="clip")
            np.left_shift(bits, np.uint64(2 * i), out=bits)
            np.bitwise_or(word, bits, out=word)
    return packed, other


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
        packed, other = _packed_windows(text, first, window)
        codes, care = pack_rows(rows, row_ids, window, pam_right)
        for length in np.unique(rows.lengths[row_ids]):
            start = candidates - length if pam_right else candidates
            end = candidates + pam_length if pam_right else candidates + pam_length + length
            inside = np.flatnonzero((start >= 0) & (end <= n) & (end - 1 >= owned_lo) & (end - 1 < owned_hi))
            packed_in, other_in = packed[inside], other[inside]
            # Each row's steps write into these buffers (the note below).
            word, folded = np.empty_like(packed_in), np.empty_like(packed_in)
            mismatches, kept = np.empty(len(inside), np.uint8), np.empty(len(inside), bool)
            for k in np.flatnonzero(rows.lengths[row_ids] == length):
                np.bitwise_xor(packed_in, codes[k], out=word)
                np.right_shift(word, np.uint64(1), out=folded)
                np.bitwise_or(word, folded, out=word)
                np.bitwise_and(word, EVEN_BITS, out=word)
                np.bitwise_or(word, other_in, out=word)
                np.bitwise_and(word, care[k], out=word)
                np.bitwise_count(word, out=mismatches)
                found = np.flatnonzero(np.less_equal(mismatches, rows.limit[row_ids[k]], out=kept))
                parts.append((np.full(len(found), row_ids[k], np.int32), start[inside[found]],
                              np.full(len(found), pam_length + length, np.int32),
                              mismatches[found].astype(np.int16)))
    if not parts:
        return SiteHits.empty()
    row, start, length, mismatches = (np.concatenate([p[i] for p in parts]) for i in range(4))
    zeros = np.zeros(len(row), dtype=np.int8)
    return SiteHits(row, start.astype(np.int64), length.astype(np.int32), zeros + BULGE_NONE, zeros,
                    zeros.astype(np.int16), mismatches)
