"""Shift-Or / Wu-Manber as inclusive scans (Mitani et al. 2017) on the CPU.

* the operators of Definitions 1-4 are associative (Theorems 1 and 3, Lemma 5)
  on random bit vectors;
* the scan formulation (Algorithms 1 and 2) gives the states of plain Shift-Or
  and Wu-Manber (Theorems 2 and 7), and plain Wu-Manber gives the oracle's d(e);
* the CPU paths of exact-shiftor-scan, edit-wm-scan and edit-wm-segmented,
  which emulate the GPU kernels step by step (segments with halos, tiles,
  warps, lanes, alpha characters per lane), give exactly the oracle's hits:
  every pattern length up to 64, k up to 8, every alpha, odd text lengths,
  owned windows, IUPAC patterns, N in the text, raw byte text;
* ``--alphabet bytes`` end to end through the engine and the command line.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import seqsift
from seqsift import kernels
from seqsift.errors import InputError
from seqsift.kernels import shiftor
from seqsift.kernels.shiftor import cpu as so
from seqsift.pattern_set import STRAND_MINUS, STRAND_PLUS, PatternSet

import oracle
import shiftor_scan_reference as paper

LENGTHS = [1, 2, 31, 32, 33, 63, 64]
KS = [0, 1, 2, 3, 8]
IUPAC_LETTERS = "ACGTRYSWKMBDHVN"
IUPAC_BASES = {"A": "A", "C": "C", "G": "G", "T": "T", "R": "AG", "Y": "CT", "S": "CG", "W": "AT", "K": "GT",
               "M": "AC", "B": "CGT", "D": "AGT", "H": "ACT", "V": "ACG", "N": "ACGT"}


def hit_set(hits) -> set[tuple[int, int, int]]:
    return set(zip(hits.row.tolist(), hits.end.tolist(), hits.distance.tolist()))


def word_mask(bits) -> np.uint64:
    return np.uint64(so.low_bits(bits))  # (a Numba function called from Python returns an int)


def dagger(*args):
    u, x = paper.dagger(*args)
    return np.int64(u), np.uint64(x)  # back to NumPy words (Numba returns Python ints)


def uplus(*args):
    return tuple(np.uint64(v) for v in paper.uplus(*args))


def ddagger(*args):
    u, x, y = paper.ddagger(*args)
    return np.int64(u), np.uint64(x), np.uint64(y)


def random_words(rng, count, bits):
    return (rng.integers(0, 1 << 62, count, dtype=np.uint64) * np.uint64(4)
            + rng.integers(0, 4, count, dtype=np.uint64)) & word_mask(bits)


def dna_case(rng, m, n, copies=6, edits=2, iupac=True, never=0.01):
    """Random DNA codes (some N), and two patterns copied from it with a few changes."""
    text = rng.integers(0, 4, n).astype(np.uint8)
    text[rng.random(n) < never] = 4
    sequences = []
    for _ in range(2):
        start = int(rng.integers(0, n - m))
        letters = ["ACGT"[c] if c < 4 else "A" for c in text[start:start + m]]
        for j in rng.integers(0, m, int(rng.integers(0, edits + 1))):
            letters[j] = IUPAC_LETTERS[int(rng.integers(0, 15 if iupac else 4))]
        sequences.append("".join(letters))
    # more copies: the first of each pattern exact (IUPAC codes resolved to a base they
    # match), the others with an insertion or a deletion half of the time
    for copy in range(copies):
        pattern = sequences[copy % 2]
        codes = ["ACGT".index(IUPAC_BASES[c][int(rng.integers(0, len(IUPAC_BASES[c])))]) for c in pattern]
        if copy >= 2 and m > 2 and rng.random() < 0.5:
            j = int(rng.integers(0, m))
            codes = codes[:j] + codes[j + 1:] if rng.random() < 0.5 else codes[:j] + [int(rng.integers(0, 4))] + codes[j:]
        at = int(rng.integers(0, n - len(codes)))
        text[at:at + len(codes)] = codes
    return text, PatternSet(("p0", "p1"), tuple(sequences)).oriented(range(2), (STRAND_PLUS, STRAND_MINUS))


def byte_case(rng, m, n, sigma=64):
    """Random text over ``sigma`` printable bytes, two patterns copied from it (one changed)."""
    symbols = np.frombuffer(bytes(range(48, 48 + sigma)), dtype=np.uint8)
    text = symbols[rng.integers(0, sigma, n)]
    sequences = []
    for i in range(2):
        start = int(rng.integers(0, n - m))
        piece = bytearray(text[start:start + m].tobytes())
        if i == 1 and m > 1:
            piece[int(rng.integers(0, m))] = int(symbols[int(rng.integers(0, sigma))])
        sequences.append(piece.decode("latin-1"))
        for _ in range(3):
            at = int(rng.integers(0, n - m))
            text[at:at + m] = np.frombuffer(bytes(piece), dtype=np.uint8)
    patterns = PatternSet(("b0", "b1"), tuple(sequences), alphabet="bytes")
    return text, patterns.oriented(range(2), (STRAND_PLUS,))


# ---------------------------------------------------------------------------
# The operators
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("bits", [32, 64])
def test_dagger_is_associative(bits):
    rng = np.random.default_rng(bits)
    wmask = word_mask(bits)
    xs = random_words(rng, 3000, bits)
    us = rng.integers(0, 80, 3000)
    for i in range(1000):
        (u1, u2, u3), (x1, x2, x3) = us[3 * i:3 * i + 3], xs[3 * i:3 * i + 3]
        left = dagger(*dagger(u1, x1, u2, x2, wmask), u3, x3, wmask)
        right = dagger(u1, x1, *dagger(u2, x2, u3, x3, wmask), wmask)
        assert left == right
    # <0, 0> is its identity
    assert dagger(0, np.uint64(0), 5, xs[0], wmask) == (5, xs[0])


@pytest.mark.parametrize("bits", [32, 64])
def test_uplus_and_double_dagger_are_associative(bits):
    rng = np.random.default_rng(100 + bits)
    wmask = word_mask(bits)
    xs, ys = random_words(rng, 3000, bits), random_words(rng, 3000, bits)
    us = rng.integers(0, 80, 3000)
    for i in range(1000):
        a, b, c = (3 * i, 3 * i + 1, 3 * i + 2)
        # Lemma 5: (+) is associative
        assert (uplus(*uplus(xs[a], ys[a], xs[b], ys[b]), xs[c], ys[c])
                == uplus(xs[a], ys[a], *uplus(xs[b], ys[b], xs[c], ys[c])))
        # Theorem 3: double-dagger is associative
        left = ddagger(*ddagger(us[a], xs[a], ys[a], us[b], xs[b], ys[b], wmask), us[c], xs[c], ys[c], wmask)
        right = ddagger(us[a], xs[a], ys[a], *ddagger(us[b], xs[b], ys[b], us[c], xs[c], ys[c], wmask), wmask)
        assert left == right


def test_the_rewrite_of_or_and_and_into_uplus():
    """Theorem 4: a scan mixing | and & equals the y of the (+) scan with <0, a> / <~a, 0>."""
    rng = np.random.default_rng(7)
    values = random_words(rng, 200, 64)
    ops = rng.integers(0, 2, 200)
    plain = values[0]
    pair = (np.uint64(0), values[0])
    for value, op in zip(values[1:], ops[1:]):
        plain = plain | value if op else plain & value
        pair = uplus(*pair, np.uint64(0), value) if op else uplus(*pair, ~value, np.uint64(0))
        assert pair[1] == plain


# ---------------------------------------------------------------------------
# The scan formulation against the plain algorithms and the oracle
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("m", LENGTHS)
@pytest.mark.parametrize("bits", [32, 64])
def test_algorithm_1_gives_the_shift_or_states(m, bits):
    if m > bits:
        pytest.skip("the pattern does not fit the word")
    rng = np.random.default_rng(m)
    text, batch = dna_case(rng, m, 700)
    wmask = word_mask(bits)
    table = so.mask_tables(batch.masks, batch.lengths)[0]
    plain = paper.shiftor_states(text, table, wmask)
    np.testing.assert_array_equal(paper.shiftor_scan(text, table, wmask), plain)  # Theorem 2
    low = word_mask(m)
    np.testing.assert_array_equal(paper.shiftor_window_scan(text, table, m, wmask) & low, plain & low)  # Section 4.3
    ends = np.flatnonzero((plain >> np.uint64(m - 1)) & np.uint64(1) == 0) + 1
    expected = oracle.edit_ends(text, batch, 0, 0, len(text))
    assert set(ends.tolist()) == set(expected.end[expected.row == 0].tolist())


@pytest.mark.parametrize("m,k", [(m, k) for m in LENGTHS for k in KS if k < m])
def test_algorithm_2_gives_the_wu_manber_states_and_the_oracle(m, k):
    rng = np.random.default_rng(10 * m + k)
    text, batch = dna_case(rng, m, 500)
    table = so.mask_tables(batch.masks, batch.lengths)[1]
    plain = paper.wu_manber_states(text, table, k, so.ALL_ONES)
    np.testing.assert_array_equal(paper.wu_manber_scan(text, table, k), plain)  # Theorem 7
    distances = paper.wu_manber_distances(text, table, m, k)
    expected = oracle.edit_ends(text, batch, k, 0, len(text))
    got = {(1, e + 1, int(d)) for e, d in enumerate(distances) if d <= k}
    assert got == {h for h in hit_set(expected) if h[0] == 1}


# ---------------------------------------------------------------------------
# The three algorithms' CPU paths (the GPU formulation) against the oracle
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("m", LENGTHS)
def test_exact_shiftor_scan_every_alpha_and_word(m):
    rng = np.random.default_rng(1000 + m)
    text, batch = dna_case(rng, m, 9_001, copies=10)
    lo, hi = 137, 8_990
    expected = hit_set(oracle.edit_ends(text, batch, 0, lo, hi))
    assert expected == hit_set(oracle.hamming_ends(text, batch, 0, lo, hi))
    assert expected
    for alpha in shiftor.EXACT_ALPHAS:
        for bits in {shiftor.word_bits(m), 64}:
            for warps, tiles in ((8, None), (1, 1), (2, 3)):
                got = shiftor.exact_scan_cpu(text, batch, 0, lo, hi, alpha=alpha, bits=bits, warps=warps,
                                             tiles_per_task=tiles)
                assert hit_set(got) == expected, (alpha, bits, warps, tiles)


@pytest.mark.parametrize("m,k", [(m, k) for m in LENGTHS for k in KS if k < m])
def test_edit_wm_scan_every_alpha(m, k):
    rng = np.random.default_rng(2000 + 10 * m + k)
    text, batch = dna_case(rng, m, 6_007)
    lo, hi = 3, 6_001
    expected = hit_set(oracle.edit_ends(text, batch, k, lo, hi))
    assert expected
    for alpha in shiftor.WM_ALPHAS:
        # w = 64 gives the wildcard extension to m up to 65 - alpha; blocks of 8 and 2
        # warps add Table 1's block-level scan, which the GPU leaves out.
        for bits in sorted({shiftor.word_bits(m), 64}):
            for warps, tiles in ((1, None), (8, None), (2, 1)):
                got = shiftor.wm_scan_cpu(text, batch, k, lo, hi, alpha=alpha, bits=bits, warps=warps,
                                          tiles_per_task=tiles)
                assert hit_set(got) == expected, (alpha, bits, warps, tiles)


@pytest.mark.parametrize("m,k", [(m, k) for m in LENGTHS for k in KS if k < m])
def test_edit_wm_segmented_every_alpha_and_segment(m, k):
    rng = np.random.default_rng(3000 + 10 * m + k)
    text, batch = dna_case(rng, m, 4_099)
    lo, hi = 517, 4_099
    expected = hit_set(oracle.edit_ends(text, batch, k, lo, hi))
    for alpha in shiftor.SEGMENTED_ALPHAS:
        for segment in (8 * alpha, 16 * alpha + alpha, None):  # GBPR's 8, odd multiples, the CPU default
            got = shiftor.segmented_cpu(text, batch, k, lo, hi, alpha=alpha, segment=segment)
            assert hit_set(got) == expected, (alpha, segment)


@pytest.mark.parametrize("m", [1, 5, 31, 33, 64])
def test_byte_text(m):
    rng = np.random.default_rng(4000 + m)
    text, batch = byte_case(rng, m, 7_777)
    lo, hi = 11, 7_770
    for k in (0, 1, 3):
        if k >= m:
            continue
        expected = hit_set(oracle.edit_ends(text, batch, k, lo, hi))
        assert expected
        assert hit_set(shiftor.wm_scan_cpu(text, batch, k, lo, hi)) == expected
        assert hit_set(shiftor.wm_scan_cpu(text, batch, k, lo, hi, alpha=4, warps=2, tiles_per_task=1)) == expected
        assert hit_set(shiftor.segmented_cpu(text, batch, k, lo, hi, segment=8)) == expected
        if k == 0:
            assert expected == hit_set(oracle.hamming_ends(text, batch, 0, lo, hi))
            for alpha in shiftor.EXACT_ALPHAS:
                assert hit_set(shiftor.exact_scan_cpu(text, batch, 0, lo, hi, alpha=alpha)) == expected


def test_byte_text_is_case_sensitive_and_n_is_an_ordinary_byte():
    text = np.frombuffer(b"xxACGTnnNNacgtACGTNN", dtype=np.uint8)
    batch = PatternSet(("a", "b"), ("ACGT", "NN"), alphabet="bytes").oriented(range(2), (STRAND_PLUS,))
    got = hit_set(shiftor.exact_scan_cpu(text, batch, 0, 0, len(text)))
    assert got == {(0, 6, 0), (0, 18, 0), (1, 10, 0), (1, 20, 0)}
    assert got == hit_set(oracle.hamming_ends(text, batch, 0, 0, len(text)))


def test_reference_n_never_matches_not_even_a_pattern_n():
    text = np.array([4] * 40 + [0, 1, 2, 3] + [4] * 37, dtype=np.uint8)  # N... ACGT N...
    batch = PatternSet(("n", "a"), ("NNNN", "ANNT")).oriented(range(2), (STRAND_PLUS,))
    for k in (0, 1, 2):
        expected = hit_set(oracle.edit_ends(text, batch, k, 0, len(text)))
        assert hit_set(shiftor.wm_scan_cpu(text, batch, k, 0, len(text))) == expected
        assert hit_set(shiftor.segmented_cpu(text, batch, k, 0, len(text), segment=8)) == expected
    assert hit_set(shiftor.exact_scan_cpu(text, batch, 0, 0, len(text))) == {(0, 44, 0), (1, 44, 0)}


def test_many_rows_and_zero_length_rows():
    rng = np.random.default_rng(5)
    text = rng.integers(0, 4, 3_333).astype(np.uint8)
    sequences = tuple("".join("ACGT"[c] for c in text[s:s + int(rng.integers(8, 40))])
                      for s in rng.integers(0, 3_200, 60))
    batch = PatternSet(tuple(map(str, range(60))), sequences).oriented(range(60), (STRAND_PLUS, STRAND_MINUS))
    expected = hit_set(oracle.edit_ends(text, batch, 2, 100, 3_300))
    assert hit_set(shiftor.wm_scan_cpu(text, batch, 2, 100, 3_300)) == expected
    assert hit_set(shiftor.segmented_cpu(text, batch, 2, 100, 3_300)) == expected
    assert hit_set(shiftor.exact_scan_cpu(text, batch, 0, 100, 3_300)) == hit_set(
        oracle.edit_ends(text, batch, 0, 100, 3_300))
    # an empty owned range, and limits
    assert len(shiftor.wm_scan_cpu(text, batch, 2, 50, 50)) == 0
    with pytest.raises(ValueError, match="k from 0 to 0"):
        shiftor.exact_scan_cpu(text, batch, 1, 0, 100)
    with pytest.raises(ValueError, match="up to 64"):
        shiftor.wm_scan_cpu(text, PatternSet(("x",), ("A" * 65,)).oriented(range(1), (0,)), 1, 0, 100)


def test_registry_entries():
    exact = kernels.ALGORITHMS["exact-shiftor-scan"]
    assert exact.serves("hamming") and exact.serves("edit") and exact.admits("cuda", 64, 0, "bytes")
    assert not exact.admits("cpu", 20, 1) and not exact.admits("cpu", 65, 0)
    assert kernels.ALGORITHMS["edit-wm-scan"].admits("cpu", 64, 8, "bytes")
    assert kernels.ALGORITHMS["edit-wm-segmented"].admits("cuda", 64, 8)
    assert not kernels.ALGORITHMS["edit-myers"].admits("cpu", 20, 2, "bytes")
    for metric in ("hamming", "edit"):
        assert kernels.choose_algorithm(metric, "cpu", "exact-shiftor-scan", m_max=20, k=0)[0] == "exact-shiftor-scan"
    assert kernels.choose_algorithm("edit", "cpu", m_max=20, k=2, alphabet="bytes")[0] in (
        "edit-wm-scan", "edit-wm-segmented")
    with pytest.raises(ValueError, match="those that do: exact-shiftor-scan, edit-wm-scan, edit-wm-segmented"):
        kernels.choose_algorithm("edit", "cpu", "edit-myers", m_max=20, k=2, alphabet="bytes")
    with pytest.raises(ValueError, match="no algorithm searches --alphabet bytes"):
        kernels.choose_algorithm("hamming", "cpu", m_max=20, k=2, alphabet="bytes")


def test_byte_patterns_have_no_minus_strand():
    with pytest.raises(ValueError, match="reverse complement"):
        PatternSet(("a",), ("abc",), alphabet="bytes").oriented(range(1), (STRAND_PLUS, STRAND_MINUS))


# ---------------------------------------------------------------------------
# --alphabet bytes through the engine and the command line
# ---------------------------------------------------------------------------

CORPUS = [("doc1", "The quick brown Fox jumps over the lazy dog; the QUICK brown fox, the quick brown cat."),
          ("doc2", "nnnnNNNN the quikc brown fox ACGTacgt thequick brownfox " * 3)]
BYTE_PATTERNS = [("qb", "quick brown"), ("fox", "fox"), ("the", "the q"), ("n", "NNnn")]


def write_corpus(path):
    with open(path, "w") as handle:
        for name, text in CORPUS:
            handle.write(f">{name} some text\n")
            for i in range(0, len(text), 17):
                handle.write(text[i:i + 17] + "\n")
    return str(path)


def expected_byte_ends(k: int) -> pd.DataFrame:
    """(record, end, pattern, distance) from the oracle on each record's raw bytes."""
    batch = PatternSet(tuple(n for n, _ in BYTE_PATTERNS), tuple(s for _, s in BYTE_PATTERNS),
                       alphabet="bytes").oriented(range(len(BYTE_PATTERNS)), (STRAND_PLUS,))
    rows = []
    for name, text in CORPUS:
        codes = np.frombuffer(text.encode(), dtype=np.uint8)
        hits = oracle.edit_ends(codes, batch, k, 0, len(codes)).sorted()
        for r, e, d in zip(hits.row, hits.end, hits.distance):
            rows.append((name, int(e), BYTE_PATTERNS[int(r)][0], int(d)))
    frame = pd.DataFrame(rows, columns=["record", "end", "pattern", "distance"])
    order = {n: i for i, (n, _) in enumerate(BYTE_PATTERNS)}
    frame["order"] = frame["pattern"].map(order)
    return frame.sort_values(["record", "end", "order"]).drop(columns="order").reset_index(drop=True)


