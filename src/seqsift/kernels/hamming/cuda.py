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
  its 32 window starts (:func:`direct_row_plans` lays out the rows,
  :func:`emulate_direct` redoes the kernel in NumPy). Longer rows run in the
  tiled kernel, so every pattern works.
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

    from ...patterns import PatternBatch
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


# ---- hamming_direct_* emulated in NumPy ---------------------------------------
# The same arithmetic on uint32 words, all (tile, lane) pairs at once, so that
# the CPU tests check the kernel's own formulation: the 16-byte pieces, the
# multiply that gathers one code bit of eight codes, the byte permutes and
# shuffles, the tiles a warp loads ahead, the row plans and the bit-sliced
# budget. It is slow (seconds per Mbp) and meant for tests.

_U32 = np.uint64(0xFFFFFFFF)


def _byte_perm(x, y, selector):
    """CUDA __byte_perm: byte i of the result is byte (selector >> 4i) & 7 of y:x."""
    x, y = np.asarray(x, np.uint64), np.asarray(y, np.uint64)
    selector = np.asarray(selector, np.uint64)
    pool = [(x >> np.uint64(8 * i)) & np.uint64(0xFF) for i in range(4)] + \
           [(y >> np.uint64(8 * i)) & np.uint64(0xFF) for i in range(4)]
    out = np.zeros(np.broadcast(x, y, selector).shape, np.uint64)
    for i in range(4):
        pick = (selector >> np.uint64(4 * i)) & np.uint64(7)
        byte = np.choose(pick.astype(np.int64), pool) if pick.ndim else pool[int(pick)]
        out |= byte << np.uint64(8 * i)
    return out


def _funnel_right(low, high, shift):
    """CUDA __funnelshift_r: the low word of (high:low) >> (shift & 31)."""
    both = (np.asarray(high, np.uint64) << np.uint64(32)) | np.asarray(low, np.uint64)
    return (both >> (np.asarray(shift, np.uint64) & np.uint64(31))) & _U32


def _tile_codes(codes: np.ndarray, n: int, first_word: int, tiles: np.ndarray, partial: np.ndarray, words: int):
    """(tiles, 32 lanes, 8) uint64 words of four codes: the lanes' two 16-byte pieces (load_inside / load_tile_edge)."""
    at = (first_word + 32 * tiles.astype(np.int64)) * 32
    lane = np.arange(32)
    index = (at[:, None, None, None] + np.array([0, 512])[None, None, :, None]
             + 16 * lane[None, :, None, None] + np.arange(16)[None, None, None, :])
    raw = np.where(index < n, codes[np.minimum(index, n - 1)], 4).astype(np.uint8)
    # After a warp's last tile only the first pieces of lanes < 2 (WORDS - 1) are read.
    skip = partial[:, None, None] & ((np.arange(2)[None, None, :] == 1) | (lane[None, :, None] >= 2 * (words - 1)))
    raw = np.where(skip[..., None], np.uint8(4), raw)
    return raw.reshape(len(tiles), 32, 8, 4).astype(np.uint64) @ (np.uint64(1) << np.arange(0, 32, 8, dtype=np.uint64))


def _pack(x: np.ndarray) -> np.ndarray:
    """pack_tile: (tiles, 32, 8) code words -> (4 bases, tiles, 32) one-hot plane words of each lane's own word."""
    seen = np.bitwise_or.reduce(x, axis=2)
    any_never = ((seen & np.uint64(0xFCFCFCFC)) != 0).any(axis=1)  # __any_sync over the warp
    clamp = any_never[:, None] & ((seen & np.uint64(0xF8F8F8F8)) != 0)
    if clamp.any():  # __vminu4(x, 0x04040404)
        low = np.minimum(x.astype(np.uint32).view(np.uint8), 4).view(np.uint32).astype(np.uint64)
        x = np.where(clamp[..., None], low.reshape(x.shape), x)
    z = [(x[..., 2 * g] + (x[..., 2 * g + 1] << np.uint64(4))) & _U32 for g in range(4)]
    lane = np.arange(32)
    halves = np.where(lane < 16, 0x5410, 0x7632)

    def own_word(t):
        top = [((z[g] & np.uint64(0x11111111 << t)) * np.uint64(0x01020408 >> t)) & _U32 for g in range(4)]
        pieces = _byte_perm(_byte_perm(top[0], top[1], 0x0073), _byte_perm(top[2], top[3], 0x7300), 0x7610)
        return _byte_perm(pieces[:, (2 * lane) & 31], pieces[:, (2 * lane + 1) & 31], halves[None, :])

    b0, b1 = own_word(0), own_word(1)
    b2 = np.where(any_never[:, None], own_word(2), np.uint64(0))
    inv = lambda v: ~v & _U32  # noqa: E731
    return np.stack([inv(b0) & inv(b1) & inv(b2), b0 & inv(b1) & inv(b2), inv(b0) & b1 & inv(b2), b0 & b1 & inv(b2)])


