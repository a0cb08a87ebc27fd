"""Starts and alignments of search hits: the locate family's face.

The search kernels report each hit's end and distance. A search in ``best``
mode then needs its start and, with alignments, an extended CIGAR (``=``
match, ``X`` mismatch, ``I`` a pattern base against no text base, ``D`` a
text base against no pattern base):

* Hamming: start = end - m, one ``=`` or ``X`` per pattern base;
* edit distance: the *smallest* start s with ED(P, text[s:end]) equal to the
  hit's distance (DESIGN.md), and an optimal alignment of P to text[s:end],
  from one banded DP per hit (``cpu.py``'s docstring derives it).

Two backends compute the same answer:

* ``cpu.py`` (Numba), on host text codes or on raw bytes through a code table;
* ``cuda.py`` over ``locate.cu``, one GPU thread per hit, on the text codes
  a GPU search already holds on the device. A GPU search therefore never
  loads Numba: its import and loads had cost a command about a second beside
  CuPy's under one GIL, and its compiles a fresh machine several.

:func:`locate_packed` picks the backend by where the text lives.
:func:`gather_spans` packs byte spans into one buffer (NumPy), the layout of
an Arrow string array: the ``cigar`` and ``aligned`` columns.
"""
from __future__ import annotations

import numpy as np

from ..threads import PARALLEL_REGIONS

BAD_WINDOW = 1
"""Status of a hit whose window is not inside the text."""
BAD_DISTANCE = 2
"""Status of an edit hit that no start reaches at its distance (it was not d(end))."""


def locate_packed(metric: str, text, batch, row: np.ndarray, end: np.ndarray, distance: np.ndarray,
                  code_of: np.ndarray | None = None, lowest: np.ndarray | None = None
                  ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Start and extended CIGAR of each given end: (starts, (offsets, data)), on the host.

    ``text``: text codes, or (host only) raw bytes with ``code_of``
    (``alphabet.TEXT_CODE_ARRAY``) giving each byte's code. A CuPy array is
    located on its device (text codes only), anything else on the CPU.
    ``lowest``: per hit, the smallest start allowed (its record's first base,
    in a text of records back to back). ``end`` and ``lowest`` are positions
    in ``text``.

    Hit h's CIGAR is data[offsets[h]:offsets[h + 1]] (ASCII). Raises
    ValueError for an unknown metric, a hit outside the text, or an edit hit
    whose distance is not d(end).
    """
    if metric not in ("hamming", "edit"):
        raise ValueError(f"unknown metric {metric!r} (known: hamming, edit)")
    if len(row) == 0:
        return np.empty(0, np.int64), (np.zeros(1, np.int64), np.empty(0, np.uint8))
    if lowest is None:
        lowest = np.zeros(len(row), np.int64)
    if hasattr(text, "__cuda_array_interface__"):
        if code_of is not None:
            raise ValueError("the GPU locates text codes only: no code table")
        from . import cuda

        starts, status, cigar_at, cigar_length, cigars = cuda.locate_ops(metric, text, batch, row, end, distance,
                                                                          lowest)
        check_located(status, row, end, distance)
        return starts, gather_spans(cigars, cigar_at, cigar_at + cigar_length)
    from . import cpu

    with PARALLEL_REGIONS:
        starts, ops, op_offsets, op_counts = cpu.locate_ops(
            metric, text, batch.masks, batch.lengths, row, end, distance,
            exact_bytes=getattr(batch, "alphabet", "dna") == "bytes", code_of=code_of, lowest=lowest)
    return starts, cpu.cigar_buffer(ops, op_offsets, op_counts)


def check_located(status: np.ndarray, rows, ends, distances) -> None:
    """Raise ValueError naming the first hit whose status is not 0 (BAD_WINDOW or BAD_DISTANCE)."""
    bad = np.flatnonzero(status)
    if bad.size:
        h = int(bad[0])
        why = ("its window is not inside the text" if status[h] == BAD_WINDOW
               else "no start reaches that distance (is it d(end)?)")
        raise ValueError(f"cannot locate hit (row {rows[h]}, end {ends[h]}, distance "
                         f"{distances[h]}): {why}; {bad.size} such hit(s)")


def gather_spans(source: np.ndarray, starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """source[starts[h]:ends[h]] for every h, packed: (offsets int64 of length n + 1, data uint8).

    No Python object per span. Spans of about one length (within 2x) are
    copied together as the rows of a 2-D gather from a sliding-window view
    of ``source`` (one row of ``width`` bytes per span, a memcpy each), and
    each row's bytes past its span dropped by a mask; a span whose row would
    run past the source's end takes a row that ends there, and its mask
    starts later in it.
    """
    from numpy.lib.stride_tricks import sliding_window_view

    starts = np.ascontiguousarray(starts, dtype=np.int64)
    lengths = np.ascontiguousarray(ends, dtype=np.int64) - starts
    offsets = np.zeros(starts.shape[0] + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    out = np.empty(int(offsets[-1]), np.uint8)
    if out.size == 0:
        return offsets, out
    source = np.ascontiguousarray(source, dtype=np.uint8)
    # Length classes: (2^(c-1), 2^c], spans of length 0 with those of length 1.
    classes = np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64)
    for length_class in np.unique(classes):
        members = np.flatnonzero(classes == length_class)
        width = int(min(source.size, lengths[members].max()))
        if width == 0:
            continue
        row_start = np.minimum(starts[members], source.size - width)
        skip = starts[members] - row_start  # > 0 only for rows moved back from the source's end
        rows = sliding_window_view(source, width)[row_start]
        column = np.arange(width)[None, :]
        keep = (column >= skip[:, None]) & (column < (skip + lengths[members])[:, None])
        if members.size == starts.shape[0]:  # one class: the rows' kept bytes are the output, in order
            out[:] = rows[keep]
        else:
            out[(offsets[members, None] - skip[:, None] + column)[keep]] = rows[keep]
    return offsets, out