@pytest.mark.parametrize("algorithm,k", [("edit-wm-scan", 2), ("edit-wm-segmented", 1), ("exact-shiftor-scan", 0),
                                         ("auto", 1)])
def test_engine_alphabet_bytes_ends(tmp_path, client, algorithm, k):
    reference = write_corpus(tmp_path / "corpus.fa")
    expected = expected_byte_ends(k)
    assert len(expected) > 5
    for chunk_size in (20, 33, 1_000):
        got = seqsift.search(reference, BYTE_PATTERNS, k, metric="edit", mode="ends", alphabet="bytes",
                             algorithm=algorithm, client=client, chunk_size=chunk_size)
        assert set(got["strand"]) == {"+"}
        got = got[["record", "end", "pattern", "distance"]].astype({"end": "int64", "distance": "int64"})
        pd.testing.assert_frame_equal(got.reset_index(drop=True), expected, check_dtype=False)


def test_engine_alphabet_bytes_best_and_hamming(tmp_path, client):
    reference = write_corpus(tmp_path / "corpus.fa")
    texts = dict(CORPUS)
    best = seqsift.search(reference, BYTE_PATTERNS, 2, metric="edit", alphabet="bytes", strand="both",
                          client=client, chunk_size=25)
    ends = expected_byte_ends(2)
    assert len(best) > 0
    patterns = dict(BYTE_PATTERNS)
    for row in best.itertuples():
        # the locus is the best end of its run, and its alignment is consistent
        assert row.aligned == texts[row.record][row.start:row.end]
        masks = np.frombuffer(patterns[row.pattern].encode(), dtype=np.uint8)
        segment = np.frombuffer(row.aligned.encode(), dtype=np.uint8)
        assert oracle.cigar_errors(row.cigar, masks, segment, match=oracle.BYTE_MATCH) == row.distance
        mine = ends[(ends.record == row.record) & (ends.pattern == row.pattern)]
        assert int(mine[mine.end == row.end].distance.iloc[0]) == row.distance
    exact = seqsift.search(reference, BYTE_PATTERNS, 0, metric="hamming", alphabet="bytes", client=client)
    zero = ends[ends.distance == 0]
    assert sorted(zip(exact.record, exact.end, exact.pattern)) == sorted(zip(zero.record, zero.end, zero.pattern))
    assert (exact.end - exact.start == exact.pattern.map(lambda p: len(patterns[p]))).all()


