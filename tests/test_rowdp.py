"""edit-rowdp / edit-rowdp-shfl on the CPU: the paper's X-matrix row recurrence (Numba) against the oracle.

rowdp_cpu runs equation (3) of Ho, Oh & Kim (2017) with the GPU kernels'
window, saturation and tiling (rowdp.cu). ``tile_span`` is set small in most
tests so that every input crosses many tile borders (each tile restarts
m + k characters early).
"""
from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from seqsift.alphabet import encode_text
from seqsift.searching.job import SearchJob
from seqsift.searching.task import run_task
from seqsift.kernels import ALGORITHMS, find_ends
from seqsift.kernels.rowdp import cpu as emulation
from seqsift.kernels.rowdp import MAX_WARM_UP, THREADS, WARM_UP_SHARE, columns_per_thread, rowdp_cpu
from seqsift.partitioning import plan_chunks
from seqsift.pattern_set import PatternSet

import oracle
from test_engine import mutate


def hits_set(hits):
    return set(zip(hits.row.tolist(), hits.end.tolist(), hits.distance.tolist()))


def random_dna(rng, n):
    return "".join(rng.choice("ACGT") for _ in range(n))


def batch_of(sequences, strands=(0, 1)):
    return PatternSet(tuple(f"p{i}" for i in range(len(sequences))), tuple(sequences)).oriented(
        range(len(sequences)), strands)


def check(text: str, sequences: list[str], k: int, lo: int = 0, hi: int | None = None,
          spans=(None, 5, 61), reference: str = "oracle"):
    """rowdp_cpu at several tile spans == the oracle (or edit-myers on the CPU); returns the hits."""
    codes = encode_text(text)
    hi = len(codes) if hi is None else hi
    batch = batch_of(sequences)
    if reference == "oracle":
        expected = hits_set(oracle.edit_ends(codes, batch, k, lo, hi))
    else:
        expected = hits_set(find_ends("edit-myers", "cpu", codes, batch, k, lo, hi))
    for span in spans:
        got = rowdp_cpu(codes, batch, k, lo, hi, tile_span=span)
        assert hits_set(got) == expected, f"tile_span={span}"
    return expected


def test_x_matrix_is_equation_2():
    rng = random.Random(0)
    tile = encode_text("".join(rng.choice("ACGTN") for _ in range(300)))
    x = emulation.x_matrix(tile, tile.size)
    for c in range(4):
        for j in range(tile.size + 1):
            occurrences = [p for p in range(1, j + 1) if tile[p - 1] == c]
            assert x[c, j] == (occurrences[-1] if occurrences else 0)


def test_x_distance_of_iupac_masks_is_the_last_matching_column():
    rng = random.Random(1)
    tile = encode_text("".join(rng.choice("ACGTN") for _ in range(200)))
    x = emulation.x_matrix(tile, tile.size)
    for k in (0, 3, 30):
        for mask in range(16):
            for j in range(1, tile.size + 1):
                matching = [p for p in range(max(1, j - k), j + 1) if tile[p - 1] < 4 and (mask >> tile[p - 1]) & 1]
                expected = j - matching[-1] if matching else k + 1
                assert emulation.x_distance(x, j, mask, k) == expected


