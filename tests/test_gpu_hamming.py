"""The four GPU Hamming algorithms give exactly the CPU backend's and the oracle's hits (pytest -m gpu).

hamming-packed has two kernels: hamming_sliced_* from 32 rows on and
hamming_direct_* below (planes built in registers); both are covered, the
latter also against its NumPy emulation (tests/hamming_direct_emulation.py).
"""
from __future__ import annotations

import gzip
import random

import numpy as np
import pytest

from seqsift.alphabet import encode_text
from seqsift.kernels import find_ends
from seqsift.kernels.hamming import cuda as hamming_cuda
from seqsift.pattern_set import PatternSet

import oracle
from hamming_direct_emulation import emulate_direct
from test_engine import mutate

pytestmark = pytest.mark.gpu

GPU_ALGORITHMS = ["hamming-thread", "hamming-block", "hamming-tiled", "hamming-packed"]


def hits_set(hits):
    return set(zip(hits.row.tolist(), hits.end.tolist(), hits.distance.tolist()))


def random_dna(rng, n):
    return "".join(rng.choice("ACGT") for _ in range(n))


def check(text: str, sequences: list[str], k: int, lo: int = 0, hi: int | None = None, algorithms=None,
          use_oracle=True):
    codes = encode_text(text)
    hi = len(codes) if hi is None else hi
    batch = PatternSet(tuple(f"p{i}" for i in range(len(sequences))), tuple(sequences)).oriented(
        range(len(sequences)), (0, 1))
    expected = hits_set(find_ends("hamming-scan", "cpu", codes, batch, k, lo, hi))
    if use_oracle:
        assert expected == hits_set(oracle.hamming_ends(codes, batch, k, lo, hi))
    for algorithm in algorithms or GPU_ALGORITHMS:
        assert hits_set(find_ends(algorithm, "cuda", codes, batch, k, lo, hi)) == expected, algorithm
    return expected