def test_engine_alphabet_bytes_refusals(tmp_path, client):
    reference = write_corpus(tmp_path / "corpus.fa")
    with pytest.raises(InputError, match=r"\+ strand only"):
        seqsift.search(reference, BYTE_PATTERNS, 1, metric="edit", alphabet="bytes", strand="-", client=client)
    with pytest.raises(InputError, match="does not search --alphabet bytes"):
        seqsift.search(reference, BYTE_PATTERNS, 1, metric="edit", alphabet="bytes", algorithm="edit-myers",
                       client=client)
    with pytest.raises(InputError, match="unknown alphabet"):
        seqsift.search(reference, BYTE_PATTERNS, 1, metric="edit", alphabet="protein", client=client)


@pytest.mark.parametrize("algorithm,metric,k", [("edit-wm-scan", "edit", 2), ("edit-wm-segmented", "edit", 1),
                                                ("exact-shiftor-scan", "hamming", 0),
                                                ("exact-shiftor-scan", "edit", 0)])
def test_engine_dna_contract(tmp_path, client, algorithm, metric, k):
    from naive_search import expected_rows
    from test_engine import adversarial_genome, engine_frame, write_fasta

    records, patterns = adversarial_genome(3)
    reference = write_fasta(tmp_path / "ref.fa", records)
    for mode in ("best", "ends"):
        expected = expected_rows(records, patterns, k, metric, mode)
        got = seqsift.search(reference, patterns, k, metric=metric, mode=mode, client=client, chunk_size=97,
                             algorithm=algorithm)
        pd.testing.assert_frame_equal(engine_frame(got), engine_frame(expected), check_dtype=False)


def test_cli_alphabet_bytes(tmp_path):
    from test_cli import run_cli

    reference = write_corpus(tmp_path / "corpus.fa")
    out = tmp_path / "hits.tsv"
    result = run_cli("search", reference, "-p", "quick brown", "-p", "fox", "-k", "1", "--metric", "edit",
                     "--alphabet", "bytes", "--mode", "ends", "-o", out, "--workers", "1", "--backend", "cpu")
    assert result.returncode == 0, result.stderr
    got = pd.read_csv(out, sep="\t").rename(columns={"#record": "record"})
    expected = expected_byte_ends(1)
    expected = expected[expected.pattern.isin(["qb", "fox"])].replace({"pattern": {"qb": "cli_1", "fox": "cli_2"}})
    assert got[["record", "end", "pattern", "distance"]].values.tolist() == expected.values.tolist()
    assert set(got["strand"]) == {"+"}
    refused = run_cli("search", reference, "-p", "fox", "-k", "1", "--metric", "edit", "--alphabet", "bytes",
                      "--algorithm", "edit-myers", "--workers", "1", "--backend", "cpu")
    assert refused.returncode == 2
    assert refused.stderr.strip().count("\n") == 0 and "exact-shiftor-scan, edit-wm-scan" in refused.stderr
