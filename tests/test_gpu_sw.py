"""sw-bpbc and sw-wordwise on the GPU give exactly the CPU backend's scores (pytest -m gpu).

The CPU kernels are checked against parasail in test_screen.py; here both CUDA
kernels, with 32 and 64 pairs per word, run against the CPU sw-bpbc for pair
counts that are not multiples of 32 or 64, m up to 512 (several rounds of
warps per block) and n up to 65,536, with and without the saturating
mismatch path (c2 > g), N's, and planted similar regions (high scores: the
top bits of s); and the threshold flag kernels against the CPU scores.
"""
from __future__ import annotations

import numpy as np
import pytest

from seqsift.kernels import sw
from seqsift.kernels.sw import cpu as sw_cpu

pytestmark = pytest.mark.gpu

SCORINGS = [sw.Scoring(2, 1, 1), sw.Scoring(3, 5, 2), sw.Scoring(1, 0, 0), sw.Scoring(5, 1, 4)]


def random_pairs(rng, pairs: int, m: int, n: int, *, vary=True, n_rate=0.01, plant=True):
    """Code matrices (pairs x m, pairs x n): random bases, some N, ragged ends (N padding), similar copies."""
    x = rng.integers(0, 4, (pairs, m)).astype(np.uint8)
    y = rng.integers(0, 4, (pairs, n)).astype(np.uint8)
    x[rng.random(x.shape) < n_rate] = 4
    y[rng.random(y.shape) < n_rate] = 4
    if vary:   # shorter sequences in the same bucket: the rest is padding
        for p in range(0, pairs, 3):
            x[p, int(rng.integers(1, m + 1)):] = 4
            y[p, int(rng.integers(1, n + 1)):] = 4
    if plant:  # a copy of x with ~8% substitutions somewhere in y
        for p in range(1, pairs, 2):
            at = int(rng.integers(0, max(1, n - m + 1)))
            copy = x[p, : min(m, n - at)].copy()
            noise = rng.random(copy.shape) < 0.08
            copy[noise] = rng.integers(0, 4, int(noise.sum()))
            y[p, at:at + copy.size] = copy
    return x, y


def check(x, y, scoring, word_bits_options=(32, 64)):
    expected = sw.bpbc_cpu(x, y, scoring, word_bits=64)
    for word_bits in word_bits_options:
        got = sw.bpbc_cuda(x, y, scoring, word_bits=word_bits)
        assert (got == expected).all(), ("sw-bpbc", word_bits, np.flatnonzero(got != expected)[:5])
    got = sw.wordwise_cuda(x, y, scoring)
    assert (got == expected).all(), ("sw-wordwise", np.flatnonzero(got != expected)[:5])
    return expected


@pytest.mark.parametrize("scoring", SCORINGS, ids=str)
@pytest.mark.parametrize("pairs, m, n", [(1, 1, 1), (33, 7, 50), (77, 128, 1024), (65, 31, 33), (100, 97, 300)])
def test_small_shapes_match_cpu(scoring, pairs, m, n):
    rng = np.random.default_rng(pairs * 1000 + m)
    check(*random_pairs(rng, pairs, m, n), scoring)


@pytest.mark.parametrize("m", [255, 256, 257, 300, 512])
def test_rows_in_rounds_match_cpu(m):
    """m > 256: stripes beyond one block's 8 warps run in rounds through the global boundary buffer."""
    rng = np.random.default_rng(m)
    for scoring in (sw.Scoring(), sw.Scoring(3, 5, 2)):
        scores = check(*random_pairs(rng, 70, m, 2048), scoring)
        assert scores.max() > scoring.match * m // 2   # the planted copies score high


@pytest.mark.parametrize("m, n, pairs", [(128, 65_536, 65), (512, 65_536, 33), (64, 16_384, 257)])
def test_long_targets_match_cpu(m, n, pairs):
    rng = np.random.default_rng(n + m)
    check(*random_pairs(rng, pairs, m, n, n_rate=0.001), sw.Scoring())


def test_all_equal_and_all_n_pairs():
    """Exact matches reach c1 * m (the top of the score width); all-N pairs score 0."""
    x = np.tile(np.arange(4, dtype=np.uint8), (96, 128))[:, :511]
    y = np.concatenate([x, np.full((96, 100), 2, np.uint8)], axis=1)
    y[::2] = 4
    for scoring in SCORINGS:
        scores = check(x, y, scoring)
        assert scores[1] == scoring.match * 511 and scores[0] == 0


