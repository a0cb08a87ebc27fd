"""exact-shiftor-scan, edit-wm-scan and edit-wm-segmented on the GPU give exactly the
CPU backend's and the oracle's ends (pytest -m gpu).

The matrix of the issue: m in {1, 2, 31, 32, 33, 63, 64}, k in {0, 1, 2, 3, 8},
every alpha each kernel has, texts whose lengths are no multiple of any block,
tile or segment size, owned windows that start and stop inside tiles; random
DNA (with N and IUPAC patterns), random 64-symbol byte text, and the real
E. coli 536 genome (there against the CPU backend and edit-myers, an
independent implementation, since the oracle would take minutes).
"""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from seqsift.alphabet import encode_text
from seqsift.kernels import find_ends, shiftor
from seqsift.pattern_set import STRAND_PLUS, PatternSet

import oracle
from test_shiftor import KS, LENGTHS, byte_case, dna_case, hit_set

pytestmark = pytest.mark.gpu

CASES = [(m, k) for m in LENGTHS for k in KS if k < m]


def same(a, b) -> bool:
    """Equal hit lists, compared as sorted arrays (fast for millions of hits)."""
    a, b = a.sorted(), b.sorted()
    return all(np.array_equal(getattr(a, c), getattr(b, c)) for c in ("row", "end", "distance"))


def agree(gpu, cpu, reference=None):
    assert same(gpu, cpu)
    if reference is not None:
        assert same(gpu, reference)
    return gpu


@pytest.mark.parametrize("m", LENGTHS)
def test_exact_every_alpha_dna(m):
    rng = np.random.default_rng(m)
    text, batch = dna_case(rng, m, 60_013, copies=20)
    lo, hi = 1_001, 60_006
    expected = hit_set(oracle.hamming_ends(text, batch, 0, lo, hi))
    cpu = shiftor.exact_scan_cpu(text, batch, 0, lo, hi)
    assert hit_set(cpu) == expected and expected
    configurations = [(alpha, bits) for alpha in shiftor.EXACT_ALPHAS for bits in sorted({shiftor.word_bits(m), 64})]
    for alpha, bits in configurations + [(None, None)]:  # and the default alpha
        for tiles_per_warp in (None, 1, 3):
            got = shiftor.exact_scan_cuda(text, batch, 0, lo, hi, alpha=alpha, bits=bits, tiles_per_warp=tiles_per_warp)
            assert hit_set(got) == expected, (alpha, bits, tiles_per_warp)
    for alpha in shiftor.BLOCK_SCAN_ALPHAS:  # Table 1's block level
        for bits in sorted({shiftor.word_bits(m), 64}):
            for tiles_per_block in (None, 1, 2):
                got = shiftor.exact_scan_cuda(text, batch, 0, lo, hi, alpha=alpha, bits=bits,
                                              tiles_per_warp=tiles_per_block, block_scan=True)
                assert hit_set(got) == expected, ("block", alpha, bits, tiles_per_block)


@pytest.mark.parametrize("m,k", CASES)
def test_wm_scan_every_alpha_dna(m, k):
    rng = np.random.default_rng(100 + 10 * m + k)
    text, batch = dna_case(rng, m, 20_011)
    lo, hi = 333, 20_003
    expected = hit_set(oracle.edit_ends(text, batch, k, lo, hi))
    cpu = find_ends("edit-wm-scan", "cpu", text, batch, k, lo, hi)
    assert hit_set(cpu) == expected and expected
    for alpha in (None,) + shiftor.WM_ALPHAS:
        for bits in sorted({shiftor.word_bits(m), 64}):  # 64: the wildcard extension for longer m
            for tiles_per_warp in (None, 1, 2):
                # the kernel compiled for this k (k = 1, 2, 3) and the one for any k
                for unrolled in (True, False) if k in shiftor.WM_FIXED_K else (True,):
                    got = shiftor.wm_scan_cuda(text, batch, k, lo, hi, alpha=alpha, bits=bits,
                                               tiles_per_warp=tiles_per_warp, unrolled=unrolled)
                    assert hit_set(got) == expected, (alpha, bits, tiles_per_warp, unrolled)
    for bits in sorted({shiftor.word_bits(m), 64}):  # Table 1's block level, alpha = 16
        for tiles_per_block in (None, 1, 2):
            got = shiftor.wm_scan_cuda(text, batch, k, lo, hi, alpha=16, bits=bits, tiles_per_warp=tiles_per_block,
                                       block_scan=True)
            assert hit_set(got) == expected, ("block", bits, tiles_per_block)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 14, 15, 16, 20, 31, 32])
