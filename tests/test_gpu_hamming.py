"""The four GPU Hamming algorithms give exactly the CPU backend's and the oracle's hits (pytest -m gpu)."""
from __future__ import annotations

import gzip
import random

import numpy as np
import pytest

from seqsift.alphabet import encode_text
from seqsift.kernels import find_ends, oracle
from seqsift.patterns import PatternSet
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
