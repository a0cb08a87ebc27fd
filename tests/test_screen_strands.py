"""screen's strand choice (issue 14, item 16): reverse-strand reads are found with --strand both.

The expected scores come from a textbook Smith-Waterman written here and the
tests' own reverse complement, sharing no code with seqsift.
"""
from __future__ import annotations

import gzip
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from seqsift.screening import screen

COMPLEMENT = {"A": "T", "C": "G", "G": "C", "T": "A", "N": "N"}


def reverse_complement(seq: str) -> str:
    return "".join(COMPLEMENT[c] for c in reversed(seq.upper()))


def local_score(x: str, y: str, match=2, mismatch=1, gap=1) -> int:
    """Smith-Waterman with linear gaps; N and other non-ACGT letters mismatch everything."""
    best, previous = 0, [0] * (len(y) + 1)
    for a in x.upper():
        current = [0]
        for j, b in enumerate(y.upper(), 1):
            same = a == b and a in "ACGT"
            current.append(max(0, previous[j - 1] + (match if same else -mismatch), previous[j] - gap,
                               current[j - 1] - gap))
        best, previous = max(best, *current), current
    return best


def score_of_alignment(query: str, target: str, cigar: str, match=2, mismatch=1, gap=1) -> int:
    """The score of a CIGAR (=, X, I: query base only, D: target base only) over the two segments."""
    import re

    score, i, j = 0, 0, 0
    for count, op in re.findall(r"(\d+)([=XID])", cigar):
        count = int(count)
        if op in "=X":
            for _ in range(count):
                same = query[i] == target[j] and query[i] in "ACGT"
                assert same == (op == "="), (cigar, i, j)
                score += match if same else -mismatch
                i, j = i + 1, j + 1
        elif op == "I":
            score, i = score - gap * count, i + count
        else:
            score, j = score - gap * count, j + count
    assert i == len(query) and j == len(target)
    return score


def _pairs(seed=7, count=24):
    rng = np.random.default_rng(seed)
    queries, targets = [], []
    for k in range(count):
        target = "".join(rng.choice(list("ACGT"), int(rng.integers(30, 80))))
        piece = target[5:25]
        kind = k % 4
        query = {0: piece, 1: reverse_complement(piece), 2: "".join(rng.choice(list("ACGTN"), 18)),
                 3: piece[:10] + reverse_complement(piece)[:10]}[kind]
        queries.append(query)
        targets.append(target)
    return queries, targets


@pytest.mark.parametrize("strand", ["+", "-", "both"])
def test_paired_scores_take_the_chosen_strand(client, strand):
    queries, targets = _pairs()
    got = screen(queries, targets, client=client, strand=strand)
    forward = np.array([local_score(q, t) for q, t in zip(queries, targets)])
    reverse = np.array([local_score(reverse_complement(q), t) for q, t in zip(queries, targets)])
    expected = {"+": forward, "-": reverse, "both": np.maximum(forward, reverse)}[strand]
    np.testing.assert_array_equal(got, expected)
    if strand == "both":
        assert (reverse > forward).any() and (forward > reverse).any()


def test_all_vs_all_both_strands(client):
    queries, targets = _pairs(seed=3, count=8)
    got = screen(queries, targets, all_vs_all=True, client=client, strand="both")
    expected = np.array([[max(local_score(q, t), local_score(reverse_complement(q), t)) for t in targets]
                         for q in queries])
    np.testing.assert_array_equal(got, expected)


def test_threshold_rows_carry_the_strand_and_an_alignment_on_it(client):
    queries, targets = _pairs(seed=11, count=24)
    threshold = 30
    frame = screen(queries, targets, threshold=threshold, client=client, strand="both")
    expected = {}
    for k, (q, t) in enumerate(zip(queries, targets)):
        forward, reverse = local_score(q, t), local_score(reverse_complement(q), t)
        if max(forward, reverse) >= threshold:
            expected[k] = (max(forward, reverse), "-" if reverse > forward else "+")
    assert {"+", "-"} <= {s for _, s in expected.values()}
    assert frame["query_index"].tolist() == sorted(expected)
    assert list(zip(frame["score"], frame["strand"])) == [expected[k] for k in sorted(expected)]
    for row in frame.itertuples():
        query = queries[row.query_index]
        segment = query[row.query_start:row.query_end]
        if row.strand == "-":
            segment = reverse_complement(segment)   # the alignment is of the reverse complement
        target = targets[row.target_index][row.target_start:row.target_end]
        assert score_of_alignment(segment, target, row.cigar) == row.score


def test_console_script_screen_both_strands_on_lambda_reads(real_data, tmp_path):
    """Real reads come from both strands of lambda: --strand both finds the reverse ones too."""
    with gzip.open(real_data / "lambda_phage.fa.gz", "rt") as handle:
        genome = "".join(line.strip() for line in handle if not line.startswith(">"))
    with gzip.open(real_data / "lambda_reads_1.fq.gz", "rt") as handle:
        lines = handle.read().split("\n")
    reads = lines[1:4 * 60:4]
    queries = tmp_path / "reads.fa"
    queries.write_text("".join(f">r{k}\n{r}\n" for k, r in enumerate(reads)))
    targets = tmp_path / "genome.fa"
    targets.write_text(f">lambda\n{genome}\n")
    counts = {}
    for strand in ("+", "both"):
        out = tmp_path / f"hits{strand}.tsv"
        result = subprocess.run([sys.executable, "-m", "seqsift", "screen", str(queries), str(targets),
                                 "--all-vs-all", "--threshold", "150", "--strand", strand, "--backend", "cpu",
                                 "--no-progress", "-o", str(out)], capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        table = pd.read_csv(out, sep="\t", comment=None)
        table.columns = [c.lstrip("#") for c in table.columns]
        counts[strand] = table
    both = counts["both"]
    assert set(both["strand"]) == {"+", "-"}
    expected = [max(local_score(r, genome_window), local_score(reverse_complement(r), genome_window))
                for r, genome_window in [(reads[i], genome) for i in both["query"].str[1:].astype(int)[:2]]]
    assert both["score"].tolist()[:2] == expected
    assert len(both) > len(counts["+"]) and set(counts["+"]["query"]) <= set(both["query"])
