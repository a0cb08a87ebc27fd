"""screening.task.keeps_every_pair: a tile's composition bound, told whole without the tile's array.

It may only say True where the bound of every x with every y reaches the threshold (else a tile would
run without a filter that drops pairs: slower, never wrong, but the claim is exactness of the skip);
checked here against the bound written out pair by pair, independently of the package."""
from __future__ import annotations

import numpy as np
import pytest

from seqsift.kernels.sw import Scoring
from seqsift.screening.task import keeps_every_pair


def _every_bound(x_counts, y_counts, match):
    return [[match * sum(min(int(a), int(b)) for a, b in zip(xc, yc)) for yc in y_counts] for xc in x_counts]


@pytest.mark.parametrize("seed", range(40))
def test_true_only_where_every_pair_reaches_the_threshold(seed):
    rng = np.random.default_rng(seed)
    x_counts = rng.integers(0, rng.integers(1, 60), size=(rng.integers(1, 12), 4)).astype(np.int32)
    y_counts = rng.integers(0, rng.integers(1, 400), size=(rng.integers(1, 12), 4)).astype(np.int32)
    match = int(rng.integers(1, 4))
    bounds = np.array(_every_bound(x_counts, y_counts, match))
    scoring = Scoring(match=match, mismatch=1, gap=1)
    for threshold in {int(bounds.min()), int(bounds.min()) + 1, int(bounds.max()), int(bounds.max()) + 1, 1}:
        if keeps_every_pair(x_counts, y_counts, scoring, threshold):
            assert (bounds >= threshold).all(), (threshold, bounds)


def test_reads_against_long_targets_are_told_at_once():
    rng = np.random.default_rng(7)
    reads = rng.multinomial(150, [0.25] * 4, size=500).astype(np.int32)
    targets = rng.multinomial(2000, [0.25] * 4, size=40).astype(np.int32)
    scoring = Scoring(match=2, mismatch=1, gap=1)
    assert keeps_every_pair(reads, targets, scoring, 200)
    assert keeps_every_pair(targets, reads, scoring, 200)      # either side may be x
    assert not keeps_every_pair(reads, targets, scoring, 301)  # no read holds 151 bases


def test_an_empty_side_or_a_skewed_sequence_is_not_told_whole():
    scoring = Scoring(match=2, mismatch=1, gap=1)
    targets = np.full((3, 4), 500, np.int32)
    assert not keeps_every_pair(np.zeros((0, 4), np.int32), targets, scoring, 10)
    reads = np.array([[40, 40, 40, 30], [150, 0, 0, 0]], np.int32)
    poly_c = np.array([[0, 2000, 0, 0]], np.int32)  # against poly-C, the poly-A read's bound is 0
    assert not keeps_every_pair(reads, np.vstack([targets, poly_c]), scoring, 200)
