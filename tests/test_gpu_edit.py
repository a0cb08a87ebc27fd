"""edit-myers on the GPU gives exactly the CPU backend's and the oracle's ends (pytest -m gpu)."""
from __future__ import annotations

import gzip
import random

import numpy as np
import pytest

from seqsift.alphabet import encode_text
from seqsift.kernels import find_ends
from seqsift.pattern_set import PatternSet

import oracle
from test_engine import mutate

pytestmark = pytest.mark.gpu


def hits_set(hits):
    return set(zip(hits.row.tolist(), hits.end.tolist(), hits.distance.tolist()))


def random_dna(rng, n):
    return "".join(rng.choice("ACGT") for _ in range(n))


def check(text: str, sequences: list[str], k: int, lo: int = 0, hi: int | None = None, use_oracle=True):
    codes = encode_text(text)
    hi = len(codes) if hi is None else hi
    batch = PatternSet(tuple(f"p{i}" for i in range(len(sequences))), tuple(sequences)).oriented(
        range(len(sequences)), (0, 1))
    gpu = find_ends("edit-myers", "cuda", codes, batch, k, lo, hi)
    cpu = find_ends("edit-myers", "cpu", codes, batch, k, lo, hi)
    assert hits_set(gpu) == hits_set(cpu)
    if use_oracle:
        assert hits_set(gpu) == hits_set(oracle.edit_ends(codes, batch, k, lo, hi))
    return gpu


@pytest.mark.parametrize("m", [1, 31, 32, 33, 64, 65, 150, 1000])
def test_planted_edits_every_length(m):
    rng = random.Random(m)
    pattern = random_dna(rng, m)
    k = min(m - 1, max(0, m // 10))
    parts = []
    for _ in range(6):
        parts.append(random_dna(rng, rng.randint(50, 400)))
        parts.append(mutate(rng, pattern, rng.randint(0, k)))
    hits = check("".join(parts), [pattern], k, use_oracle=m <= 150)
    assert len(hits) > 0


@pytest.mark.parametrize("m", [3, 12, 31, 40])
def test_k_zero_and_m_minus_one(m):
    rng = random.Random(m + 7)
    text = random_dna(rng, 2_000)
    pattern = random_dna(rng, m)
    check(text, [pattern], 0)
    check(text, [pattern], m - 1)


def test_adversarial_text():
    rng = random.Random(11)
    text = ("N" * 500 + random_dna(rng, 300) + "ACAC" * 200 + "A" * 700 + "nnnnRYKM" + random_dna(rng, 300).lower())
    patterns = ["ACACACAC", "AAAAAAAAAAAA", "NNNNACGT", "RYACGTAC", random_dna(rng, 70), "A"]
    check(text, patterns, 2)
    check(text, patterns, 0)


def test_many_patterns_owned_window_and_boundaries():
    rng = random.Random(3)
    text = random_dna(rng, 50_000)
    patterns = [text[i:i + rng.randint(15, 40)] for i in rng.sample(range(49_000), 300)]
    patterns = [mutate(rng, p, 2) for p in patterns]
    check(text, patterns, 3, lo=1_234, hi=41_000, use_oracle=False)


def test_real_ecoli_500_patterns(real_data):
    with gzip.open(real_data / "ecoli536.fa.gz", "rt") as handle:
        genome = "".join(line.strip() for line in handle if not line.startswith(">"))
    rng = random.Random(5)
    patterns = [mutate(rng, genome[s:s + rng.randint(20, 32)], rng.randint(0, 3))
                for s in rng.sample(range(len(genome) - 40), 500)]
    hits = check(genome, patterns, 3, use_oracle=False)
    assert len({r // 2 for r in hits.row.tolist()}) > 400


def test_lambda_reads_against_lambda(real_data):
    with gzip.open(real_data / "lambda_phage.fa.gz", "rt") as handle:
        genome = "".join(line.strip() for line in handle if not line.startswith(">"))
    reads = []
    with gzip.open(real_data / "lambda_reads_1.fq.gz", "rt") as handle:
        for i, line in enumerate(handle):
            if i % 4 == 1:
                reads.append(line.strip())
            if len(reads) == 1_000:
                break
    hits = check(genome, reads, 5, use_oracle=False)
    assert len(hits) > 0