@pytest.mark.parametrize("scoring", SCORINGS, ids=str)
@pytest.mark.parametrize("pairs, m, n", [(77, 128, 1024), (33, 300, 700), (130, 20, 5000)])
def test_threshold_flags_match_cpu_scores(scoring, pairs, m, n):
    """The sw_reach kernels: score >= T exactly, with 32 and 64 pairs per word, rows in rounds too."""
    rng = np.random.default_rng(pairs + m)
    x, y = random_pairs(rng, pairs, m, n)
    expected = sw.bpbc_cpu(x, y, scoring)
    for threshold in sorted({1, 9, int(np.median(expected)), int(expected.max()), int(expected.max()) + 1}):
        for word_bits in (32, 64):
            flags = sw.bpbc_reach_cuda(x, y, scoring, threshold, word_bits=word_bits)
            assert (flags == (expected >= threshold)).all(), (threshold, word_bits)


@pytest.mark.parametrize("word_bits", [32, 64])
def test_w2b_and_b2w_on_the_device_match_the_cpu(word_bits):
    import cupy

    rng = np.random.default_rng(word_bits)
    pairs, length = 3 * word_bits + 5, 300
    codes = rng.integers(0, 6, (pairs, length)).astype(np.uint8)
    dtype = np.uint32 if word_bits == 32 else np.uint64
    masks, shifts = sw_cpu.transpose_tables(word_bits)
    word = np.zeros(word_bits, dtype)
    groups = -(-pairs // word_bits)
    expected = np.zeros((groups, 3, length + 20), dtype)
    sw_cpu.w2b(codes, pairs, length + 20, word, masks, shifts, expected)
    planes = sw.cuda.cuda_w2b(cupy.asarray(codes), pairs, length + 20, word_bits).get()
    assert (planes == expected).all()
    for s in (2, 9, 31):
        sliced = rng.integers(0, 1 << 62, (groups, s), dtype=np.uint64).astype(dtype)
        scores = np.zeros(pairs, np.int64)
        sw_cpu.b2w(sliced, pairs, word, masks, shifts, scores)
        got = sw.cuda.cuda_b2w(cupy.asarray(sliced), pairs, word_bits).get()
        assert (got == scores.astype(np.int32)).all()


def test_screen_engine_on_the_gpu():
    """The screen API end to end on a dask-cuda cluster (skipped without dask-cuda)."""
    pytest.importorskip("dask_cuda")
    from seqsift.screening import screen

    rng = np.random.default_rng(3)
    letters = np.array(list("ACGTN"))
    queries = ["".join(letters[rng.integers(0, 5, int(rng.integers(1, 300)))]) for _ in range(200)]
    targets = ["".join(letters[rng.integers(0, 4, int(rng.integers(1, 3000)))]) for _ in range(200)]
    cpu = screen(queries, targets, backend="cpu", workers=2)
    for algorithm in ("sw-bpbc", "sw-wordwise"):
        gpu = screen(queries, targets, backend="cuda", algorithm=algorithm)
        assert (gpu == cpu).all()
    hits = screen(queries, targets, backend="cuda", threshold=int(np.percentile(cpu, 80)))
    assert hits["score"].tolist() == cpu[hits["query_index"]].tolist()


def test_the_device_turn_is_one_thread_at_a_time():
    """A screen task's kernels run in the device's turn (kernels.cuda.device_turn): while one thread holds
    it, no other thread gets it, on this device; it is free again once the holder is done."""
    import threading

    import cupy

    from seqsift.kernels import cuda as seqsift_cuda

    taken_elsewhere = []

    def try_elsewhere(lock):
        taken_elsewhere.append(lock.acquire(blocking=False))
        if taken_elsewhere[-1]:
            lock.release()

    with seqsift_cuda.device_turn():
        lock = seqsift_cuda._turns[cupy.cuda.runtime.getDevice()]
        other = threading.Thread(target=try_elsewhere, args=(lock,))
        other.start()
        other.join()
    after = threading.Thread(target=try_elsewhere, args=(lock,))
    after.start()
    after.join()
    assert taken_elsewhere == [False, True]
