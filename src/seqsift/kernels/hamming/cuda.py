"""CUDA launchers of the Hamming family (kernels in ``hamming.cu``).

Each has the common call shape ``kernel(text, batch, k, owned_lo, owned_hi)
-> EndHits`` (kernels/__init__.py); ``text`` may be a NumPy or a CuPy array
of text codes. Hits are compacted on the device and only they are copied back.

* :func:`thread`, :func:`block`, :func:`tiled`: Liu et al. (2012), Algorithms
  1-2, 3-4 and 5-6, one launch per batch of rows (grid.y = rows).
* :func:`packed`: many rows per launch, bit-sliced: one-hot text planes, 32
  window starts per thread, a bit-sliced mismatch budget per window; rows up
  to 64 characters, every IUPAC code. From 32 rows on, a block of 128 rows
  shares a table of shifted match words per text word (planes built first by
  ``pack_planes``); with fewer rows, ``hamming_direct_*`` reads the text codes
  once and builds the planes in registers, each lane counting every row over
  its 32 window starts (:func:`direct_row_plans` lays out the rows;
  tests/hamming_direct_emulation.py redoes the kernel in NumPy). Longer rows
  run in the tiled kernel, so every pattern works.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import EndHits

THREADS = 256          # as in hamming.cu
MAX_GRID_Y = 65_535
SLICED_MIN_ROWS = 32   # from this many rows on, the bit-sliced kernel
SLICED_ROWS = 128      # rows per block of hamming_sliced_* (PACKED_ROWS in hamming.cu)
SLICED_MAX_M = 64      # PACKED_MAX_M in hamming.cu
SLICED_WORDS = 64      # 32-start words per block
DIRECT_THREADS = 256   # as in hamming.cu
DIRECT_TILE = 1024     # characters per warp step (TILE_CHARS)
DIRECT_MAX_TILES_PER_WARP = 16
DIRECT_WARPS_PER_SM = 32  # resident at 56-63 registers a thread
# Row plan of hamming_direct_* (PLAN_* in hamming.cu).
PLAN_BYTES, PLAN_BEGIN, PLAN_COUNT, PLAN_OFFSETS, PLAN_MASKS = 160, 1, 10, 20, 84
_SINGLE_BASE = {1: 0, 2: 1, 4: 2, 8: 3}  # mask of one base -> its plane (A, C, G, T)


def _run(kernel, grid, block, args, capacity: int, shared_mem: int = 0) -> EndHits:
    """One launch of ``kernel`` with ``args`` and the hit buffers (kernels/cuda.py's shared launch loop)."""
    from ..cuda import compact_hit_args, launch_end_hits

    def launch(hit_buffers, capacity):
        kernel(grid, block, (*args, *compact_hit_args(hit_buffers, capacity)), shared_mem=shared_mem)

    return launch_end_hits(launch, capacity)


def _paper_kernel(name: str, text, batch, k: int, owned_lo: int, owned_hi: int) -> EndHits:
    """Launch one of Liu et al.'s kernels over every row, in slices of grid.y rows."""
    import cupy

    from ..cuda import load_module, to_device_text

    text_device = to_device_text(text)
    lo, hi = max(0, int(owned_lo)), min(int(text_device.size), int(owned_hi))
    if hi <= lo or batch.rows == 0:
        return EndHits.empty()
    kernel = load_module("hamming/hamming.cu").get_function(name)
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
    """hamming_direct_* or hamming_sliced_*: rows of at most 64 characters (every IUPAC code); longer rows run tiled."""
    import cupy

    from ...pattern_set import PatternBatch
    from ..cuda import load_module, to_device_text, uploaded_once

    if k < 0:
        return EndHits.empty()
    text_device = to_device_text(text)
    if text_device.data.ptr % 16:  # both kernels read 16-byte vectors
        text_device = text_device.copy()
    n = int(text_device.size)
    lo, hi = max(0, int(owned_lo)), min(n, int(owned_hi))
    lengths = np.asarray(batch.lengths, dtype=np.int32)
    short = np.flatnonzero((lengths >= 1) & (lengths <= SLICED_MAX_M))
    long_rows = np.flatnonzero(lengths > SLICED_MAX_M)
    parts = []
    if hi > lo and short.size:
        module = load_module("hamming/hamming.cu")
        sub_lengths = lengths[short]
        m_max, m_min = int(sub_lengths.max()), int(sub_lengths.min())
        first_word = max(0, lo + 1 - m_max) // 32
        last_word = min(hi - m_min, n - m_min) // 32
        # More than m_max mismatches never happen: the budget needs at most 7 bit planes.
        k_budget = min(int(k), m_max)
        bits = max(1, k_budget.bit_length())
        masks = np.ascontiguousarray(batch.masks[short][:, :m_max])
        capacity = max(1 << 20, short.size * 64)
        if last_word < first_word:
            pass
        elif short.size < SLICED_MIN_ROWS:
            tiles = (last_word - first_word) // 32 + 1
            per_warp = direct_tiles_per_warp(tiles, _multiprocessors(cupy.cuda.Device().id))
            warps = -(-tiles // per_warp)
            words = 2 if m_max <= 32 else 3
            # The row plans go to the device once per batch (every chunk task of the batch reuses them).
            plans = uploaded_once(batch.derived, ("hamming.direct", cupy.cuda.Device().id),
                                  lambda: cupy.asarray(direct_row_plans(masks, sub_lengths)))
            hits = _run(module.get_function(f"hamming_direct_{bits}_{words}"),
                        (-(-warps * 32 // DIRECT_THREADS),), (DIRECT_THREADS,),
                        (text_device, np.int64(n), plans, np.int32(short.size), np.int32(k_budget), np.int64(lo),
                         np.int64(hi), np.int64(first_word), np.int64(tiles), np.int32(per_warp)),
                        capacity=capacity)
            parts.append(EndHits(short[hits.row].astype(np.int32), hits.end, hits.distance))
        else:
            plane_words = (n + 31) // 32 + 4
            planes = cupy.empty(4 * plane_words, dtype=cupy.uint32)
            module.get_function("pack_planes")(((plane_words + 255) // 256,), (256,),
                                               (text_device, np.int64(n), planes, np.int64(plane_words)))
            groups = (short.size + SLICED_ROWS - 1) // SLICED_ROWS
            spans = (last_word - first_word + SLICED_WORDS) // SLICED_WORDS
            # The rows go to the device once per batch (every chunk task of the batch reuses them).
            device_masks, device_lengths = uploaded_once(
                batch.derived, ("hamming.sliced", cupy.cuda.Device().id), lambda: (cupy.asarray(masks), cupy.asarray(sub_lengths)))
            hits = _run(module.get_function(f"hamming_sliced_{bits}"), (groups * spans,), (SLICED_ROWS,),
                        (planes, np.int64(plane_words), np.int64(n), device_masks, np.int32(m_max),
                         device_lengths, np.int32(short.size), np.int32(m_max), np.int32(k_budget),
                         np.int64(lo), np.int64(hi), np.int64(first_word), np.int32(SLICED_WORDS),
                         np.int64(last_word)), capacity=capacity)
            parts.append(EndHits(short[hits.row].astype(np.int32), hits.end, hits.distance))
    if long_rows.size:
        subset = PatternBatch(batch.masks[long_rows], batch.lengths[long_rows],
                              batch.pattern_index[long_rows], batch.strand[long_rows])
        hits = tiled(text_device, subset, k, owned_lo, owned_hi)
        parts.append(EndHits(long_rows[hits.row].astype(np.int32), hits.end, hits.distance))
    return _concat(parts)


@lru_cache(maxsize=None)
def _multiprocessors(device: int) -> int:
    import cupy

    return int(cupy.cuda.Device(device).attributes["MultiProcessorCount"])


def direct_tiles_per_warp(tiles: int, sms: int) -> int:
    """Tiles (1,024 characters) per warp of hamming_direct_*: up to 16, while every SM still gets 4 waves of warps."""
    return max(1, min(DIRECT_MAX_TILES_PER_WARP, tiles // (4 * sms * DIRECT_WARPS_PER_SM)))


def direct_row_plans(masks: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The rows as hamming_direct_* reads them: (rows, PLAN_BYTES) uint8.

    Per row: its length m; for groups g = 4h + b (b = A, C, G, T, h = offset
    >> 5) the offsets i whose mask is that one base, in pairs, and group 8:
    the offsets whose mask is not a single base, plus the odd offset left of
    each single-base group, with their masks. ``PLAN_BEGIN + g`` holds where
    group g starts among the offsets, ``PLAN_COUNT + g`` its pairs (its
    offsets for group 8).
    """
    plans = np.zeros((len(lengths), PLAN_BYTES), dtype=np.uint8)
    for r, m in enumerate(np.asarray(lengths, dtype=np.int64)):
        row = np.asarray(masks[r, :m], dtype=np.uint8)
        groups: list[list[int]] = [[] for _ in range(9)]
        for i, mask in enumerate(row.tolist()):
            base = _SINGLE_BASE.get(mask)
            groups[8 if base is None else 4 * (i >> 5) + base].append(i)
        for g in range(8):
            if len(groups[g]) % 2:
                groups[8].append(groups[g].pop())
        offsets: list[int] = []
        for g, group in enumerate(groups):
            plans[r, PLAN_BEGIN + g] = len(offsets)
            plans[r, PLAN_COUNT + g] = len(group) // 2 if g < 8 else len(group)
            offsets += group
        plans[r, 0] = m
        plans[r, PLAN_OFFSETS:PLAN_OFFSETS + m] = offsets
        plans[r, PLAN_MASKS:PLAN_MASKS + m] = row[offsets]
    return plans


def _concat(parts: list[EndHits]) -> EndHits:
    parts = [p for p in parts if len(p)]
    if not parts:
        return EndHits.empty()
    return EndHits(np.concatenate([p.row for p in parts]).astype(np.int32),
                   np.concatenate([p.end for p in parts]).astype(np.int64),
                   np.concatenate([p.distance for p in parts]).astype(np.int16))
