"""The q-gram filter on the GPU (qgram.cu; issue 26; pytest -m gpu).

It must count exactly what the CPU path counts (test_sw_qgram_filter.py checks the CPU path against
parasail and tests/oracle.py), so the two give the same bool per pair: all-vs-all tiles and lists of
pairs, the windows of y, reads against long targets (many diagonal bins), N's, sequences shorter than q,
reads over several blocks, more targets than a grid row holds in one pass. The screen on the GPU with the filter engaged keeps exactly the pairs
parasail passes.
"""
from __future__ import annotations

import numpy as np
import pytest

from seqsift.kernels import sw
from seqsift.screening import screen

from test_sw_qgram_filter import LETTERS, STRICT, buffer_of, relative, screen_case, screened_exactly

pytestmark = pytest.mark.gpu


def both_paths(xs, ys, scoring, threshold, product):
    import cupy

    codes, starts, lengths = buffer_of(list(xs) + list(ys))
    x, y = np.arange(len(xs)), len(xs) + np.arange(len(ys))
    args = (starts[x], lengths[x], starts[y], lengths[y], scoring, threshold)
    cpu = sw.qgram_filter(codes, *args, product=product)
    gpu = sw.qgram_filter(cupy.asarray(codes), *args, product=product)
    return cpu, gpu


def assert_counted_alike(cpu, gpu, note=None):
    """The GPU's filter keeps the pairs the CPU's keeps, each with the same window of y."""
    assert np.array_equal(cpu.may, gpu.may), (note, np.argwhere(cpu.may != gpu.may)[:5])
    kept = np.nonzero(cpu.may)
    for a, b in zip(cpu.windows(kept), gpu.windows(kept)):
        assert np.array_equal(a, b), note


@pytest.mark.parametrize("scoring", STRICT, ids=lambda s: s.describe())
@pytest.mark.parametrize("product", [True, False])
def test_gpu_counts_what_the_cpu_counts(scoring, product):
    rng = np.random.default_rng(41)
    reads = ["".join(rng.choice(list(LETTERS + "N"), int(rng.integers(1, 160)), p=[0.245] * 4 + [0.02]))
             for _ in range(70)]
    reads[:3] = ["ACG", "A", "NNNNNNNN"]   # shorter than q, and no q-gram without N
    count = 70 if not product else 19
    targets = ["".join(rng.choice(list(LETTERS), int(rng.integers(0, 3000)))) + relative(rng, reads[k % 70], 6, 4)
               + "".join(rng.choice(list(LETTERS), int(rng.integers(0, 3000)))) for k in range(count)]
    for threshold in (120, 180, 240):
        cpu, gpu = both_paths(reads, targets, scoring, threshold, product)
        assert (cpu is None) == (gpu is None)
        if cpu is not None:
            assert_counted_alike(cpu, gpu, threshold)


@pytest.mark.parametrize("x_per_block", [16, 128])
def test_reads_spread_over_several_blocks(x_per_block, monkeypatch):
    """sw_qgram_tiles gives each block QGRAM_X_PER_BLOCK reads of one target: 300 reads make several blocks
    along x and a last one partly filled, at the shipped count and at a small one."""
    from seqsift.kernels.sw import cuda as sw_cuda

    monkeypatch.setattr(sw_cuda, "QGRAM_X_PER_BLOCK", x_per_block)
    rng = np.random.default_rng(19)
    scoring = sw.Scoring(2, 3, gap_open=5, gap_extend=2)
    reads = ["".join(rng.choice(list(LETTERS), int(rng.integers(150, 160)))) for _ in range(300)]
    targets = ["".join(rng.choice(list(LETTERS), 1500)) + relative(rng, reads[37 * k + 5], 4, 2)
               + "".join(rng.choice(list(LETTERS), 800)) for k in range(8)]
    cpu, gpu = both_paths(reads, targets, scoring, 240, True)
    assert cpu is not None
    assert_counted_alike(cpu, gpu)
    assert all(gpu.may[37 * k + 5, k] for k in range(8))


def test_many_targets_and_a_long_one():
    """More targets than the launch puts in one grid row per warp, and a 60 kbp target (thousands of
    bins), against reads of 150."""
    rng = np.random.default_rng(8)
    scoring = sw.Scoring(2, 3, gap_open=5, gap_extend=2)
    reads = ["".join(rng.choice(list(LETTERS), 150)) for _ in range(9)]
    targets = ["".join(rng.choice(list(LETTERS), 200)) for _ in range(700)]
    targets[5] = "".join(rng.choice(list(LETTERS), 30000)) + relative(rng, reads[4], 3, 2) + "ACGT" * 7500
    cpu, gpu = both_paths(reads, targets, scoring, 250, True)
    assert cpu is not None
    assert_counted_alike(cpu, gpu)
    assert gpu.may[4, 5] and gpu.may.sum() < 20


@pytest.mark.parametrize("all_vs_all", [True, False])
def test_gpu_screen_with_the_filter_keeps_exactly_the_passing_pairs(all_vs_all):
    scoring, reads, targets, scores, threshold = screen_case(12, all_vs_all, 40, 10, 700)
    assert 0 < sum(s >= threshold for s in scores.values()) < len(scores)
    got = screen(reads, targets, threshold=threshold, match=2, mismatch=3, gap_open=5, gap_extend=2,
                 all_vs_all=all_vs_all, backend="cuda", align=False)
    assert screened_exactly(got, scores, threshold)
