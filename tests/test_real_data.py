"""The whole engine on the real E. coli 536 genome, against the NumPy oracle.

A 600 kbp stretch of the genome is written as a FASTA file (so the test runs
in seconds on two cores) and searched through the real LocalCluster with a
few hundred patterns cut from the whole genome and mutated; every hit of the
engine (ends mode, so nothing is grouped away) must be an oracle hit and
every oracle hit must be found.
"""
from __future__ import annotations

import gzip
import random

import numpy as np
import pandas as pd
import pytest

import seqsift
from seqsift.alphabet import encode_text
from seqsift.pattern_set import PatternSet

import oracle

SLICE = 600_000


@pytest.fixture(scope="module")
def ecoli_slice(real_data, tmp_path_factory):
    with gzip.open(real_data / "ecoli536.fa.gz", "rt") as handle:
        genome = "".join(line.strip() for line in handle if not line.startswith(">"))
    assert len(genome) == 4_938_920
    path = tmp_path_factory.mktemp("ecoli") / "ecoli_slice.fa"
    text = genome[1_000_000:1_000_000 + SLICE]
    path.write_text(">ecoli_slice\n" + "\n".join(text[i:i + 70] for i in range(0, len(text), 70)) + "\n")
    return str(path), text, genome


def cut_patterns(genome: str, count: int, seed: int) -> PatternSet:
    """20-nt patterns from across the genome (half from the searched slice), 0-3 substitutions."""
    rng = random.Random(seed)
    sequences = []
    for i in range(count):
        start = rng.randrange(1_000_000, 1_000_000 + SLICE - 20) if i % 2 else rng.randrange(len(genome) - 20)
        seq = list(genome[start:start + 20])
        for position in rng.sample(range(20), rng.randint(0, 3)):
            seq[position] = rng.choice("ACGT")
        sequences.append("".join(seq))
    return PatternSet(tuple(f"p{i}" for i in range(count)), tuple(sequences))


def oracle_rows(text: str, patterns: PatternSet, k: int, metric: str) -> set:
    codes = encode_text(text)
    batch = patterns.oriented(range(len(patterns)), (0, 1))
    find = oracle.hamming_ends if metric == "hamming" else oracle.edit_ends
    hits = find(codes, batch, k, 0, len(codes))
    return set(zip(batch.pattern_index[hits.row].tolist(), np.where(batch.strand[hits.row] == 0, "+", "-"),
                   hits.end.tolist(), hits.distance.tolist()))


@pytest.mark.parametrize("metric,k,count", [("hamming", 3, 300), ("hamming", 1, 300), ("edit", 2, 60)])
def test_ecoli_against_the_oracle(ecoli_slice, client, metric, k, count):
    path, text, genome = ecoli_slice
    patterns = cut_patterns(genome, count, seed=k)
    pairs = list(zip(patterns.names, patterns.sequences))
    got = seqsift.search(path, pairs, k, metric=metric, mode="ends", client=client, chunk_size=150_000)
    index = {name: i for i, name in enumerate(patterns.names)}
    engine = set(zip(got["pattern"].map(index), got["strand"], got["end"].astype(int), got["distance"].astype(int)))
    expected = oracle_rows(text, patterns, k, metric)
    assert len(expected) >= count // 5  # the patterns cut from the slice are found
    assert engine == expected


def test_ecoli_best_mode_alignments_reproduce_the_distance(ecoli_slice, client):
    path, text, genome = ecoli_slice
    patterns = cut_patterns(genome, 40, seed=9)
    got = seqsift.search(path, list(zip(patterns.names, patterns.sequences)), 3, metric="edit", client=client)
    assert len(got) >= 20
    for row in got.itertuples():
        assert row.aligned == text[row.start:row.end]
        edits = sum(int(n) for n, op in pd.Series([row.cigar]).str.findall(r"(\d+)([XID])")[0])
        assert edits == row.distance
