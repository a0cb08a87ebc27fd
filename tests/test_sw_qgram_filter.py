"""The q-gram filter of threshold screening (kernels/sw QgramFilter, issue 26): it may only rule out
pairs whose Smith-Waterman score is below the threshold.

Scores come from parasail's sw_scan_32 and from tests/oracle.py's plain-Python Gotoh, which share no code
with seqsift. The pairs are built to sit at the filter's edge: relatives of each other with mismatches
and gaps spread so that the runs of matches are short, thresholds at the pairs' own scores, N in the
sequences, and scorings whose gaps cost less than mismatches and the other way round.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from seqsift.kernels import sw
from seqsift.screening import screen

from test_sw_affine import codes_of, parasail_score

LETTERS = "ACGT"
STRICT = [sw.Scoring(2, 3, 5), sw.Scoring(1, 4, gap_open=6, gap_extend=1), sw.Scoring(2, 3, gap_open=5, gap_extend=2),
          sw.Scoring(1, 3, gap_open=2, gap_extend=4), sw.Scoring(5, 4, gap_open=10, gap_extend=1)]


def buffer_of(seqs):
    lengths = np.array([len(s) for s in seqs], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return codes_of("".join(seqs)), starts, lengths


def relative(rng, seq: str, errors: int, longest_gap: int) -> str:
    """seq with `errors` events at random places: substitutions, and gaps of 1..longest_gap in either
    sequence."""
    out = list(seq)
    for _ in range(errors):
        at = int(rng.integers(0, len(out) + 1))
        kind = rng.integers(0, 3)
        length = int(rng.integers(1, longest_gap + 1))
        if kind == 0 and at < len(out):
            out[at] = LETTERS[(LETTERS.index(out[at]) + 1) % 4] if out[at] in LETTERS else "A"
        elif kind == 1:
            out[at:at] = list(rng.choice(list(LETTERS), length))
        else:
            del out[at:at + length]
    return "".join(out)


def filtered(seqs_x, seqs_y, scoring, threshold, product):
    codes, starts, lengths = buffer_of(list(seqs_x) + list(seqs_y))
    x, y = np.arange(len(seqs_x)), len(seqs_x) + np.arange(len(seqs_y))
    return sw.qgram_filter(codes, starts[x], lengths[x], starts[y], lengths[y], scoring, threshold, product=product)


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(STRICT), st.integers(20, 70), st.integers(0, 12),
       st.integers(1, 6), st.integers(-2, 2))
def test_never_drops_a_passing_pair(seed, scoring, length, errors, longest_gap, offset):
    rng = np.random.default_rng(seed)
    xs = ["".join(rng.choice(list(LETTERS + "N"), length, p=[0.24, 0.24, 0.24, 0.24, 0.04])) for _ in range(3)]
    ys = ["".join(rng.choice(list(LETTERS), int(rng.integers(0, 30)))) + relative(rng, x, errors, longest_gap)
          + "".join(rng.choice(list(LETTERS), int(rng.integers(0, 30)))) for x in xs]
    scores = np.array([[oracle.sw_affine_score(a, b, scoring.match, scoring.mismatch, scoring.open, scoring.extend)
                        for b in ys] for a in xs])
    threshold = max(1, int(np.diag(scores).max()) + offset)   # at the best relative's own score
    tile = filtered(xs, ys, scoring, threshold, product=True)
    pairs = filtered(xs, ys, scoring, threshold, product=False)
    if tile is None:
        assert pairs is None
        return
    assert not (scores >= threshold)[~tile.may].any(), (threshold, scores, tile)
    assert np.array_equal(pairs.may, np.diag(tile.may))
    # a tile indexes each y and walks the xs, a list indexes each x and walks its y: the same bins
    diagonal = np.nonzero(pairs.may)
    for a, b in zip(tile.windows((diagonal[0], diagonal[0])), pairs.windows(diagonal)):
        assert np.array_equal(a, b)
    # a passing pair's score on its window of y is its whole score
    passing = np.nonzero(scores >= threshold)
    for i, k, lo, hi in zip(*passing, *tile.windows(passing)):
        window = ys[k][lo:hi]
        assert oracle.sw_affine_score(xs[i], window, scoring.match, scoring.mismatch, scoring.open,
                                      scoring.extend) == scores[i, k], (i, k, lo, hi)


@pytest.mark.parametrize("scoring", STRICT, ids=lambda s: s.describe())
def test_unrelated_pairs_are_ruled_out_and_relatives_kept(scoring):
    """Reads against targets that hold a relative of a few of them: at a threshold a relative reaches,
    the filter rules out most unrelated pairs (it screens) and no passing pair (parasail)."""
    rng = np.random.default_rng(17)
    reads = ["".join(rng.choice(list(LETTERS), 100)) for _ in range(24)]
    targets = ["".join(rng.choice(list(LETTERS), 300)) + relative(rng, reads[3 * k], 4, 3)
               + "".join(rng.choice(list(LETTERS), 300)) for k in range(6)]
    scores = np.array([[parasail_score(a, b, scoring) for b in targets] for a in reads])
    threshold = int(min(scores[3 * k, k] for k in range(6)))
    windows = filtered(reads, targets, scoring, threshold, product=True)
    assert windows is not None
    may = windows.may
    assert may[scores >= threshold].all()
    unrelated = scores < threshold
    assert may[unrelated].mean() < 0.1, may.sum()
    passing = np.nonzero(scores >= threshold)
    for i, k, lo, hi in zip(*passing, *windows.windows(passing)):   # a few hundred columns, whole scores
        assert hi - lo < 400
        assert parasail_score(reads[i], targets[k][lo:hi], scoring) == scores[i, k]


def test_no_filter_where_random_sequences_reach_the_threshold():
    """Cheap gaps and mismatches (the screen's default 2/1/1) at a threshold random pairs come near:
    no q-gram length screens, so nothing is filtered (and nothing computed)."""
    assert sw.qgram_filter_plan(sw.Scoring(2, 1, 1), 200, 150) is None
    assert sw.qgram_filter_plan(sw.Scoring(2, 3, 5), 0, 150) is None
    assert sw.qgram_filter_plan(sw.Scoring(1, 0, 0), 50, 100) is None
    assert sw.qgram_filter_plan(sw.Scoring(2, 3, 5), 301, 150) is None   # past any score: no plan needed


def screen_case(seed: int, all_vs_all: bool, reads: int, tile_targets: int, flank: int):
    """Reads of 100-120 nt and targets: a relative of read k between random flanks of ``flank`` for even k,
    random ones of 2 x flank + 100 for odd k (``tile_targets`` of them all-vs-all, else one per read); the
    pairs screened, parasail's scores of them, and the threshold (where the q-gram filter screens)."""
    scoring = sw.Scoring(2, 3, gap_open=5, gap_extend=2)
    rng = np.random.default_rng(seed)
    read_seqs = ["".join(rng.choice(list(LETTERS), int(rng.integers(100, 121)))) for _ in range(reads)]
    random_seq = lambda length: "".join(rng.choice(list(LETTERS), length))  # noqa: E731
    targets = [random_seq(flank) + relative(rng, read_seqs[k], 5, 3) + random_seq(flank) if k % 2 == 0
               else random_seq(2 * flank + 100) for k in range(tile_targets if all_vs_all else reads)]
    pairs = ([(q, t) for q in range(reads) for t in range(len(targets))] if all_vs_all
             else [(k, k) for k in range(reads)])
    scores = {p: parasail_score(read_seqs[p[0]], targets[p[1]], scoring) for p in pairs}
    threshold = 180   # 75% of the longest read's best: the filter's ground (at 150 random reads come near it)
    return scoring, read_seqs, targets, scores, threshold


def screened_exactly(got, scores: dict, threshold: int) -> bool:
    """Whether a screen's rows are exactly the pairs scoring >= threshold, each with its score."""
    found = list(zip(got["query_index"], got["target_index"]))
    expected = {p for p, s in scores.items() if s >= threshold}
    return (set(found) == expected and len(found) == len(expected)
            and all(int(s) == scores[p] for p, s in zip(found, got["score"])))


@pytest.mark.parametrize("all_vs_all", [True, False])
def test_screen_with_the_filter_keeps_exactly_the_passing_pairs(all_vs_all, client):
    """The screen (CPU workers) at a strict scoring where the filter rules out most pairs: its rows are
    exactly the pairs parasail scores at or above the threshold, with parasail's scores."""
    scoring, reads, targets, scores, threshold = screen_case(5, all_vs_all, 30, 8, 200)
    passing = sum(s >= threshold for s in scores.values())
    assert 0 < passing < len(scores)
    windows = filtered(reads, targets, scoring, threshold, product=True)
    assert windows is not None and windows.may.mean() < 0.5   # the filter screens these pairs
    got = screen(reads, targets, threshold=threshold, match=2, mismatch=3, gap_open=5, gap_extend=2,
                 all_vs_all=all_vs_all, backend="cpu", client=client, align=False)
    assert screened_exactly(got, scores, threshold)
