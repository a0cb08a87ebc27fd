"""hamming-packed's few-row CUDA kernel, ``hamming_direct_*`` (kernels/hamming/hamming.cu), redone in NumPy.

The same arithmetic on uint32 words, all (tile, lane) pairs at once, so that
the CPU tests check the kernel's own formulation: the 16-byte pieces, the
multiply that gathers one code bit of eight codes, the byte permutes and
shuffles, the tiles a warp loads ahead, the row plans
(``kernels/hamming/cuda.py``'s ``direct_row_plans``, which the launcher uses)
and the bit-sliced budget. It is slow (seconds per Mbp) and meant for tests:
tests/test_hamming_direct.py (against the oracle, no GPU) and
tests/test_gpu_hamming.py (against the kernel). benchmarks/bench_hamming_gpu.py
also imports it (by path) for the instruction count of the kernel's loop.
"""
from __future__ import annotations

import numpy as np

from seqsift.kernels import EndHits
from seqsift.kernels.hamming.cuda import (
    DIRECT_TILE, PLAN_BEGIN, PLAN_COUNT, PLAN_MASKS, PLAN_OFFSETS, SLICED_MAX_M, direct_row_plans,
)

U32 = np.uint64(0xFFFFFFFF)


def byte_perm(x, y, selector):
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


def funnel_right(low, high, shift):
    """CUDA __funnelshift_r: the low word of (high:low) >> (shift & 31)."""
    both = (np.asarray(high, np.uint64) << np.uint64(32)) | np.asarray(low, np.uint64)
    return (both >> (np.asarray(shift, np.uint64) & np.uint64(31))) & U32


def tile_codes(codes: np.ndarray, n: int, first_word: int, tiles: np.ndarray, partial: np.ndarray, words: int):
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


def pack_tile(x: np.ndarray) -> np.ndarray:
    """pack_tile: (tiles, 32, 8) code words -> (4 bases, tiles, 32) one-hot plane words of each lane's own word."""
    seen = np.bitwise_or.reduce(x, axis=2)
    any_never = ((seen & np.uint64(0xFCFCFCFC)) != 0).any(axis=1)  # __any_sync over the warp
    clamp = any_never[:, None] & ((seen & np.uint64(0xF8F8F8F8)) != 0)
    if clamp.any():  # __vminu4(x, 0x04040404)
        low = np.minimum(x.astype(np.uint32).view(np.uint8), 4).view(np.uint32).astype(np.uint64)
        x = np.where(clamp[..., None], low.reshape(x.shape), x)
    z = [(x[..., 2 * g] + (x[..., 2 * g + 1] << np.uint64(4))) & U32 for g in range(4)]
    lane = np.arange(32)
    halves = np.where(lane < 16, 0x5410, 0x7632)

    def own_word(t):
        top = [((z[g] & np.uint64(0x11111111 << t)) * np.uint64(0x01020408 >> t)) & U32 for g in range(4)]
        pieces = byte_perm(byte_perm(top[0], top[1], 0x0073), byte_perm(top[2], top[3], 0x7300), 0x7610)
        return byte_perm(pieces[:, (2 * lane) & 31], pieces[:, (2 * lane + 1) & 31], halves[None, :])

    b0, b1 = own_word(0), own_word(1)
    b2 = np.where(any_never[:, None], own_word(2), np.uint64(0))
    inv = lambda v: ~v & U32  # noqa: E731
    return np.stack([inv(b0) & inv(b1) & inv(b2), b0 & inv(b1) & inv(b2), inv(b0) & b1 & inv(b2), b0 & b1 & inv(b2)])


def words_ahead(current, following, shift):
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
    current = pack_tile(tile_codes(codes, n, first_word, tile, np.zeros(tiles, bool), words))
    following = pack_tile(tile_codes(codes, n, first_word, tile + 1, last_of_warp, words))
    plane_words = [current, words_ahead(current, following, 1)]
    if words == 3:
        plane_words.append(words_ahead(current, following, 2))

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
        finished = dead == U32

        def spend(match):
            borrow = ~match & U32
            for b in range(bits):
                carry = borrow & ~budget[b] & U32
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
                        match = funnel_right(plane_words[h][b], plane_words[h + 1][b], i)
                    else:
                        mask, h = int(plan[PLAN_MASKS + e]), int(words == 3 and i >= 32)
                        match = np.zeros_like(dead)
                        for b in range(4):
                            if mask >> b & 1:
                                match |= funnel_right(plane_words[h][b], plane_words[h + 1][b], i)
                    dead |= spend(match)
                checks += 1
                steps_done = np.where(finished, steps_done, checks)
                exit_group = np.where(finished, exit_group, np.where(dead == U32, g, 9))
                finished |= dead == U32
        alive = ~dead & U32
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
