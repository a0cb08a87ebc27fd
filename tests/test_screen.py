"""Smith-Waterman screening (issue 9) on the CPU: arithmetic, transposes, scores, engine, CLI.

Scores are checked against parasail's ``sw`` (linear gaps: parasail charges
open + (L - 1) * extend for a gap of length L, so open = extend = g) with a
substitution matrix over ACGTN whose N row and column are all -c2.
"""
from __future__ import annotations

import gzip
import itertools
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from seqsift.alphabet import encode_text
from seqsift.screening import pad_length, plan_tasks, read_sequences, screen
from seqsift.errors import InputError
from seqsift.kernels import sw
from seqsift.kernels.sw import constants as sw_constants
from seqsift.kernels.sw import cpu as sw_cpu

from cross_check import optional, require

parasail = optional("parasail")

SCORINGS = [sw.Scoring(2, 1, 1), sw.Scoring(3, 5, 2), sw.Scoring(1, 0, 0), sw.Scoring(2, 3, 1), sw.Scoring(5, 1, 4)]
LETTERS = np.array(list("ACGT"))


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def parasail_score(x: str, y: str, scoring: sw.Scoring) -> int:
    require(parasail, "parasail")
    return parasail.sw(x, y, scoring.gap, scoring.gap, _matrix(scoring)).score


_MATRICES = {}


def _matrix(scoring):
    key = (scoring.match, scoring.mismatch)
    if key not in _MATRICES:
        matrix = parasail.matrix_create("ACGTN", scoring.match, -scoring.mismatch)
        matrix.set_value(4, 4, -scoring.mismatch)   # N never matches, not even N
        _MATRICES[key] = matrix
    return _MATRICES[key]


def random_dna(rng, n, n_rate=0.0) -> str:
    seq = LETTERS[rng.integers(0, 4, n)]
    if n_rate:
        seq[rng.random(n) < n_rate] = "N"
    return "".join(seq)


def similar(rng, seq: str, rate=0.1) -> str:
    """A copy of seq with substitutions and indels at ``rate``."""
    out = []
    for base in seq:
        r = rng.random()
        if r < rate / 3:
            out.append(LETTERS[rng.integers(0, 4)])
        elif r < 2 * rate / 3:
            continue
        elif r < rate:
            out.append(base + LETTERS[rng.integers(0, 4)])
        else:
            out.append(base)
    return "".join(out) or "A"


def code_matrix(seqs: list[str], width: int | None = None) -> np.ndarray:
    width = width or max(len(s) for s in seqs)
    out = np.full((len(seqs), width), 4, np.uint8)
    for k, s in enumerate(seqs):
        out[k, :len(s)] = encode_text(s)
    return out


def slice_values(values, s: int, dtype=np.uint64) -> np.ndarray:
    """Bit-slice up to 64 values: word i holds bit i of value k in bit k."""
    values = np.asarray(values, dtype=np.uint64)
    bits = (values[:, None] >> np.arange(s, dtype=np.uint64)) & np.uint64(1)          # [k][i]
    return np.bitwise_or.reduce(bits << np.arange(len(values), dtype=np.uint64)[:, None], axis=0).astype(dtype)


def unslice(words, count: int) -> list[int]:
    words = np.asarray(words, dtype=np.uint64)
    bits = (words[None, :] >> np.arange(count, dtype=np.uint64)[:, None]) & np.uint64(1)  # [k][i]
    return (bits << np.arange(len(words), dtype=np.uint64)[None, :]).sum(axis=1).astype(np.int64).tolist()


def groups_of_64(items):
    items = list(items)
    for a in range(0, len(items), 64):
        yield items[a:a + 64]


# --------------------------------------------------------------------------
# Section IV.A: every bit-sliced function against integer arithmetic
# --------------------------------------------------------------------------

@pytest.mark.parametrize("s", range(1, 7))
def test_compare_max_add_ssub_all_operand_pairs(s):
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    for chunk in groups_of_64(itertools.product(range(1 << s), repeat=2)):
        a_vals, b_vals = [a for a, _ in chunk], [b for _, b in chunk]
        a, b = slice_values(a_vals, s), slice_values(b_vals, s)
        out = np.zeros(s, np.uint64)
        p = int(np.uint64(sw_cpu.greaterthan(a, b, s)) & ones)
        for k, (x, y) in enumerate(chunk):
            if x != y:
                assert (p >> k) & 1 == (x > y), ("greaterthan", s, x, y)
        sw_cpu.max_b(a, b, out, s)
        assert unslice(out, len(chunk)) == [max(x, y) for x, y in chunk]
        carry = int(np.uint64(sw_cpu.add_b(a, b, out, s)) & ones)
        assert unslice(out, len(chunk)) == [(x + y) % (1 << s) for x, y in chunk]
        assert [(carry >> k) & 1 for k in range(len(chunk))] == [int(x + y >= 1 << s) for x, y in chunk]
        sw_cpu.ssub_b(a, b, out, s)
        assert unslice(out, len(chunk)) == [max(x - y, 0) for x, y in chunk]
        # out may be an input (the kernels compute in place)
        aliased = a.copy()
        sw_cpu.max_b(aliased, b, aliased, s)
        assert unslice(aliased, len(chunk)) == [max(x, y) for x, y in chunk]


@pytest.mark.parametrize("s", range(1, 7))
def test_matching_and_add_select_all_operands(s):
    """matching_B: C + c1 on a match, max(C - c2, 0) on a mismatch; add_select_b: one adder for both."""
    top = (1 << s) - 1
    scratch = [np.zeros(s, np.uint64) for _ in range(3)]
    for c1, c2 in itertools.product(range(top + 1), repeat=2):
        k1 = sw_constants.sliced_constant(c1, s, np.uint64)
        k2 = sw_constants.sliced_constant(c2, s, np.uint64)
        cases = [(c, e) for c in range(top + 1 - c1) for e in (0, 1)]   # C + c1 must fit in s bits
        for chunk in groups_of_64(cases):
            c = slice_values([v for v, _ in chunk], s)
            e = slice_values([f for _, f in chunk], 1)[0]
            sw_cpu.matching_b(c, e, k1, k2, scratch[0], scratch[1], scratch[2], s)
            assert unslice(scratch[0], len(chunk)) == [v + c1 if not f else max(v - c2, 0) for v, f in chunk]
            # add_select_b with k2 = -c2 mod 2^s and saturation: the same function
            minus = sw_constants.sliced_constant((-c2) % (1 << s), s, np.uint64)
            sat = np.uint64(0xFFFFFFFFFFFFFFFF) if c2 > 0 else np.uint64(0)
            sw_cpu.add_select_b(c, e, k1, minus, sat, scratch[0], s)
            assert unslice(scratch[0], len(chunk)) == [v + c1 if not f else max(v - c2, 0) for v, f in chunk]



