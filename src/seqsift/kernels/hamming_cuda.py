"""CUDA launchers of the Hamming family (kernels in ``hamming.cu``).

Each has the common call shape ``kernel(text, batch, k, owned_lo, owned_hi)
-> EndHits`` (kernels/__init__.py); ``text`` may be a NumPy or a CuPy array
of text codes. Hits are compacted on the device and only they are copied back.

* :func:`thread`, :func:`block`, :func:`tiled`: Liu et al. (2012), Algorithms
  1-2, 3-4 and 5-6, one launch per batch of rows (grid.y = rows).
* :func:`packed`: many rows per launch, bit-sliced: one-hot text planes, 32
  window starts per thread, a bit-sliced mismatch budget per window; rows up
  to 64 characters, every IUPAC code. From 32 rows on, a block of 128 rows
  shares a table of shifted match words per text word; with fewer rows,
  each warp takes one row. Longer rows run in the tiled kernel, so every
  pattern works.
"""
from __future__ import annotations

import numpy as np

from . import EndHits

THREADS = 256          # as in hamming.cu
MAX_GRID_Y = 65_535
SLICED_MIN_ROWS = 32   # from this many rows on, the bit-sliced kernel
SLICED_ROWS = 128      # rows per block of hamming_sliced_* (PACKED_ROWS in hamming.cu)
SLICED_MAX_M = 64      # PACKED_MAX_M in hamming.cu
SLICED_WORDS = 64      # 32-start words per block


def _run(kernel, grid, block, args, capacity: int, shared_mem: int = 0) -> EndHits:
    """Launch with hit buffers, grow them and rerun if the hits did not fit."""
    from .cuda import compact_hits_buffers

    while True:
        count, out_row, out_end, out_dist = compact_hits_buffers(capacity)
        kernel(grid, block, (*args, count, np.uint64(capacity), out_row, out_end, out_dist),
               shared_mem=shared_mem)
        found = int(count.get()[0])
        if found <= capacity:
            return EndHits(out_row[:found].get(), out_end[:found].get(), out_dist[:found].get())
        capacity = found


