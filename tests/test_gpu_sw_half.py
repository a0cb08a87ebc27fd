"""dpx.cu's linear cell on half lanes (DPX_HALF) and its skewed steps (DPX_SKEW), on the GPU (pytest -m gpu).

Half lanes hold IEEE halves, exact for integers up to 2048, so the launcher runs them only where no score can
pass that (c1 (min(m, n) + 1) + c1 + c2 + g <= 2048) and, for lists of pairs, where the half of c1 + c2 fits
the score table's byte. Every case is checked against sw-gotoh's CPU path (which test_sw_affine.py checks
against parasail and tests/oracle.py), on integer and half lanes, unskewed and skewed, for every group size.
"""
from __future__ import annotations

import numpy as np
import pytest

from seqsift.kernels import sw
from seqsift.kernels.sw import cuda as sw_cuda

from test_gpu_sw_affine import buffer_of, random_pairs

pytestmark = pytest.mark.gpu

SCORINGS = [sw.Scoring(2, 1, 1), sw.Scoring(2, 3, 3), sw.Scoring(1, 9, 2), sw.Scoring(3, 5, 2), sw.Scoring(4, 5, 5),
            sw.Scoring(1, 1, 1), sw.Scoring(2, 1, 7)]
"""Linear scorings: g = c2 and not, O - c2 < 0 in the tiles' profile (1/9/2, 3/5/2), c1 + c2 = 9 (its half
needs both bytes: lists of pairs stay on integer lanes), a gap dearer than a mismatch."""


def case(rng, x_count: int, y_count: int, m: int, n: int):
    """A buffer of x_count x (up to m) and y_count y (up to n), y[p] holding a mutated copy of x[p]."""
    x, _ = random_pairs(rng, x_count, m, 1)
    _, y = random_pairs(rng, y_count, 1, n)
    for p in range(min(x_count, y_count)):
        at = int(rng.integers(0, n - m + 1))
        y[p, at:at + m] = np.where(rng.random(m) < 0.1, rng.integers(0, 4, m), x[p])
    codes, starts, lengths = buffer_of(x, y)
    return codes, starts[:x_count], lengths[:x_count], starts[x_count:], lengths[x_count:]


def launches(codes, xs, xl, ys, yl, m, n, scoring, **geometry):
    """(tile scores, tile flags at the median, list scores x[p] against y[p], list flags) through dpx_launch,
    against sw-gotoh's CPU scores."""
    host = codes.get()
    expected = sw.buffer_scores("sw-gotoh", "cpu", host, xs, xl, ys, yl, scoring, product=True)
    threshold = max(1, int(np.median(expected)))
    k = min(len(xs), len(ys))
    buffer, rows = sw_cuda.dpx_pair_rows(codes, codes, ys[:k], yl[:k], n)   # the lists' y rows, N around them
    for product in (True, False):
        args = (codes, xs, xl, ys, yl) if product else (buffer, xs[:k], xl[:k], rows, yl[:k])
        want = expected if product else np.diag(expected[:k, :k])
        chosen = dict(geometry)
        while not product and chosen.get("skew", 1) * (chosen.get("group", 8) - 1) + 4 > sw_cuda.DPX_GAP:
            chosen["skew"] //= 2   # a list's rows have DPX_GAP codes of N before them: a smaller skew
        scores = sw_cuda.dpx_launch(*args, m, n, scoring, False, product=product, **chosen).get()
        assert np.array_equal(scores, want), (product, np.argwhere(scores != want)[:5])
        flags = sw_cuda.dpx_launch(*args, m, n, scoring, False, product=product, threshold=threshold,
                                   **chosen).get()
        assert np.array_equal(flags.astype(bool), want >= threshold), product