@pytest.mark.parametrize("m", [1, 31, 32, 33, 64, 65, 150, 1000])
def test_planted_edits_every_length(m):
    rng = random.Random(m)
    pattern = random_dna(rng, m)
    k = min(m - 1, max(0, m // 10))
    parts = []
    for _ in range(6):
        parts.append(random_dna(rng, rng.randint(50, 400)))
        parts.append(mutate(rng, pattern, rng.randint(0, k)))
    spans = (None, 97) if m >= 150 else (None, 5, 61)
    assert len(check("".join(parts), [pattern], k, spans=spans)) > 0


@pytest.mark.parametrize("m", [1, 3, 12, 31, 32, 33, 40, 64, 65])
def test_k_zero_and_m_minus_one(m):
    rng = random.Random(m + 7)
    text = random_dna(rng, 1_500)
    pattern = random_dna(rng, m)
    check(text, [pattern], 0)
    check(text, [pattern], m - 1)


def test_m_1000_with_k_m_minus_one():
    rng = random.Random(1000)
    pattern = random_dna(rng, 1000)
    text = random_dna(rng, 700) + mutate(rng, pattern, 40) + random_dna(rng, 900)
    check(text, [pattern], 999, spans=(None, 800), reference="myers")


def test_k_above_m_reports_every_end():
    codes = encode_text("ACGTNNACGT")
    hits = rowdp_cpu(codes, batch_of(["ACG"], (0,)), 3, 0, codes.size)
    assert sorted(hits.end.tolist()) == list(range(1, 11))
    assert hits_set(hits) == hits_set(oracle.edit_ends(codes, batch_of(["ACG"], (0,)), 3, 0, codes.size))


def test_adversarial_text_and_iupac_patterns():
    rng = random.Random(11)
    text = ("N" * 500 + random_dna(rng, 300) + "ACAC" * 200 + "A" * 700 + "nnnnRYKM" + random_dna(rng, 300).lower()
            + "NANANANA" * 20)
    patterns = ["ACACACAC", "AAAAAAAAAAAA", "NNNNACGT", "RYACGTAC", random_dna(rng, 70), "A", "NNN", "ACGTXACG",
                "WSKMBDHV"]
    for k in (0, 1, 2, 5):
        check(text, patterns, k)


def test_all_never_text_and_all_a_text():
    check("N" * 800, ["ACGT", "NN", "A"], 2)
    check("A" * 800, ["AAAA", "AAAAAAAAAAAATA", "CA"], 1)


def test_owned_windows():
    rng = random.Random(3)
    text = random_dna(rng, 3_000)
    patterns = [mutate(rng, text[s:s + rng.randint(8, 40)], 2) for s in rng.sample(range(2_900), 12)]
    for lo, hi in ((0, 3_000), (1, 2_999), (1_234, 1_300), (2_990, 5_000), (-5, 17), (500, 500), (40, 41)):
        check(text, patterns, 3, lo, hi)


def test_chunks_with_halo_add_up_to_the_whole():
    rng = random.Random(4)
    text = random_dna(rng, 2_000)
    patterns = [mutate(rng, text[s:s + 25], 3) for s in rng.sample(range(1_900), 5)]
    codes = encode_text(text)
    batch = batch_of(patterns)
    k = 3
    whole = hits_set(oracle.edit_ends(codes, batch, k, 0, codes.size))
    halo = 25 + k - 1
    joined = set()
    for core in range(0, codes.size, 333):
        read = max(0, core - halo)
        hits = rowdp_cpu(codes[read:core + 333], batch, k, core - read, core - read + 333, tile_span=50)
        joined |= {(r, e + read, d) for r, e, d in hits_set(hits)}
    assert joined == whole


def test_many_patterns_mixed_lengths_and_buffer_rerun(monkeypatch):
    rng = random.Random(5)
    text = random_dna(rng, 4_000)
    patterns = [mutate(rng, text[s:s + rng.randint(5, 90)], rng.randint(0, 4)) for s in rng.sample(range(3_900), 40)]
    check(text, patterns, 4, spans=(None, 333))
    # Tiny first-pass buffers: tasks with more hits than slots are run again.
    monkeypatch.setattr("seqsift.kernels.driver._SLOTS_BUDGET", 1)
    check(text, ["AC", "GT", "TTT", "CAG"] * 5, 2, spans=(None, 100))


def test_geometry_keeps_warm_up_small():
    assert columns_per_thread(16, 6) * THREADS >= WARM_UP_SHARE * 22
    assert columns_per_thread(1000, 999) == 16
    assert columns_per_thread(MAX_WARM_UP, 1) is None
    for m in (1, 20, 100, 600):
        r = columns_per_thread(m, 5)
        assert THREADS * r - (m + 5) >= THREADS * r // 2


def test_registered_for_both_backends():
    for name in ("edit-rowdp", "edit-rowdp-shfl"):
        algorithm = ALGORITHMS[name]
        assert algorithm.metric == "edit"
        assert algorithm.backends["cpu"] == "rowdp:rowdp_cpu"
        assert algorithm.backends["cuda"].startswith("rowdp:")
    rng = random.Random(6)
    text = random_dna(rng, 600)
    codes = encode_text(text)
    batch = batch_of([text[100:130]])
    expected = hits_set(oracle.edit_ends(codes, batch, 2, 0, codes.size))
    assert hits_set(find_ends("edit-rowdp", "cpu", codes, batch, 2, 0, codes.size)) == expected
    assert hits_set(find_ends("edit-rowdp-shfl", "cpu", codes, batch, 2, 0, codes.size)) == expected


class _Reference:
    """A one-record reference held in memory (engine tests without a cluster)."""

    def __init__(self, sequence: str):
        self.sequence = sequence
        self.names = ("chr",)
        self.lengths = np.array([len(sequence)], dtype=np.int64)

    def read(self, record_index, start, end):
        return self.sequence[start:end].encode()


def test_best_mode_start_and_cigar_match_edit_myers():
    """Item 4 of the issue: the engine's locate turns rowdp's ends into the same loci and CIGARs."""
    rng = random.Random(8)
    guides = [random_dna(rng, 24), random_dna(rng, 31)]
    parts = []
    for _ in range(8):
        parts.append(random_dna(rng, rng.randint(30, 200)))
        parts.append(mutate(rng, rng.choice(guides), rng.randint(0, 3)))
    reference = _Reference("".join(parts))
    frames = {}
    for algorithm in ("edit-myers", "edit-rowdp", "edit-rowdp-shfl"):
        job = SearchJob(reference=reference, patterns=PatternSet(("g0", "g1"), tuple(guides)), metric="edit",
                        k=3, mode="best", strand="both", algorithm=algorithm, backend="cpu", align=True)
        rows = [run_task(job, group, range(2)) for group in job.groups(400)]
        frame = pd.concat(rows, ignore_index=True)
        frames[algorithm] = frame.sort_values(list(frame.columns)).reset_index(drop=True)
    assert len(frames["edit-myers"]) > 0
    pd.testing.assert_frame_equal(frames["edit-rowdp"], frames["edit-myers"])
    pd.testing.assert_frame_equal(frames["edit-rowdp-shfl"], frames["edit-myers"])