def test_wm_scan_alpha_32(m):
    """alpha = 32 = w (k = 1..3): one 32-bit scan per lane (m <= 32), or two 16-character
    scans side by side in one word (m <= 15), on DNA with IUPAC patterns and N and on
    64-symbol bytes; hit-dense and sparse."""
    for k in shiftor.WM_FIXED_K:
        if k >= m:
            continue
        rng = np.random.default_rng(700 + 10 * m + k)
        for text, batch in (dna_case(rng, m, 30_011), byte_case(rng, m, 30_011)):
            lo, hi = 77, 29_990
            expected = hit_set(oracle.edit_ends(text, batch, k, lo, hi))
            assert expected
            for bits in (None, 32) if m <= shiftor.HALVES_MAX_M else (None,):  # None: two halves
                for tiles_per_warp in (None, 1, 2):
                    got = shiftor.wm_scan_cuda(text, batch, k, lo, hi, alpha=32, bits=bits,
                                               tiles_per_warp=tiles_per_warp)
                    assert hit_set(got) == expected, (k, bits, tiles_per_warp)
            assert hit_set(shiftor.wm_scan_cuda(text, batch, k, lo, hi)) == expected  # the default alpha


def test_block_scan_refuses_alphas_it_is_not_built_for():
    rng = np.random.default_rng(6)
    text, batch = dna_case(rng, 8, 2_000)
    with pytest.raises(ValueError, match="block-level scan"):
        shiftor.exact_scan_cuda(text, batch, 0, 0, 2_000, alpha=8, block_scan=True)
    with pytest.raises(ValueError, match="block-level scan"):
        shiftor.wm_scan_cuda(text, batch, 1, 0, 2_000, alpha=32, block_scan=True)


def test_wm_scan_alpha_32_refuses_what_it_cannot_do():
    rng = np.random.default_rng(5)
    text, batch = dna_case(rng, 33, 2_000)
    with pytest.raises(ValueError, match="m <= 32"):
        shiftor.wm_scan_cuda(text, batch, 1, 0, 2_000, alpha=32)
    text, batch = dna_case(rng, 16, 2_000)
    with pytest.raises(ValueError, match="k in"):
        shiftor.wm_scan_cuda(text, batch, 4, 0, 2_000, alpha=32)


@pytest.mark.parametrize("m,k", CASES)
def test_segmented_every_alpha_dna(m, k):
    rng = np.random.default_rng(200 + 10 * m + k)
    text, batch = dna_case(rng, m, 20_011)
    lo, hi = 17, 20_010
    expected = hit_set(oracle.edit_ends(text, batch, k, lo, hi))
    assert hit_set(find_ends("edit-wm-segmented", "cpu", text, batch, k, lo, hi)) == expected
    for alpha in shiftor.SEGMENTED_ALPHAS:
        for segment in (None, 8 * alpha + alpha):
            got = shiftor.segmented_cuda(text, batch, k, lo, hi, alpha=alpha, segment=segment)
            assert hit_set(got) == expected, (alpha, segment)


@pytest.mark.parametrize("m", LENGTHS)
def test_byte_text_all_three(m):
    rng = np.random.default_rng(300 + m)
    text, batch = byte_case(rng, m, 50_021)
    lo, hi = 5, 50_020
    for k in KS:
        if k >= m:
            continue
        expected = hit_set(oracle.edit_ends(text, batch, k, lo, hi))
        assert expected
        for name in ("edit-wm-scan", "edit-wm-segmented") + (("exact-shiftor-scan",) if k == 0 else ()):
            got = agree(find_ends(name, "cuda", text, batch, k, lo, hi), find_ends(name, "cpu", text, batch, k, lo, hi))
            assert hit_set(got) == expected
        if k == 0:
            for alpha in shiftor.EXACT_ALPHAS:
                assert hit_set(shiftor.exact_scan_cuda(text, batch, 0, lo, hi, alpha=alpha)) == expected
        assert hit_set(shiftor.wm_scan_cuda(text, batch, k, lo, hi, alpha=4)) == expected
        assert hit_set(shiftor.segmented_cuda(text, batch, k, lo, hi, alpha=16)) == expected


