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
@pytest.mark.parametrize("rows,group", [(4, 4), (8, 4), (16, 8), (4, 32), (8, 16), (19, 8), (5, 16)])
def test_every_geometry_gives_the_same_scores(affine, rows, group):
    """Rows per thread and group sizes, with x spanning several rounds for the small groups."""
    rng = np.random.default_rng(rows * 100 + group)
    x, y = random_pairs(rng, 33, 200, 513)
    scoring = sw.Scoring(2, 3, gap_open=5, gap_extend=2) if affine else sw.Scoring(2, 1, 1)
    expected = sw.gotoh_cpu(x, y, scoring)
    got = sw_cuda._dpx_cuda(x, y, scoring, affine, rows=rows, group=group)
    assert np.array_equal(got, expected)
    codes, starts, lengths = buffer_of(x, y)
    xi, yi = np.arange(33), 33 + np.arange(33)
    tile = sw_cuda.dpx_launch(codes, starts[xi], lengths[xi], starts[yi[:7]], lengths[yi[:7]], 200, 513, scoring,
                              affine, product=True, rows=rows, group=group).get()
    gathered = sw.buffer_scores("sw-gotoh", "cpu", codes.get(), starts[xi], lengths[xi], starts[yi[:7]],
                                lengths[yi[:7]], scoring, product=True)
    assert np.array_equal(tile, gathered)


def buffer_of(x, y):
    """The rows of two code matrices, cut at their last base, as one device buffer: (codes, starts, lengths)."""
    import cupy

    rows = [r[: int(np.flatnonzero(r < 4).max()) + 1] if np.any(r < 4) else r[:1] for r in list(x) + list(y)]
    lengths = np.array([len(r) for r in rows], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return cupy.asarray(np.concatenate(rows)), starts, lengths


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape", [(7, 5, 40, 90), (64, 33, 150, 2100), (33, 3, 700, 1500), (5, 9, 1200, 300),
                                   (1, 1, 1, 1), (3, 2, 9, 3000)])
def test_buffer_kernels_equal_the_cpu_path(affine, shape):
    """dpx.cu read from one buffer: all-vs-all tiles (targets of several table chunks, x of several rounds,
    x longer than y) and lists of pairs; scores and the early-exit flag kernels, at thresholds that
    most pairs reach early, about half, and almost none."""
    x_count, y_count, max_x, max_y = shape
    rng = np.random.default_rng(sum(shape))
    x, _ = random_pairs(rng, x_count, max_x, 1)
    _, y = random_pairs(rng, y_count, 1, max_y)
    for p in range(min(x_count, y_count)):   # a mutated copy of some x in some y
        if p % 2 and max_y > max_x:
            at = int(rng.integers(0, max_y - max_x + 1))
            y[p, at:at + max_x] = np.where(rng.random(max_x) < 0.1, rng.integers(0, 4, max_x), x[p])
    scoring = sw.Scoring(2, 3, gap_open=5, gap_extend=2) if affine else sw.Scoring(2, 1, 1)
    name = "sw-dpx-affine" if affine else "sw-dpx"
    codes, starts, lengths = buffer_of(x, y)
    xi, yi = np.arange(x_count), x_count + np.arange(y_count)
    host = codes.get()
    expected = sw.buffer_scores("sw-gotoh", "cpu", host, starts[xi], lengths[xi], starts[yi], lengths[yi], scoring,
                                product=True)
    lanes = sw.buffer_scores(name, "cpu", host, starts[xi], lengths[xi], starts[yi], lengths[yi], scoring,
                             product=True)
    assert np.array_equal(lanes, expected)
    got = sw.buffer_scores(name, "cuda", codes, starts[xi], lengths[xi], starts[yi], lengths[yi], scoring,
                           product=True)
    assert np.array_equal(got, expected), np.argwhere(got != expected)[:5]
    k = min(x_count, y_count)
    listed = sw.buffer_scores(name, "cuda", codes, starts[xi[:k]], lengths[xi[:k]], starts[yi[:k]],
                              lengths[yi[:k]], scoring, product=False)
    assert np.array_equal(listed, np.diag(expected[:k, :k]))
    for threshold in sorted({1, max(1, int(np.percentile(expected, 20))), max(1, int(np.median(expected))),
                             max(1, int(expected.max())), int(expected.max()) + 1}):
        assert sw_cuda.reach_z(scoring, threshold) is not None
        flags = sw.buffer_scores(name, "cuda", codes, starts[xi], lengths[xi], starts[yi], lengths[yi], scoring,
                                 product=True, threshold=threshold)
        assert np.array_equal(flags, expected >= threshold), threshold
        listed = sw.buffer_scores(name, "cuda", codes, starts[xi[:k]], lengths[xi[:k]], starts[yi[:k]],
                                  lengths[yi[:k]], scoring, product=False, threshold=threshold)
        assert np.array_equal(listed, np.diag(expected[:k, :k]) >= threshold), threshold


