"""Affine gaps and the DPX kernels' CPU paths (issue 26).

Every screening kernel that scores the given gaps (sw-gotoh, sw-dpx-affine,
and for linear gaps also sw-dpx, sw-bpbc, sw-wordwise) is compared with
parasail's sw_scan_32 (a +match/-mismatch matrix on A, C, G, T, with N
mismatching everything, N itself included) and with the plain-Python Gotoh
of tests/oracle.py; alignments are re-scored by tests/oracle.py from their
CIGAR. The DPX kernels' CPU paths run the GPU kernels' 16-bit lane
arithmetic, so saturation and its fall-back are tested here too.
"""
from __future__ import annotations

import numpy as np
import parasail
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from seqsift.errors import InputError
from seqsift.kernels import ALGORITHMS
from seqsift.kernels import planner
from seqsift.kernels import sw
from seqsift.kernels.sw import constants as sw_constants
from seqsift.kernels.sw import cpu as sw_cpu
from seqsift.screening import screen

LETTERS = "ACGT"
CODE = {c: i for i, c in enumerate(LETTERS)}

AFFINE = [sw.Scoring(2, 1, gap_open=3, gap_extend=1), sw.Scoring(1, 4, gap_open=6, gap_extend=1),
          sw.Scoring(5, 4, gap_open=10, gap_extend=1), sw.Scoring(2, 3, gap_open=5, gap_extend=2),
          sw.Scoring(3, 1, gap_open=2, gap_extend=0), sw.Scoring(1, 0, gap_open=1, gap_extend=1)]
LINEAR = [sw.Scoring(2, 1, 1), sw.Scoring(3, 5, 2), sw.Scoring(1, 0, 0)]


def codes_of(seq: str) -> np.ndarray:
    return np.array([CODE.get(c, 4) for c in seq.upper()], dtype=np.uint8)


def matrix(rows, width):
    out = np.full((len(rows), max(width, 1)), 4, dtype=np.uint8)
    for p, seq in enumerate(rows):
        out[p, :len(seq)] = codes_of(seq)
    return out


def parasail_score(x: str, y: str, scoring: sw.Scoring) -> int:
    """parasail.sw_scan_32 with N (and any non-ACGT letter) mismatching everything."""
    table = parasail.matrix_create("ACGTN", scoring.match, -scoring.mismatch)
    for i in range(5):
        table.set_value(4, i, -scoring.mismatch)
        table.set_value(i, 4, -scoring.mismatch)
    clean = lambda s: "".join(c if c in LETTERS else "N" for c in s.upper())  # noqa: E731
    if not x or not y:
        return 0
    return parasail.sw_scan_32(clean(x), clean(y), scoring.open, scoring.extend, table).score


def algorithms_for(scoring: sw.Scoring) -> list[str]:
    return [name for name in sw.sw_algorithms() if ALGORITHMS[name].affine_gaps or not scoring.affine]


def random_seq(rng, length: int, n_rate: float = 0.0) -> str:
    seq = rng.choice(list(LETTERS), length)
    seq[rng.random(length) < n_rate] = "N"
    return "".join(seq)


def mutated(rng, seq: str, rate: float = 0.1) -> str:
    """A copy of seq with substitutions, short insertions and deletions, and one long gap."""
    out = []
    for c in seq:
        r = rng.random()
        if r < rate / 3:
            out.append(rng.choice(list(LETTERS)))
        elif r < 2 * rate / 3:
            continue
        elif r < rate:
            out.append(c + random_seq(rng, int(rng.integers(1, 4))))
        else:
            out.append(c)
    if len(out) > 10 and rng.random() < 0.5:
        at = int(rng.integers(1, len(out) - 1))
        out.insert(at, random_seq(rng, int(rng.integers(5, 30))))
    return "".join(out)


def random_pairs(rng, count: int, max_x: int = 40, max_y: int = 90):
    xs, ys = [], []
    for k in range(count):
        x = random_seq(rng, int(rng.integers(1, max_x + 1)), 0.03 if k % 4 == 0 else 0.0)
        if k % 2:
            y = random_seq(rng, int(rng.integers(0, 20))) + mutated(rng, x) + random_seq(rng, int(rng.integers(0, 20)))
        else:
            y = random_seq(rng, int(rng.integers(1, max_y + 1)), 0.02)
        xs.append(x)
        ys.append(y or "A")
    return xs, ys


