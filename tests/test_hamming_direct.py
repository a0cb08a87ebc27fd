"""hamming-packed's few-row CUDA kernel (hamming_direct_* in hamming.cu), checked on the CPU.

``tests/hamming_direct_emulation.py``'s ``emulate_direct`` redoes the kernel's arithmetic in NumPy: the
16-byte pieces each lane loads, the multiply that gathers one code bit of
eight codes, the byte permutes and shuffles, the tile loaded ahead (only its
first words after a warp's last tile), the row plans and the bit-sliced
budget. Its hits must be the oracle's for every case the GPU tests cover, so
the formulation is tested in CI without a GPU.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from seqsift.alphabet import encode_text
from seqsift.kernels.hamming.cuda import PLAN_BEGIN, PLAN_COUNT, PLAN_MASKS, PLAN_OFFSETS, direct_row_plans
from seqsift.pattern_set import PatternSet

import oracle
from hamming_direct_emulation import emulate_direct, pack_tile, tile_codes


def hits_set(hits):
    return set(zip(hits.row.tolist(), hits.end.tolist(), hits.distance.tolist()))


def random_dna(rng, n):
    return "".join(rng.choice("ACGT") for _ in range(n))


def rows_of(sequences, strands=(0, 1)):
    return PatternSet(tuple(f"p{i}" for i in range(len(sequences))), tuple(sequences)).oriented(
        range(len(sequences)), strands)


def check(codes, batch, k, lo=0, hi=None, tiles_per_warp=2):
    hi = codes.size if hi is None else hi
    expected = hits_set(oracle.hamming_ends(np.minimum(codes, 4), batch, k, lo, hi))
    assert hits_set(emulate_direct(codes, batch, k, lo, hi, tiles_per_warp=tiles_per_warp)) == expected
    return expected


def test_packing_gathers_every_code_bit_in_text_order():
    """The multiply by 0x01020408 >> t, the permutes and the shuffles give each lane its one-hot word."""
    rng = np.random.default_rng(5)
    codes = rng.choice(np.array([0, 1, 2, 3, 4, 5, 7, 8, 200, 255], np.uint8), 4 * 1024 + 100,
                       p=[0.22, 0.22, 0.22, 0.22, 0.04, 0.02, 0.02, 0.02, 0.01, 0.01])
    tiles = np.arange(4)
    planes = pack_tile(tile_codes(codes, codes.size, 0, tiles, np.zeros(4, bool), 2))
    bits = (planes[..., None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)  # (base, tile, lane, j)
    for base in range(4):
        expected = codes[:4 * 1024].reshape(4, 32, 32) == base
        assert np.array_equal(bits[base] == 1, expected), base


def test_a_tile_without_code_4_skips_the_third_bit():
    codes = np.tile(np.array([0, 1, 2, 3], np.uint8), 512)
    planes = pack_tile(tile_codes(codes, codes.size, 0, np.arange(2), np.zeros(2, bool), 2))
    assert np.array_equal(planes[0, 0, 0], np.uint64(0x11111111))
    assert np.array_equal(planes[3, 1, 31], np.uint64(0x88888888))


def test_row_plans_hold_every_offset_once_in_pairs():
    rng = random.Random(3)
    sequences = [random_dna(rng, m) for m in (1, 2, 31, 32, 33, 64)] + ["ACGTRYKMNNAC", "A" * 33, "N" * 5]
    batch = rows_of(sequences)
    plans = direct_row_plans(batch.masks, batch.lengths)
    for r, m in enumerate(batch.lengths):
        plan = plans[r]
        assert plan[0] == m
        offsets = plan[PLAN_OFFSETS:PLAN_OFFSETS + m]
        assert sorted(offsets.tolist()) == list(range(m))
        for g in range(9):
            begin, count = int(plan[PLAN_BEGIN + g]), int(plan[PLAN_COUNT + g])
            if g < 8:
                assert begin % 2 == 0
                group = offsets[begin:begin + 2 * count]
                assert all(i >> 5 == g // 4 and batch.masks[r, i] == 1 << (g % 4) for i in group)
            else:
                assert begin + count == m
                assert np.array_equal(plan[PLAN_MASKS + begin:PLAN_MASKS + m],
                                      batch.masks[r, offsets[begin:m]])


@pytest.mark.parametrize("m", [1, 31, 32, 33, 64])
def test_every_length_k_zero_and_m_minus_one(m):
    rng = random.Random(m)
    text = random_dna(rng, 3_000)
    text = text[:700] + text[200:200 + m] + "N" * 90 + text[700:]  # an exact copy, then an N run
    codes = encode_text(text)
    batch = rows_of([text[200:200 + m]])
    assert check(codes, batch, 0)
    check(codes, batch, m - 1, tiles_per_warp=3)
    check(codes, batch, max(1, m // 8), tiles_per_warp=1)


@pytest.mark.parametrize("rows", [1, 2, 7, 31])
def test_few_rows_owned_windows_and_ragged_ends(rows):
    rng = random.Random(100 + rows)
    text = "N" * 33 + random_dna(rng, 4_000) + "n" * 70 + random_dna(rng, 1_777).lower() + "ACGT" * 40
    codes = encode_text(text)
    sequences = [text[40 + 61 * i: 40 + 61 * i + rng.choice([1, 12, 20, 31, 32, 33, 50, 64])].upper()
                 for i in range((rows + 1) // 2)]
    batch = rows_of(sequences)
    batch = type(batch)(batch.masks[:rows], batch.lengths[:rows], batch.pattern_index[:rows], batch.strand[:rows])
    for k, lo, hi in ((0, 0, None), (3, 517, 5_001), (5, 1_023, 1_025), (2, 4_100, codes.size - 3)):
        check(codes, batch, k, lo, hi, tiles_per_warp=2)


def test_iupac_masks_and_n_in_patterns():
    rng = random.Random(7)
    text = "N" * 300 + "A" * 500 + random_dna(rng, 400) + "ACGT" * 50 + "nnnRYSW" + random_dna(rng, 300).lower()
    codes = encode_text(text)
    batch = rows_of(["AAAAAAAAAAAAAAAAAAAA", "NNNNNNNNNNNN", "ACGTRYKMACGT", "ACGTSWBDHVACGT" * 3, "A"])
    for k in (0, 2, 5):
        check(codes, batch, k, tiles_per_warp=3)


def test_bytes_past_code_4_never_match():
    """Codes 5-7 drop out of the one-hot planes, bytes from 8 on are clamped to 4 first."""
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 4, 5_000).astype(np.uint8)
    codes[rng.choice(5_000, 300, replace=False)] = rng.choice(np.array([4, 5, 6, 7, 8, 9, 64, 255], np.uint8), 300)
    pattern = "".join("ACGT"[c] for c in np.minimum(codes[1000:1032], 3))
    check(codes, rows_of([pattern, pattern[:20]]), 4)


def test_k_at_least_m_reports_every_window():
    rng = random.Random(8)
    codes = encode_text(random_dna(rng, 2_500))
    batch = rows_of([random_dna(rng, 64)])
    hits = check(codes, batch, 70)
    assert len(hits) == 2 * (codes.size - 63)


def test_early_exit_statistics_on_random_text():
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 4, 200_000).astype(np.uint8)
    stats = {}
    emulate_direct(codes, rows_of(["ACGTTGCAACGGTACCATGACTGATCCGATCA"], (0,)), 2, 0, codes.size, stats=stats)
    assert 0 < stats["checks_per_row_tile"] < stats["checks_per_row_tile_no_exit"]