@pytest.mark.parametrize("scoring", SCORINGS, ids=lambda s: s.describe())
@pytest.mark.parametrize("half", [False, True])
def test_half_and_integer_lanes_equal_the_cpu(scoring, half):
    codes, xs, xl, ys, yl = case(np.random.default_rng(scoring.match * 10 + scoring.open), 21, 6, 150, 700)
    if half and not sw_cuda.dpx_half_admits(scoring, 150, 700, False, product=False):
        assert (scoring.match + scoring.mismatch) == 9   # the one scoring whose table byte cannot hold c1 + c2
        with pytest.raises(ValueError, match="half lanes"):
            launches(codes, xs, xl, ys, yl, 150, 700, scoring, half=True)
        return
    launches(codes, xs, xl, ys, yl, 150, 700, scoring, half=half)


@pytest.mark.parametrize("half", [False, True])
@pytest.mark.parametrize("skew", [1, 2, 4])
@pytest.mark.parametrize("rows,group", [(8, 4), (16, 8), (8, 16), (4, 32), (5, 16), (19, 8)])
def test_skewed_steps_give_the_same_scores(half, skew, rows, group):
    """Each group size in one round (x of up to R G rows: the skew applies) and x one row past it (two rounds:
    unskewed); lists of pairs at the largest skew whose lead fits DPX_GAP (4 for groups up to 16; a larger
    one raises ValueError)."""
    rng = np.random.default_rng(rows * 1000 + group * 10 + skew)
    for m in (rows * group, rows * group + 1):
        codes, xs, xl, ys, yl = case(rng, 13, 5, m, 1200)
        launches(codes, xs, xl, ys, yl, m, 1200, sw.Scoring(2, 1, 1), half=half, skew=skew, rows=rows, group=group)
        if m == rows * group and skew * (group - 1) + 4 > sw_cuda.DPX_GAP:
            with pytest.raises(ValueError, match="lists of pairs"):
                sw_cuda.dpx_launch(codes, xs[:5], xl[:5], ys, yl, m, 1200, sw.Scoring(2, 1, 1), False,
                                   product=False, skew=skew, rows=rows, group=group)


def test_half_lanes_hold_scores_up_to_their_limit():
    """x of 1,021 bases against itself and a copy with a few substitutions, c1 = 2: scores up to 2,042 with
    cells up to 2,044, exact in halves; one base more and the launcher takes integer lanes (half=True raises);
    a threshold past what halves hold flags on integer lanes."""
    scoring = sw.Scoring(2, 1, 1)
    rng = np.random.default_rng(2048)
    for length in (1021, 1022):
        x = rng.integers(0, 4, (3, length)).astype(np.uint8)
        y = x.copy()
        y[1, ::97] = (y[1, ::97] + 1) % 4
        y[2, :] = rng.integers(0, 4, length)
        codes, starts, lengths = buffer_of(x, y)
        xs, xl, ys, yl = starts[:3], lengths[:3], starts[3:], lengths[3:]
        expected = sw.buffer_scores("sw-gotoh", "cpu", codes.get(), xs, xl, ys, yl, scoring, product=True)
        assert expected[0, 0] == 2 * length
        admitted = sw_cuda.dpx_half_admits(scoring, length, length, False, product=True)
        assert admitted == (length == 1021)
        got = sw_cuda.dpx_launch(codes, xs, xl, ys, yl, length, length, scoring, False, product=True).get()
        assert np.array_equal(got, expected)
        if admitted:
            half = sw_cuda.dpx_launch(codes, xs, xl, ys, yl, length, length, scoring, False, product=True,
                                      half=True).get()
            assert np.array_equal(half, expected)
            for threshold in (2 * length, 2 * length + 1, 2047, 5000):
                flags = sw_cuda.dpx_launch(codes, xs, xl, ys, yl, length, length, scoring, False, product=True,
                                           threshold=threshold).get()
                assert np.array_equal(flags.astype(bool), expected >= threshold), threshold
        else:
            with pytest.raises(ValueError, match="half lanes"):
                sw_cuda.dpx_launch(codes, xs, xl, ys, yl, length, length, scoring, False, product=True, half=True)