@pytest.mark.parametrize("scoring", AFFINE + LINEAR, ids=lambda s: s.describe())
def test_every_kernel_equals_parasail_on_random_pairs(scoring):
    rng = np.random.default_rng(26)
    xs, ys = random_pairs(rng, 150)
    x, y = matrix(xs, max(map(len, xs))), matrix(ys, max(map(len, ys)))
    expected = np.array([parasail_score(a, b, scoring) for a, b in zip(xs, ys)])
    for name in algorithms_for(scoring):
        got = sw.pair_scores(name, "cpu", x, y, scoring)
        assert np.array_equal(got, expected), (name, np.flatnonzero(got != expected)[:5])


@pytest.mark.parametrize("scoring", AFFINE[:3] + [sw.Scoring(4, 2, gap_open=4, gap_extend=3)], ids=lambda s: s.describe())
def test_every_affine_kernel_equals_the_independent_gotoh(scoring):
    rng = np.random.default_rng(7)
    xs, ys = random_pairs(rng, 40, 25, 50)
    x, y = matrix(xs, 25), matrix(ys, max(map(len, ys)))
    expected = np.array([oracle.sw_affine_score(a, b, scoring.match, scoring.mismatch, scoring.open,
                                                scoring.extend) for a, b in zip(xs, ys)])
    for name in sw.affine_algorithms():
        assert np.array_equal(sw.pair_scores(name, "cpu", x, y, scoring), expected), name


def adversarial_pairs():
    """(x, y) pairs: empty, length 1, all N, long gaps, ties."""
    return [
        ("", "ACGT"), ("A", ""), ("A", "A"), ("A", "C"), ("N", "N"), ("NNNN", "NNNNNN"), ("ACGT", "NNNN"),
        ("A" * 30 + "C" * 30, "A" * 30 + "T" * 200 + "C" * 30),          # one long deletion pays
        ("A" * 30 + "G" * 150 + "C" * 30, "A" * 30 + "C" * 30),          # one long insertion pays
        ("ACGTACGT", "ACGTTTACGT"), ("ACAC", "CACA"), ("AAAA", "AAAAAAAA"), ("GATTACA", "GATTACA"),
        ("ACGTN" * 8, "ACGT" * 10), ("T" * 63, "T" * 64), ("C" * 127, "C" * 127), ("G" * 128, "G" * 300),
    ]


@pytest.mark.parametrize("scoring", AFFINE + LINEAR, ids=lambda s: s.describe())
def test_adversarial_pairs(scoring):
    pairs = adversarial_pairs()
    x = matrix([a for a, _ in pairs], max(len(a) for a, _ in pairs))
    y = matrix([b for _, b in pairs], max(len(b) for _, b in pairs))
    expected = np.array([parasail_score(a, b, scoring) for a, b in pairs])
    for name in algorithms_for(scoring):
        assert np.array_equal(sw.pair_scores(name, "cpu", x, y, scoring), expected), name


@pytest.mark.parametrize("affine", [False, True])
def test_scores_near_the_8_and_16_bit_limits(affine):
    """Identical runs scoring around 127, 255 and 32,767 - c1: the 16-bit lanes flag the ones that may
    have wrapped, sw-gotoh rescores them, and every score is exact."""
    cases = []
    for match, lengths in ((1, (126, 127, 128, 254, 255, 256)), (100, (320, 325, 326, 327, 328, 330, 400))):
        if affine:
            scoring = sw.Scoring(match, 3, gap_open=5, gap_extend=2)
        else:
            scoring = sw.Scoring(match, 3, 2)
        for length in lengths:
            cases.append((scoring, "ACGT"[length % 4] * length, "ACGT"[length % 4] * (length + 3)))
    for scoring, a, b in cases:
        x, y = matrix([a, a[:-1]], len(a)), matrix([b, b[1:]], len(b))
        expected = np.array([parasail_score(a, b, scoring), parasail_score(a[:-1], b[1:], scoring)])
        raw = np.empty(2, np.int32)
        bias = sw_constants.dpx_bias(scoring.open, scoring.mismatch)
        sw_cpu.dpx_lanes(x, y, scoring.match, scoring.mismatch, scoring.open, scoring.extend, bias, affine, raw)
        fits = expected + bias + scoring.mismatch <= sw_constants.DPX_LANE_MAX - scoring.match
        assert np.array_equal(raw[fits], expected[fits])              # exact where no lane can wrap
        assert np.all(raw[~fits] == -1)                                # flagged: may have wrapped
        name = "sw-dpx-affine" if affine else "sw-dpx"
        assert np.array_equal(sw.pair_scores(name, "cpu", x, y, scoring), expected), (scoring, len(a))
        assert np.array_equal(sw.pair_scores("sw-gotoh", "cpu", x, y, scoring), expected)


