"""Host alignments (kernels.sw.align) against an independent full-matrix DP.

sw.align runs pass 1 (the end: the first cell in row-major order holding the
best H) for groups of pairs in SIMD lanes, padded to the group's longest
query and target, and pass 2 (start and operations) over a window and a
diagonal band around the end. The reference below is plain Python over
whole matrices, with no window, band, padding or lanes, and shares no code
with the package; it follows the tie rules sw.align documents:

* end: the first cell in row-major order with H == best;
* linear gaps: the backward DP R[a][b] over the reversed prefixes, global at
  the end; the start is the first cell in row-major order with R == score;
  each cell prefers the diagonal, then I, then D (a later move only when
  strictly better);
* affine gaps (Gotoh, a gap of length L scores -(O + (L - 1) E)): traceback
  from the end in state H until H's source is "zero"; H prefers the diagonal,
  then F (I), then E (D), each only when strictly better than 0 and the
  previous choice; E and F extend when extending is at least as good as opening.

Coordinates and CIGARs must be equal, pair by pair. Cases: empty and
length-1 sequences, all N, repeats with many ties (mismatch 0 and gap 0
included), long insertions and deletions, targets longer than one strip of
pass 1, scores at and just past the int16 and int32 lane limits, and groups
of pairs of very different lengths.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from seqsift.kernels import sw
from seqsift.kernels.sw import cpu as sw_cpu

MINUS_INF = -(10 ** 30)


@pytest.fixture(autouse=True)
def lanes_as_on_a_warm_machine(monkeypatch):
    """Every test here runs the lanes whatever the batch's size (a machine whose Numba cache lacks the
    lane drivers aligns small batches with the scalar pass 1: sw_cpu.COLD_SCALAR_CELLS), but the
    test of that rule itself."""
    monkeypatch.setattr(sw_cpu, "COLD_SCALAR_CELLS", -1.0)


def w(a, b, c1, c2):
    return c1 if (a == b and a < 4) else -c2


def reference_end(x, y, c1, c2, go, ge):
    """(i1, j1, best) over the full Gotoh matrices (-inf outside; linear: go = ge)."""
    m, n = len(x), len(y)
    h_prev = [0] * (n + 1)
    f_prev = [MINUS_INF] * (n + 1)
    best, i1, j1 = 0, 0, 0
    for i in range(1, m + 1):
        h_cur = [0] * (n + 1)
        f_cur = [MINUS_INF] * (n + 1)
        e = MINUS_INF
        for j in range(1, n + 1):
            e = max(e - ge, h_cur[j - 1] - go)
            f = max(f_prev[j] - ge, h_prev[j] - go)
            h = max(0, h_prev[j - 1] + w(x[i - 1], y[j - 1], c1, c2), e, f)
            h_cur[j] = h
            f_cur[j] = f
            if h > best:
                best, i1, j1 = h, i, j
        h_prev, f_prev = h_cur, f_cur
    return i1, j1, best


def reference_linear(x, y, c1, c2, g):
    """(coords, ops) of the linear-gap alignment (ops as letters '=XID')."""
    i1, j1, best = reference_end(x, y, c1, c2, g, g)
    if best == 0:
        return (0, 0, 0, 0), ""
    R = [[0] * (j1 + 1) for _ in range(i1 + 1)]
    mv = [[0] * (j1 + 1) for _ in range(i1 + 1)]
    for b in range(j1 + 1):
        R[0][b] = -g * b
        mv[0][b] = 2
    for a in range(1, i1 + 1):
        R[a][0] = -g * a
        mv[a][0] = 1
        for b in range(1, j1 + 1):
            v, m_ = R[a - 1][b - 1] + w(x[i1 - a], y[j1 - b], c1, c2), 0
            if R[a - 1][b] - g > v:
                v, m_ = R[a - 1][b] - g, 1
            if R[a][b - 1] - g > v:
                v, m_ = R[a][b - 1] - g, 2
            R[a][b], mv[a][b] = v, m_
    sa, sb = next((a, b) for a in range(i1 + 1) for b in range(j1 + 1) if R[a][b] == best)
    ops = []
    a, b = sa, sb
    while a > 0 or b > 0:
        if mv[a][b] == 0:
            ops.append("=" if (x[i1 - a] == y[j1 - b] and x[i1 - a] < 4) else "X")
            a, b = a - 1, b - 1
        elif mv[a][b] == 1:
            ops.append("I")
            a -= 1
        else:
            ops.append("D")
            b -= 1
    return (i1 - sa, i1, j1 - sb, j1), "".join(ops)


def reference_affine(x, y, c1, c2, go, ge):
    """(coords, ops) of the affine-gap alignment over the whole matrix up to the end."""
    i1, j1, best = reference_end(x, y, c1, c2, go, ge)
    if best == 0:
        return (0, 0, 0, 0), ""
    H = [[0] * (j1 + 1) for _ in range(i1 + 1)]
    E = [[MINUS_INF] * (j1 + 1) for _ in range(i1 + 1)]
    F = [[MINUS_INF] * (j1 + 1) for _ in range(i1 + 1)]
    src = [[0] * (j1 + 1) for _ in range(i1 + 1)]
    e_ext = [[False] * (j1 + 1) for _ in range(i1 + 1)]
    f_ext = [[False] * (j1 + 1) for _ in range(i1 + 1)]
    for i in range(1, i1 + 1):
        for j in range(1, j1 + 1):
            ext, opn = E[i][j - 1] - ge, H[i][j - 1] - go
            E[i][j], e_ext[i][j] = (ext, True) if ext >= opn else (opn, False)
            ext, opn = F[i - 1][j] - ge, H[i - 1][j] - go
            F[i][j], f_ext[i][j] = (ext, True) if ext >= opn else (opn, False)
            h, s = 0, 0
            for value, source in ((H[i - 1][j - 1] + w(x[i - 1], y[j - 1], c1, c2), 1), (F[i][j], 2), (E[i][j], 3)):
                if value > h:
                    h, s = value, source
            H[i][j], src[i][j] = h, s
    assert H[i1][j1] == best
    ops = []
    i, j, state = i1, j1, 0
    while True:
        if state == 0:
            if src[i][j] == 0:
                break
            if src[i][j] == 1:
                ops.append("=" if (x[i - 1] == y[j - 1] and x[i - 1] < 4) else "X")
                i, j = i - 1, j - 1
            else:
                state = src[i][j]
        elif state == 2:
            ops.append("I")
            extend = f_ext[i][j]
            i -= 1
            state = 2 if extend else 0
        else:
            ops.append("D")
            extend = e_ext[i][j]
            j -= 1
            state = 3 if extend else 0
    return (i, i1, j, j1), "".join(reversed(ops))


def cigar(ops: str) -> str:
    if not ops:
        return "*"
    out, k = [], 0
    while k < len(ops):
        r = k
        while r < len(ops) and ops[r] == ops[k]:
            r += 1
        out.append(f"{r - k}{ops[k]}")
        k = r
    return "".join(out)


def reference(x, y, scoring: sw.Scoring):
    x, y = [int(c) for c in x], [int(c) for c in y]
    if scoring.affine:
        coords, ops = reference_affine(x, y, scoring.match, scoring.mismatch, scoring.open, scoring.extend)
    else:
        coords, ops = reference_linear(x, y, scoring.match, scoring.mismatch, scoring.gap)
    score = reference_end(x, y, scoring.match, scoring.mismatch, scoring.open, scoring.extend)[2]
    return score, coords, cigar(ops)


def pack(pairs):
    """codes, q_start, q_len, t_start, t_len of (query, target) code arrays, queries and targets interleaved."""
    parts, starts, lengths, pos = [], [], [], 0
    for q, t in pairs:
        for s in (q, t):
            parts.append(np.asarray(s, np.uint8))
            starts.append(pos)
            lengths.append(len(s))
            pos += len(s)
    codes = np.concatenate(parts + [np.zeros(1, np.uint8)])
    starts, lengths = np.array(starts, np.int64), np.array(lengths, np.int64)
    return codes, starts[0::2], lengths[0::2], starts[1::2], lengths[1::2]


def check_against_reference(pairs, scoring):
    codes, q_start, q_len, t_start, t_len = pack(pairs)
    expected = [reference(q, t, scoring) for q, t in pairs]
    scores = np.array([e[0] for e in expected], np.int64)
    coords, cigars = sw.align(codes, q_start, q_len, t_start, t_len, scores, scoring)
    for p, (score, want_coords, want_cigar) in enumerate(expected):
        assert tuple(coords[p]) == want_coords and cigars[p] == want_cigar, (p, scoring, score)


def mutate(rng, seq, sub, indel):
    out = []
    for c in seq:
        r = rng.random()
        if r < indel / 2:
            continue                                  # deletion from the query
        if r < indel:
            out.append(int(rng.integers(0, 4)))       # insertion into the query
        out.append(int(rng.integers(0, 4)) if rng.random() < sub else int(c))
    return np.array(out, np.uint8)


def mixed_pairs(rng, count, max_q, max_t):
    """Random, copied-with-errors, repetitive, long-gap, all-N and empty pairs of varied lengths."""
    pairs = []
    for k in range(count):
        m, n = int(rng.integers(0, max_q + 1)), int(rng.integers(0, max_t + 1))
        kind = k % 7
        if kind == 0:
            q, t = rng.integers(0, 5, m), rng.integers(0, 5, n)
        elif kind == 1:
            t = rng.integers(0, 4, n)
            a = int(rng.integers(0, max(1, n - m + 1)))
            q = mutate(rng, t[a:a + m], 0.05, 0.04)
        elif kind == 2:
            q, t = np.arange(m) % 2, np.arange(n) % 2          # ACAC...: many ties
        elif kind == 3:
            q, t = rng.integers(0, 2, m), np.arange(n) % 2 * 3  # A/C against ATAT...
        elif kind == 4:                                        # a long deletion or insertion
            t = rng.integers(0, 4, n)
            a = int(rng.integers(0, max(1, n - m + 1)))
            q = t[a:a + m].copy()
            if len(q) > 12:
                cut, span = int(rng.integers(4, len(q) - 4)), int(rng.integers(3, max(4, len(q) // 2)))
                if k % 2:
                    q = np.concatenate([q[:cut], q[cut + span:]])
                else:
                    q = np.concatenate([q[:cut], rng.integers(0, 4, span), q[cut:]])
        elif kind == 5:
            q, t = np.full(m, 4), rng.integers(0, 5, n)          # all N against anything
        else:
            q, t = rng.integers(0, 4, int(rng.integers(0, 2))), rng.integers(0, 4, int(rng.integers(0, 3)))
        pairs.append((np.asarray(q, np.uint8), np.asarray(t, np.uint8)))
    return pairs


SCORINGS = [sw.Scoring(2, 1, 1), sw.Scoring(3, 5, 2), sw.Scoring(1, 0, 0), sw.Scoring(2, 0, 1), sw.Scoring(1, 1, 0),
            sw.Scoring(2, 1, gap_open=3, gap_extend=1), sw.Scoring(2, 3, gap_open=5, gap_extend=2),
            sw.Scoring(3, 1, gap_open=2, gap_extend=0), sw.Scoring(1, 0, gap_open=2, gap_extend=1),
            sw.Scoring(1, 0, gap_open=0, gap_extend=0)]


@pytest.mark.parametrize("scoring", SCORINGS, ids=str)
def test_mixed_pairs_equal_the_full_matrix_reference(scoring):
    rng = np.random.default_rng(sum(map(ord, str(scoring))))
    check_against_reference(mixed_pairs(rng, 84, 40, 90), scoring)


@pytest.mark.parametrize("scoring", [sw.Scoring(2, 1, 1), sw.Scoring(2, 3, gap_open=5, gap_extend=2)], ids=str)
def test_reads_in_long_targets_across_strips(scoring):
    """Targets longer than one strip of pass 1 (sw_cpu._STRIP columns), the read anywhere in them."""
    rng = np.random.default_rng(7)
    pairs = []
    for k in range(6):
        n = sw_cpu._STRIP + int(rng.integers(-3, 2 * sw_cpu._STRIP // 3))
        t = rng.integers(0, 4, n)
        at = [0, n - 14, sw_cpu._STRIP - 7, sw_cpu._STRIP, int(rng.integers(0, n - 14)), n - 30][k]
        q = mutate(rng, t[at:at + 14], 0.05, 0.05)
        pairs.append((q, t.astype(np.uint8)))
    pairs.append((np.array([0, 1, 2, 3] * 3, np.uint8), np.array([0, 1, 2, 3] * (sw_cpu._STRIP // 2), np.uint8)))
    pairs.append((np.zeros(0, np.uint8), rng.integers(0, 4, 2 * sw_cpu._STRIP + 5).astype(np.uint8)))
    # Gaps across the strip edge: a deletion of target columns on both sides of it, and an insertion
    # right at it, so that pass 1 must carry H and E over the edge.
    for shift in (-6, -1, 0, 1, 5):
        t = rng.integers(0, 4, sw_cpu._STRIP + 60).astype(np.uint8)
        edge = sw_cpu._STRIP + shift
        pairs.append((np.concatenate([t[edge - 30:edge - 4], t[edge + 5:edge + 31]]), t))
        pairs.append((np.concatenate([t[edge - 30:edge], rng.integers(0, 4, 7).astype(np.uint8), t[edge:edge + 30]]), t))
    check_against_reference(pairs, scoring)


def test_alignments_from_several_threads_at_once_equal_the_reference():
    """A GPU screen's task threads align their survivors while the others run kernels: sw.align's drivers
    release the GIL, and its lock keeps two of them from entering Numba's parallel regions at once
    (which Numba's workqueue threading layer refuses). Four threads, two gap models, each batch checked."""
    from concurrent.futures import ThreadPoolExecutor

    batches = []
    for k, scoring in enumerate([sw.Scoring(2, 1, 1), sw.Scoring(2, 3, gap_open=5, gap_extend=2)] * 2):
        pairs = mixed_pairs(np.random.default_rng(100 + k), 60, 40, 300)
        batches.append((pairs, scoring))
    for driver in (sw_cpu._lanes_linear, sw_cpu._lanes_affine, sw_cpu._scalar_pairs):
        assert driver.targetoptions.get("nogil") is True, driver
    with ThreadPoolExecutor(max_workers=len(batches)) as pool:
        for done in [pool.submit(check_against_reference, pairs, scoring) for pairs, scoring in batches]:
            done.result()


def test_edge_sequences_and_ties():
    for scoring in SCORINGS:
        pairs = [(np.zeros(0, np.uint8), np.zeros(0, np.uint8)), (np.array([0], np.uint8), np.zeros(0, np.uint8)),
                 (np.zeros(0, np.uint8), np.array([1], np.uint8)), (np.array([2], np.uint8), np.array([2], np.uint8)),
                 (np.array([2], np.uint8), np.array([3], np.uint8)), (np.array([4], np.uint8), np.array([4], np.uint8)),
                 (np.full(9, 4, np.uint8), np.full(13, 4, np.uint8)),
                 (np.array([0, 1] * 6, np.uint8), np.array([0, 1] * 11, np.uint8)),
                 (np.array([0] * 7, np.uint8), np.array([0] * 3 + [1] + [0] * 3, np.uint8)),
                 (np.array([0, 1, 0, 1, 0], np.uint8), np.array([1, 0, 1, 0, 1, 0, 1], np.uint8))]
        check_against_reference(pairs, scoring)


def test_lane_limits_int16_int32_and_scalar():
    """Scores at the int16 lane limit and just past it, and at the int32 limit and past it."""
    cases = [  # (scoring, query = target length, the pass-1 kind planned)
        (sw.Scoring(16383, 1, 1), 2, sw_cpu.KIND_INT16),              # best 32766
        (sw.Scoring(32767, 1, 1), 1, sw_cpu.KIND_INT16),              # best 32767
        (sw.Scoring(101, 1, 1), 324, sw_cpu.KIND_INT16),              # 32724
        (sw.Scoring(101, 1, 1), 325, sw_cpu.KIND_INT32),              # 32825
        (sw.Scoring(16384, 1, 1), 2, sw_cpu.KIND_INT32),              # 32768
        (sw.Scoring(2, 16384, 1), 40, sw_cpu.KIND_INT16),             # mismatch at the limit
        (sw.Scoring(2, 16385, 1), 40, sw_cpu.KIND_INT32),
        (sw.Scoring(2, 1, gap_open=16000, gap_extend=384), 40, sw_cpu.KIND_INT16),
        (sw.Scoring(2, 1, gap_open=16000, gap_extend=385), 40, sw_cpu.KIND_INT32),
        (sw.Scoring(2 ** 30 - 1, 3, 2), 2, sw_cpu.KIND_INT32),        # best 2^31 - 2
        (sw.Scoring(2 ** 31 - 1, 3, 2), 1, sw_cpu.KIND_INT32),        # best 2^31 - 1
        (sw.Scoring(2 ** 30, 3, 2), 2, sw_cpu.KIND_SCALAR),           # best 2^31
        (sw.Scoring(2 ** 31, 1, gap_open=3, gap_extend=1), 3, sw_cpu.KIND_SCALAR),
    ]
    rng = np.random.default_rng(11)
    for scoring, length, kind in cases:
        t = rng.integers(0, 4, length).astype(np.uint8)
        pairs = [(t.copy(), t), (mutate(rng, t, 0.1, 0.05), t), (t[: length // 2].copy(), t)]
        kinds = sw_cpu.plan_groups(np.array([len(q) for q, _ in pairs]), np.array([length] * 3), scoring.match,
                                   scoring.mismatch, scoring.open, scoring.extend, threads=1)[1]
        assert kinds.tolist() == [kind], (scoring, length)
        check_against_reference(pairs, scoring)


def test_groups_of_very_different_lengths_in_one_call():
    """More pairs than one group, lengths from 0 to a few hundred, so lanes are padded a lot."""
    rng = np.random.default_rng(5)
    pairs = mixed_pairs(rng, 60, 8, 12) + mixed_pairs(rng, 12, 120, 300) + mixed_pairs(rng, 30, 30, 30)
    order = rng.permutation(len(pairs))
    pairs = [pairs[k] for k in order]
    for scoring in (sw.Scoring(2, 1, 1), sw.Scoring(2, 1, gap_open=3, gap_extend=1)):
        check_against_reference(pairs, scoring)


def test_plan_groups_cover_every_pair_once_sorted_by_shape():
    rng = np.random.default_rng(3)
    q_len, t_len = rng.integers(0, 50, 1000), rng.integers(0, 90, 1000)
    for threads in (1, 2, 16, 64):
        groups, kinds, order = sw_cpu.plan_groups(q_len, t_len, 2, 1, 1, 1, threads=threads)
        members = groups[groups >= 0]
        assert sorted(members.tolist()) == list(range(1000))
        assert sorted(order.tolist()) == list(range(groups.shape[0]))
        assert groups.shape[0] >= min(threads, 1000 // sw_cpu.LANES)
        shapes = [(q_len[p], t_len[p]) for p in members]
        assert shapes == sorted(shapes)
        assert (kinds == sw_cpu.KIND_INT16).all()
    groups, kinds, _ = sw_cpu.plan_groups(q_len, t_len, 2, -1, 1, 1)
    assert (kinds == sw_cpu.KIND_SCALAR).all()   # negative penalties: no padded lanes


def test_a_wrong_score_is_refused_on_every_path():
    rng = np.random.default_rng(2)
    t = rng.integers(0, 4, 30).astype(np.uint8)
    for scoring in (sw.Scoring(2, 1, 1), sw.Scoring(2 ** 30, 1, 1), sw.Scoring(2, 1, gap_open=3, gap_extend=1)):
        score = reference(t, t, scoring)[0]
        codes, q_start, q_len, t_start, t_len = pack([(t, t)])
        for wrong in (score - 1, score + 1):
            with pytest.raises(ValueError, match="not the Smith-Waterman score"):
                sw.align(codes, q_start, q_len, t_start, t_len, np.array([wrong]), scoring)


@pytest.mark.parametrize("affine", [False, True], ids=["linear", "affine"])
@pytest.mark.parametrize("compiled", [False, True], ids=["cold", "warm"])
def test_a_small_batch_takes_the_scalar_pass_until_the_lanes_are_compiled(monkeypatch, drivers_called, compiled,
                                                                           affine):
    """On a machine that has not compiled the lane drivers, a batch of few cells is aligned by the
    scalar pass 1 (no 10-15 s compile for it); once they are compiled, by the lanes; same results."""
    monkeypatch.setattr(sw_cpu, "COLD_SCALAR_CELLS", 2e9)
    monkeypatch.setattr(sw_cpu, "_lanes_compiled", lambda affine: compiled)
    scoring = sw.Scoring(2, 3, gap_open=5, gap_extend=2) if affine else sw.Scoring(2, 1, 1)
    check_against_reference(mixed_pairs(np.random.default_rng(11), 40, 30, 60), scoring)
    lanes = "_lanes_affine" if affine else "_lanes_linear"
    assert set(drivers_called) == ({lanes} if compiled else {"_scalar_pairs"})


COLD_THEN_COMPILED = """
    import json
    import numpy as np
    from seqsift import numba_ahead
    from seqsift.kernels import sw
    from seqsift.kernels.sw import cpu as sw_cpu

    before = sw_cpu._lanes_compiled(False)
    codes = np.tile(np.arange(4, dtype=np.uint8), 10)   # a small batch: the query lies whole in the target
    sw.align(codes, [0], [8], [8], [32], [16], sw.Scoring(2, 1, 1))   # cold: the lanes' compile starts
    numba_ahead.loading("sw-lanes-linear").wait()   # numba_ahead's event: child compiled, loaded here
    print(json.dumps({"before": before, "after": sw_cpu._lanes_compiled(False),
                      "signatures": len(sw_cpu._lanes_linear.signatures)}))
"""


def test_a_cold_small_batch_starts_the_lanes_compile_in_the_background(tmp_path):
    """A machine whose batches all stay under COLD_SCALAR_CELLS still gets the lanes: the first cold
    batch starts their compile (a child process, then a load here), after which batches take them."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(COLD_THEN_COMPILED)], capture_output=True,
                            text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"before": False, "after": True, "signatures": 1}