def test_long_text_many_tiles_per_warp():
    """8 Mbp: warps run many tiles, carrying the state from tile to tile."""
    rng = np.random.default_rng(9)
    text, batch = dna_case(rng, 24, 8_000_017, copies=3_000, never=0.001)
    lo, hi = 12_345, 7_999_999
    for k in (0, 1, 3):
        myers = find_ends("edit-myers", "cpu", text, batch, k, lo, hi)
        assert len(myers) > 1_000
        for name in ("edit-wm-scan", "edit-wm-segmented") + (("exact-shiftor-scan",) if k == 0 else ()):
            agree(find_ends(name, "cuda", text, batch, k, lo, hi), find_ends(name, "cpu", text, batch, k, lo, hi),
                  myers)
        scan = shiftor.exact_scan_cuda if k == 0 else shiftor.wm_scan_cuda
        agree(scan(text, batch, k, lo, hi, alpha=16, block_scan=True), myers)  # Table 1's block level


def test_many_rows_and_an_unaligned_device_text():
    import cupy

    rng = np.random.default_rng(10)
    n = 400_003
    text = rng.integers(0, 4, n).astype(np.uint8)
    sequences = tuple("".join("ACGT"[c] for c in text[s:s + int(rng.integers(5, 65))])
                      for s in rng.integers(0, n - 70, 700))
    batch = PatternSet(tuple(map(str, range(700))), sequences).oriented(range(700), (0, 1))
    device = cupy.asarray(np.concatenate([np.zeros(3, np.uint8), text]))[3:]  # not 16-byte aligned
    for name, k in (("exact-shiftor-scan", 0), ("edit-wm-scan", 2), ("edit-wm-segmented", 2)):
        got = agree(find_ends(name, "cuda", device, batch, k, 7, n - 3),
                    find_ends(name, "cpu", text, batch, k, 7, n - 3))
        assert np.unique(got.row // 2).size >= 690


def test_real_ecoli(real_data):
    with gzip.open(real_data / "ecoli536.fa.gz", "rt") as handle:
        genome = "".join(line.strip() for line in handle if not line.startswith(">"))
    codes = encode_text(genome)
    rng = np.random.default_rng(536)
    for m in (20, 31, 32, 33, 63, 64):  # (m = 1, 2 hit nearly everywhere: see the random-DNA tests)
        starts = rng.integers(0, len(genome) - m, 3)
        sequences = tuple(genome[s:s + m] for s in starts)
        batch = PatternSet(("a", "b", "c"), sequences).oriented(range(3), (0, 1))
        lo, hi = 11, len(genome) - 5
        for k in KS:
            if k >= m:
                continue
            reference = find_ends("edit-myers", "cpu", codes, batch, k, lo, hi)
            assert len(reference)
            for name in ("edit-wm-scan", "edit-wm-segmented") + (("exact-shiftor-scan",) if k == 0 else ()):
                agree(find_ends(name, "cuda", codes, batch, k, lo, hi),
                      find_ends(name, "cpu", codes, batch, k, lo, hi), reference)


def test_hits_overflowing_the_first_buffer():
    """m = 1 on 3 Mbp: a hit at most positions, more than the first buffer holds."""
    rng = np.random.default_rng(11)
    text = rng.integers(0, 4, 3_000_001).astype(np.uint8)
    batch = PatternSet(("n",), ("N",)).oriented(range(1), (STRAND_PLUS,))
    batch_r = PatternSet(("r",), ("R",)).oriented(range(1), (STRAND_PLUS,))
    for b in (batch, batch_r):
        expected = oracle.hamming_ends(text, b, 0, 0, len(text))
        assert len(expected) > 1_000_000
        assert same(find_ends("exact-shiftor-scan", "cuda", text, b, 0, 0, len(text)), expected)