def tile_case(rng, scoring):
    """A buffer of 21 x (up to 150 nt) and 5 targets of up to 700 nt, target p holding a mutated copy of
    x[p]: (codes, starts, lengths, x indices, y indices, sw-gotoh's CPU scores of every x against every y)."""
    x, _ = random_pairs(rng, 21, 150, 1)
    _, y = random_pairs(rng, 5, 1, 700)
    for p in range(5):
        at = int(rng.integers(0, 700 - 150 + 1))
        y[p, at:at + 150] = np.where(rng.random(150) < 0.1, rng.integers(0, 4, 150), x[p])
    codes, starts, lengths = buffer_of(x, y)
    xi, yi = np.arange(21), 21 + np.arange(5)
    expected = sw.buffer_scores("sw-gotoh", "cpu", codes.get(), starts[xi], lengths[xi], starts[yi], lengths[yi],
                                scoring, product=True)
    return codes, starts, lengths, xi, yi, expected


@pytest.mark.parametrize("scoring", AFFINE + LINEAR + [sw.Scoring(1, 9, 2), sw.Scoring(2, 1, gap_open=200, gap_extend=1)],
                         ids=lambda s: s.describe())
def test_tiles_equal_the_cpu_path_for_every_scoring(scoring):
    """The tiles' score profiles hold s + O in 16-bit lanes (c1 + O and O - c2: negative where O < c2, as
    for Scoring(3, 5, 2) and Scoring(1, 9, 2), past a byte for O = 200), and their cells keep W = Z - O,
    not Y: scores and flags equal sw-gotoh's on the CPU for every scoring of the CPU tests."""
    codes, starts, lengths, xi, yi, expected = tile_case(np.random.default_rng(scoring.match * 100 + scoring.open),
                                                         scoring)
    threshold = max(1, int(np.median(expected)))
    for name in ["sw-dpx-affine"] + ([] if scoring.affine else ["sw-dpx"]):
        got = sw.buffer_scores(name, "cuda", codes, starts[xi], lengths[xi], starts[yi], lengths[yi], scoring,
                               product=True)
        assert np.array_equal(got, expected), (name, np.argwhere(got != expected)[:5])
        flags = sw.buffer_scores(name, "cuda", codes, starts[xi], lengths[xi], starts[yi], lengths[yi], scoring,
                                 product=True, threshold=threshold)
        assert np.array_equal(flags, expected >= threshold), name
    for rows, group in ((19, 8), (4, 8)):   # x in one round of a group and in five, through dpx_launch itself
        if sw.dpx_admits(scoring):
            tile = sw_cuda.dpx_launch(codes, starts[xi], lengths[xi], starts[yi], lengths[yi], 150, 700, scoring,
                                      scoring.affine, product=True, rows=rows, group=group).get()
            assert np.array_equal(tile, expected), (rows, group)


@pytest.mark.parametrize("scoring", AFFINE + LINEAR + [sw.Scoring(1, 9, 2), sw.Scoring(2, 3, gap_open=1, gap_extend=4)],
                         ids=lambda s: s.describe())
def test_floored_and_plain_affine_cells_score_alike(scoring):
    """The affine cell with E floored at 0 (dpx.cu's DPX_FLOOR_E) and Gotoh's cell as written give sw-gotoh's
    CPU scores, as tiles (one round, at skews 1, 2 and 4, and five rounds) and lists of pairs, scores and
    flags, wherever the launcher admits the floor; where it does not (tiles with O < c2, or E past B + c2),
    asking for it raises."""
    codes, starts, lengths, xi, yi, expected = tile_case(np.random.default_rng(scoring.extend * 10 + scoring.open),
                                                         scoring)
    threshold = max(1, int(np.median(expected)))
    tiles = (codes, starts[xi], lengths[xi], starts[yi], lengths[yi], 150, 700, scoring, True)
    pair_buffer, pair_y = sw_cuda.dpx_pair_rows(codes, codes, starts[yi], lengths[yi], 700)
    pairs = (pair_buffer, starts[xi[:5]], lengths[xi[:5]], pair_y, lengths[yi], 150, 700, scoring, True)
    for product, args, want in ((True, tiles, expected), (False, pairs, np.diag(expected[:5]))):
        for floor in (False, True):
            if floor and not sw_cuda.dpx_floor_admits(scoring, True, product):
                with pytest.raises(ValueError):
                    sw_cuda.dpx_launch(*args, product=product, floor_e=True)
                continue
            # one round of a group at each skew (DPX_SKEW: thread k at column t - S k), and five rounds
            for rows, group, skew in ((19, 8, 1), (19, 8, 2), (19, 8, 4), (4, 8, 1)):
                launch = dict(product=product, floor_e=floor, rows=rows, group=group, skew=skew)
                got = sw_cuda.dpx_launch(*args, **launch).get()
                assert np.array_equal(got, want), (launch, np.argwhere(got != want)[:5])
                flags = sw_cuda.dpx_launch(*args, threshold=threshold, **launch).get()
                assert np.array_equal(flags, want >= threshold), launch
    assert sw_cuda.dpx_floor_admits(scoring, True, False) == (
        max(0, scoring.open - scoring.mismatch) + scoring.mismatch >= scoring.extend)


