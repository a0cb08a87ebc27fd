"""edit-nfa on the CPU: the diagonal bit-parallel NFA (nfa_cpu.py) against the oracle.

The Numba scan runs the same word updates as nfa.cu, so these tests check the
algorithm itself: the packing for every slot width, the exact d(e) read from
the last column, N in the text, IUPAC patterns, m <= k, and owned windows.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from seqsift.alphabet import encode_text
from seqsift.kernels import ALGORITHMS, choose_algorithm, find_ends
from seqsift.kernels.nfa import cpu as nfa_cpu
from seqsift.kernels.nfa import nfa_cpu as nfa_search
from seqsift.pattern_set import PatternBatch, PatternSet

import oracle
from test_engine import mutate

# One k per slot width S (1, 2, 3, 4, 5, 6, 8, 10, 16, 32 bits) and the edges of each.
K_EVERY_SLOT = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 31]


def hits_set(hits):
    return set(zip(hits.row.tolist(), hits.end.tolist(), hits.distance.tolist()))


def random_dna(rng, n, alphabet="ACGT"):
    return "".join(rng.choice(alphabet) for _ in range(n))


def batch_of(sequences, strands=(0, 1)) -> PatternBatch:
    return PatternSet(tuple(f"p{i}" for i in range(len(sequences))), tuple(sequences)).oriented(
        range(len(sequences)), strands)


def check(codes, batch, k, lo=0, hi=None):
    hi = len(codes) if hi is None else hi
    got = nfa_search(codes, batch, k, lo, hi)
    want = oracle.edit_ends(codes, batch, k, lo, hi)
    assert hits_set(got) == hits_set(want)
    return got


def planted_text(rng, pattern, k, copies=3, gap=(0, 120), over=1):
    """Random text with ``copies`` of the pattern carrying 0 .. k + over edits each."""
    parts = []
    for _ in range(copies):
        parts.append(random_dna(rng, rng.randint(*gap)))
        parts.append(mutate(rng, pattern, rng.randint(0, k + over)))
    parts.append(random_dna(rng, rng.randint(*gap)))
    return "".join(parts)


def test_packing_follows_the_paper():
    # Section 4: "k in [8, 9] implies that we pack three diagonals into each
    # word whereas k in [10, 15] implies two" (32-bit words, Hyyro's k+1 bits).
    assert [nfa_cpu.diagonals_per_word(k) for k in (8, 9)] == [3, 3]
    assert {nfa_cpu.diagonals_per_word(k) for k in range(10, 16)} == {2}
    assert {nfa_cpu.diagonals_per_word(k) for k in range(16, 32)} == {1}
    for k in range(32):
        slot = nfa_cpu.slot_bits(k)
        assert slot >= k + 1 and nfa_cpu.diagonals_per_word(k) == 32 // (k + 1)
    # m = 1039, k = 15: 1,039 diagonals (the padded NFA keeps the whole last column), two per word.
    assert int(nfa_cpu.words_needed(1039, 15)) == 520
    with pytest.raises(ValueError):
        nfa_cpu.slot_bits(32)


@pytest.mark.parametrize("k", K_EVERY_SLOT)
def test_compiled_masks(k):
    rng = random.Random(k)
    sequence = random_dna(rng, 40, "ACGTNRY")
    batch = batch_of([sequence], strands=(0,))
    words = int(nfa_cpu.words_needed(40, k)) + 1
    peq, final = nfa_cpu.compile_rows(batch.masks, batch.lengths, k, words)
    _, _, used = nfa_cpu.layout_constants(nfa_cpu.slot_bits(k))
    assert (peq[0, 4] == used).all()  # text code 4 (N) matches no state
    assert (peq[0, :4] & ~np.uint32(used) == 0).all()  # unused bits stay 0
    # One final bit per last-column state (r, m), r = 0..min(k, m - 1).
    assert sum(bin(int(x)).count("1") for x in final[0]) == min(k, 39) + 1
    # Zero bits (matches): one per (pattern position, matching code) and row r <= S-1 on the diagonal.
    slot = nfa_cpu.slot_bits(k)
    for code in range(4):
        zeros = sum(bin(int(x) ^ used).count("1") for x in peq[0, code])
        per_position = [((batch.masks[0, j] >> code) & 1) for j in range(40)]
        # Position j (column j + 1) lies on diagonals j + 1 - r for rows r = 0 .. min(S - 1, j).
        assert zeros == sum(min(slot - 1, j) + 1 for j in range(40) if per_position[j])


@pytest.mark.parametrize("k", [0, 1, 3, 7, 9, 15, 20])
def test_states_are_the_dp_thresholds(k):
    """After every text character, NFA state (r, j) for j <= m is active exactly when D[j][t] <= r."""
    rng = random.Random(100 + k)
    m = 23
    pattern = random_dna(rng, m)
    text = encode_text(planted_text(rng, pattern, k, copies=2, gap=(5, 30)) + "NN" + random_dna(rng, 10))
    batch = batch_of([pattern], strands=(0,))
    slot = nfa_cpu.slot_bits(k)
    per_word = 32 // slot
    row0, top, used = nfa_cpu.layout_constants(slot)
    words = int(nfa_cpu.words_needed(m, k))
    peq, _ = nfa_cpu.compile_rows(batch.masks, batch.lengths, k, words)
    state = [used] * words
    # D[j][t] for all t at once, by the oracle's DP one pattern prefix at a time.
    dp = np.stack([np.zeros(len(text) + 1, np.int64)]
                  + [oracle.edit_distances_to_ends(text, batch.masks[0, :j]) for j in range(1, m + 1)])
    for t, code in enumerate(text, start=1):
        state = [int(nfa_cpu.nfa_step(np.uint64(state[w]), np.uint64(state[w - 1] if w else 0),
                                      np.uint64(state[w + 1] if w + 1 < words else used),
                                      np.uint64(peq[0, code, w]), slot, per_word, np.uint64(row0),
                                      np.uint64(top), np.uint64(used)))
                 for w in range(words)]
        for w in range(words):
            for s in range(per_word):
                diagonal = 1 + w * per_word + (per_word - 1 - s)
                for r in range(k + 1):
                    j = diagonal + r
                    if j <= m:
                        active = not (state[w] >> (s * slot + r)) & 1
                        assert active == (dp[j, t] <= r), (t, j, r)


@pytest.mark.parametrize("k", K_EVERY_SLOT)
def test_planted_edits_every_slot_width(k):
    rng = random.Random(7 + k)
    for m in (1, 2, 3, 5, 17, 31, 32, 33, 63, 64, 65, 100, 130):
        pattern = random_dna(rng, m)
        codes = encode_text(planted_text(rng, pattern, k))
        check(codes, batch_of([pattern]), k)


@pytest.mark.parametrize("m", [64, 65, 200, 1024, 1039])
@pytest.mark.parametrize("k", [0, 1, 8, 15])
def test_long_patterns(m, k):
    rng = random.Random(m * 31 + k)
    pattern = random_dna(rng, m)
    codes = encode_text(planted_text(rng, pattern, k, copies=2, gap=(50, 300), over=0))
    hits = check(codes, batch_of([pattern]), k)
    assert len(hits) > 0


def test_m_not_above_k_reports_every_end():
    rng = random.Random(3)
    codes = encode_text(random_dna(rng, 300) + "NNNN" + random_dna(rng, 40))
    for k in (1, 4, 9, 16, 31):
        patterns = [random_dna(rng, m) for m in range(1, k + 1, max(1, k // 4))]
        hits = check(codes, batch_of(patterns), k, lo=3, hi=320)
        assert len(hits) == 2 * len(patterns) * (320 - 3)


def test_adversarial_text_n_runs_iupac_repeats():
    rng = random.Random(11)
    text = ("N" * 200 + random_dna(rng, 300) + "ACAC" * 120 + "A" * 300 + "nnnnRYKM"
            + random_dna(rng, 300).lower() + "N" + "ACGTTGCA" * 30)
    codes = encode_text(text)
    patterns = ["ACACACACACAC", "A" * 70, "NNNNACGTNNNN", "RYACGTACWSKM", random_dna(rng, 70),
                "A", "ACGTTGCAACGTTGCAACGTTGCAACGT", "N" * 5]
    for k in (0, 2, 5, 9, 15):
        check(codes, batch_of(patterns), k)


def test_owned_windows():
    rng = random.Random(5)
    pattern = random_dna(rng, 90)
    codes = encode_text(planted_text(rng, pattern, 10, copies=6, gap=(20, 200)))
    n = len(codes)
    batch = batch_of([pattern, random_dna(rng, 33)])
    for lo, hi in [(0, n), (1, n - 1), (n // 3, 2 * n // 3), (n // 2, n // 2), (n - 5, n + 100), (-10, 50),
                   (150, 151)]:
        check(codes, batch, 10, lo, hi)


def test_segments_and_many_rows_match_the_oracle():
    # Long enough that the scan is cut into segments, each with its own warm-up.
    rng = random.Random(9)
    text = random_dna(rng, 60_000)
    patterns = [mutate(rng, text[s:s + rng.randint(40, 150)], rng.randint(0, 4))
                for s in rng.sample(range(59_000), 6)]
    codes = encode_text(text)
    check(codes, batch_of(patterns), 6, lo=777, hi=59_000)


def test_k_past_the_nfa_is_refused():
    """A job never brings k > 31 here (the registry's max_k); called directly, the launcher raises."""
    rng = random.Random(2)
    codes = encode_text(random_dna(rng, 400))
    batch = batch_of([random_dna(rng, 60)], strands=(0,))
    check(codes, batch, 31)
    with pytest.raises(ValueError, match="k <= 31"):
        nfa_search(codes, batch, 40, 0, len(codes))


def test_registered_with_its_limits():
    algorithm = ALGORITHMS["edit-nfa"]
    assert algorithm.metric == "edit" and algorithm.max_k == 31
    assert choose_algorithm("edit", "cpu", "edit-nfa", m_max=1039, k=15)[0] == "edit-nfa"
    with pytest.raises(ValueError, match="k up to 31"):
        choose_algorithm("edit", "cpu", "edit-nfa", m_max=100, k=32)
    rng = random.Random(4)
    pattern = random_dna(rng, 70)
    codes = encode_text(planted_text(rng, pattern, 3))
    batch = batch_of([pattern])
    assert hits_set(find_ends("edit-nfa", "cpu", codes, batch, 3, 0, len(codes))) == \
        hits_set(find_ends("edit-myers", "cpu", codes, batch, 3, 0, len(codes)))


@pytest.mark.parametrize("limit,largest", [(232_448, 4_096), (101_376, 3_968), (65_536, 2_432)])
def test_gpu_blocks_fit_the_devices_shared_memory(limit, largest):
    """Rows whose NFA block would need more shared memory than the device gives one block (Hopper 227 KB;
    the A10, L4 and RTX cards 99 KB; the T4 64 KB) go to edit-myers, as rows past MAX_WORDS do: the largest
    row kept on the NFA kernel, by words, and every kept row's block within the limit."""
    from seqsift.kernels.nfa import cuda as nfa_gpu

    words = np.arange(0, 4_700, dtype=np.int64)
    row_wpt, threads, fits = nfa_gpu.block_shapes(words, None, limit)
    assert int(words[fits].max()) == largest
    assert fits[:largest + 1].all() and not fits[largest + 1:].any()
    assert (nfa_gpu._shared_bytes(threads[fits], row_wpt[fits]) <= limit).all()
    assert (threads[fits] <= nfa_gpu.MAX_THREADS).all() and (threads * row_wpt >= words)[fits].all()
