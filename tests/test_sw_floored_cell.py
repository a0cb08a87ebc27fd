"""The floored affine cell of dpx.cu (DPX_FLOOR_E), modelled on the CPU in 32-bit words of two 16-bit lanes.

dpx.cu keeps E' = max(E, 0) so that the diagonal's add and E's subtraction can be plain 32-bit IMADs on the
FMA pipe; those are exact only where no lane ever carries into, or borrows from, its neighbour. The launcher
admits the floor by a rule on the scoring (``dpx_floor_admits``). This model runs the cell's recurrences
word by word, as dpx.cu writes them, on random pairs (lane 0 and lane 1 two different queries against one
target, as the tiles hold them; or two pairs, as the lists do), and checks:

* where the rule admits the floor, no plain add or subtraction crosses a lane, and each lane's score equals
  ``oracle.sw_affine_score`` (Gotoh, parasail's convention);
* where it does not (tiles with O < c2, or E past E's floor B + c2), some case does cross a lane, so the
  rule is not stricter than it need be by accident and not looser than the arithmetic allows.

The GPU tests (test_gpu_sw_affine.py) run the kernel itself; this one needs no GPU.
"""
from __future__ import annotations

import numpy as np
import pytest

from seqsift.kernels import sw
from seqsift.kernels.sw.constants import dpx_bias
from seqsift.kernels.sw.cuda import dpx_floor_admits

from oracle import sw_affine_score

MASK = 0xFFFF


def lanes(word: int) -> tuple[int, int]:
    """The two lanes of a 32-bit word as signed 16-bit numbers."""
    def signed(v):
        return v - 0x10000 if v & 0x8000 else v
    return signed(word & MASK), signed(word >> 16 & MASK)


def word(low: int, high: int) -> int:
    return (low & MASK) | (high & MASK) << 16


class Cell:
    """dpx.cu's lane arithmetic: lane-wise ops wrap in their lane (DPX), plain ones are 32-bit words, and
    ``crossed`` counts the plain ones whose word differs from the lane-wise result (a carry or a borrow)."""

    def __init__(self):
        self.crossed = 0

    def plain_add(self, a: int, b: int) -> int:   # IMAD a * 1 + b
        out = (a + b) & 0xFFFFFFFF
        self.crossed += out != self.lane_add(a, b)
        return out

    def plain_sub(self, a: int, b: int) -> int:   # IMAD a * 1 - b
        out = (a - b) & 0xFFFFFFFF
        self.crossed += out != word((a & MASK) - (b & MASK), (a >> 16) - (b >> 16))
        return out

    @staticmethod
    def lane_add(a: int, b: int) -> int:
        return word((a & MASK) + (b & MASK), (a >> 16) + (b >> 16))

    @staticmethod
    def max3(a: int, b: int, c: int) -> int:   # VIMNMX3
        la, ha = lanes(a)
        lb, hb = lanes(b)
        lc, hc = lanes(c)
        return word(max(la, lb, lc), max(ha, hb, hc))

    def addmax(self, a: int, b: int, c: int) -> int:   # VIADDMNMX: max(a + b, c), the add wrapping in its lane
        return self.max3(self.lane_add(a, b), c, c)


def floored_scores(xa, xb, ya, yb, scoring, product: bool, cell: Cell, best_from_p: bool = True) -> tuple[int, int]:
    """Lane 0: xa against ya; lane 1: xb against yb (product: ya = yb, the tile's one target). Codes 0-3,
    4 for N. The recurrences of dpx_tile_body with FLOOR, one thread holding every row. ``best_from_p``: the
    running maximum over the diagonal terms P (dpx.cu's DPX_BEST_FROM_P, the default), else over Z."""
    c1, c2, o, e = scoring.match, scoring.mismatch, scoring.open, scoring.extend
    bias = dpx_bias(o, c2)
    base = word(bias + c2, bias + c2)            # Z of H = 0, and E's floor
    g0 = word(bias + c2 - o, bias + c2 - o)      # W / A of H = 0; Fc of F = -O
    y0 = word(bias, bias)                        # Y of H = 0 (lists)
    go, ge, c2w = word(o, o), word(e, e), word(c2, c2)
    nge = word(-e, -e)
    m = max(len(xa), len(xb))
    n = max(len(ya), len(yb))

    def code(seq, i):
        return seq[i] if i < len(seq) else 4

    def s(a, b):   # the score of a query base against a target base
        return c1 if a == b and a < 4 else -c2

    d0 = g0 if product else y0
    g = [g0] * m          # W = Z - O of each row at the column before
    y = [y0] * m          # lists: Y = Z - c2 of each row at the column before
    ec = [base] * m       # E' = max(E, 0), biased
    best = base
    for j in range(n):
        ta, tb = code(ya, j), code(yb, j)
        diag = [d0] + (g if product else y)[:-1]
        p = []
        for r in range(m):
            qa, qb = code(xa, r), code(xb, r)
            if product:   # the profile: s + O in each lane, as signed 16 bits
                profile = word(s(qa, ta) + o, s(qb, tb) + o)
            else:         # the byte table: s + c2 (c1 + c2 on a match, else 0)
                profile = word(s(qa, ta) + c2, s(qb, tb) + c2)
            p.append(cell.plain_add(diag[r], profile))
        gup, fc = d0 if product else cell.plain_sub(cell.plain_add(y0, c2w), go), g0
        for r in range(m):
            ec[r] = cell.max3(cell.plain_sub(ec[r], ge), g[r], base)
            fc = cell.addmax(fc, nge, gup)
            z = cell.max3(p[r], ec[r], fc)
            if not product:
                y[r] = cell.plain_sub(z, c2w)
            g[r] = cell.plain_sub(z, go)
            gup = g[r]
            term = p[r] if best_from_p else z
            best = cell.max3(best, term, term)
    low, high = lanes(best)
    return low - (bias + c2), high - (bias + c2)