def tiles_and_lists(affine: bool, scoring, seed: int = 3):
    """sw-dpx(-affine) on :func:`tile_case`'s buffer: tile scores, tile flags at the median, and the first
    5 x against their targets as a list of pairs, against sw-gotoh on the CPU."""
    codes, starts, lengths, xi, yi, expected = tile_case(np.random.default_rng(seed), scoring)
    name = "sw-dpx-affine" if affine else "sw-dpx"
    threshold = max(1, int(np.median(expected)))
    args = (codes, starts[xi], lengths[xi], starts[yi], lengths[yi], scoring)
    tile = sw.buffer_scores(name, "cuda", *args, product=True)
    flags = sw.buffer_scores(name, "cuda", *args, product=True, threshold=threshold)
    listed = sw.buffer_scores(name, "cuda", codes, starts[xi[:5]], lengths[xi[:5]], starts[yi], lengths[yi], scoring,
                              product=False)
    assert np.array_equal(tile, expected), np.argwhere(tile != expected)[:5]
    assert np.array_equal(flags, expected >= threshold)
    assert np.array_equal(listed, np.diag(expected[:5]))


@pytest.mark.parametrize("affine", [False, True])
def test_lanes_without_dpx_instructions_score_alike(affine, monkeypatch):
    """On GPUs before Hopper, dpx.cu computes each 16-bit lane apart in 32-bit integers, not with DPX
    instructions; DPX_EMULATE takes that path here: tiles, flags, lists of pairs and saturating lanes
    (rescored) equal the CPU path."""
    from seqsift.kernels import cuda as kernels_cuda

    real_load, emulated = kernels_cuda.load_module, []

    def load_emulated(name, **defines):
        if name == "sw/dpx.cu":
            defines["DPX_EMULATE"] = 1
            emulated.append(defines)
        return real_load(name, **defines)

    monkeypatch.setattr(kernels_cuda, "load_module", load_emulated)
    tiles_and_lists(affine, sw.Scoring(2, 3, gap_open=5, gap_extend=2) if affine else sw.Scoring(2, 1, 1))
    scoring = sw.Scoring(100, 3, gap_open=5, gap_extend=2) if affine else sw.Scoring(100, 3, 2)
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, (4, 400)).astype(np.uint8)
    y = np.full((4, 420), 4, np.uint8)
    for p, length in enumerate((300, 327, 330, 400)):
        y[p, 10:10 + length] = x[p, :length]
    expected = sw.gotoh_cpu(x, y, scoring)
    assert expected.max() > 32767
    assert np.array_equal(sw.pair_scores("sw-dpx-affine" if affine else "sw-dpx", "cuda", x, y, scoring), expected)
    assert emulated


@pytest.mark.parametrize("limit", [101_376, 65_536])
def test_tiles_fit_a_device_with_less_shared_memory(limit, monkeypatch):
    """On a GPU whose blocks take less shared memory than the tiles' usual profile (99 KB: the A10, L4 and
    RTX cards; 64 KB: the T4), 150-nt queries run with fewer rows per thread (R = 10 or 5, not 19), alike."""
    from seqsift.kernels import cuda as kernels_cuda

    monkeypatch.setattr(kernels_cuda, "shared_memory_per_block", lambda device: limit)
    for affine in (False, True):
        tiles_and_lists(affine, sw.Scoring(2, 3, gap_open=5, gap_extend=2) if affine else sw.Scoring(2, 1, 1))


