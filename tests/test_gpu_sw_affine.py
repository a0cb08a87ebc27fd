"""sw-gotoh, sw-dpx and sw-dpx-affine on the GPU (issue 26; pytest -m gpu).

The CUDA kernels must give exactly the CPU paths' scores (which
test_sw_affine.py checks against parasail and tests/oracle.py) and
parasail's own on a sample: pair counts that are not even, x longer than
one round of a thread group (the global boundary row), several rows per
thread, N's, planted similar copies with indels, and scores past the 16-bit
lanes (rescored by sw_gotoh).
"""
from __future__ import annotations

import numpy as np
import pytest

from seqsift.kernels import sw
from seqsift.kernels.sw import cuda as sw_cuda

from test_sw_affine import AFFINE, LINEAR, parasail_score

pytestmark = pytest.mark.gpu

LETTERS = np.array(list("ACGTN"))


def random_pairs(rng, pairs: int, m: int, n: int):
    x = rng.integers(0, 4, (pairs, m)).astype(np.uint8)
    y = rng.integers(0, 4, (pairs, n)).astype(np.uint8)
    x[rng.random(x.shape) < 0.01] = 4
    y[rng.random(y.shape) < 0.01] = 4
    for p in range(0, pairs, 3):   # shorter sequences: the rest is padding
        x[p, int(rng.integers(1, m + 1)):] = 4
        y[p, int(rng.integers(1, n + 1)):] = 4
    for p in range(1, pairs, 2):   # a copy of x with substitutions and indels somewhere in y
        copy = list(x[p][x[p] < 4])
        out = []
        for c in copy:
            r = rng.random()
            if r < 0.03:
                continue
            out.append(c if r > 0.08 else int(rng.integers(0, 4)))
            if r > 0.97:
                out.extend(rng.integers(0, 4, int(rng.integers(1, 6))).tolist())
        out = np.array(out[: n], dtype=np.uint8)
        at = int(rng.integers(0, max(1, n - out.size + 1)))
        y[p, at:at + out.size] = out
    return x, y


def as_text(row) -> str:
    return "".join(LETTERS[row]).rstrip("N") or ""


@pytest.mark.parametrize("scoring", AFFINE + LINEAR, ids=lambda s: s.describe())
@pytest.mark.parametrize("shape", [(37, 24, 300), (65, 128, 1000), (9, 700, 900), (130, 150, 2000)])
def test_cuda_kernels_equal_the_cpu_paths(scoring, shape):
    rng = np.random.default_rng(hash(shape) % 1000)
    x, y = random_pairs(rng, *shape)
    expected = sw.gotoh_cpu(x, y, scoring)
    names = ["sw-gotoh", "sw-dpx-affine"] + ([] if scoring.affine else ["sw-dpx", "sw-bpbc"])
    for name in names:
        got = sw.pair_scores(name, "cuda", x, y, scoring)
        assert np.array_equal(got, expected), (name, np.flatnonzero(got != expected)[:5])
    sample = range(0, shape[0], max(1, shape[0] // 8))
    assert [parasail_score(as_text(x[p]), as_text(y[p]), scoring) for p in sample] == [int(expected[p]) for p in sample]


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("rows,group", [(4, 4), (8, 4), (16, 8), (4, 32), (8, 16)])
def test_every_geometry_gives_the_same_scores(affine, rows, group):
    """Rows per thread and group sizes, with x spanning several rounds for the small groups."""
    rng = np.random.default_rng(rows * 100 + group)
    x, y = random_pairs(rng, 33, 200, 513)
    scoring = sw.Scoring(2, 3, gap_open=5, gap_extend=2) if affine else sw.Scoring(2, 1, 1)
    expected = sw.gotoh_cpu(x, y, scoring)
    got = sw_cuda._dpx_cuda(x, y, scoring, affine, rows=rows, group=group)
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("affine", [False, True])
def test_saturating_lanes_are_rescored(affine):
    scoring = sw.Scoring(100, 3, gap_open=5, gap_extend=2) if affine else sw.Scoring(100, 3, 2)
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, (6, 400)).astype(np.uint8)
    y = np.full((6, 420), 4, np.uint8)
    for p, length in enumerate((300, 320, 326, 327, 330, 400)):
        y[p, 10:10 + length] = x[p, :length]
    expected = sw.gotoh_cpu(x, y, scoring)
    assert expected.max() > 32767
    for name in (["sw-dpx-affine"] if affine else ["sw-dpx", "sw-dpx-affine"]):
        assert np.array_equal(sw.pair_scores(name, "cuda", x, y, scoring), expected), name
    import cupy

    raw = sw_cuda.cuda_dpx_device(cupy.asarray(x), sw_cuda.y_shifts(cupy.asarray(y), 420), 420, scoring,
                                  affine).get()
    assert np.any(raw == -1) and np.array_equal(raw[raw >= 0], expected[raw >= 0])


def test_threshold_screen_on_the_gpu_equals_the_cpu():
    from seqsift.screening import screen

    rng = np.random.default_rng(9)
    x, y = random_pairs(rng, 60, 100, 400)
    xs, ys = [as_text(r) or "A" for r in x], [as_text(r) or "A" for r in y]
    for kw in (dict(gap_open=5, gap_extend=1), dict(gap=1)):
        gpu = screen(xs, ys, threshold=30, backend="cuda", **kw)
        cpu = screen(xs, ys, threshold=30, backend="cpu", workers=1, **kw)
        assert gpu[["query_index", "score"]].equals(cpu[["query_index", "score"]])