def random_pair_set(rng, count: int):
    """Queries of 1-24 bases and targets of 1-60, some with N, some holding a mutated copy of the query."""
    out = []
    for _ in range(count):
        x = rng.integers(0, 4, int(rng.integers(1, 25)))
        y = rng.integers(0, 4, int(rng.integers(1, 61)))
        if rng.random() < 0.5 and len(y) >= len(x):
            at = int(rng.integers(0, len(y) - len(x) + 1))
            y[at:at + len(x)] = np.where(rng.random(len(x)) < 0.15, rng.integers(0, 4, len(x)), x)
        x[rng.random(len(x)) < 0.05] = 4
        y[rng.random(len(y)) < 0.05] = 4
        out.append((x.tolist(), y.tolist()))
    return out


def text(codes) -> str:
    return "".join("ACGTN"[c] for c in codes)


ADMITTED_BOTH = [sw.Scoring(2, 3, gap_open=5, gap_extend=2), sw.Scoring(1, 4, gap_open=6, gap_extend=1),
                 sw.Scoring(2, 1, gap_open=3, gap_extend=1), sw.Scoring(3, 1, gap_open=2, gap_extend=0),
                 sw.Scoring(1, 0, gap_open=1, gap_extend=1), sw.Scoring(2, 2, gap_open=2, gap_extend=2)]
"""Scorings whose floored cell the launcher admits in tiles and lists (O >= c2, E <= B + c2)."""


@pytest.mark.parametrize("product", [True, False], ids=["tiles", "lists"])
@pytest.mark.parametrize("scoring", ADMITTED_BOTH + [sw.Scoring(2, 5, gap_open=3, gap_extend=1)],
                         ids=lambda s: s.describe())
def test_admitted_floored_cells_never_cross_a_lane_and_score_as_gotoh(scoring, product):
    if not dpx_floor_admits(scoring, True, product):
        pytest.skip("not admitted here (tiles with O < c2): see the next test")
    rng = np.random.default_rng(scoring.match * 1000 + scoring.mismatch * 100 + scoring.open * 10 + scoring.extend)
    pairs = random_pair_set(rng, 24)
    for (xa, ya), (xb, yb) in zip(pairs[::2], pairs[1::2]):
        if product:
            yb = ya   # a tile: both lanes' queries against one target
        want = tuple(sw_affine_score(text(x), text(y), scoring.match, scoring.mismatch, scoring.open,
                                     scoring.extend) for x, y in ((xa, ya), (xb, yb)))
        for best_from_p in (True, False):   # the largest H is a diagonal term: both maxima are the score
            cell = Cell()
            got = floored_scores(xa, xb, ya, yb, scoring, product, cell, best_from_p)
            assert cell.crossed == 0, (text(xa), text(xb), text(ya))
            assert got == want, (text(xa), text(xb), text(ya), text(yb), best_from_p)


@pytest.mark.parametrize("scoring,product", [(sw.Scoring(2, 5, gap_open=3, gap_extend=1), True),
                                             (sw.Scoring(1, 9, gap_open=2, gap_extend=1), True),
                                             (sw.Scoring(2, 3, gap_open=1, gap_extend=4), True),
                                             (sw.Scoring(2, 3, gap_open=1, gap_extend=4), False)],
                         ids=["O<c2-tiles", "O<<c2-tiles", "E>floor-tiles", "E>floor-lists"])
def test_scorings_the_launcher_refuses_do_cross_a_lane(scoring, product):
    """Tiles with O < c2 (their profile s + O is negative on a mismatch) and E past E's floor B + c2 (E's
    subtraction borrows): the launcher refuses them, and the model shows why."""
    assert not dpx_floor_admits(scoring, True, product)
    rng = np.random.default_rng(7)
    crossed = 0
    for (xa, ya), (xb, yb) in zip(*[iter(random_pair_set(rng, 8))] * 2):
        cell = Cell()
        floored_scores(xa, xb, ya, ya if product else yb, scoring, product, cell)
        crossed += cell.crossed
    assert crossed > 0


def test_the_rule_for_linear_gaps_and_gotohs_cell():
    """Linear scorings (O = E = g) through the affine kernel: E's floor B + c2 = max(g, c2) >= g always, so
    the lists admit every one and the tiles those with g >= c2; the linear kernel never takes the floor."""
    for c2 in range(0, 6):
        for g in range(0, 6):
            scoring = sw.Scoring(2, c2, g)
            assert dpx_floor_admits(scoring, True, False)
            assert dpx_floor_admits(scoring, True, True) == (g >= c2)
            assert not dpx_floor_admits(scoring, False, True)