@pytest.mark.parametrize("m", [1, 31, 32, 33, 64, 256])
def test_planted_hits_every_length(m):
    rng = random.Random(m)
    pattern = random_dna(rng, m)
    k = max(0, m // 8)
    text = "".join(random_dna(rng, rng.randint(20, 300)) + mutate(rng, pattern, rng.randint(0, k), indels=False)
                   for _ in range(8))
    assert len(check(text, [pattern], k)) >= 8


@pytest.mark.parametrize("m", [2, 20, 33])
def test_k_zero_and_m_minus_one(m):
    rng = random.Random(m + 1)
    text = random_dna(rng, 1_500)
    pattern = text[100:100 + m]
    check(text, [pattern], 0)
    check(text, [pattern], m - 1)


def test_adversarial_text_and_iupac_patterns():
    rng = random.Random(4)
    text = "N" * 300 + "A" * 500 + random_dna(rng, 400) + "ACGT" * 50 + "nnnRYSW" + random_dna(rng, 300).lower()
    patterns = ["AAAAAAAAAAAAAAAAAAAA", "NNNNNNNNNNNN", "ACGTACGTRYKMACGT", "ACGTSWBDHVACGT", "ACGCGT",
                "A", random_dna(rng, 40)]
    for k in (0, 2, 5):
        check(text, patterns, k)


@pytest.mark.parametrize("k", [0, 1, 4, 9])
def test_many_rows_bit_sliced_path(k):
    """>= 32 rows take the bit-sliced kernel: every IUPAC code, N runs, m from 10 to 70 (70: tiled)."""
    rng = random.Random(40 + k)
    text = ("N" * 70 + random_dna(rng, 3_000) + "A" * 200 + "nnnRYSWKM" + random_dna(rng, 2_000).lower())
    iupac = "ACGTRYSWKMBDHVN"
    patterns = [text[100 + 37 * i: 100 + 37 * i + 10 + 2 * i].upper() for i in range(25)]
    patterns += ["".join(rng.choice(iupac) for _ in range(m)) for m in (12, 20, 33, 64)] + ["A" * 30, "N" * 16]
    patterns.append(random_dna(rng, 70))
    check(text, patterns, k, lo=5, hi=len(text) - 3, algorithms=["hamming-packed"])


def test_owned_window_inside_the_text():
    rng = random.Random(9)
    text = random_dna(rng, 20_000)
    patterns = [mutate(rng, text[s:s + 24], 2, indels=False) for s in rng.sample(range(19_000), 50)]
    check(text, patterns, 3, lo=777, hi=15_001, use_oracle=False)


def test_real_ecoli_1000_patterns(real_data):
    with gzip.open(real_data / "ecoli536.fa.gz", "rt") as handle:
        genome = "".join(line.strip() for line in handle if not line.startswith(">"))
    rng = random.Random(2)
    patterns = [mutate(rng, genome[s:s + 20], rng.randint(0, 3), indels=False)
                for s in rng.sample(range(len(genome) - 20), 1_000)]
    hits = check(genome, patterns, 3, algorithms=["hamming-packed", "hamming-tiled"], use_oracle=False)
    assert len({row // 2 for row, _, _ in hits}) >= 990


def test_auto_on_cuda_gives_the_cpu_hits():
    from seqsift.kernels import choose_algorithm

    rng = random.Random(12)
    text = encode_text(random_dna(rng, 30_000))
    patterns = PatternSet(("a", "b"), (random_dna(rng, 20), random_dna(rng, 45)))
    batch = patterns.oriented(range(2), (0, 1))
    for metric in ("hamming", "edit"):
        auto, _ = choose_algorithm(metric, "cuda", m_max=45, k=6, patterns=2)
        cpu = find_ends(f"{metric}-scan" if metric == "hamming" else "edit-myers", "cpu", text, batch, 6, 0, 30_000)
        assert hits_set(find_ends(auto, "cuda", text, batch, 6, 0, 30_000)) == hits_set(cpu)


# ---- hamming-packed with fewer than 32 rows: hamming_direct_* ------------------

def rows_batch(sequences, strands=(0, 1), rows=None):
    batch = PatternSet(tuple(f"p{i}" for i in range(len(sequences))), tuple(sequences)).oriented(
        range(len(sequences)), strands)
    if rows is not None:
        batch = type(batch)(batch.masks[:rows], batch.lengths[:rows], batch.pattern_index[:rows],
                            batch.strand[:rows])
    return batch


def check_direct(codes, batch, k, lo, hi, tiles_per_warp=None):
    """hamming-packed (direct kernel) == CPU scan == oracle, and == the kernel's NumPy emulation."""
    assert batch.rows < hamming_cuda.SLICED_MIN_ROWS
    expected = hits_set(find_ends("hamming-scan", "cpu", codes, batch, k, lo, hi))
    assert expected == hits_set(oracle.hamming_ends(np.minimum(codes, 4), batch, k, lo, hi))
    assert hits_set(find_ends("hamming-packed", "cuda", codes, batch, k, lo, hi)) == expected
    if tiles_per_warp is not None:
        emulated = emulate_direct(codes, batch, k, lo, hi, tiles_per_warp=tiles_per_warp)
        assert hits_set(emulated) == expected
    return expected


@pytest.mark.parametrize("m", [1, 31, 32, 33, 64])
@pytest.mark.parametrize("rows", [1, 2, 9])
def test_direct_every_length_k_zero_and_m_minus_one(m, rows):
    rng = random.Random(1000 * m + rows)
    text = "N" * 41 + random_dna(rng, 9_000) + "n" * 130 + random_dna(rng, 5_003)
    codes = encode_text(text)
    sequences = [mutate(rng, text[50 + 97 * i: 50 + 97 * i + m], rng.randint(0, 2), indels=False)
                 for i in range((rows + 1) // 2)]
    batch = rows_batch(sequences, rows=rows)
    for k in (0, m - 1, max(1, m // 8)):
        check_direct(codes, batch, k, 0, codes.size)
    check_direct(codes, batch, max(1, m // 8), 3_333, 11_111)


@pytest.mark.parametrize("tiles_per_warp", [1, 2, 3, 16])
def test_direct_warp_runs_tile_ends_and_owned_windows(monkeypatch, tiles_per_warp):
    """Each warp's last tile reads the next tile's first words only; the text ends mid-tile."""
    monkeypatch.setattr(hamming_cuda, "direct_tiles_per_warp", lambda tiles, sms: tiles_per_warp)
    rng = random.Random(50 + tiles_per_warp)
    text = random_dna(rng, 60_000) + "N" * 3_000 + random_dna(rng, 37_001).lower()
    guide = text[20_000:20_032]
    planted = "".join(mutate(rng, guide, rng.randint(0, 3), indels=False) + random_dna(rng, rng.randint(0, 40))
                      for _ in range(60))
    codes = encode_text(text[:40_000] + planted + text[40_000:])
    for sequences, strands, k, lo, hi in (([guide], (0,), 3, 0, codes.size),
                                          ([guide, text[70_001:70_050]], (0, 1), 4, 1_025, codes.size - 7),
                                          ([text[5_000:5_064], "ACGTRYKMSWBDHVN" * 2], (0, 1), 9, 31_000, 90_000)):
        batch = rows_batch(sequences, strands)
        check_direct(codes, batch, k, lo, hi, tiles_per_warp=tiles_per_warp)


def test_direct_31_rows_iupac_and_n_runs():
    rng = random.Random(31)
    iupac = "ACGTRYSWKMBDHVN"
    text = "N" * 300 + "A" * 700 + random_dna(rng, 20_000) + "nnnRYSW" + random_dna(rng, 3_001).lower()
    codes = encode_text(text)
    sequences = [text[1_000 + 53 * i: 1_000 + 53 * i + 8 + 2 * i].upper() for i in range(12)]
    sequences += ["".join(rng.choice(iupac) for _ in range(m)) for m in (12, 33)] + ["A" * 30, "N" * 16]
    batch = rows_batch(sequences, rows=31)
    for k in (0, 2, 6):
        check_direct(codes, batch, k, 5, codes.size - 3)


def test_direct_raw_bytes_past_code_4_never_match():
    rng = np.random.default_rng(6)
    codes = rng.integers(0, 4, 50_001).astype(np.uint8)
    codes[rng.choice(codes.size, 2_000, replace=False)] = rng.choice(np.array([4, 5, 7, 8, 77, 255], np.uint8), 2_000)
    pattern = "".join("ACGT"[c] for c in np.minimum(codes[7_000:7_032], 3))
    check_direct(codes, rows_batch([pattern, pattern[:25]]), 5, 0, codes.size, tiles_per_warp=2)


@pytest.mark.parametrize("rows", [1, 40])
def test_k_past_m_reports_every_window(rows):
    """k >= m needs no more budget than m mismatches: both packed kernels."""
    rng = random.Random(rows)
    codes = encode_text(random_dna(rng, 3_000))
    batch = rows_batch([random_dna(rng, 64) for _ in range(rows // 2 or 1)], rows=rows)
    expected = hits_set(find_ends("hamming-scan", "cpu", codes, batch, 100, 0, codes.size))
    assert len(expected) == batch.rows * (codes.size - 63)
    assert hits_set(find_ends("hamming-packed", "cuda", codes, batch, 100, 0, codes.size)) == expected