def _paper_kernel(name: str, text, batch, k: int, owned_lo: int, owned_hi: int) -> EndHits:
    """Launch one of Liu et al.'s kernels over every row, in slices of grid.y rows."""
    import cupy

    from .cuda import load_module, to_device_text

    text_device = to_device_text(text)
    lo, hi = max(0, int(owned_lo)), min(int(text_device.size), int(owned_hi))
    if hi <= lo or batch.rows == 0:
        return EndHits.empty()
    kernel = load_module("hamming.cu").get_function(name)
    max_m = int(batch.lengths.max())
    positions = hi - lo + max_m  # starts from lo + 1 - m for the longest row
    parts = []
    for first in range(0, batch.rows, MAX_GRID_Y):
        rows = slice(first, min(batch.rows, first + MAX_GRID_Y))
        masks = cupy.asarray(np.ascontiguousarray(batch.masks[rows]))
        stride = int(masks.shape[1])  # the kernels' max_m: bytes per row of masks
        lengths = cupy.asarray(batch.lengths[rows].astype(np.int32))
        count_rows = lengths.size
        if name == "hamming_block":
            threads = min(THREADS, 1 << max(0, (max_m - 1).bit_length()))
            grid, block, shared = (positions, count_rows), (threads,), 0
        else:
            grid, block = ((positions + THREADS - 1) // THREADS, count_rows), (THREADS,)
            shared = stride + THREADS + max_m if name == "hamming_tiled" else 0
        hits = _run(kernel, grid, block,
                    (text_device, np.int64(text_device.size), masks, lengths, np.int32(stride), np.int32(k),
                     np.int64(lo), np.int64(hi)),
                    capacity=max(1 << 16, 2 * count_rows * 16), shared_mem=shared)
        parts.append(EndHits(hits.row + first, hits.end, hits.distance))
    return _concat(parts)


def thread(text, batch, k, owned_lo, owned_hi) -> EndHits:
    return _paper_kernel("hamming_thread", text, batch, k, owned_lo, owned_hi)


def block(text, batch, k, owned_lo, owned_hi) -> EndHits:
    return _paper_kernel("hamming_block", text, batch, k, owned_lo, owned_hi)


def tiled(text, batch, k, owned_lo, owned_hi) -> EndHits:
    return _paper_kernel("hamming_tiled", text, batch, k, owned_lo, owned_hi)


# ---- hamming-packed ----------------------------------------------------------

def packed(text, batch, k, owned_lo, owned_hi) -> EndHits:
    """The bit-sliced kernels: a block of rows per text span, or, for a few rows, a warp per row."""
    return _sliced(text, batch, k, owned_lo, owned_hi)


def _sliced(text, batch, k, owned_lo, owned_hi) -> EndHits:
    """hamming_sliced_*: rows of at most 64 characters (every IUPAC code); longer rows run tiled."""
    import cupy

    from ..patterns import PatternBatch
    from .cuda import load_module, to_device_text

    text_device = to_device_text(text)
    if text_device.data.ptr % 16:  # pack_planes reads 16-byte vectors
        text_device = text_device.copy()
    n = int(text_device.size)
    lo, hi = max(0, int(owned_lo)), min(n, int(owned_hi))
    lengths = np.asarray(batch.lengths, dtype=np.int32)
    short = np.flatnonzero((lengths >= 1) & (lengths <= SLICED_MAX_M))
    long_rows = np.flatnonzero(lengths > SLICED_MAX_M)
    parts = []
    if hi > lo and short.size:
        module = load_module("hamming.cu")
        sub_lengths = lengths[short]
        m_max, m_min = int(sub_lengths.max()), int(sub_lengths.min())
        first_word = max(0, lo + 1 - m_max) // 32
        last_word = min(hi - m_min, n - m_min) // 32
        if last_word >= first_word:
            plane_words = (n + 31) // 32 + 4
            planes = cupy.empty(4 * plane_words, dtype=cupy.uint32)
            module.get_function("pack_planes")(((plane_words + 255) // 256,), (256,),
                                               (text_device, np.int64(n), planes, np.int64(plane_words)))
            masks = cupy.asarray(np.ascontiguousarray(batch.masks[short][:, :m_max]))
            bits = max(1, int(k).bit_length())
            capacity = max(1 << 20, short.size * 64)
            if short.size >= SLICED_MIN_ROWS:
                groups = (short.size + SLICED_ROWS - 1) // SLICED_ROWS
                spans = (last_word - first_word + SLICED_WORDS) // SLICED_WORDS
                hits = _run(module.get_function(f"hamming_sliced_{bits}"), (groups * spans,), (SLICED_ROWS,),
                            (planes, np.int64(plane_words), np.int64(n), masks, np.int32(m_max),
                             cupy.asarray(sub_lengths), np.int32(short.size), np.int32(m_max), np.int32(k),
                             np.int64(lo), np.int64(hi), np.int64(first_word), np.int32(SLICED_WORDS),
                             np.int64(last_word)), capacity=capacity)
            else:
                warps = short.size * ((last_word - first_word + 32) // 32)
                hits = _run(module.get_function(f"hamming_sliced_few_{bits}"), ((warps * 32 + 255) // 256,),
                            (256,),
                            (planes, np.int64(plane_words), np.int64(n), masks, np.int32(m_max),
                             cupy.asarray(sub_lengths), np.int32(short.size), np.int32(k), np.int64(lo),
                             np.int64(hi), np.int64(first_word), np.int64(last_word)), capacity=capacity)
            parts.append(EndHits(short[hits.row].astype(np.int32), hits.end, hits.distance))
    if long_rows.size:
        subset = PatternBatch(batch.masks[long_rows], batch.lengths[long_rows],
                              batch.pattern_index[long_rows], batch.strand[long_rows])
        hits = tiled(text_device, subset, k, owned_lo, owned_hi)
        parts.append(EndHits(long_rows[hits.row].astype(np.int32), hits.end, hits.distance))
    return _concat(parts)


def _concat(parts: list[EndHits]) -> EndHits:
    parts = [p for p in parts if len(p)]
    if not parts:
        return EndHits.empty()
    return EndHits(np.concatenate([p.row for p in parts]).astype(np.int32),
                   np.concatenate([p.end for p in parts]).astype(np.int64),
                   np.concatenate([p.distance for p in parts]).astype(np.int16))