def _words_ahead(current, following, shift):
    """words_ahead: lane L gets lane L + shift's word, taken from the following tile for lanes < shift."""
    lane = np.arange(32)
    provided = np.where(lane[None, None, :] < shift, following, current)
    return provided[..., (lane + shift) & 31]


def emulate_direct(text, batch, k, owned_lo, owned_hi, tiles_per_warp: int = 2, stats: dict | None = None) -> EndHits:
    """hamming_direct_* step by step in NumPy (rows of 1 to 64 characters).

    ``tiles_per_warp`` sets where the warps' tile runs end (where the next
    tile is read only for its first words). With ``stats`` given, it receives
    per row and tile of a warp the mean number of checks (offset pairs of
    groups 0-7, single offsets of group 8) the warp runs before all of its
    windows are dead (the kernel's early exit), and the mean index of the group
    where that happens (9: never), for the instruction count of the benchmark.
    """
    codes = np.ascontiguousarray(text, dtype=np.uint8)
    n = int(codes.size)
    lo, hi = max(0, int(owned_lo)), min(n, int(owned_hi))
    lengths = np.asarray(batch.lengths, dtype=np.int64)
    if k < 0 or hi <= lo or lengths.size == 0:
        return EndHits.empty()
    if lengths.min() < 1 or lengths.max() > SLICED_MAX_M:
        raise ValueError("hamming_direct_* takes rows of 1 to 64 characters")
    m_max, m_min = int(lengths.max()), int(lengths.min())
    first_word = max(0, lo + 1 - m_max) // 32
    last_word = min(hi - m_min, n - m_min) // 32
    if last_word < first_word:
        return EndHits.empty()
    k_budget = min(int(k), m_max)
    bits = max(1, k_budget.bit_length())
    words = 2 if m_max <= 32 else 3
    plans = direct_row_plans(np.asarray(batch.masks)[:, :m_max], lengths)
    tiles = (last_word - first_word) // 32 + 1

    # Each warp: steps 0 .. steps - 1 from tile_begin; the tile after its last is read in part.
    tile = np.arange(tiles)
    step = tile % tiles_per_warp
    last_of_warp = (step == tiles_per_warp - 1) | (tile == tiles - 1)
    current = _pack(_tile_codes(codes, n, first_word, tile, np.zeros(tiles, bool), words))
    following = _pack(_tile_codes(codes, n, first_word, tile + 1, last_of_warp, words))
    plane_words = [current, _words_ahead(current, following, 1)]
    if words == 3:
        plane_words.append(_words_ahead(current, following, 2))

    # The interior steps of each warp (interior_begin, interior_end in the kernel).
    first_start = np.maximum(0, lo + 1 - lengths)
    last_start = np.minimum(hi - lengths, n - lengths)
    interior_first, interior_last = max(0, int(first_start.max())), min(n, int(last_start.min()))
    steps = np.minimum(tiles_per_warp, tiles - (tile - step))
    chunk_at = (first_word + 32 * (tile - step)) * 32
    below = interior_first - chunk_at
    above = interior_last - (DIRECT_TILE - 1) - chunk_at
    interior_begin = np.where(below <= 0, 0, np.minimum(steps, -(-below // DIRECT_TILE)))
    interior_end = np.where(above < 0, 0, np.minimum(steps, above // DIRECT_TILE + 1))
    interior = (step >= interior_begin) & (step < interior_end)
    tile_start = chunk_at + DIRECT_TILE * step
    base = tile_start[:, None] + 32 * np.arange(32)[None, :]  # the lanes' first window starts

    rows_out, ends_out, dists_out = [], [], []
    spent, groups_passed, spans = [], [], []
    j = np.arange(32, dtype=np.int64)
    for r in range(len(lengths)):
        start = base[..., None] + j  # (tiles, 32, 32): window start of bit j
        reportable = (start >= first_start[r]) & (start <= last_start[r])
        valid = interior[:, None, None] | reportable
        dead = (~valid * (np.uint64(1) << j.astype(np.uint64))).sum(axis=2).astype(np.uint64)
        budget = [np.full(dead.shape, np.uint64(0xFFFFFFFF) if (k_budget >> b) & 1 else 0, np.uint64)
                  for b in range(bits)]
        steps_done = np.zeros(dead.shape, np.int64)  # checks passed before the lane's windows are all dead
        finished = dead == _U32

        def spend(match):
            borrow = ~match & _U32
            for b in range(bits):
                carry = borrow & ~budget[b] & _U32
                budget[b] ^= borrow
                borrow = carry
            return borrow

        plan = plans[r]
        offsets = plan[PLAN_OFFSETS:PLAN_OFFSETS + 64].astype(np.int64)
        checks = 0
        exit_group = np.full(dead.shape, 9, np.int64)  # the group where the lane's windows all died
        for g in range(9):
            begin, count = int(plan[PLAN_BEGIN + g]), int(plan[PLAN_COUNT + g])
            # Groups 0-7 spend a pair of offsets between two checks, group 8 one offset.
            units = [range(begin + 2 * p, begin + 2 * p + 2) for p in range(count)] if g < 8 else \
                [range(begin + e, begin + e + 1) for e in range(count)]
            for unit in units:
                for e in unit:
                    i = int(offsets[e])
                    if g < 8:
                        h, b = divmod(g, 4)
                        # the pair's offsets as the kernel reads them: one 16-bit load, shifts mod 32
                        match = _funnel_right(plane_words[h][b], plane_words[h + 1][b], i)
                    else:
                        mask, h = int(plan[PLAN_MASKS + e]), int(words == 3 and i >= 32)
                        match = np.zeros_like(dead)
                        for b in range(4):
                            if mask >> b & 1:
                                match |= _funnel_right(plane_words[h][b], plane_words[h + 1][b], i)
                    dead |= spend(match)
                checks += 1
                steps_done = np.where(finished, steps_done, checks)
                exit_group = np.where(finished, exit_group, np.where(dead == _U32, g, 9))
                finished |= dead == _U32
        alive = ~dead & _U32
        tile_idx, lane_idx, bit = np.nonzero(((alive[..., None] >> j.astype(np.uint64)) & np.uint64(1)) == 1)
        left = sum(((budget[b][tile_idx, lane_idx] >> bit.astype(np.uint64)) & np.uint64(1)).astype(np.int64) << b
                   for b in range(bits))
        rows_out.append(np.full(tile_idx.size, r, np.int32))
        ends_out.append(base[tile_idx, lane_idx] + bit + lengths[r])
        dists_out.append((k_budget - left).astype(np.int16))
        # A warp runs until its last lane leaves; lanes with no window to report skip the row.
        skipped = ~reportable.any(axis=2) & ~interior[:, None]
        spent.append(np.where(skipped, 0, steps_done).max(axis=1))
        groups_passed.append(np.where(skipped, 0, exit_group).max(axis=1))
        spans.append(checks)
    if stats is not None:
        stats["checks_per_row_tile"] = float(np.mean(np.concatenate(spent)))
        stats["groups_passed_per_row_tile"] = float(np.mean(np.concatenate(groups_passed)))
        stats["checks_per_row_tile_no_exit"] = float(np.mean(spans))
        stats["tiles"] = int(tiles)
    return EndHits(np.concatenate(rows_out), np.concatenate(ends_out).astype(np.int64),
                   np.concatenate(dists_out).astype(np.int16))


def _concat(parts: list[EndHits]) -> EndHits:
    parts = [p for p in parts if len(p)]
    if not parts:
        return EndHits.empty()
    return EndHits(np.concatenate([p.row for p in parts]).astype(np.int32),
                   np.concatenate([p.end for p in parts]).astype(np.int64),
                   np.concatenate([p.distance for p in parts]).astype(np.int16))