def test_every_byte_encodes_checks_and_sorts_as_the_plain_rules():
    """The screen's read steps (alphabet.encode_text, the letter check, the protein check) run through
    bytes.translate; each byte value, in arrays, bytes and records, gives what the plain per-byte rules give:
    A, C, G, T in either case 0-3, all else 4; letters, '*', '-' and '.' pass; "protein" is a record whose
    letters are mostly not A, C, G, T, U or N."""
    from seqsift.alphabet import mostly_not_nucleotides
    from seqsift.errors import InputError
    from seqsift.screening.inputs import SequenceSet, _check_letters

    every = np.tile(np.arange(256, dtype=np.uint8), 3)
    expected = np.array(["ACGT".find(chr(b).upper()) if chr(b).upper() in "ACGT" and b < 128 else 4 for b in every],
                        np.uint8)
    for given in (every, every.tobytes(), every[::-1].copy()[::-1]):
        codes = encode_text(given)
        assert np.array_equal(codes, expected)
    assert encode_text(every).flags.writeable   # an array in, a writable array out, as NumPy's lookup gave
    letters = bytes(b for b in range(256) if chr(b).isascii() and (chr(b).isalpha() or chr(b) in "*-."))
    sequences = SequenceSet(names=["a", "b"], codes=encode_text(letters * 2), offsets=np.array([0, len(letters),
                            2 * len(letters)]), source="x.fa")
    _check_letters(sequences, letters * 2)   # no error
    for bad in (b"\x00", b"1", b" ", b"\xff", b">"):
        raw = letters + bad + letters
        with pytest.raises(InputError, match=r"record 'b'.*is not a sequence letter"):
            _check_letters(SequenceSet(names=["a", "b"], codes=encode_text(raw),
                                       offsets=np.array([0, len(letters), len(raw)]), source="x.fa"), raw)
    dna, protein = b"ACGTUNacgtun" * 5 + b"RYKM", b"MKVLAAGIVGLLLAHEWQ"
    for records, first in (([dna, dna], None), ([dna, protein, protein], 1), ([protein], 0), ([dna, b"", dna], None)):
        data = np.frombuffer(b"".join(records), np.uint8)
        offsets = np.concatenate([[0], np.cumsum([len(r) for r in records])])
        assert mostly_not_nucleotides(data, offsets) == first

def test_mismatch_flag_every_code_pair():
    """e = 1 unless both characters are the same base; N (and any code >= 4) never matches."""
    codes = list(range(6))
    pairs = list(itertools.product(codes, repeat=2))
    planes = np.zeros((1, 3, len(pairs)), np.uint64)
    word = np.zeros(64, np.uint64)
    masks, shifts = sw_cpu.transpose_tables(64)
    xs = np.array([[x for x, _ in pairs]], np.uint8).T.copy()   # 36 pairs x 1 position
    ys = np.array([[y for _, y in pairs]], np.uint8).T.copy()
    xp = np.zeros((1, 3, 1), np.uint64)
    yp = np.zeros((1, 3, 1), np.uint64)
    sw_cpu.w2b(xs, len(pairs), 1, word, masks, shifts, xp)
    sw_cpu.w2b(ys, len(pairs), 1, word, masks, shifts, yp)
    e = int(np.uint64(sw_cpu.mismatch_flag(xp[0, 0, 0], xp[0, 1, 0], xp[0, 2, 0], yp[0, 0, 0], yp[0, 1, 0],
                                           yp[0, 2, 0])))
    for k, (x, y) in enumerate(pairs):
        assert (e >> k) & 1 == int(not (x == y and x < 4)), (x, y)
    del planes


CELL_CASES = [(s, scoring) for s in range(2, 7) for scoring in SCORINGS
              if max(scoring.match + scoring.gap, scoring.mismatch) < 1 << s]   # the constants fit in s bits


@pytest.mark.parametrize("s, scoring", CELL_CASES, ids=str)
def test_sw_cell_paper_and_reordered_against_integers(s, scoring):
    """Both cells give max(0, A - g, B - g, C + w) for every A, B, C whose sums fit in s bits."""
    c1, c2, g = scoring.match, scoring.mismatch, scoring.gap
    top = (1 << s) - 1
    values = range(top + 1 - c1 - g)
    cases = [(a, b, c, e) for a in values for b in values for c in values for e in (0, 1)]
    k1, k2, sat, kg = sw._constants(scoring, s)
    K1, K2, KG = (sw_constants.sliced_constant(v, s, np.uint64) for v in (k1, k2, kg))
    P1, P2 = (sw_constants.sliced_constant(v, s, np.uint64) for v in (c1, c2))
    satw = np.uint64(0xFFFFFFFFFFFFFFFF) if sat else np.uint64(0)
    out, t1, t2, t3 = (np.zeros(s, np.uint64) for _ in range(4))
    for chunk in groups_of_64(cases):
        a, b, c = (slice_values([case[i] for case in chunk], s) for i in range(3))
        e = slice_values([case[3] for case in chunk], 1)[0]
        expected = [max(0, x - g, y - g, z + (c1 if not f else -c2)) for x, y, z, f in chunk]
        sw_cpu.sw_cell(a, b, c, e, K1, K2, satw, KG, out, t1, s)
        assert unslice(out, len(chunk)) == expected
        sw_cpu.sw_cell_paper(a, b, c, e, P1, P2, KG, out, t1, t2, t3, s)
        assert unslice(out, len(chunk)) == expected


# --------------------------------------------------------------------------
# Section II: bit transpose (W2B / B2W)
# --------------------------------------------------------------------------

def naive_transpose(words, width):
    bits = np.array([[(int(w) >> b) & 1 for b in range(width)] for w in words])  # [row k][bit b]
    return [sum(int(bits[k, r]) << k for k in range(width)) for r in range(width)]


@pytest.mark.parametrize("width", [32, 64])
def test_transpose_round_trip_and_narrow_rows(width):
    rng = np.random.default_rng(width)
    dtype = np.uint32 if width == 32 else np.uint64
    masks, shifts = sw_cpu.transpose_tables(width)
    for _ in range(20):
        original = rng.integers(0, 1 << 62, width, dtype=np.uint64).astype(dtype)
        a = original.copy()
        sw_cpu.transpose_rows(a, width, width, masks, shifts)
        assert [int(v) for v in a] == naive_transpose(original, width)
        sw_cpu.transpose_rows(a, width, width, masks, shifts)
        assert (a == original).all()
        for rows in (1, 2, 3, 5, 9):   # the copy-based narrow transposes of Table I
            narrow = original.copy()
            sw_cpu.transpose_rows(narrow, width, rows, masks, shifts)
            assert [int(v) for v in narrow[:rows]] == naive_transpose(original, width)[:rows]


