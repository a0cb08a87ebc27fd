"""Start positions and alignments (CIGAR) of hits, on the CPU (Numba): the locate family's CPU backend.

The search kernels report ends only. :func:`locate_ops` turns (row, end,
distance) into the hit's start and the operations of an extended CIGAR,
which :func:`cigar_buffer` writes as text (``locate.cu`` computes the same
on the GPU, one thread per hit):

* ``=`` pattern and text characters match, ``X`` they do not,
* ``I`` a pattern character with no text character ("insertion" in the
  pattern, as in SAM with the pattern as the query),
* ``D`` a text character with no pattern character.

Hamming: start = end - m and the CIGAR is made of ``=`` and ``X`` only.

Edit distance: the start is the *smallest* s with ED(P, text[s:end]) equal
to the given distance (which must be d(end), the best over all s), and the
CIGAR is an optimal alignment of P against text[s:end]. It is found with one
banded dynamic programming matrix per hit, over the *reversed* strings::

    R[i][j] = ED(P[m-i:], text[end-j:end])    (last i pattern characters
                                              against last j text characters)

Row m of R gives ED(P, text[end-j:end]) for every candidate start
s = end - j at once, so the smallest s is the largest j with
R[m][j] == distance. Cells with |i - j| > distance cost more than distance
and are never needed, so only the band |i - j| <= distance is stored:
(m + 1) x (2 * distance + 1) cells. Tracing back from (m, j) to (0, 0)
walks the pattern from its first character to its last, so the operations
come out in forward order. Ties are broken the same way every time:
diagonal (= or X) first, then I, then D.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ...alphabet import IDENTITY_CODES
from . import BAD_DISTANCE, BAD_WINDOW, check_located, gather_spans

OP_MATCH, OP_MISMATCH, OP_INSERTION, OP_DELETION = 0, 1, 2, 3
OP_LETTERS = np.frombuffer(b"=XID", dtype=np.uint8)
INFINITE = np.int32(1 << 30)


@njit(cache=True, inline="always")
def _matches(mask, code, exact_bytes=False):
    """IUPAC mask against a text code; with ``exact_bytes`` (``--alphabet bytes``) byte equality."""
    if exact_bytes:
        return mask == code
    return ((mask >> code) & 1) == 1


# nogil: a GPU worker's task threads locate hits while another's kernel runs,
# in the same process as the client's merge when the worker runs in-process (seqsift.cluster).
@njit(parallel=True, cache=True, nogil=True)
def hamming_ops(text, code_of, masks, lengths, rows, ends, op_offsets, ops, starts, status, exact_bytes=False):
    """One '=' / 'X' operation per pattern position of each hit (text byte b compares as code_of[b])."""
    n = text.shape[0]
    for h in prange(rows.shape[0]):
        row = rows[h]
        m = np.int64(lengths[row])
        s = ends[h] - m
        starts[h] = s
        if s < 0 or ends[h] > n:
            status[h] = BAD_WINDOW
            continue
        base = op_offsets[h]
        for j in range(m):
            ops[base + j] = OP_MATCH if _matches(masks[row, j], code_of[text[s + j]], exact_bytes) else OP_MISMATCH


@njit(cache=True)
def _edit_locate_one(text, code_of, masks, row, m, end, d, ops, base, exact_bytes=False, lowest=0):
    """Smallest start (at least ``lowest``: the hit's record starts there) and forward alignment ops of
    one edit hit.

    Returns (start, number of ops, status). The band of R is stored as
    band[i, j - i + d] (see the module docstring); INFINITE outside.
    """
    width = 2 * d + 1
    j_max = min(end - lowest, m + d)  # text characters available before the end, at most m + d useful
    band = np.full((m + 1, width), INFINITE, np.int32)
    # Row 0: the empty pattern suffix against j text characters costs j (all D).
    for j in range(0, min(j_max, d) + 1):
        band[0, j + d] = j
    for i in range(1, m + 1):
        mask = masks[row, m - i]  # R row i adds pattern character P[m - i] at the front
        for j in range(max(0, i - d), min(j_max, i + d) + 1):
            x = j - i + d
            best = INFINITE
            if j == 0:
                best = i  # all I
            else:
                # diagonal: P[m-i] against text[end-j]
                diagonal = band[i - 1, x]  # (i-1, j-1) has the same j - i
                if diagonal < INFINITE:
                    best = diagonal + (0 if _matches(mask, code_of[text[end - j]], exact_bytes) else 1)
                if x > 0 and band[i, x - 1] + 1 < best:  # (i, j-1): a D
                    best = band[i, x - 1] + 1
            if x + 1 < width and band[i - 1, x + 1] + 1 < best:  # (i-1, j): an I
                best = band[i - 1, x + 1] + 1
            band[i, x] = best
    # The smallest start is the largest j with R[m][j] == d.
    j_best = -1
    for j in range(min(j_max, m + d), max(0, m - d) - 1, -1):
        if band[m, j - m + d] == d:
            j_best = j
            break
    if j_best < 0:
        return np.int64(-1), np.int64(0), BAD_DISTANCE
    # Traceback from (m, j_best) to (0, 0), emitting ops in forward order.
    i = m
    j = j_best
    count = 0
    while i > 0 or j > 0:
        x = j - i + d
        value = band[i, x]
        if i > 0 and j > 0:
            same = _matches(masks[row, m - i], code_of[text[end - j]], exact_bytes)
            if band[i - 1, x] + (0 if same else 1) == value:
                ops[base + count] = OP_MATCH if same else OP_MISMATCH
                count += 1
                i -= 1
                j -= 1
                continue
        if i > 0 and x + 1 < width and band[i - 1, x + 1] + 1 == value:
            ops[base + count] = OP_INSERTION
            count += 1
            i -= 1
            continue
        ops[base + count] = OP_DELETION
        count += 1
        j -= 1
    return end - j_best, np.int64(count), 0


@njit(parallel=True, cache=True, nogil=True)
def edit_ops(text, code_of, masks, lengths, rows, ends, distances, op_offsets, ops, op_counts, starts, status,
             exact_bytes, lowest):
    """Starts and alignment ops of edit hits, in parallel over hits.

    Hit h may write at most lengths[row] + distance ops from op_offsets[h]
    (an alignment of cost d has at most d D operations besides the m
    pattern characters).
    """
    n = text.shape[0]
    for h in prange(rows.shape[0]):
        row = rows[h]
        if ends[h] > n or ends[h] < 0 or distances[h] < 0:
            status[h] = BAD_WINDOW
            continue
        start, count, bad = _edit_locate_one(text, code_of, masks, row, np.int64(lengths[row]),
                                             np.int64(ends[h]), np.int64(distances[h]),
                                             ops, op_offsets[h], exact_bytes, lowest[h])
        starts[h] = start
        op_counts[h] = count
        status[h] = bad


@njit(cache=True, nogil=True)
def cigar_bytes(ops, op_offsets, op_counts, char_offsets, out):
    """Run-length encode each hit's ops into CIGAR text (ASCII) at char_offsets[h];
    returns the number of characters written per hit.

    A run of length L takes (digits of L) + 1 <= 2 L characters, so 2 x the
    op count is always enough room.
    """
    hits = op_offsets.shape[0]
    written = np.zeros(hits, np.int64)
    digits = np.empty(20, np.uint8)
    for h in range(hits):
        pos = char_offsets[h]
        a = op_offsets[h]
        b = a + op_counts[h]
        q = a
        while q < b:
            op = ops[q]
            r = q
            while r < b and ops[r] == op:
                r += 1
            run = r - q
            nd = 0
            while run > 0:
                digits[nd] = 48 + run % 10
                run //= 10
                nd += 1
            for x in range(nd - 1, -1, -1):
                out[pos] = digits[x]
                pos += 1
            out[pos] = OP_LETTERS[op]
            pos += 1
            q = r
        written[h] = pos - char_offsets[h]
    return written


def cigar_buffer(ops, op_offsets, op_counts) -> tuple[np.ndarray, np.ndarray]:
    """All hits' CIGARs as one ASCII buffer: hit h is data[offsets[h]:offsets[h + 1]].

    :func:`cigar_bytes` writes each hit at 2 characters of room per op slot;
    the written runs are then packed together (:func:`gather_spans`), giving
    the offsets + data layout of an Arrow string array.
    """
    char_offsets = 2 * op_offsets
    out = np.empty(int(2 * (op_offsets[-1] + op_counts[-1])) + 1, np.uint8)
    written = cigar_bytes(ops, op_offsets, op_counts, char_offsets, out)
    return gather_spans(out, char_offsets, char_offsets + written)


def locate_ops(metric: str, text, masks, lengths, row, end, distance, exact_bytes: bool = False,
               code_of: np.ndarray | None = None, lowest: np.ndarray | None = None):
    """Starts and alignment ops of every hit: (starts, ops, op_offsets, op_counts).

    Hit h's ops (OP_MATCH ... OP_DELETION, forward order) are
    ops[op_offsets[h]:op_offsets[h] + op_counts[h]]. ``text`` holds text
    codes, or any bytes with ``code_of`` (256 codes: e.g. the raw FASTA bytes
    with ``alphabet.TEXT_CODE_ARRAY``, so a chunk searched on the GPU needs no
    encoded copy on the host). With ``exact_bytes`` the masks are pattern
    bytes matched by equality against raw text bytes (``--alphabet bytes``).

    metric: "hamming" or "edit". For Hamming, start = end - m. For edit,
    start = the smallest s with ED(P, text[s:end]) == distance[h], which must
    be d(end) as reported by the search kernel, and (edit) at least
    ``lowest[h]`` where given: where the hit's record starts in a text of
    records back to back. Raises ValueError for another metric, and when a
    hit does not fit in ``text`` or (edit) no start reaches the given distance.
    """
    text = np.ascontiguousarray(text, dtype=np.uint8)
    code_of = IDENTITY_CODES if code_of is None else np.ascontiguousarray(code_of, dtype=np.uint8)
    masks = np.ascontiguousarray(masks, dtype=np.uint8)
    lengths = np.ascontiguousarray(lengths, dtype=np.int32)
    rows = np.ascontiguousarray(row, dtype=np.int64)
    ends = np.ascontiguousarray(end, dtype=np.int64)
    distances = np.ascontiguousarray(distance, dtype=np.int64)
    hits = rows.shape[0]
    m = lengths[rows].astype(np.int64)
    starts = np.empty(hits, np.int64)
    status = np.zeros(hits, np.int8)
    if metric == "hamming":
        op_counts = m
        op_offsets = np.cumsum(op_counts) - op_counts
        ops = np.empty(int(op_counts.sum()), np.uint8)
        hamming_ops(text, code_of, masks, lengths, rows, ends, op_offsets, ops, starts, status, exact_bytes)
    elif metric == "edit":
        room = m + np.maximum(distances, 0)
        op_offsets = np.cumsum(room) - room
        ops = np.empty(int(room.sum()), np.uint8)
        op_counts = np.zeros(hits, np.int64)
        lowest = np.zeros(hits, np.int64) if lowest is None else np.ascontiguousarray(lowest, dtype=np.int64)
        edit_ops(text, code_of, masks, lengths, rows, ends, distances, op_offsets, ops, op_counts,
                 starts, status, exact_bytes, lowest)
    else:
        raise ValueError(f"unknown metric {metric!r} (known: hamming, edit)")
    check_located(status, rows, ends, distances)
    return starts, ops, op_offsets, op_counts

