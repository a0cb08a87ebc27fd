"""edit-nfa on the GPU gives exactly the CPU backends' and the oracle's ends (pytest -m gpu).

The issue's matrix: m in {64, 65, 200, 1024, 1039} x k in {0, 1, 7, 8, 9, 10,
15} on random text with planted edits; the E. coli 536 genome with patterns
cut from it and mutated; the lambda long reads (200+ nt, k = 10) against the
lambda genome. Where the oracle is too slow (long patterns over a whole
genome) the reference is the CPU backend of edit-myers, as in test_gpu_edit.py.
"""
from __future__ import annotations

import gzip
import random

import numpy as np
import pytest

from seqsift.alphabet import encode_text
from seqsift.kernels import find_ends
from seqsift.kernels.nfa import nfa_cuda
from seqsift.pattern_set import PatternSet

import oracle
from test_engine import mutate

pytestmark = pytest.mark.gpu


def hits_set(hits):
    return set(zip(hits.row.tolist(), hits.end.tolist(), hits.distance.tolist()))


def random_dna(rng, n, alphabet="ACGT"):
    return "".join(rng.choice(alphabet) for _ in range(n))


def batch_of(sequences):
    return PatternSet(tuple(f"p{i}" for i in range(len(sequences))), tuple(sequences)).oriented(
        range(len(sequences)), (0, 1))


def check(codes, sequences, k, lo=0, hi=None, use_oracle=True, nfa_cpu=True, **options):
    """GPU edit-nfa == CPU edit-myers (== CPU edit-nfa, == oracle where asked); returns the GPU hits."""
    hi = len(codes) if hi is None else hi
    batch = batch_of(sequences)
    gpu = nfa_cuda(codes, batch, k, lo, hi, **options) if options else \
        find_ends("edit-nfa", "cuda", codes, batch, k, lo, hi)
    got = hits_set(gpu)
    assert got == hits_set(find_ends("edit-myers", "cpu", codes, batch, k, lo, hi))
    if nfa_cpu:
        assert got == hits_set(find_ends("edit-nfa", "cpu", codes, batch, k, lo, hi))
    if use_oracle:
        assert got == hits_set(oracle.edit_ends(codes, batch, k, lo, hi))
    return gpu


def planted(rng, pattern, k, copies=4, gap=(100, 600)):
    parts = []
    for _ in range(copies):
        parts.append(random_dna(rng, rng.randint(*gap)))
        parts.append(mutate(rng, pattern, rng.randint(0, k + 1)))
    parts.append(random_dna(rng, rng.randint(*gap)))
    return encode_text("".join(parts))


@pytest.mark.parametrize("k", [0, 1, 7, 8, 9, 10, 15])
@pytest.mark.parametrize("m", [64, 65, 200, 1024, 1039])
def test_issue_matrix_planted_edits(m, k):
    rng = random.Random(1000 * m + k)
    pattern = random_dna(rng, m)
    codes = planted(rng, pattern, k)
    hits = check(codes, [pattern], k)
    assert len(hits) > 0 or k == 0


@pytest.mark.parametrize("wpt", [1, 2, 4])
def test_words_per_thread_owned_window_and_n(wpt):
    # The same NFA spread 1, 2 or 4 words per thread; an owned window, N runs in the text.
    rng = random.Random(wpt)
    patterns = [random_dna(rng, m) for m in (70, 300, 700)]
    text = "".join(mutate(rng, p, 5) + random_dna(rng, 200) + "N" * rng.randint(0, 30) for p in patterns * 3)
    codes = encode_text(text)
    check(codes, patterns, 9, lo=250, hi=len(codes) - 100, wpt=wpt)


def test_short_patterns_m_up_to_k_and_iupac():
    rng = random.Random(17)
    text = ("N" * 100 + random_dna(rng, 500) + "ACAC" * 80 + "nnRYKM" + random_dna(rng, 400).lower()
            + "A" * 200)
    codes = encode_text(text)
    patterns = ["A", "ACG", "ACACACACAC", "NNNNACGTNN", "RYACGTACWS", random_dna(rng, 31), random_dna(rng, 63)]
    for k in (0, 2, 5, 12, 20, 31):
        check(codes, patterns, k, lo=7, hi=len(codes) - 3)