@pytest.mark.parametrize("width", [32, 64])
def test_w2b_planes_and_b2w_round_trip(width):
    rng = np.random.default_rng(7)
    dtype = np.uint32 if width == 32 else np.uint64
    masks, shifts = sw_cpu.transpose_tables(width)
    word = np.zeros(width, dtype)
    pairs, length = 2 * width + 13, 37
    codes = rng.integers(0, 7, (pairs, length)).astype(np.uint8)   # 5, 6: any other byte, as N
    groups = -(-pairs // width)
    planes = np.zeros((groups, 3, length + 3), dtype)
    sw_cpu.w2b(codes, pairs, length + 3, word, masks, shifts, planes)
    for p in range(groups * width):
        g, k = divmod(p, width)
        for pos in range(length + 3):
            code = int(codes[p, pos]) if p < pairs and pos < length else 4
            code = min(code, 4)
            got = [(int(planes[g, plane, pos]) >> k) & 1 for plane in range(3)]
            assert got == [code & 1 if code < 4 else 0, code >> 1 & 1 if code < 4 else 0, int(code == 4)]
    for s in (1, 5, 17, width - 1):
        scores = rng.integers(0, 1 << s, pairs)
        sliced = np.zeros((groups, s), dtype)
        for g in range(groups):
            chunk = scores[g * width:(g + 1) * width]
            sliced[g] = slice_values(chunk, s, dtype)
        back = np.zeros(pairs, np.int64)
        sw_cpu.b2w(sliced, pairs, word, masks, shifts, back)
        assert (back == scores).all()


# --------------------------------------------------------------------------
# Scores against parasail
# --------------------------------------------------------------------------

def all_kernels(x_codes, y_codes, scoring, **kw):
    return {
        "bpbc64": sw.bpbc_cpu(x_codes, y_codes, scoring, word_bits=64, **kw),
        "bpbc32": sw.bpbc_cpu(x_codes, y_codes, scoring, word_bits=32, **kw),
        "wordwise": sw.wordwise_cpu(x_codes, y_codes, scoring, **kw),
    }


@pytest.mark.parametrize("scoring", SCORINGS, ids=str)
def test_random_pairs_equal_parasail(scoring):
    """Lengths 1 .. 512 against targets up to 4,000, 77 pairs (not a multiple of 32 or 64), N's."""
    rng = np.random.default_rng(scoring.match * 100 + scoring.mismatch * 10 + scoring.gap)
    xs, ys = [], []
    for k in range(77):
        m = int(rng.choice([1, 2, 31, 32, 33, 64, 65, int(rng.integers(1, 513)), 512]))
        x = random_dna(rng, m, n_rate=0.02 if k % 5 == 0 else 0.0)
        n = int(rng.integers(1, 700)) if k % 11 else int(rng.integers(2000, 4001))
        y = random_dna(rng, n, n_rate=0.02 if k % 7 == 0 else 0.0)
        if k % 3 == 0 and n > m:   # plant a similar copy of x
            at = int(rng.integers(0, n - m + 1))
            y = (y[:at] + similar(rng, x) + y[at + m:])[:max(n, 1)]
        xs.append(x)
        ys.append(y)
    expected = np.array([parasail_score(x, y, scoring) for x, y in zip(xs, ys)])
    for name, got in all_kernels(code_matrix(xs), code_matrix(ys), scoring).items():
        assert (got == expected).all(), (name, np.flatnonzero(got != expected)[:5])
    # the paper's own cell gives the same scores
    paper = sw.bpbc_cpu(code_matrix(xs), code_matrix(ys), scoring, paper_cell=True)
    assert (paper == expected).all()


def test_swapped_orientation_identical_and_edge_sequences():
    """Score is symmetric; all-N, single bases, identical sequences (the score reaches c1 * m exactly)."""
    scoring = sw.Scoring()
    rng = np.random.default_rng(1)
    same = random_dna(rng, 300)
    xs = ["A", "N", "NNNN", "ACGT", same, "A" * 64, "ACGTRYKM*-.acgt"]
    ys = ["A", "N", "NNNNNNNN", "TTTT", same, "A" * 200, "ACGTNNNNNNNNACGT"]
    expected = np.array([parasail_score(x.upper().translate(str.maketrans("RYKM*-.", "NNNNNNN")), y, scoring)
                         for x, y in zip(xs, ys)])
    assert expected[4] == 2 * 300 and expected[5] == 2 * 64
    for got in (*all_kernels(code_matrix(xs), code_matrix(ys), scoring).values(),
                *all_kernels(code_matrix(ys), code_matrix(xs), scoring).values()):
        assert (got == expected).all()


def test_pair_counts_around_word_sizes():
    scoring = sw.Scoring()
    rng = np.random.default_rng(9)
    for pairs in (1, 31, 32, 33, 63, 64, 65, 129):
        xs = [random_dna(rng, int(rng.integers(1, 40))) for _ in range(pairs)]
        ys = [similar(rng, x, 0.2) + random_dna(rng, int(rng.integers(0, 30))) for x in xs]
        expected = np.array([parasail_score(x, y, scoring) for x, y in zip(xs, ys)])
        for got in all_kernels(code_matrix(xs), code_matrix(ys), scoring).values():
            assert (got == expected).all()


def test_score_width_never_overflows():
    """s holds c1 * min(m, n) + g: the all-match pairs at the top of each width still score right."""
    for match, gap in ((2, 1), (3, 7), (1, 0)):
        scoring = sw.Scoring(match, 1, gap)
        for m in (1, 7, 8, 15, 16, 63, 64, 127, 128):
            x = "ACGT" * (m // 4) + "ACG"[: m % 4]
            got = sw.bpbc_cpu(code_matrix([x]), code_matrix([x + "TTTT"]), scoring)
            assert got[0] == match * m
            assert sw.score_bits(scoring, m) == (match * m + gap).bit_length()


@pytest.mark.parametrize("scoring", SCORINGS, ids=str)
def test_threshold_flags_equal_score_at_least_threshold(scoring):
    """The flag kernel (numbers only wide enough for T, values past T left to wrap) says exactly
    score >= T, for thresholds below, at and above the scores of random and similar pairs."""
    rng = np.random.default_rng(scoring.gap * 7 + scoring.match)
    xs = [random_dna(rng, int(rng.integers(1, 200)), n_rate=0.01) for _ in range(150)]
    ys = [similar(rng, x, 0.1) + random_dna(rng, int(rng.integers(0, 400))) if k % 2 else
          random_dna(rng, int(rng.integers(1, 600))) for k, x in enumerate(xs)]
    x_codes, y_codes = code_matrix(xs), code_matrix(ys)
    expected = np.array([parasail_score(x, y, scoring) for x, y in zip(xs, ys)])
    thresholds = {0, 1, 2, 5, 17, int(np.median(expected)), int(expected.max()), int(expected.max()) + 1}
    for threshold in sorted(thresholds):
        for word_bits in (32, 64):
            got = sw.pairs_reaching("sw-bpbc", "cpu", x_codes, y_codes, scoring, threshold, word_bits=word_bits)
            assert (got == (expected >= threshold)).all(), (threshold, word_bits)
            if threshold >= 1:   # the flag kernel itself, even where the full scores would be as narrow
                flags = sw.bpbc_reach_cpu(x_codes, y_codes, scoring, threshold, word_bits=word_bits)
                assert (flags == (expected >= threshold)).all(), (threshold, word_bits)
        wordwise = sw.pairs_reaching("sw-wordwise", "cpu", x_codes, y_codes, scoring, threshold)
        assert (wordwise == (expected >= threshold)).all()
    assert sw.reach_bits(scoring, 17) < sw.score_bits(scoring, 199)


def test_lambda_reads_against_genome_windows(real_data):
    """Real reads (sequencing errors, N's) against 2 kb windows of the lambda genome, every pair."""
    with gzip.open(real_data / "lambda_phage.fa.gz", "rt") as handle:
        genome = "".join(line.strip() for line in handle if not line.startswith(">"))
    reads = []
    with gzip.open(real_data / "lambda_reads_1.fq.gz", "rt") as handle:
        for k, line in enumerate(handle):
            if k % 4 == 1:
                reads.append(line.strip())
            if len(reads) == 24:
                break
    windows = [genome[a:a + 2000] for a in range(0, len(genome) - 1000, 1900)]
    scoring = sw.Scoring()
    xs = [r for r in reads for _ in windows]
    ys = [w for _ in reads for w in windows]
    expected = np.array([parasail_score(x, y, scoring) for x, y in zip(xs, ys)])
    assert (expected.reshape(len(reads), len(windows)).max(axis=1) > 100).mean() > 0.4  # reads do come from lambda
    for name, got in all_kernels(code_matrix(xs), code_matrix(ys), scoring).items():
        assert (got == expected).all(), name


# --------------------------------------------------------------------------
# The GPU kernel's schedule, modelled on integers (sw.cu, sw_bpbc_body)
# --------------------------------------------------------------------------

def schedule_model(x, y, scoring, max_warps, order, steps=sw.SW_STEPS, lag=sw.SW_LAG, ring_size=sw.SW_RING):
    """sw_bpbc_body's control flow with integer cells: lanes, warps, lag, ring, rounds, barriers.

    Within a phase (between two barriers) warps run in any order; ``order``
    picks one. A ring or boundary entry read before it was written, or after
    it was overwritten, fails the assertions.
    """
    c1, c2, g = scoring.match, scoring.mismatch, scoring.gap
    m, n = len(x), len(y)
    m32 = -(-m // 32) * 32
    xs = np.full(m32, 4)
    xs[:m] = x
    stripes = m32 // 32
    warps = min(stripes, max_warps)
    rounds = -(-stripes // warps)
    ring, boundary = {}, {}
    best = 0
    lanes = np.arange(32)
    rng = np.random.default_rng(0)
    for rnd in range(rounds):
        h = np.zeros((warps, 32), np.int64)
        diag = np.zeros((warps, 32), np.int64)
        for phase in range(0, n + 31 + (warps - 1) * lag, steps):
            warp_order = list(range(warps))
            if order == "down":
                warp_order.reverse()
            elif order == "random":
                rng.shuffle(warp_order)
            for w in warp_order:
                stripe = rnd * warps + w
                t0 = phase - w * lag
                if stripe >= stripes or not (t0 + steps > 0 and t0 < n + 31):
                    continue
                for k in range(steps):
                    j = t0 + k - lanes
                    up = np.concatenate([[h[w, 0]], h[w, :-1]])   # __shfl_up_sync(h, 1)
                    valid = (j >= 0) & (j < n)
                    if stripe == 0 or not valid[0]:
                        up[0] = 0
                    elif w == 0 and rnd > 0:
                        written, value = boundary.get(int(j[0]), (None, None))
                        assert written == rnd - 1, ("boundary not ready", rnd, j[0])
                        up[0] = value
                    else:
                        column, value = ring.get((w - 1, int(j[0]) % ring_size), (None, None))
                        assert column == j[0], ("ring entry not ready or overwritten", w, j[0])
                        up[0] = value
                    for lane in np.flatnonzero(valid):
                        col = int(j[lane])
                        i = stripe * 32 + lane
                        w_score = c1 if (xs[i] == y[col] and xs[i] < 4) else -c2
                        cell = max(0, diag[w, lane] + w_score, up[lane] - g, h[w, lane] - g)
                        h[w, lane] = cell
                        best = max(best, cell)
                        if lane == 31 and w + 1 < warps:
                            ring[(w, col % ring_size)] = (col, cell)
                        elif lane == 31 and rnd + 1 < rounds:
                            boundary[col] = (rnd, cell)
                    diag[w] = up
    return best


@pytest.mark.parametrize("max_warps", [1, 2, 3, 8])
def test_gpu_schedule_model_matches_parasail(max_warps):
    """The lag, ring size and rounds of sw.cu keep every hand-over in order, in any warp order."""
    rng = np.random.default_rng(max_warps)
    scoring = sw.Scoring()
    for m, n in ((1, 5), (40, 1), (100, 130), (290, 90)):
        x = rng.integers(0, 5, m)
        y = rng.integers(0, 5, n)
        y[: min(n, m)] = x[: min(n, m)]
        expected = parasail_score("".join("ACGTN"[c] for c in x), "".join("ACGTN"[c] for c in y), scoring)
        for order in ("up", "down", "random"):
            assert schedule_model(x, y, scoring, max_warps, order) == expected


def test_gpu_schedule_model_catches_a_short_lag():
    """The model is strict enough to see the race a lag below SW_STEPS + 31 would cause."""
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 4, 100), rng.integers(0, 4, 150)
    with pytest.raises(AssertionError):
        schedule_model(x, y, sw.Scoring(), 3, "down", lag=sw.SW_STEPS + 20)


def test_gpu_geometry_fits_shared_memory():
    for width in sw.GPU_SCORE_WIDTHS:
        for bits in (32, 64):
            for m32 in (32, 128, 256, 512, 4096):
                warps, shared = sw.cuda.bpbc_geometry(m32, width, bits)
                assert 1 <= warps <= sw.SW_MAX_WARPS and shared <= sw.SHARED_LIMIT
    assert sw.cuda.gpu_score_width(9) == 9 and sw.cuda.gpu_score_width(17) == 20 and sw.cuda.gpu_score_width(1) == 2
    assert sw.SW_LAG - 31 >= sw.SW_STEPS and sw.SW_RING - (sw.SW_LAG - 31) >= sw.SW_STEPS


# --------------------------------------------------------------------------
# Alignments
# --------------------------------------------------------------------------

def cigar_ops(cigar: str):
    import re

    return [(int(n), op) for n, op in re.findall(r"(\d+)([=XID])", cigar)]


def check_alignment(query: str, target: str, row, scoring):
    """The CIGAR walks query[qs:qe] and target[ts:te] exactly and rescores to the score."""
    qs, qe, ts, te = row.query_start, row.query_end, row.target_start, row.target_end
    if row.score == 0:
        assert row.cigar == "*"
        return
    q, t, total = qs, ts, 0
    for count, op in cigar_ops(row.cigar):
        for _ in range(count):
            if op in "=X":
                same = query[q] == target[t] and query[q] in "ACGT"
                assert same == (op == "="), (row, q, t)
                total += scoring.match if same else -scoring.mismatch
                q, t = q + 1, t + 1
            elif op == "I":
                total -= scoring.gap
                q += 1
            else:
                total -= scoring.gap
                t += 1
    assert (q, t) == (qe, te)
    assert total == row.score


@pytest.mark.parametrize("scoring", SCORINGS[:3], ids=str)
def test_host_alignments_rescore_to_the_score(scoring):
    rng = np.random.default_rng(4)
    queries = [random_dna(rng, int(rng.integers(20, 150)), 0.01) for _ in range(40)]
    targets = [random_dna(rng, int(rng.integers(0, 200))) + similar(rng, q, 0.15) + random_dna(rng, 50)
               for q in queries]
    codes = encode_text("".join(queries) + "".join(targets))
    q_len = np.array([len(q) for q in queries])
    t_len = np.array([len(t) for t in targets])
    q_start = np.cumsum(q_len) - q_len
    t_start = q_len.sum() + np.cumsum(t_len) - t_len
    scores = np.array([parasail_score(q, t, scoring) for q, t in zip(queries, targets)])
    coords, cigars = sw.align(codes, q_start, q_len, t_start, t_len, scores, scoring)
    frame = pd.DataFrame(coords, columns=["query_start", "query_end", "target_start", "target_end"])
    frame["score"], frame["cigar"] = scores, cigars
    for k, row in enumerate(frame.itertuples()):
        check_alignment(queries[k], targets[k], row, scoring)
    with pytest.raises(ValueError, match="not the Smith-Waterman score"):
        sw.align(codes, q_start[:1], q_len[:1], t_start[:1], t_len[:1], scores[:1] + 1, scoring)


# --------------------------------------------------------------------------
# The engine: bucketing, Dask tasks, files, output
# --------------------------------------------------------------------------

def test_pad_length_and_plan_cover_every_pair_once():
    lengths = np.array([1, 2, 7, 8, 9, 15, 16, 17, 100, 128, 129, 1000, 65_536, 65_537])
    padded = pad_length(lengths)
    assert (padded >= lengths).all() and (padded <= np.ceil(lengths * 1.125) + 1).all()
    rng = np.random.default_rng(2)
    ql, tl = rng.integers(1, 3000, 300), rng.integers(1, 3000, 300)
    tasks = plan_tasks(ql, tl, False, 1 << 22, 1 << 30)
    seen = np.concatenate([t.queries for t in tasks])
    assert sorted(seen.tolist()) == list(range(300))
    for t in tasks:
        assert (np.minimum(ql, tl)[t.queries] <= t.m).all() and (np.maximum(ql, tl)[t.queries] <= t.n).all()
    tasks = plan_tasks(ql[:40], tl[:70], True, 1 << 22, 1 << 30)
    pairs = set()
    for t in tasks:
        qi, ti = t.pair_indices()
        pairs.update(zip(qi.tolist(), ti.tolist()))
        assert (np.minimum(ql[qi], tl[ti]) <= t.m).all() and (np.maximum(ql[qi], tl[ti]) <= t.n).all()
        some = rng.choice(t.pairs, size=min(t.pairs, 25), replace=False)   # pairs_at: the same pairs, picked
        picked = t.pairs_at(some)
        assert np.array_equal(picked[0], qi[some]) and np.array_equal(picked[1], ti[some])
    assert len(pairs) == 40 * 70 == sum(t.pairs for t in tasks)
    for t in plan_tasks(ql, tl, False, 1 << 22, 1 << 30)[:3]:   # and for lists of pairs
        qi, ti = t.pair_indices()
        some = np.arange(0, t.pairs, 3)
        assert np.array_equal(t.pairs_at(some)[0], qi[some]) and np.array_equal(t.pairs_at(some)[1], ti[some])


def write_fasta(path, records, width=60):
    with open(path, "w") as handle:
        for name, seq in records:
            handle.write(f">{name} description\n")
            for a in range(0, len(seq), width):
                handle.write(seq[a:a + width] + "\n")
    return path


def write_fastq(path, records, compress=False):
    text = "".join(f"@{name} x\n{seq}\n+\n{'I' * len(seq)}\n" for name, seq in records)
    if compress:
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture(scope="module")
def pair_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("screen")
    rng = np.random.default_rng(12)
    queries = [(f"read{k}", random_dna(rng, int(rng.integers(30, 160)), 0.01)) for k in range(90)]
    targets = [(f"win{k}", random_dna(rng, int(rng.integers(0, 300))) + similar(rng, q, 0.1)
                + random_dna(rng, int(rng.integers(0, 300)))) for k, (_, q) in enumerate(queries)]
    return dict(queries=queries, targets=targets, fq=write_fastq(folder / "q.fq.gz", queries, compress=True),
                fa=write_fasta(folder / "t.fa", targets), folder=folder)


def test_screen_paired_and_all_vs_all_through_dask(pair_files, client):
    scoring = sw.Scoring()
    queries, targets = pair_files["queries"], pair_files["targets"]
    expected = np.array([parasail_score(q, t, scoring) for (_, q), (_, t) in zip(queries, targets)])
    for algorithm in ("sw-bpbc", "sw-wordwise"):
        got = screen(str(pair_files["fq"]), str(pair_files["fa"]), client=client, backend="cpu",
                     algorithm=algorithm, batch_pairs=20)
        assert got.dtype == np.int32 and (got == expected).all()
    sub_q, sub_t = [s for _, s in queries[:25]], [s for _, s in targets[:33]]
    grid = screen(sub_q, np.array(sub_t), all_vs_all=True, client=client, backend="cpu", word_bits=32)
    assert grid.shape == (25, 33)
    assert (grid == np.array([[parasail_score(q, t, scoring) for t in sub_t] for q in sub_q])).all()


def test_a_screen_on_worker_processes_sends_its_sequences_without_dask_warnings(tmp_path):
    """The sequences travel to the workers once, in the task that holds them (runtime.shared): tens of MB,
    which Dask would warn about ("Sending large graph") on the user's terminal. 1,100 pairs of 20 x 10,000
    (11 MB of codes) through the console script on one worker process: the scores, and nothing on stderr."""
    from console import run_seqsift

    rng = np.random.default_rng(34)
    targets = ["".join("ACGT"[b] for b in rng.integers(0, 4, 10_000)) for _ in range(1_100)]
    queries = [t[5_000:5_020] for t in targets]
    write_fasta(tmp_path / "q.fa", [(f"q{k}", q) for k, q in enumerate(queries)])
    write_fasta(tmp_path / "t.fa", [(f"t{k}", t) for k, t in enumerate(targets)])
    result = run_seqsift("screen", tmp_path / "q.fa", tmp_path / "t.fa", "--backend", "cpu", "--workers", "1",
                         "--no-progress", "-o", tmp_path / "scores.tsv")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    rows = pd.read_csv(tmp_path / "scores.tsv", sep="\t")
    assert len(rows) == 1_100 and (rows["score"] == 40).all()   # each query is a piece of its target


def test_screen_threshold_rows_and_alignments(pair_files, client):
    scoring = sw.Scoring(2, 3, 2)
    queries, targets = pair_files["queries"], pair_files["targets"]
    expected = np.array([parasail_score(q, t, scoring) for (_, q), (_, t) in zip(queries, targets)])
    threshold = int(np.median(expected))
    frame = screen(str(pair_files["fq"]), str(pair_files["fa"]), threshold=threshold, match=2, mismatch=3, gap=2,
                   client=client, backend="cpu")
    keep = np.flatnonzero(expected >= threshold)
    assert frame["query_index"].tolist() == keep.tolist() == frame["target_index"].tolist()
    assert frame["score"].tolist() == expected[keep].tolist()
    assert frame["query"].tolist() == [queries[k][0] for k in keep]
    assert frame["target"].tolist() == [targets[k][0] for k in keep]
    for row in frame.itertuples():
        check_alignment(queries[row.query_index][1].upper(), targets[row.target_index][1], row, scoring)
    bare = screen(str(pair_files["fq"]), str(pair_files["fa"]), threshold=threshold, match=2, mismatch=3, gap=2,
                  align=False, client=client, backend="cpu")
    assert list(bare.columns) == ["query_index", "query", "target_index", "target", "score"]
    none = screen(["ACGT"], ["TTTT"], threshold=5, client=client, backend="cpu")
    assert len(none) == 0 and "cigar" in none.columns


def test_screen_writes_tsv_and_parquet(pair_files, client, tmp_path):
    out = tmp_path / "hits.tsv"
    count = screen(str(pair_files["fq"]), str(pair_files["fa"]), threshold=60, output=str(out), client=client,
                   backend="cpu")
    table = pd.read_csv(out, sep="\t")
    assert list(table.columns) == ["query", "target", "score", "query_start", "query_end", "target_start",
                                   "target_end", "cigar"]
    assert len(table) == count and (table["score"] >= 60).all()
    every = tmp_path / "all.parquet"
    count = screen(str(pair_files["fq"]), str(pair_files["fa"]), output=str(every), client=client, backend="cpu")
    frame = pd.read_parquet(every)
    assert count == len(frame) == 90 and list(frame.columns) == ["query", "target", "score"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]


def test_read_sequences_formats(tmp_path):
    fasta = write_fasta(tmp_path / "a.fa", [("x1", "ACGTNacgt"), ("x2", "A" * 130)], width=7)
    got = read_sequences(str(fasta))
    assert got.names == ["x1", "x2"] and got.lengths.tolist() == [9, 130]
    assert got.codes[:9].tolist() == [0, 1, 2, 3, 4, 0, 1, 2, 3]
    gz = tmp_path / "a.fa.gz"
    gz.write_bytes(gzip.compress(fasta.read_bytes()))
    assert read_sequences(str(gz)).names == ["x1", "x2"]
    fq = write_fastq(tmp_path / "r.fq", [("r1", "ACGT"), ("r2", "GGN")])
    assert read_sequences(str(fq)).lengths.tolist() == [4, 3]
    named = read_sequences([("a", "ACG"), ("b", "TT")], "queries")
    assert named.names == ["a", "b"]
    assert read_sequences(["ACG", "TT"], "targets").names == ["target_1", "target_2"]


BAD_FILES = {
    "empty.fa": (b"", "is empty"),
    "blank.fa": (b"\n\n  \n", "is empty"),
    "text.fa": (b"hello world\nACGT\n", "line 1: not FASTA or FASTQ"),
    "noname.fa": (b">\nACGT\n", "line 1: header line has no name"),
    "emptyseq.fa": (b">a\nACGT\n>b\n>c\nAC\n", "record 'b' (line 3): empty sequence"),
    "digits.fa": (b">a\nACGT\n>b\nAC1GT\n", "record 'b' (line 3): '1' is not a sequence letter"),
    "binary.fa": (b">a\x00\x01\x02", "binary"),
    "bz.fa": (b"BZh91AY&SY", "bzip2-compressed"),
    "noplus.fq": (b"@r1\nACGT\nIIII\n@r2\n", "record 'r1' (line 1): line 3 should be the '+' line"),
    "shortqual.fq": (b"@r1\nACGT\n+\nIII\n", "quality line has 3 characters but the sequence has 4"),
    "truncated.fq": (b"@r1\nACGT\n+\nIIII\n@r2\nACGT\n", "record 'r2' (line 5): truncated"),
    "emptyread.fq": (b"@r1\n\n+\n\n", "record 'r1' (line 1): empty sequence"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_files_give_one_line_errors(tmp_path, name):
    data, message = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError) as err:
        read_sequences(str(path))
    text = str(err.value)
    assert message in text and str(path) in text and "\n" not in text


def test_bad_arguments_fail_before_any_work(tmp_path, pair_files):
    fq, fa = str(pair_files["fq"]), str(pair_files["fa"])
    out = tmp_path / "out.tsv"
    cases = [
        (dict(queries=str(tmp_path / "missing.fa"), targets=fa), "missing.fa: no such file"),
        (dict(queries="ACGTACGT", targets=fa), "pass it in a list"),
        (dict(queries=str(tmp_path), targets=fa), "is a directory"),
        (dict(queries=fq, targets=["ACGT"]), "has 90 records but targets has 1"),
        (dict(queries=fq, targets=fa, mismatch=-1), "mismatch penalty must be 0 or more"),
        (dict(queries=fq, targets=fa, gap=-2), "gap penalty must be 0 or more"),
        (dict(queries=fq, targets=fa, match=0), "match score must be at least 1"),
        (dict(queries=fq, targets=fa, threshold=-3), "scores are never negative"),
        (dict(queries=fq, targets=fa, algorithm="sw-fast"), "unknown screening algorithm 'sw-fast'"),
        (dict(queries=fq, targets=fa, output=str(tmp_path / "x.bam")), "unknown output format"),
        (dict(queries=fq, targets=fa, output=str(tmp_path / "no" / "x.tsv")), "does not exist"),
        (dict(queries=["ACGT", ""], targets=["A", "C"]), "queries item 2 ('query_2'): empty sequence"),
        (dict(queries=[], targets=["A"]), "queries: no sequences"),
        (dict(queries=["A" * 10], targets=["A" * 10], match=1 << 28), "beyond 2^31"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InputError) as err:
            screen(output=kwargs.pop("output", str(out)), backend="cpu", **kwargs)
        assert message in str(err.value) and "\n" not in str(err.value), (kwargs, str(err.value))
    assert not out.exists() and not list(tmp_path.glob(".*part"))


def test_failed_job_leaves_no_partial_output(tmp_path, client, monkeypatch):
    out = tmp_path / "hits.tsv"
    out.write_text("previous contents\n")

    from seqsift.screening.output import ScoreTable

    real_finish = ScoreTable.finish

    def broken(self):  # some rows reach the writer, then the job fails
        yield next(real_finish(self))
        raise RuntimeError("worker failed")

    monkeypatch.setattr(ScoreTable, "finish", broken)
    with pytest.raises(RuntimeError):
        screen(["ACGT"] * 3, ["ACGA"] * 3, output=str(out), client=client, backend="cpu")
    assert out.read_text() == "previous contents\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]


# --------------------------------------------------------------------------
# The command line: `seqsift screen`
# --------------------------------------------------------------------------

def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "seqsift", "screen", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": "ignore"})


def test_cli_threshold_tsv_and_every_score(pair_files, tmp_path):
    out = tmp_path / "hits.tsv"
    result = run_cli(pair_files["fq"], pair_files["fa"], "--threshold", "50", "-o", out, "--workers", "2",
                     "--backend", "cpu", "--no-progress")
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out, sep="\t")
    scoring = sw.Scoring()
    expected = [(q[0], t[0], parasail_score(q[1], t[1], scoring))
                for q, t in zip(pair_files["queries"], pair_files["targets"])]
    assert table[["query", "target", "score"]].values.tolist() == [list(e) for e in expected if e[2] >= 50]



def test_cli_all_vs_all_to_stdout(pair_files, capsys):
    from seqsift.cli import main

    code = main(["screen", str(pair_files["fq"]), str(pair_files["fa"]), "--match", "1", "--mismatch", "2", "--gap", "3",
                 "--all-vs-all", "--workers", "1", "--backend", "cpu", "--algorithm", "sw-wordwise", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    lines = captured.out.splitlines()
    assert lines[0] == "query\ttarget\tscore" and len(lines) == 1 + 90 * 90
    first = lines[1].split("\t")
    assert first[:2] == ["read0", "win0"]
    assert int(first[2]) == parasail_score(pair_files["queries"][0][1], pair_files["targets"][0][1],
                                           sw.Scoring(1, 2, 3))


def test_cli_bad_input_one_line_and_no_output(pair_files, tmp_path, capsys):
    from seqsift.cli import main

    out = tmp_path / "hits.tsv"
    cases = [
        ([pair_files["fq"], tmp_path / "nope.fa", "-o", out], "nope.fa: no such file"),
        ([pair_files["fq"], pair_files["fa"], "--mismatch", "-1", "-o", out], "mismatch penalty"),
        ([pair_files["fq"], pair_files["fa"], "--chunk-size", "100", "-o", out], "--chunk-size is a search option"),
        ([pair_files["fq"], pair_files["fa"], "--threshold", "x"], "not a whole number"),
    ]
    for argv, message in cases:
        code = main(["screen", *[str(a) for a in argv]])
        err = capsys.readouterr().err
        assert code == 2 and message in err and err.count("\n") == 1, (argv, err)
    short = write_fasta(tmp_path / "short.fa", [("a", "ACGT")])
    assert main(["screen", str(pair_files["fq"]), str(short), "-o", str(out)]) == 2
    assert "q.fq.gz has 90 records but" in capsys.readouterr().err
    assert not out.exists()


# --------------------------------------------------------------------------
# sw.cu itself, compiled for the host: every CUDA kernel runs with one
# std::thread per GPU thread, barriers for __syncthreads and for each warp
# shuffle, so CI without a GPU still runs the CUDA source against the CPU
# kernels (the device tests in test_gpu_sw.py run it for real).
# --------------------------------------------------------------------------

HOST_SHIM = r"""
#pragma once
#include <algorithm>
#include <barrier>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(x)
#define __align__(n) alignas(n)
struct Dim3 { unsigned x, y, z; };
inline thread_local Dim3 threadIdx, blockIdx;
inline Dim3 blockDim;
using std::max;
using std::min;
inline std::unique_ptr<std::barrier<>> block_barrier;
inline std::vector<std::unique_ptr<std::barrier<>>> warp_barriers;
inline unsigned long long exchange_slots[1024];
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
template <typename T> T exchange(T v, int source) {
    const int t = threadIdx.x, w = t >> 5;
    exchange_slots[t] = (unsigned long long)v;
    warp_barriers[w]->arrive_and_wait();
    const T out = (T)exchange_slots[(w << 5) | source];
    warp_barriers[w]->arrive_and_wait();
    return out;
}
template <typename T> T __shfl_up_sync(unsigned, T v, unsigned delta) {
    const int lane = threadIdx.x & 31;
    const T got = exchange(v, lane >= (int)delta ? lane - (int)delta : lane);
    return got;
}
template <typename T> T __shfl_xor_sync(unsigned, T v, int offset) {
    return exchange(v, (threadIdx.x & 31) ^ offset);
}
template <typename F> void launch_blocks(unsigned grid, unsigned block, F body) {
    blockDim = {block, 1, 1};
    for (unsigned b = 0; b < grid; ++b) {
        block_barrier = std::make_unique<std::barrier<>>(block);
        warp_barriers.clear();
        for (unsigned w = 0; w < (block + 31) / 32; ++w) warp_barriers.push_back(std::make_unique<std::barrier<>>(32));
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; ++t)
            threads.emplace_back([=] { threadIdx = {t, 0, 0}; blockIdx = {b, 0, 0}; body(); });
        for (auto &thread : threads) thread.join();
    }
}
template <typename F> void each_thread(long long count, F body) {   // kernels without barriers
    blockDim = {128, 1, 1};
    for (long long t = 0; t < count; ++t) {
        blockIdx = {(unsigned)(t / 128), 0, 0};
        threadIdx = {(unsigned)(t % 128), 0, 0};
        body();
    }
}
alignas(16) inline unsigned char sw_shared[1 << 18];
"""

HOST_DRIVER = r"""
#include "shim.h"
#include "sw_host.cu"
template <typename W> std::vector<W> read(size_t count) {
    std::vector<W> v(count);
    for (auto &x : v) { unsigned long long y; if (scanf("%llu", &y) != 1) exit(3); x = (W)y; }
    return v;
}
template <typename W, int S, bool PAPER, bool REACHED> void bpbc(int m32, int n, int groups, int sat, int warps) {
    // constants: k1, k2, g and (REACHED) the threshold, S words each
    auto x = read<W>((size_t)groups * 3 * m32), y = read<W>((size_t)groups * 3 * n);
    auto c = read<W>((REACHED ? 4 : 3) * S);
    std::vector<W> boundary((size_t)groups * n * S + 1), out((size_t)groups * (REACHED ? 1 : S));
    launch_blocks(groups, 32 * warps, [&] {
        sw_bpbc_body<W, S, PAPER, REACHED>(x.data(), y.data(), m32, n, c.data(), sat, c.data() + 3 * S,
                                           boundary.data(), out.data()); });
    for (auto v : out) printf("%llu\n", (unsigned long long)v);
}
template <typename W, int S> void bpbc_any(bool paper, bool reached, int m32, int n, int groups, int sat, int warps) {
    if (reached) {
        if (paper) bpbc<W, S, true, true>(m32, n, groups, sat, warps);
        else bpbc<W, S, false, true>(m32, n, groups, sat, warps);
    } else {
        if (paper) bpbc<W, S, true, false>(m32, n, groups, sat, warps);
        else bpbc<W, S, false, false>(m32, n, groups, sat, warps);
    }
}
int main() {
    int mode, bits;
    if (scanf("%d %d", &mode, &bits) != 2) return 2;
    if (mode == 0) {   // sw_bpbc_body: S m32 n groups sat warps paper reached, x planes, y planes, constants
        int S, m32, n, groups, sat, warps, paper, reached;
        if (scanf("%d %d %d %d %d %d %d %d", &S, &m32, &n, &groups, &sat, &warps, &paper, &reached) != 8) return 2;
        if (bits == 32 && S == 6) bpbc_any<u32, 6>(paper, reached, m32, n, groups, sat, warps);
        else if (bits == 32 && S == 9) bpbc_any<u32, 9>(paper, reached, m32, n, groups, sat, warps);
        else if (bits == 32 && S == 11) bpbc_any<u32, 11>(paper, reached, m32, n, groups, sat, warps);
        else if (bits == 64 && S == 6) bpbc_any<u64, 6>(paper, reached, m32, n, groups, sat, warps);
        else if (bits == 64 && S == 9) bpbc_any<u64, 9>(paper, reached, m32, n, groups, sat, warps);
        else if (bits == 64 && S == 11) bpbc_any<u64, 11>(paper, reached, m32, n, groups, sat, warps);
        else return 4;
    } else if (mode == 1) {   // W2B: pairs len_in len_out, codes
        long long pairs; int len_in, len_out;
        if (scanf("%lld %d %d", &pairs, &len_in, &len_out) != 3) return 2;
        auto codes = read<unsigned char>((size_t)pairs * len_in);
        const long long groups = (pairs + bits - 1) / bits;
        std::vector<u64> p64(groups * 3 * len_out);
        std::vector<u32> p32(groups * 3 * len_out);
        each_thread(groups * len_out, [&] {
            if (bits == 32) sw_w2b32(codes.data(), pairs, len_in, len_out, groups, p32.data());
            else sw_w2b64(codes.data(), pairs, len_in, len_out, groups, p64.data()); });
        for (size_t k = 0; k < p64.size(); ++k) printf("%llu\n", bits == 32 ? (unsigned long long)p32[k] : p64[k]);
    } else if (mode == 2) {   // B2W: s pairs groups, sliced
        int s; long long pairs, groups;
        if (scanf("%d %lld %lld", &s, &pairs, &groups) != 3) return 2;
        auto sliced = read<u64>((size_t)groups * s);
        std::vector<u32> s32(sliced.begin(), sliced.end());
        std::vector<int> scores(pairs);
        each_thread(groups, [&] {
            if (bits == 32) sw_b2w32(s32.data(), s, pairs, groups, scores.data());
            else sw_b2w64(sliced.data(), s, pairs, groups, scores.data()); });
        for (auto v : scores) printf("%d\n", v);
    } else {   // sw_wordwise: pairs m n c1 c2 gap, x and y position-major
        long long pairs; int m, n, c1, c2, gap;
        if (scanf("%lld %d %d %d %d %d", &pairs, &m, &n, &c1, &c2, &gap) != 6) return 2;
        auto x = read<unsigned char>((size_t)m * pairs), y = read<unsigned char>((size_t)n * pairs);
        std::vector<int> scratch((size_t)m * pairs), scores(pairs);
        each_thread(pairs, [&] {
            sw_wordwise(x.data(), y.data(), pairs, m, n, c1, c2, gap, scratch.data(), scores.data()); });
        for (auto v : scores) printf("%d\n", v);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def cuda_on_host(tmp_path_factory):
    import shutil

    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ not found: the host build of sw.cu needs it")
    folder = tmp_path_factory.mktemp("sw_host")
    source = (sw_cpu.__file__[: -len("cpu.py")] + "sw.cu")
    text = open(source).read()
    text = text.replace("extern __shared__ __align__(16) unsigned char sw_shared[];", "")   # the shim's array
    text = "\n".join(line for line in text.splitlines() if not line.startswith("SW_BPBC_KERNELS("))
    (folder / "sw_host.cu").write_text(text)
    (folder / "shim.h").write_text(HOST_SHIM)
    (folder / "driver.cpp").write_text(HOST_DRIVER)
    built = subprocess.run([compiler, "-std=c++20", "-O1", "-pthread", "-w", "driver.cpp", "-o", "driver"],
                           cwd=folder, capture_output=True, text=True)
    if built.returncode != 0 and "barrier" in built.stderr:
        pytest.skip("this g++ has no C++20 <barrier>")
    assert built.returncode == 0, built.stderr[-3000:]

    def run(header: str, *arrays) -> np.ndarray:
        body = "\n".join(" ".join(map(str, np.asarray(a).ravel().tolist())) for a in arrays)
        result = subprocess.run([str(folder / "driver")], input=header + "\n" + body + "\n", capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return np.array([int(v) for v in result.stdout.split()], dtype=np.uint64)

    return run


@pytest.mark.parametrize("case", [
    # scoring, word bits, S, pairs, m, n, warps (None: the launcher's)
    (sw.Scoring(2, 1, 1), 32, 9, 40, 100, 150, None),     # the paper's constants, 4 warps
    (sw.Scoring(3, 5, 2), 32, 11, 21, 300, 60, None),     # saturating mismatch, 8 warps, 2 rounds
    (sw.Scoring(3, 5, 2), 64, 11, 65, 300, 90, 2),        # 64-bit words, 5 rounds of 2 warps
    (sw.Scoring(1, 0, 0), 32, 11, 20, 257, 60, 3),        # 9 stripes in rounds of 3
    (sw.Scoring(2, 1, 1), 64, 9, 10, 5, 200, None),       # one warp, n >> m
], ids=str)
def test_cuda_bpbc_kernel_on_the_host(cuda_on_host, case):
    scoring, bits, width, pairs, m, n, warps = case
    rng = np.random.default_rng(pairs + m + n)
    x = rng.integers(0, 5, (pairs, m)).astype(np.uint8)
    y = rng.integers(0, 5, (pairs, n)).astype(np.uint8)
    for p in range(0, pairs, 2):   # similar regions: high scores, the top bits of S
        span = min(m, n)
        y[p, :span] = np.where(rng.random(span) < 0.9, x[p, :span], y[p, :span])
    dtype = np.uint32 if bits == 32 else np.uint64
    m32 = -(-m // 32) * 32
    masks, shifts = sw_cpu.transpose_tables(bits)
    word = np.zeros(bits, dtype)
    groups = -(-pairs // bits)
    x_planes, y_planes = np.zeros((groups, 3, m32), dtype), np.zeros((groups, 3, n), dtype)
    sw_cpu.w2b(x, pairs, m32, word, masks, shifts, x_planes)
    sw_cpu.w2b(y, pairs, n, word, masks, shifts, y_planes)
    k1, k2, sat, kg = sw._constants(scoring, width)
    constants = np.concatenate([sw_constants.sliced_constant(v, width, dtype) for v in (k1, k2, kg)])
    warps = warps or sw.cuda.bpbc_geometry(m32, width, bits)[0]
    paper = int((scoring.match, scoring.mismatch, scoring.gap) == (2, 1, 1))
    sliced = cuda_on_host(f"0 {bits} {width} {m32} {n} {groups} {int(sat)} {warps} {paper} 0",
                          x_planes, y_planes, constants)
    scores = np.zeros(pairs, np.int64)
    sw_cpu.b2w(sliced.astype(dtype).reshape(groups, width), pairs, word, masks, shifts, scores)
    expected = sw.bpbc_cpu(x, y, scoring)
    assert (scores == expected).all()
    # The flag kernel (REACHED) at thresholds whose numbers fit in the same width, or in 6 bits
    for threshold in sorted({1, int(np.median(expected)), int(expected.max()), int(expected.max()) + 1}):
        flag_width = width if sw.reach_bits(scoring, threshold) > 6 else 6
        k1, k2, sat, kg = sw._constants(scoring, flag_width)
        constants = np.concatenate([sw_constants.sliced_constant(v, flag_width, dtype) for v in (k1, k2, kg, threshold)])
        words = cuda_on_host(f"0 {bits} {flag_width} {m32} {n} {groups} {int(sat)} {warps} {paper} 1",
                             x_planes, y_planes, constants)
        flags = ((words[:, None] >> np.arange(bits, dtype=np.uint64)[None, :]) & 1).reshape(-1)[:pairs]
        assert (flags.astype(bool) == (expected >= threshold)).all(), threshold


@pytest.mark.parametrize("bits", [32, 64])
def test_cuda_w2b_b2w_and_wordwise_on_the_host(cuda_on_host, bits):
    rng = np.random.default_rng(bits)
    dtype = np.uint32 if bits == 32 else np.uint64
    masks, shifts = sw_cpu.transpose_tables(bits)
    word = np.zeros(bits, dtype)
    pairs, length = 2 * bits + 7, 23
    codes = rng.integers(0, 7, (pairs, length)).astype(np.uint8)
    groups = -(-pairs // bits)
    expected = np.zeros((groups, 3, length + 9), dtype)
    sw_cpu.w2b(codes, pairs, length + 9, word, masks, shifts, expected)
    got = cuda_on_host(f"1 {bits} {pairs} {length} {length + 9}", codes)
    assert (got.astype(dtype).reshape(expected.shape) == expected).all()
    for s in (2, 9, 31):
        sliced = rng.integers(0, 1 << 62, (groups, s), dtype=np.uint64).astype(dtype)
        expected_scores = np.zeros(pairs, np.int64)
        sw_cpu.b2w(sliced, pairs, word, masks, shifts, expected_scores)
        got = cuda_on_host(f"2 {bits} {s} {pairs} {groups}", sliced)
        assert (got.astype(np.int64) == expected_scores).all()
    for scoring in (sw.Scoring(), sw.Scoring(3, 5, 2), sw.Scoring(1, 0, 0)):
        x = rng.integers(0, 5, (37, 45)).astype(np.uint8)
        y = rng.integers(0, 5, (37, 70)).astype(np.uint8)
        y[::2, :45] = np.where(rng.random((19, 45)) < 0.85, x[::2], y[::2, :45])
        got = cuda_on_host(f"3 0 37 45 70 {scoring.match} {scoring.mismatch} {scoring.gap}", x.T, y.T)
        assert (got.astype(np.int64) == sw.wordwise_cpu(x, y, scoring)).all()


def test_a_gpu_screen_imports_no_numba():
    """A GPU screen's process (its command line, job, tasks, output, and the GPU launchers of every
    screening algorithm) runs without Numba unless it aligns its survivors on the host: Numba's import
    and cache loads cost the command 0.5-0.9 s on the H100 host. Its threshold's base counts are taken
    on the device (kernels.sw.base_counts)."""
    from fresh_process import cuda_launchers, loaded_after

    code = ("import seqsift.cli, seqsift.screening.run, seqsift.screening.task, seqsift.screening.output\n"
            "from seqsift.kernels import ALGORITHMS, sw\n"
            "GPU_SW = [name for name in sw.sw_algorithms() if 'cuda' in ALGORITHMS[name].backends]\n"
            + cuda_launchers("GPU_SW")
            + "for name in GPU_SW:\n"
              "    sw.choose_sw_algorithm('cuda', name, sw.Scoring())\n"
              "sw.dpx_admits(sw.Scoring()), sw.composition_bound(sw.np.ones((2, 4)), sw.np.ones(4), sw.Scoring())\n")
    assert loaded_after(code, ["numba"]) == []