def test_linear_gaps_are_affine_with_equal_penalties_and_linear_results_are_unchanged():
    assert sw.Scoring(2, 1, 3) == sw.Scoring(2, 1, gap_open=3, gap_extend=3)
    assert not sw.Scoring(2, 1, gap_open=3, gap_extend=3).affine
    rng = np.random.default_rng(3)
    xs, ys = random_pairs(rng, 100)
    x, y = matrix(xs, 40), matrix(ys, max(map(len, ys)))
    for scoring in LINEAR:
        reference = sw.pair_scores("sw-bpbc", "cpu", x, y, scoring)
        assert np.array_equal(reference, sw.pair_scores("sw-wordwise", "cpu", x, y, scoring))
        for name in ("sw-dpx", "sw-gotoh", "sw-dpx-affine"):
            assert np.array_equal(sw.pair_scores(name, "cpu", x, y, scoring), reference), name


def test_linear_only_kernels_refuse_affine_scoring():
    scoring = sw.Scoring(2, 1, gap_open=3, gap_extend=1)
    x, y = matrix(["ACGT"], 4), matrix(["ACGT"], 4)
    for name in ("sw-bpbc", "sw-wordwise", "sw-dpx"):
        with pytest.raises(ValueError, match="linear gaps only"):
            sw.pair_scores(name, "cpu", x, y, scoring)
        with pytest.raises(ValueError, match="linear gaps only"):
            sw.choose_sw_algorithm("cpu", name, scoring)
    assert sw.choose_sw_algorithm("cpu", "auto", scoring) in sw.affine_algorithms()


def test_scoring_checks():
    for bad, message in ((sw.Scoring(2, 1, gap_open=3), "both"), (sw.Scoring(2, 1, gap_open=1, gap_extend=2), "at least"),
                         (sw.Scoring(2, 1, gap_open=-1, gap_extend=-2), "0 or more")):
        with pytest.raises(ValueError, match=message):
            bad.check()
    sw.Scoring(2, 1, gap_open=0, gap_extend=0).check()


def check_alignments(frame, xs, ys, scoring):
    assert len(frame)
    for row in frame.itertuples():
        x, y = xs[row.query_index], ys[row.target_index]
        coords = (row.query_start, row.query_end, row.target_start, row.target_end)
        rescored = oracle.sw_alignment_score(x, y, coords, row.cigar, scoring.match, scoring.mismatch,
                                             scoring.open, scoring.extend)
        assert rescored == row.score == parasail_score(x, y, scoring), (row, rescored)


@pytest.mark.parametrize("scoring", AFFINE[:4], ids=lambda s: s.describe())
def test_threshold_alignments_are_rescored_by_an_independent_dp(scoring):
    rng = np.random.default_rng(11)
    xs, ys = random_pairs(rng, 60, 60, 140)
    frame = screen(xs, ys, threshold=8, backend="cpu", workers=1, gap_open=scoring.open, gap_extend=scoring.extend,
                   match=scoring.match, mismatch=scoring.mismatch)
    expected = {k for k, (a, b) in enumerate(zip(xs, ys)) if parasail_score(a, b, scoring) >= 8}
    assert set(frame.query_index) == expected
    check_alignments(frame, xs, ys, scoring)


def test_alignments_of_long_gaps_and_all_vs_all_both_strands():
    scoring = sw.Scoring(2, 3, gap_open=5, gap_extend=0)   # a long gap costs 5: it pays
    xs = ["A" * 30 + "C" * 30, "A" * 30 + "G" * 150 + "C" * 30, "GATTACAGATTACA"]
    ys = ["A" * 30 + "T" * 200 + "C" * 30, "A" * 30 + "C" * 30, "TGTAATCTGTAATC"]
    frame = screen(xs, ys, threshold=10, all_vs_all=True, strand="+", backend="cpu", workers=1, gap_open=5,
                   gap_extend=0, match=2, mismatch=3)
    check_alignments(frame, xs, ys, scoring)
    assert {"30=200D30=", "30=150I30="} <= set(frame.cigar)
    both = screen(xs, ys, threshold=10, all_vs_all=True, strand="both", backend="cpu", workers=1, gap_open=5,
                  gap_extend=0, match=2, mismatch=3)
    assert "-" in set(both.strand)   # GATTACA... reverse complement matches TGTAATC...


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.text("ACGTN", min_size=1, max_size=30), st.text("ACGT", min_size=1, max_size=60)),
                min_size=1, max_size=12),
       st.integers(-3, 3), st.sampled_from(AFFINE[:3] + LINEAR[:2]))