@pytest.mark.parametrize("name", ["sw-bpbc", "sw-wordwise", "sw-gotoh"])
def test_kernels_without_a_buffer_kernel_gather_on_the_device(name):
    rng = np.random.default_rng(11)
    x, _ = random_pairs(rng, 9, 60, 1)
    _, y = random_pairs(rng, 4, 1, 300)
    codes, starts, lengths = buffer_of(x, y)
    xi, yi = np.arange(9), 9 + np.arange(4)
    scoring = sw.Scoring(2, 1, 1)
    expected = sw.buffer_scores("sw-gotoh", "cpu", codes.get(), starts[xi], lengths[xi], starts[yi], lengths[yi],
                                scoring, product=True)
    got = sw.buffer_scores(name, "cuda", codes, starts[xi], lengths[xi], starts[yi], lengths[yi], scoring,
                           product=True)
    assert np.array_equal(got, expected)
    flags = sw.buffer_scores(name, "cuda", codes, starts[xi], lengths[xi], starts[yi], lengths[yi], scoring,
                             product=True, threshold=int(np.median(expected)))
    assert np.array_equal(flags, expected >= int(np.median(expected)))


@pytest.mark.parametrize("scoring", [sw.Scoring(100, 3, 2), sw.Scoring(100, 3, 3), sw.Scoring(100, 3, gap_open=5, gap_extend=2)],
                         ids=lambda s: s.describe())
def test_saturating_lanes_are_rescored(scoring):
    """Scores past the 16-bit lanes are flagged -1 and rescored, on the linear cell with g != c2 and with
    g = c2 (one value a cell in the lists of pairs: DPX_GAP_IS_MISMATCH), and on the affine cell."""
    affine = scoring.affine
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

    raw = sw_cuda._dpx_pairs_device(cupy.asarray(x), cupy.asarray(y), scoring, affine).get()
    assert np.any(raw == -1) and np.array_equal(raw[raw >= 0], expected[raw >= 0])
    codes, starts, lengths = buffer_of(x, y)
    xi, yi = np.arange(6), 6 + np.arange(6)
    name = "sw-dpx-affine" if affine else "sw-dpx"
    tile = sw.buffer_scores(name, "cuda", codes, starts[xi], lengths[xi], starts[yi], lengths[yi], scoring,
                            product=True)
    assert np.array_equal(np.diag(tile), expected)


def test_threshold_screen_on_the_gpu_equals_the_cpu():
    from seqsift.screening import screen

    rng = np.random.default_rng(9)
    x, y = random_pairs(rng, 60, 100, 400)
    xs, ys = [as_text(r) or "A" for r in x], [as_text(r) or "A" for r in y]
    for kw in (dict(gap_open=5, gap_extend=1), dict(gap=1)):
        gpu = screen(xs, ys, threshold=30, backend="cuda", **kw)
        cpu = screen(xs, ys, threshold=30, backend="cpu", workers=1, **kw)
        assert gpu[["query_index", "score"]].equals(cpu[["query_index", "score"]])
        for strand in ("+", "both"):   # all-vs-all tiles, scores and survivors
            gpu = screen(xs[:25], ys, all_vs_all=True, backend="cuda", strand=strand, **kw)
            cpu = screen(xs[:25], ys, all_vs_all=True, backend="cpu", workers=1, strand=strand, **kw)
            assert np.array_equal(gpu, cpu)
            gpu = screen(xs[:25], ys, all_vs_all=True, threshold=30, backend="cuda", strand=strand, **kw)
            cpu = screen(xs[:25], ys, all_vs_all=True, threshold=30, backend="cpu", workers=1, strand=strand, **kw)
            assert len(gpu) and gpu.equals(cpu)


def test_base_counts_on_the_device_equal_a_plain_count():
    """dpx.cu's sw_count_bases (a GPU screen's composition bound) against str.count: N and other letters
    uncounted, empty sequences, spans anywhere in the buffer, one sequence of 10^5 bases."""
    import cupy

    rng = np.random.default_rng(27)
    letters = "ACGTNRY"
    text = "".join(rng.choice(list(letters), 300_000, p=[0.23, 0.23, 0.23, 0.23, 0.04, 0.02, 0.02]))
    codes = sw_codes(text)
    starts = rng.integers(0, len(text) - 2_000, 5_000)
    lengths = rng.integers(0, 2_000, 5_000)
    lengths[:50] = 0
    starts, lengths = np.append(starts, 100_000), np.append(lengths, 100_000)
    got = sw.base_counts(cupy.asarray(codes), starts, lengths)
    expected = [[text[s:s + n].count(base) for base in "ACGT"] for s, n in zip(starts.tolist(), lengths.tolist())]
    assert got.dtype == np.int32 and got.tolist() == expected
    assert np.array_equal(got, sw.base_counts(codes, starts, lengths))   # the CPU path's Numba loop
    assert sw.base_counts(cupy.asarray(codes), starts[:0], lengths[:0]).shape == (0, 4)


def sw_codes(text: str) -> np.ndarray:
    from seqsift.alphabet import encode_text

    return encode_text(text)
