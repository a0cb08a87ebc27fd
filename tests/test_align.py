"""locate_packed(): start positions and extended CIGARs of hits (kernels/locate, its CPU backend; the GPU's is
checked against it in test_gpu_locate.py).

For every located hit: the CIGAR must be a valid alignment of the pattern
against text[start:end] whose edit count is the hit's distance, and (edit
distance) the start must be the smallest one reaching that distance, which
is checked by brute force with the oracle.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqsift.alphabet import NEVER, encode_text
from seqsift.kernels import edit, gather_spans, hamming
from seqsift.kernels.locate import cpu as locate_cpu
from seqsift.pattern_set import STRAND_MINUS, STRAND_PLUS, PatternSet

import oracle
from cross_check import optional, require
from locate_strings import locate
from test_kernels_cpu import letters, mutate

edlib = optional("edlib")


def batch_of(sequences, strands=(STRAND_PLUS, STRAND_MINUS)):
    names = tuple(str(i) for i in range(len(sequences)))
    return PatternSet(names, tuple(sequences)).oriented(range(len(sequences)), strands)


def check_located(metric, text, batch, hits, starts, cigars, brute_force_start=True):
    assert starts.dtype == np.int64 and len(starts) == len(hits) == len(cigars)
    for h in range(len(hits)):
        r, e, d = int(hits.row[h]), int(hits.end[h]), int(hits.distance[h])
        s, cigar = int(starts[h]), cigars[h]
        masks = batch.masks[r, :batch.lengths[r]]
        assert 0 <= s <= e
        assert oracle.cigar_errors(cigar, masks, text[s:e]) == d, (cigar, d)
        assert re.fullmatch(r"(\d+[=XID])*", cigar)
        # Runs are maximal: no two neighbouring runs with the same operation.
        ops = re.findall(r"\d+([=XID])", cigar)
        assert all(a != b for a, b in zip(ops, ops[1:]))
        if metric == "hamming":
            assert s == e - len(masks) and not set(ops) & {"I", "D"}
        elif brute_force_start:
            assert s == oracle.smallest_start(masks, text, e, d)


# ---------------------------------------------------------------------------
# Hamming
# ---------------------------------------------------------------------------

def test_hamming_cigar_example():
    text = encode_text("TTACGTAGGTACGTACGTACGTAA")
    pattern = "ACGTAGCTACGTACGTACGT"  # one mismatch at pattern position 6 vs text ACGTAGGTACG...
    batch = batch_of([pattern], (STRAND_PLUS,))
    hits = hamming.scan_cpu(text, batch, 1, 0, len(text))
    assert len(hits) == 1 and int(hits.end[0]) == 22 and int(hits.distance[0]) == 1
    starts, cigars = locate("hamming", text, batch, hits.row, hits.end, hits.distance)
    assert starts.tolist() == [2] and cigars == ["6=1X13="]


def test_hamming_never_in_text_is_a_mismatch():
    text = encode_text("ACNTA")
    batch = batch_of(["NCGTN"], (STRAND_PLUS,))
    hits = hamming.scan_cpu(text, batch, 2, 0, len(text))
    starts, cigars = locate("hamming", text, batch, hits.row, hits.end, hits.distance)
    assert cigars == ["2=1X2="] and starts.tolist() == [0]


def test_hamming_random_hits():
    rng = np.random.default_rng(1)
    text = rng.integers(0, 5, 5000).astype(np.uint8)
    batch = batch_of(["ACGTNACGTRYACG", "AC", "A", "ACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTAC"])
    hits = hamming.pigeonhole_cpu(text, batch, 3, 0, len(text))
    assert len(hits) > 100
    starts, cigars = locate("hamming", text, batch, hits.row, hits.end, hits.distance)
    check_located("hamming", text, batch, hits, starts, cigars)


# ---------------------------------------------------------------------------
# Edit distance
# ---------------------------------------------------------------------------

def locate_all(text, batch, k):
    hits = edit.myers_cpu(text, batch, k, 0, len(text)).sorted()
    starts, cigars = locate("edit", text, batch, hits.row, hits.end, hits.distance)
    return hits, starts, cigars


def test_edit_examples():
    # One text character too many: a D; ties broken diagonal-first from the left.
    text = encode_text("TTACGGTTT")
    batch = batch_of(["ACGT"], (STRAND_PLUS,))
    starts, cigars = locate("edit", text, batch, np.array([0]), np.array([7]), np.array([1]))
    assert starts.tolist() == [2] and cigars == ["3=1D1="]
    # One pattern character missing from the text: an I.
    starts, cigars = locate("edit", encode_text("GGACTGG"), batch, np.array([0]), np.array([5]),
                            np.array([1]))
    assert starts.tolist() == [2] and cigars == ["2=1I1="]
    # Exact hit.
    starts, cigars = locate("edit", encode_text("ACGT"), batch, np.array([0]), np.array([4]),
                            np.array([0]))
    assert starts.tolist() == [0] and cigars == ["4="]


def test_edit_smallest_start_is_chosen():
    # "AAAA" ends at 6 of "CAAAAA" with distance 0 from s=2 only, distance 1 from s=1
    # (one D) ... the smallest start with the *given* distance is wanted.
    text = encode_text("CAAAAA")
    batch = batch_of(["AAAA"], (STRAND_PLUS,))
    starts, cigars = locate("edit", text, batch, np.array([0, 0]), np.array([6, 5]), np.array([0, 0]))
    assert starts.tolist() == [2, 1] and cigars == ["4=", "4="]
    # Pattern against a shorter text run: starts s where ED == d, smallest one.
    text = encode_text("GGGACGTT")
    batch = batch_of(["TACGT"], (STRAND_PLUS,))
    starts, cigars = locate("edit", text, batch, np.array([0]), np.array([7]), np.array([1]))
    assert starts.tolist() == [oracle.smallest_start(batch.masks[0, :5], text, 7, 1)]


def test_edit_deterministic():
    rng = np.random.default_rng(2)
    text = rng.integers(0, 4, 3000).astype(np.uint8)
    batch = batch_of(["ACGTACGTAAACGT", "AAAAAAAAAAAAAAAA", "ACACACACACAC"])
    a = locate_all(text, batch, 4)
    b = locate_all(text, batch, 4)
    assert a[1].tolist() == b[1].tolist() and a[2] == b[2]


@pytest.mark.parametrize("m", [1, 2, 5, 20, 31, 32, 33, 64, 65])
def test_edit_planted_small(m):
    rng = np.random.default_rng(m)
    text = rng.integers(0, 4, 600).astype(np.uint8)
    pattern = letters(rng.integers(0, 4, m))
    for at in (10, 200, 400):
        copy = encode_text(mutate(rng, pattern, int(rng.integers(0, 4)), indels=True))
        text[at:at + len(copy)] = copy
    text[300:310] = NEVER
    batch = batch_of([pattern])
    k = min(m, 3)
    hits, starts, cigars = locate_all(text, batch, k)
    # Brute force for the start is quadratic in pure NumPy: check a sample of the hits.
    keep = np.sort(rng.choice(len(hits), min(len(hits), 60), replace=False)) if len(hits) else []
    sub = type(hits)(hits.row[keep], hits.end[keep], hits.distance[keep])
    check_located("edit", text, batch, sub, starts[keep], [cigars[i] for i in keep])


@pytest.mark.parametrize("m", [127, 128, 129, 200])
def test_edit_long_patterns(m):
    rng = np.random.default_rng(m)
    text = rng.integers(0, 4, 3000).astype(np.uint8)
    pattern = letters(rng.integers(0, 4, m))
    for at in (100, 1500):
        copy = encode_text(mutate(rng, pattern, 6, indels=True))
        text[at:at + len(copy)] = copy
    batch = batch_of([pattern], (STRAND_PLUS,))
    hits, starts, cigars = locate_all(text, batch, 10)
    assert len(hits) > 0
    check_located("edit", text, batch, hits, starts, cigars, brute_force_start=False)
    for h in range(len(hits)):
        s, e, d = int(starts[h]), int(hits.end[h]), int(hits.distance[h])
        masks = batch.masks[0, :m]
        # Minimal start: one character further left no longer reaches distance d
        # (nor does any start further left: checked back to e - m - d, beyond which ED > d).
        for earlier in range(max(0, e - m - d), s):
            assert oracle.edit_distance(masks, text[earlier:e]) != d
    # edlib's global distance of the same two strings.
    cross_check = require(edlib, "edlib")
    for h in range(len(hits)):
        s, e, d = int(starts[h]), int(hits.end[h]), int(hits.distance[h])
        assert cross_check.align(pattern, letters(text[s:e]), mode="NW")["editDistance"] == d


def test_edit_iupac_and_never():
    rng = np.random.default_rng(4)
    text = rng.integers(0, 5, 800).astype(np.uint8)
    batch = batch_of(["ACNNGTRY", "NNNN", "GATTACA"])
    hits, starts, cigars = locate_all(text, batch, 2)
    assert len(hits) > 0
    keep = np.sort(rng.choice(len(hits), min(len(hits), 80), replace=False))
    sub = type(hits)(hits.row[keep], hits.end[keep], hits.distance[keep])
    check_located("edit", text, batch, sub, starts[keep], [cigars[i] for i in keep])


@settings(max_examples=60, deadline=None)
@given(pattern=st.text(alphabet="ACGTN", min_size=1, max_size=12),
       text=st.text(alphabet="ACGTN", min_size=1, max_size=40), k=st.integers(0, 5))
def test_property_edit_locate(pattern, text, k):
    codes = encode_text(text)
    batch = batch_of([pattern])
    hits, starts, cigars = locate_all(codes, batch, k)
    check_located("edit", codes, batch, hits, starts, cigars)


def test_errors_and_empty():
    text = encode_text("ACGTACGT")
    batch = batch_of(["ACGT"], (STRAND_PLUS,))
    starts, cigars = locate("edit", text, batch, np.array([], np.int32), np.array([], np.int64),
                            np.array([], np.int16))
    assert starts.size == 0 and cigars == []
    with pytest.raises(ValueError):  # distance 0 is not reachable at end 3
        locate("edit", text, batch, np.array([0]), np.array([3]), np.array([0]))
    with pytest.raises(ValueError):  # window before the text
        locate("hamming", text, batch, np.array([0]), np.array([2]), np.array([0]))
    with pytest.raises(ValueError):
        locate_cpu.locate_ops("levenshtein", text, batch.masks, batch.lengths, np.array([0]),
                              np.array([4]), np.array([0]))
    with pytest.raises(ValueError):
        locate("levenshtein", text, batch, np.array([0]), np.array([4]), np.array([0]))


def test_many_hits_in_one_call():
    """Thousands of hits (all-A text) in one call: starts and CIGARs stay consistent."""
    text = np.zeros(4000, np.uint8)
    text[::37] = 1
    batch = batch_of(["AAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAACAAAAAAAAA"])
    hits, starts, cigars = locate_all(text, batch, 2)
    assert len(hits) > 5000
    for h in range(0, len(hits), 97):
        r, e, d = int(hits.row[h]), int(hits.end[h]), int(hits.distance[h])
        assert oracle.cigar_errors(cigars[h], batch.masks[r, :20], text[starts[h]:e]) == d


@settings(max_examples=200, deadline=None)
@given(source=st.binary(min_size=0, max_size=300),
       spans=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), max_size=40))
def test_gather_spans_packs_each_slice_in_order(source, spans):
    """Spans of every length class, of length 0, and ending at the source's last byte, against slicing."""
    raw = np.frombuffer(source, np.uint8)
    bounds = [(min(a, b, len(raw)), min(max(a, b), len(raw))) for a, b in spans]
    starts = np.array([a for a, _ in bounds], np.int64)
    ends = np.array([b for _, b in bounds], np.int64)
    offsets, data = gather_spans(raw, starts, ends)
    expected = [source[a:b] for a, b in bounds]
    assert offsets.tolist() == np.cumsum([0] + [len(e) for e in expected]).tolist()
    assert data.tobytes() == b"".join(expected)