def test_the_threshold_filter_never_drops_a_passing_pair(pairs, offset, scoring):
    xs, ys = [a for a, _ in pairs], [b for _, b in pairs]
    x, y = matrix(xs, 30), matrix(ys, 60)
    scores = sw.pair_scores("sw-gotoh", "cpu", x, y, scoring)
    counts = lambda seqs: np.array([[s.count(c) for c in LETTERS] for s in seqs], np.int32)  # noqa: E731
    bound = sw.composition_bound(counts(xs), counts(ys), scoring)
    assert np.all(bound >= scores)
    threshold = max(1, int(np.median(scores)) + offset)
    for name in algorithms_for(scoring):
        reached = sw.pairs_reaching(name, "cpu", x, y, scoring, threshold, bound=bound)
        assert np.array_equal(reached, scores >= threshold), name


def buffer_of(seqs: list[str]):
    """One code buffer of the sequences, one after another, and (starts, lengths)."""
    lengths = np.array([len(q) for q in seqs], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return codes_of("".join(seqs)), starts, lengths


@pytest.mark.parametrize("scoring", AFFINE[:3] + LINEAR[:2], ids=lambda s: s.describe())
def test_buffer_call_shape_equals_parasail_per_pair(scoring):
    """Every algorithm on sequences read from one buffer: all-vs-all tiles and lists of pairs,
    scores and threshold flags, against parasail pair by pair."""
    rng = np.random.default_rng(26)
    xs = [random_seq(rng, int(rng.integers(1, 40)), 0.05) for _ in range(7)]
    ys = [mutated(rng, xs[k % 7], 0.2) + random_seq(rng, int(rng.integers(0, 50))) for k in range(5)]
    codes, starts, lengths = buffer_of(xs + ys)
    x, y = np.arange(7), 7 + np.arange(5)
    expected = np.array([[parasail_score(a, b, scoring) for b in ys] for a in xs])
    threshold = int(np.median(expected))
    for name in algorithms_for(scoring):
        tile = sw.buffer_scores(name, "cpu", codes, starts[x], lengths[x], starts[y], lengths[y], scoring,
                                product=True)
        assert np.array_equal(tile, expected), name
        flags = sw.buffer_scores(name, "cpu", codes, starts[x], lengths[x], starts[y], lengths[y], scoring,
                                 product=True, threshold=threshold)
        assert np.array_equal(flags, expected >= threshold), name
        pairs = sw.buffer_scores(name, "cpu", codes, starts[x[:5]], lengths[x[:5]], starts[y], lengths[y],
                                 scoring, product=False)
        assert np.array_equal(pairs, np.diag(expected[:5])), name


def test_buffer_threshold_with_a_bound_keeps_exactly_the_passing_pairs():
    scoring = LINEAR[0]
    rng = np.random.default_rng(3)
    xs = ["A" * 30, "ACGT" * 8] + [random_seq(rng, 25) for _ in range(4)]
    ys = ["A" * 40, "C" * 40, random_seq(rng, 60)]
    codes, starts, lengths = buffer_of(xs + ys)
    x, y = np.arange(6), 6 + np.arange(3)
    counts = sw.base_counts(codes, starts, lengths)
    bound = scoring.match * np.minimum(counts[x][:, None, :], counts[y][None, :, :]).sum(axis=2)
    expected = np.array([[parasail_score(a, b, scoring) for b in ys] for a in xs])
    for threshold in (1, 12, 30, 61):
        for name in ("sw-dpx", "sw-bpbc"):
            got = sw.buffer_scores(name, "cpu", codes, starts[x], lengths[x], starts[y], lengths[y], scoring,
                                   product=True, threshold=threshold, bound=bound)
            assert np.array_equal(got, expected >= threshold), (name, threshold)


def test_base_counts_of_the_screen_buffer():
    codes = codes_of("ACGTNNAAC")
    counts = sw.base_counts(codes, np.array([0, 4, 6]), np.array([4, 2, 3]))
    assert counts.tolist() == [[1, 1, 1, 1], [0, 0, 0, 0], [2, 1, 0, 0]]


def test_cli_gap_open_and_extend(tmp_path, capsys):
    from seqsift.cli import main

    q, t = tmp_path / "q.fa", tmp_path / "t.fa"
    q.write_text(">a\nGGGGCCCCAAAATTTT\n>b\nACGTACGT\n")
    t.write_text(">a\nGGGGAAAATTTT\n>b\nACGTTTTACGT\n")
    out = tmp_path / "o.tsv"
    assert main(["screen", str(q), str(t), "--gap-open", "3", "--gap-extend", "1", "--backend", "cpu", "-o",
                 str(out), "--workers", "1", "--no-progress"]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()[1:]]   # after the header
    scoring = sw.Scoring(2, 1, gap_open=3, gap_extend=1)
    assert [int(r[2]) for r in rows] == [parasail_score("GGGGCCCCAAAATTTT", "GGGGAAAATTTT", scoring),
                                         parasail_score("ACGTACGT", "ACGTTTTACGT", scoring)]
    assert main(["screen", str(q), str(t), "--gap-open", "3", "--backend", "cpu"]) != 0
    assert "both --gap-open and --gap-extend" in capsys.readouterr().err
    with pytest.raises(InputError, match="linear gaps only"):
        screen(str(q), str(t), gap_open=3, gap_extend=1, algorithm="sw-bpbc", backend="cpu", workers=1)


def test_auto_picks_the_measured_fastest_per_length_bucket(monkeypatch):
    rows = ({"backend": "cpu", "metric": "sw", "m": 128, "n": 8192, "gaps": "linear", "algorithm": "sw-bpbc",
             "cells_per_s": 1e9},
            {"backend": "cpu", "metric": "sw", "m": 128, "n": 8192, "gaps": "linear", "algorithm": "sw-dpx",
             "cells_per_s": 2e9},
            {"backend": "cpu", "metric": "sw", "m": 16, "n": 32, "gaps": "linear", "algorithm": "sw-wordwise",
             "cells_per_s": 3e9},
            {"backend": "cpu", "metric": "sw", "m": 128, "n": 8192, "gaps": "affine", "algorithm": "sw-gotoh",
             "cells_per_s": 5e8},
            {"backend": "cpu", "metric": "hamming", "m": 16, "k": 0, "patterns": 1, "algorithm": "hamming-scan",
             "pattern_positions_per_s": 1e9})
    monkeypatch.setattr(planner, "measurements", lambda backend: (rows, "test table"))
    assert sw.choose_sw_algorithm("cpu", "auto", sw.Scoring(), 100, 6000) == "sw-dpx"
    assert sw.choose_sw_algorithm("cpu", "auto", sw.Scoring(), 12, 40) == "sw-wordwise"
    affine = sw.Scoring(2, 1, gap_open=3, gap_extend=1)
    assert sw.choose_sw_algorithm("cpu", "auto", affine, 12, 40) == "sw-gotoh"
    monkeypatch.setattr(planner, "measurements", lambda backend: ((), "no table"))
    assert sw.choose_sw_algorithm("cpu", "auto", affine, 12, 40) == sw.DEFAULT_SW_ALGORITHM[("cpu", True)]


@pytest.mark.parametrize("limit,rows", [(232_448, 44), (166_912, 28), (101_376, 16), (98_304, 16), (65_536, 8),
                                        (49_152, 8)])
def test_tile_rows_fit_the_devices_shared_memory(limit, rows):
    """The tiles' rows per thread fit a block's opt-in shared memory (H100 227 KB, A100 163 KB, the sm_86 and
    sm_89 cards such as the A10 and L4 99 KB, V100 96 KB, T4 64 KB, 48 KB without opt-in): the largest multiple
    of 4 whose table and profiles fit, and the geometry keeps under it (150-nt reads took R = 19, 106.6 KB)."""
    from seqsift.kernels.sw import cuda as sw_cuda

    assert sw_cuda.dpx_max_tile_rows(limit) == rows
    assert sw_cuda.dpx_tile_shared_bytes(rows) <= limit < sw_cuda.dpx_tile_shared_bytes(rows + 4)
    for m in (1, 100, 128, 150, 300, 1000):
        for affine in (False, True):
            r, group, rounds = sw_cuda.dpx_geometry(m, affine=affine, product=True, max_rows=rows)
            assert r <= rows and r * group * rounds >= m
            assert sw_cuda.dpx_tile_shared_bytes(r) <= limit
