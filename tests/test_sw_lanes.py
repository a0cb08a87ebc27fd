"""sw-lanes, the CPU's screening kernel: 32 pairs at once in SIMD lanes (cpu.score_pairs, the first pass of
the alignments' lanes), against parasail's sw_scan_32 and the plain-Python Gotoh of tests/oracle.py.

Which driver runs depends on the scores' bound (int16 lanes, int32 lanes, else the scalar pass 1): each
width is reached here with the lanes taken as compiled, and the drivers called are checked, so that every
width is compared with the oracles whatever the machine's Numba cache holds.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import oracle
from seqsift.kernels import sw
from seqsift.kernels.sw import cpu as sw_cpu
from test_sw_affine import adversarial_pairs, codes_of, matrix, parasail_score, random_pairs

def pairs_of(seed: int, count: int, max_x: int, max_y: int):
    xs, ys = random_pairs(np.random.default_rng(seed), count, max_x, max_y)
    for x, y in adversarial_pairs():
        xs.append(x)
        ys.append(y)
    return xs, ys


CASES = [   # (scoring, longest x, longest y, the width plan_groups gives)
    (sw.Scoring(2, 1, 1), 40, 90, sw_cpu.KIND_INT16),
    (sw.Scoring(3, 5, 2), 40, 90, sw_cpu.KIND_INT16),
    (sw.Scoring(1, 0, 0), 40, 90, sw_cpu.KIND_INT16),
    (sw.Scoring(2, 3, gap_open=5, gap_extend=2), 40, 90, sw_cpu.KIND_INT16),
    (sw.Scoring(3, 1, gap_open=2, gap_extend=0), 40, 90, sw_cpu.KIND_INT16),
    (sw.Scoring(400, 300, 200), 150, 300, sw_cpu.KIND_INT32),                       # 400 x 150 > 32,767
    (sw.Scoring(400, 300, gap_open=500, gap_extend=100), 150, 300, sw_cpu.KIND_INT32),
    (sw.Scoring(2, 1, gap_open=2 ** 30, gap_extend=1), 40, 90, sw_cpu.KIND_SCALAR),  # O + E > 2^30
]
DRIVER_OF_KIND = {sw_cpu.KIND_SCALAR: "_scalar_pairs"}


@pytest.mark.parametrize("scoring, max_x, max_y, kind", CASES, ids=[c[0].describe() for c in CASES])
def test_sw_lanes_scores_equal_the_oracles_in_each_lane_width(monkeypatch, drivers_called, scoring, max_x, max_y,
                                                               kind):
    monkeypatch.setattr(sw_cpu, "_lanes_compiled", lambda affine: True)
    groups, kinds, _ = sw_cpu.plan_groups(np.full(1, max_x), np.full(1, max_y), scoring.match, scoring.mismatch,
                                          scoring.open, scoring.extend)
    assert kinds[0] == kind   # int16 lanes would have wrapped in the int32 cases
    xs, ys = pairs_of(27, 120, max_x, max_y)
    x, y = matrix(xs, max(map(len, xs))), matrix(ys, max(map(len, ys)))
    if kind == sw_cpu.KIND_SCALAR:   # parasail's 32-bit cells would wrap with such a gap penalty
        expected = np.array([oracle.sw_affine_score(a, b, scoring.match, scoring.mismatch, scoring.open,
                                                    scoring.extend) for a, b in zip(xs, ys)])
    else:
        expected = np.array([parasail_score(a, b, scoring) for a, b in zip(xs, ys)])
    got = sw.pair_scores("sw-lanes", "cpu", x, y, scoring)
    assert got.dtype == np.int32 and np.array_equal(got, expected), np.flatnonzero(got != expected)[:5]
    lanes = "_lanes_affine" if scoring.affine else "_lanes_linear"
    assert set(drivers_called) == {DRIVER_OF_KIND.get(kind, lanes)}


def test_a_batch_of_scores_waits_for_the_lanes_compile_on_a_fresh_machine(monkeypatch, drivers_called):
    """Where the lane driver is not compiled yet, scores wait for its compile in the background (the
    alignments' small batches take the scalar pass meanwhile instead: cpu._in_lanes)."""
    asked = []

    def compile_soon(affine):
        asked.append(affine)
        monkeypatch.setattr(sw_cpu, "_lanes_compiled", lambda affine: True)
        loaded = threading.Event()
        loaded.set()
        return loaded

    monkeypatch.setattr(sw_cpu, "_lanes_compiled", lambda affine: False)
    monkeypatch.setattr(sw_cpu, "compile_lanes_soon", compile_soon)
    scoring = sw.Scoring(2, 3, gap_open=5, gap_extend=2)
    xs, ys = pairs_of(29, 20, 30, 60)
    got = sw.pair_scores("sw-lanes", "cpu", matrix(xs, max(map(len, xs))), matrix(ys, max(map(len, ys))), scoring)
    assert np.array_equal(got, [parasail_score(a, b, scoring) for a, b in zip(xs, ys)])
    assert asked == [True] and drivers_called == ["_lanes_affine"]


@pytest.mark.parametrize("scoring", [sw.Scoring(2, 1, 1), sw.Scoring(2, 3, gap_open=5, gap_extend=2),
                                     sw.Scoring(4, 2, gap_open=4, gap_extend=3)], ids=lambda s: s.describe())
def test_sw_lanes_on_one_buffer_equals_the_independent_gotoh(monkeypatch, drivers_called, scoring):
    """The screen's call shape: sequences where they lie in one code buffer, each pair at its own lengths,
    an all-vs-all tile and a list of pairs, scores and threshold flags."""
    monkeypatch.setattr(sw_cpu, "_lanes_compiled", lambda affine: True)
    xs, ys = pairs_of(28, 30, 25, 60)
    xs, ys = xs[:24], ys[:17]
    sequences = xs + ys
    codes = np.concatenate([codes_of(s) for s in sequences] + [np.zeros(0, np.uint8)])
    lengths = np.array([len(s) for s in sequences], np.int64)
    starts = np.cumsum(lengths) - lengths
    x_at, y_at = slice(0, len(xs)), slice(len(xs), None)
    tile = np.array([[oracle.sw_affine_score(x, y, scoring.match, scoring.mismatch, scoring.open, scoring.extend)
                      for y in ys] for x in xs])
    got = sw.buffer_scores("sw-lanes", "cpu", codes, starts[x_at], lengths[x_at], starts[y_at], lengths[y_at],
                           scoring, product=True)
    assert np.array_equal(got, tile)
    threshold = int(np.median(tile))
    flags = sw.buffer_scores("sw-lanes", "cpu", codes, starts[x_at], lengths[x_at], starts[y_at], lengths[y_at],
                             scoring, product=True, threshold=threshold)
    assert np.array_equal(flags, tile >= threshold)
    listed = sw.buffer_scores("sw-lanes", "cpu", codes, starts[:len(ys)], lengths[:len(ys)], starts[y_at],
                              lengths[y_at], scoring, product=False)
    assert np.array_equal(listed, np.diag(tile[:len(ys)]))
    assert set(drivers_called) == {"_lanes_affine" if scoring.affine else "_lanes_linear"}


def test_sw_lanes_is_the_cpu_default_and_refused_on_the_gpu():
    for scoring in (sw.Scoring(), sw.Scoring(2, 3, gap_open=5, gap_extend=2)):
        assert sw.choose_sw_algorithm("cpu", "auto", scoring) == "sw-lanes"
        with pytest.raises(ValueError, match="runs on CPU cores only"):
            sw.choose_sw_algorithm("cuda", "sw-lanes", scoring)
