"""CPU search kernels (Numba) against the NumPy oracles, edlib, and each other.

Every kernel must return exactly the oracle's set of (row, end, distance)
(kernels/__init__.py and DESIGN.md, "What a hit is").
"""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqsift.alphabet import NEVER, encode_text
from seqsift.kernels import EndHits, driver, edit, find_ends, hamming
from seqsift.pattern_set import STRAND_MINUS, STRAND_PLUS, PatternBatch, PatternSet

import oracle
from cross_check import optional, require

edlib = optional("edlib")

HAMMING_KERNELS = {"scan": hamming.scan_cpu, "pigeonhole": hamming.pigeonhole_cpu}
EDIT_KERNELS = {"myers": edit.myers_cpu}
ORACLES = {"hamming": oracle.hamming_ends, "edit": oracle.edit_ends}
KERNELS = [("hamming", name, f) for name, f in HAMMING_KERNELS.items()] + \
          [("edit", name, f) for name, f in EDIT_KERNELS.items()]
KERNEL_IDS = [f"{metric}-{name}" for metric, name, _ in KERNELS]

LENGTHS = [1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def batch_of(sequences, strands=(STRAND_PLUS, STRAND_MINUS)) -> PatternBatch:
    names = tuple(str(i) for i in range(len(sequences)))
    return PatternSet(names, tuple(sequences)).oriented(range(len(sequences)), strands)


def hit_set(hits: EndHits) -> set[tuple[int, int, int]]:
    return set(zip(hits.row.tolist(), hits.end.tolist(), hits.distance.tolist()))


def check(metric, kernel, text, batch, k, lo=0, hi=None) -> set:
    """Run ``kernel`` and the oracle; they must agree exactly. Returns the hits."""
    text = np.asarray(text, dtype=np.uint8)
    hi = text.shape[0] if hi is None else hi
    got = kernel(text, batch, k, lo, hi)
    assert got.row.dtype == np.int32 and got.end.dtype == np.int64 and got.distance.dtype == np.int16
    assert len(got) == len(hit_set(got)), "a hit was reported twice"
    expected = hit_set(ORACLES[metric](text, batch, k, lo, hi))
    found = hit_set(got)
    assert found == expected, (f"missing {sorted(expected - found)[:5]}, "
                               f"extra {sorted(found - expected)[:5]}")
    return found


def random_text(rng, n, alphabet=4) -> np.ndarray:
    return rng.integers(0, alphabet, n).astype(np.uint8)


def letters(codes) -> str:
    return "".join("ACGTN"[c] for c in codes)


def mutate(rng, seq: str, edits: int, indels: bool) -> str:
    s = list(seq)
    for _ in range(edits):
        x = int(rng.integers(0, len(s)))
        op = int(rng.integers(0, 3)) if indels else 0
        if op == 0:
            s[x] = "ACGT"[int(rng.integers(0, 4))]
        elif op == 1 and len(s) > 1:
            del s[x]
        else:
            s.insert(x, "ACGT"[int(rng.integers(0, 4))])
    return "".join(s)


def planted(rng, m, n=2500, copies=4, edits=2, indels=False, alphabet=4):
    """A random text and a pattern that occurs ``copies`` times in it, mutated."""
    text = random_text(rng, n, alphabet)
    pattern = letters(random_text(rng, m))
    for _ in range(copies):
        copy = mutate(rng, pattern, edits, indels)
        at = int(rng.integers(0, max(1, n - len(copy))))
        text[at:at + len(copy)] = encode_text(copy)[: n - at]
    return text, pattern


# ---------------------------------------------------------------------------
# planted hits, every pattern length of interest
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("m", LENGTHS)
@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_planted_hits_every_length(metric, name, kernel, m):
    rng = np.random.default_rng(m)
    text, pattern = planted(rng, m, edits=min(m, 3), indels=metric == "edit")
    batch = batch_of([pattern, letters(random_text(rng, m))])
    for k in sorted({0, 1, 3, m // 4, m - 1}):
        found = check(metric, kernel, text, batch, k)
        if k >= 3 and m >= 8:
            assert found, "planted copies with <= 3 edits were not found"


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_many_patterns_mixed_lengths(metric, name, kernel):
    """Rows of many lengths in one batch (several key lengths, word and block rows)."""
    rng = np.random.default_rng(7)
    text = random_text(rng, 6000)
    sequences = []
    for i in range(60):
        m = int(rng.choice([8, 12, 20, 24, 40, 70, 100]))
        at = int(rng.integers(0, len(text) - m))
        sequences.append(mutate(rng, letters(text[at:at + m]), int(rng.integers(0, 3)), metric == "edit"))
    batch = batch_of(sequences)
    for k in (0, 2, 3):
        assert check(metric, kernel, text, batch, k)


# ---------------------------------------------------------------------------
# adversarial texts and patterns
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_runs_of_never(metric, name, kernel):
    rng = np.random.default_rng(11)
    text, pattern = planted(rng, 20, n=3000, edits=1, indels=metric == "edit")
    text[100:400] = NEVER
    text[1000:1003] = NEVER
    text[::97] = NEVER
    batch = batch_of([pattern, "N" * 20, "NNNNNACGTNNNNN", "ACGTACGTAC"])
    for k in (0, 2, 5):
        check(metric, kernel, text, batch, k)


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_all_never_text(metric, name, kernel):
    text = np.full(500, NEVER, np.uint8)
    batch = batch_of(["ACGT", "N", "NNNNNNNN"])
    for k in (0, 1, 4):
        found = check(metric, kernel, text, batch, k)
        # Nothing matches N in the text: only rows no longer than k can qualify (all mismatches).
        assert all(batch.lengths[r] <= k for r, _, _ in found)


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_all_a_text(metric, name, kernel):
    """Every window is a hit: many hits per task, and a very skewed seed table."""
    text = np.zeros(3000, np.uint8)
    batch = batch_of(["A" * 20, "A" * 9 + "C" + "A" * 10, "A" * 70, "C" * 20])
    for k in (0, 1, 3):
        check(metric, kernel, text, batch, k)


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_buffer_overflow_is_rerun(metric, name, kernel, monkeypatch):
    """Tasks finding more hits than their first buffer holds are run again: nothing lost."""
    monkeypatch.setattr(driver, "_SLOTS_BUDGET", 1)  # first-pass buffers of 64 slots
    text = np.zeros(5000, np.uint8)
    text[::50] = 1
    batch = batch_of(["AAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"])
    assert len(check(metric, kernel, text, batch, 2)) > 1000


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_tandem_repeats(metric, name, kernel):
    rng = np.random.default_rng(5)
    unit = "ACGTTGCA"
    text = encode_text(unit * 200 + letters(random_text(rng, 300)) + "AC" * 300 + "AAG" * 100)
    batch = batch_of([unit * 3, "ACACACACAC", "AAGAAGAAGAAG", "ACGTTGCAAGGTTGCA", "TGCAACGT" * 10])
    for k in (0, 1, 2, 4):
        check(metric, kernel, text, batch, k)


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_iupac_patterns(metric, name, kernel):
    rng = np.random.default_rng(9)
    text = random_text(rng, 4000)
    patterns = ["ACGRYNNACG", "NGG", "RRRRYYYYRRRRYYYY", "ACGTSWKMBDHVACGT",
                "N" * 12 + "ACGTAC",          # too many expansions for a seed table
                "NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNAC",
                "GATTACA" + "N" * 6 + "GATTACA", "YRYRYRYRYRYRYRYRYRYR"]
    batch = batch_of(patterns)
    for k in (0, 1, 3):
        check(metric, kernel, text, batch, k)


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_palindromic_patterns_hit_on_both_strands(metric, name, kernel):
    rng = np.random.default_rng(13)
    palindromes = ["GAATTC", "ACGCGT", "GCGGCCGC", "TTTTAAAA" * 5]
    text = random_text(rng, 3000)
    for i, p in enumerate(palindromes):
        text[200 + 500 * i: 200 + 500 * i + len(p)] = encode_text(p)
    batch = batch_of(palindromes)
    found = check(metric, kernel, text, batch, 0)
    for i in range(len(palindromes)):
        plus = {(e, d) for r, e, d in found if r == 2 * i}
        minus = {(e, d) for r, e, d in found if r == 2 * i + 1}
        assert plus and plus == minus


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_invalid_pattern_letter_matches_nothing(metric, name, kernel):
    """A mask of 0 (a byte that is no IUPAC letter) matches no text code."""
    masks = np.array([[1, 2, 0, 8], [1, 2, 4, 8]], np.uint8)
    batch = PatternBatch(masks=masks, lengths=np.array([4, 4], np.int32),
                         pattern_index=np.array([0, 1], np.int32), strand=np.zeros(2, np.int8))
    text = encode_text("ACGTACGTTTACATACGT")
    found = check(metric, kernel, text, batch, 0)
    assert all(r == 1 for r, _, _ in found) and found
    check(metric, kernel, text, batch, 1)


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_text_shorter_than_pattern_and_empty_text(metric, name, kernel):
    batch = batch_of(["ACGTACGTACGT", "ACG"])
    for text in ("ACGTAC", "AC", "A", ""):
        for k in (0, 2, 5):
            check(metric, kernel, encode_text(text), batch, k)


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_owned_ranges(metric, name, kernel):
    rng = np.random.default_rng(17)
    text, pattern = planted(rng, 25, n=1500, copies=10, edits=1, indels=metric == "edit")
    batch = batch_of([pattern, pattern[:10]])
    for lo, hi in [(0, 1500), (100, 900), (0, 1), (1499, 1500), (700, 700), (900, 100),
                   (-50, 300), (1200, 5000), (24, 25)]:
        check(metric, kernel, text, batch, 2, lo, hi)


@pytest.mark.parametrize("metric,name,kernel", KERNELS, ids=KERNEL_IDS)
def test_chunks_with_halo_add_up_to_the_whole(metric, name, kernel):
    """How the engine uses the owned range: chunk cores + halos give the whole text's hits."""
    rng = np.random.default_rng(19)
    text, pattern = planted(rng, 30, n=5000, copies=20, edits=2, indels=metric == "edit")
    batch = batch_of([pattern, pattern[5:25], "ACGTNACGT"])
    k = 3
    whole = hit_set(kernel(text, batch, k, 0, len(text)))
    halo = 30 - 1 + (k if metric == "edit" else 0)
    union = set()
    for c0 in range(0, len(text), 700):
        c1 = min(c0 + 700, len(text))
        w0 = max(0, c0 - halo)
        part = kernel(text[w0:c1], batch, k, c0 - w0, c1 - w0)
        union |= {(r, e + w0, d) for r, e, d in hit_set(part)}
    assert union == whole
    assert whole == hit_set(ORACLES[metric](text, batch, k, 0, len(text)))


def test_large_k_and_negative_k():
    rng = np.random.default_rng(23)
    text = random_text(rng, 300)
    batch = batch_of(["ACGTA", "A"])
    for metric, name, kernel in KERNELS:
        check(metric, kernel, text, batch, 10)   # k >= m: every window / end qualifies
        assert len(kernel(text, batch, -1, 0, 300)) == 0


def test_few_rows_long_text_uses_segments():
    """One row over a long text: the text is cut into segments (each restarting m + k early)."""
    rng = np.random.default_rng(29)
    for m in (20, 100):
        text, pattern = planted(rng, m, n=150_000, copies=30, edits=3, indels=True)
        batch = batch_of([pattern], strands=(STRAND_PLUS,))
        check("edit", edit.myers_cpu, text, batch, 4)
        check("hamming", hamming.pigeonhole_cpu, text, batch, 3)
        check("hamming", hamming.scan_cpu, text, batch, 3)


def test_find_ends_dispatch():
    rng = np.random.default_rng(31)
    text, pattern = planted(rng, 20, n=2000)
    batch = batch_of([pattern])
    for algorithm, metric in (("hamming-pigeonhole", "hamming"), ("hamming-scan", "hamming"),
                              ("edit-myers", "edit")):
        got = find_ends(algorithm, "cpu", text, batch, 2, 0, len(text))
        assert hit_set(got) == hit_set(ORACLES[metric](text, batch, 2, 0, len(text)))


def test_find_ends_splits_a_task_the_device_cannot_hold(monkeypatch):
    """A kernel that runs out of device memory on long ranges is run on halves: the same hits."""
    import seqsift.kernels as kernels
    from seqsift.kernels import cuda

    class FakeOutOfMemory(Exception):
        pass

    calls = []

    def kernel_with_little_memory(text, batch, k, lo, hi):
        calls.append(hi - lo)
        if hi - lo > 50_000:
            raise FakeOutOfMemory("out of memory allocating hit buffers")
        return edit.myers_cpu(text, batch, k, lo, hi)

    monkeypatch.setattr(kernels, "_resolve", lambda path: kernel_with_little_memory)
    monkeypatch.setattr(cuda, "is_out_of_memory", lambda err: isinstance(err, FakeOutOfMemory))
    monkeypatch.setattr(cuda, "release_cached_memory", lambda: None)
    monkeypatch.setattr(kernels, "MIN_SPLIT", 1_000)
    rng = np.random.default_rng(5)
    text, pattern = planted(rng, 24, n=300_000)
    batch = batch_of([pattern, pattern[::-1]])
    got = find_ends("edit-myers", "cpu", text, batch, 3, 123, 299_000)
    assert hit_set(got) == hit_set(edit.myers_cpu(text, batch, 3, 123, 299_000))
    assert len(got) > 0 and max(calls) > 50_000 and any(c <= 50_000 for c in calls)
    # Other errors, and ranges too short to split, are not hidden.
    monkeypatch.setattr(kernels, "MIN_SPLIT", 200_000)
    with pytest.raises(FakeOutOfMemory):
        find_ends("edit-myers", "cpu", text, batch, 3, 0, 300_000)


# ---------------------------------------------------------------------------
# property-based: random everything
# ---------------------------------------------------------------------------

pattern_text = st.text(alphabet="ACGTACGTACGTNRY", min_size=1, max_size=80)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), patterns=st.lists(pattern_text, min_size=1, max_size=4),
       k=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_property_all_kernels_match_oracle(data, patterns, k, seed):
    rng = np.random.default_rng(seed)
    n = data.draw(st.integers(0, 600))
    text = random_text(rng, n, alphabet=data.draw(st.sampled_from([2, 4, 5])))
    # Plant a few (possibly mutated) copies so that there is something to find.
    for p in patterns:
        if len(p) <= n and rng.random() < 0.7:
            copy = encode_text(mutate(rng, p.replace("N", "A").replace("R", "G").replace("Y", "C"),
                                      int(rng.integers(0, 3)), True))
            at = int(rng.integers(0, n - len(copy) + 1)) if len(copy) <= n else 0
            text[at:at + len(copy)] = copy[: n - at]
    lo = data.draw(st.integers(-5, n + 5))
    hi = data.draw(st.integers(lo, n + 10))
    batch = batch_of(patterns)
    for metric, name, kernel in KERNELS:
        check(metric, kernel, text, batch, k, lo, hi)


# ---------------------------------------------------------------------------
# edit distance against edlib (ACGT only: edlib knows no IUPAC)
# ---------------------------------------------------------------------------

def edlib_agrees(pattern: str, text_letters: str, ours: set, row: int, k: int):
    """edlib's best distance is our smallest d, and its best ends are our ends with that d."""
    result = require(edlib, "edlib").align(pattern, text_letters, mode="HW", task="locations", k=k)
    ours_row = {(e, d) for r, e, d in ours if r == row}
    if result["editDistance"] < 0:
        assert not ours_row
        return
    best = min(d for _, d in ours_row)
    assert result["editDistance"] == best
    # edlib may also list the empty alignment ending before the text (end -1): not an end here.
    assert {end + 1 for _, end in result["locations"] if end >= 0} == {e for e, d in ours_row if d == best}


@pytest.mark.parametrize("m", LENGTHS)
def test_myers_against_edlib(m):
    rng = np.random.default_rng(100 + m)
    for trial in range(3):
        text, pattern = planted(rng, m, n=3000, copies=3, edits=int(rng.integers(0, 5)), indels=True)
        k = [0, 3, max(1, m // 3)][trial]
        found = hit_set(edit.myers_cpu(text, batch_of([pattern], (STRAND_PLUS,)), k, 0, len(text)))
        edlib_agrees(pattern, letters(text), found, 0, k)


@settings(max_examples=40, deadline=None)
@given(pattern=st.text(alphabet="ACGT", min_size=1, max_size=150),
       text=st.text(alphabet="ACGT", min_size=0, max_size=400), k=st.integers(0, 8))
def test_property_myers_against_edlib(pattern, text, k):
    if not text:
        return
    found = hit_set(edit.myers_cpu(encode_text(text), batch_of([pattern], (STRAND_PLUS,)), k, 0, len(text)))
    edlib_agrees(pattern, text, found, 0, k)


# ---------------------------------------------------------------------------
# real data: E. coli 536 (set SEQSIFT_TEST_DATA to the shared data folder)
# ---------------------------------------------------------------------------

def ecoli_letters() -> str:
    folder = os.environ.get("SEQSIFT_TEST_DATA")
    path = Path(folder) / "ecoli536.fa.gz" if folder else None
    if path is None or not path.is_file():
        pytest.skip("real data not found: set SEQSIFT_TEST_DATA to the folder holding ecoli536.fa.gz")
    with gzip.open(path, "rt") as handle:
        return "".join(line.strip() for line in handle if not line.startswith(">")).upper()


@pytest.fixture(scope="module")
def ecoli():
    letters_ = ecoli_letters()
    return letters_, encode_text(letters_)


def cut_patterns(genome: str, count: int, m: int, seed: int, indels: bool):
    rng = np.random.default_rng(seed)
    patterns, origins = [], []
    for _ in range(count):
        at = int(rng.integers(0, len(genome) - m))
        patterns.append(mutate(rng, genome[at:at + m], int(rng.integers(0, 4)), indels))
        origins.append(at)
    return patterns, origins


def test_ecoli_hamming_pigeonhole(ecoli):
    """200 mutated 20-mers, k = 3, both strands, whole genome.

    The oracle (20 NumPy passes over 4.9 Mbp per row) runs on a sample of 8
    patterns; for all 200 every reported hit is re-verified directly and the
    planted origin (<= 3 substitutions) must be among the hits.
    """
    genome, text = ecoli
    patterns, origins = cut_patterns(genome, 200, 20, seed=1, indels=False)
    batch = batch_of(patterns)
    k = 3
    hits = hamming.pigeonhole_cpu(text, batch, k, 0, len(text))
    found = hit_set(hits)
    assert len(found) == len(hits)
    for i, at in enumerate(origins):
        assert any(r == 2 * i and e == at + 20 for r, e, _ in found), f"pattern {i} not found at its origin"
    match = oracle.MATCH
    for r, e, d in found:
        window = text[e - 20:e]
        assert int((~match[batch.masks[r, :20], window]).sum()) == d <= k
    sample = list(range(0, 200, 25))
    sub = batch_of([patterns[i] for i in sample])
    expected = hit_set(oracle.hamming_ends(text, sub, k, 0, len(text)))
    assert hit_set(hamming.pigeonhole_cpu(text, sub, k, 0, len(text))) == expected


def test_ecoli_edit_myers(ecoli):
    """Myers vs edlib (best distance and its ends) for 200 patterns over the whole
    genome, and vs the oracle for a few patterns on a 200 kbp slice."""
    genome, text = ecoli
    patterns, origins = cut_patterns(genome, 200, 20, seed=2, indels=True)
    k = 3
    found = hit_set(edit.myers_cpu(text, batch_of(patterns, (STRAND_PLUS,)), k, 0, len(text)))
    for i, p in enumerate(patterns):
        edlib_agrees(p, genome, found, i, k)

    lo, hi = 1_000_000, 1_200_000
    slice_patterns, _ = cut_patterns(genome[lo:hi], 4, 20, seed=3, indels=True)
    slice_patterns += [genome[lo + 5000: lo + 5100], genome[lo + 9000: lo + 9030] + "ACGT"]
    check("edit", edit.myers_cpu, text[lo:hi], batch_of(slice_patterns), k)