def test_many_rows_of_mixed_lengths_through_segments():
    rng = random.Random(23)
    text = random_dna(rng, 200_000)
    patterns = [mutate(rng, text[s:s + rng.randint(20, 400)], rng.randint(0, 6))
                for s in rng.sample(range(199_000), 150)]
    check(encode_text(text), patterns, 6, lo=1_234, hi=190_000, use_oracle=False)


def test_longest_rows_and_rows_past_the_block():
    # 2,500 and 4,096 words (over 48 KB of shared memory: the launcher raises the
    # block's limit) and 4,500 words, past one block, which goes to edit-myers.
    rng = random.Random(29)
    patterns = [random_dna(rng, m) for m in (5_000, 8_192, 9_000)]
    text = "".join(random_dna(rng, 300) + mutate(rng, p, rng.randint(0, 12)) for p in patterns)
    hits = check(encode_text(text + random_dna(rng, 300)), patterns, 10, use_oracle=False)
    assert len(hits) > 0


@pytest.mark.parametrize("limit,to_myers", [(101_376, 1), (65_536, 2)])
def test_rows_past_a_smaller_devices_shared_memory_go_to_myers(limit, to_myers, monkeypatch):
    """On a GPU that gives a block less shared memory (99 KB: the A10, L4 and RTX cards; 64 KB: the T4),
    the rows whose NFA block would not fit (8,192 nt, and 5,000 nt at 64 KB) are searched by edit-myers;
    the ends are the same."""
    from seqsift.kernels import cuda as kernels_cuda
    from seqsift.kernels.nfa import cuda as nfa_gpu

    monkeypatch.setattr(kernels_cuda, "shared_memory_per_block", lambda device: limit)
    sent, real_myers = [], nfa_gpu.myers_cuda

    def myers(text, batch, *args):
        sent.append(batch.rows)
        return real_myers(text, batch, *args)

    monkeypatch.setattr(nfa_gpu, "myers_cuda", myers)
    rng = random.Random(31)
    patterns = [random_dna(rng, m) for m in (1_000, 5_000, 8_192)]
    text = "".join(random_dna(rng, 300) + mutate(rng, p, rng.randint(0, 12)) for p in patterns)
    hits = check(encode_text(text + random_dna(rng, 300)), patterns, 10, use_oracle=False)
    assert len(hits) > 0 and sent == [2 * to_myers]   # both strands of each such pattern


def read_genome(path):
    with gzip.open(path, "rt") as handle:
        return "".join(line.strip() for line in handle if not line.startswith(">"))


@pytest.mark.parametrize("k", [1, 8, 15])
def test_real_ecoli_cut_and_mutated(real_data, k):
    genome = read_genome(real_data / "ecoli536.fa.gz")
    codes = encode_text(genome)
    rng = random.Random(k)
    lengths = [64, 65, 200, 1024, 1039, 150, 500, 90]
    starts = rng.sample(range(len(genome) - 1100), len(lengths))
    patterns = [mutate(rng, genome[s:s + m], rng.randint(0, k)) for s, m in zip(starts, lengths)]
    hits = check(codes, patterns, k, use_oracle=False, nfa_cpu=False)
    assert {r // 2 for r in hits.row.tolist()} == set(range(len(patterns)))
    # Around each cut, against the oracle (and the Numba NFA) too.
    for s in starts[:3]:
        window = codes[max(0, s - 1500): s + 2600]
        check(window, patterns, k)


def test_lambda_long_reads(real_data):
    genome = read_genome(real_data / "lambda_phage.fa.gz")
    reads = []
    with gzip.open(real_data / "lambda_longreads.fq.gz", "rt") as handle:
        for i, line in enumerate(handle):
            if i % 4 == 1 and len(line.strip()) >= 200:
                reads.append(line.strip())
            if len(reads) == 400:
                break
    assert max(len(r) for r in reads) > 1024  # past one 1,024-thread block of one word each
    hits = check(encode_text(genome), reads, 10, use_oracle=False, nfa_cpu=False)
    assert len(hits) > 0
    assert np.unique(hits.row).size > 50
