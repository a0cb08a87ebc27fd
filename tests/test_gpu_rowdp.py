"""edit-rowdp, edit-rowdp-shfl (and edit-myers) on the GPU against the CPU backend and the oracle (pytest -m gpu).

The references: the oracle where it is quick (m <= 150 on short texts), the
CPU backend's edit-myers everywhere, and rowdp's own Numba emulation
(the same recurrence on the CPU) on the small inputs.
"""
from __future__ import annotations

import gzip
import random

import pytest

from seqsift.alphabet import encode_text
from seqsift.kernels import find_ends
from seqsift.kernels import rowdp
from seqsift.kernels.rowdp import cuda as rowdp_cuda
from seqsift.pattern_set import PatternSet

import oracle
from test_engine import mutate

pytestmark = pytest.mark.gpu

GPU_ALGORITHMS = ["edit-rowdp", "edit-rowdp-shfl", "edit-myers"]


def hits_set(hits):
    return set(zip(hits.row.tolist(), hits.end.tolist(), hits.distance.tolist()))


def random_dna(rng, n):
    return "".join(rng.choice("ACGT") for _ in range(n))


def batch_of(sequences):
    return PatternSet(tuple(f"p{i}" for i in range(len(sequences))), tuple(sequences)).oriented(
        range(len(sequences)), (0, 1))


def check(algorithm, text: str, sequences: list[str], k: int, lo: int = 0, hi: int | None = None,
          use_oracle=True, use_emulation=True, **kernel_options):
    codes = encode_text(text)
    hi = len(codes) if hi is None else hi
    batch = batch_of(sequences)
    if kernel_options:
        launcher = rowdp.rowdp_shfl if algorithm == "edit-rowdp-shfl" else rowdp.rowdp_global
        gpu = launcher(codes, batch, k, lo, hi, **kernel_options)
    else:
        gpu = find_ends(algorithm, "cuda", codes, batch, k, lo, hi)
    got = hits_set(gpu)
    assert got == hits_set(find_ends("edit-myers", "cpu", codes, batch, k, lo, hi)), "CPU backend (edit-myers)"
    if use_emulation:
        assert got == hits_set(rowdp.rowdp_cpu(codes, batch, k, lo, hi)), "rowdp's Numba emulation"
    if use_oracle:
        assert got == hits_set(oracle.edit_ends(codes, batch, k, lo, hi)), "oracle"
    return gpu


@pytest.mark.parametrize("algorithm", GPU_ALGORITHMS)
@pytest.mark.parametrize("m", [1, 31, 32, 33, 64, 65, 150, 1000])
def test_planted_edits_every_length(algorithm, m):
    rng = random.Random(m)
    pattern = random_dna(rng, m)
    k = min(m - 1, max(0, m // 10))
    parts = []
    for _ in range(6):
        parts.append(random_dna(rng, rng.randint(50, 400)))
        parts.append(mutate(rng, pattern, rng.randint(0, k)))
    hits = check(algorithm, "".join(parts), [pattern], k, use_oracle=m <= 150)
    assert len(hits) > 0


@pytest.mark.parametrize("algorithm", GPU_ALGORITHMS)
@pytest.mark.parametrize("m", [1, 3, 12, 31, 32, 33, 40, 64, 65, 150])
def test_k_zero_and_m_minus_one(algorithm, m):
    rng = random.Random(m + 7)
    text = random_dna(rng, 2_000)
    pattern = random_dna(rng, m)
    check(algorithm, text, [pattern], 0)
    check(algorithm, text, [pattern], m - 1)


@pytest.mark.parametrize("algorithm", GPU_ALGORITHMS)
def test_m_1000_k_999(algorithm):
    rng = random.Random(999)
    pattern = random_dna(rng, 1000)
    text = random_dna(rng, 900) + mutate(rng, pattern, 60) + random_dna(rng, 3_000)
    check(algorithm, text, [pattern], 999, use_oracle=False)


@pytest.mark.parametrize("algorithm", GPU_ALGORITHMS)
def test_adversarial_text(algorithm):
    rng = random.Random(11)
    text = ("N" * 500 + random_dna(rng, 300) + "ACAC" * 200 + "A" * 700 + "nnnnRYKM" + random_dna(rng, 300).lower()
            + "NANANANA" * 20)
    patterns = ["ACACACAC", "AAAAAAAAAAAA", "NNNNACGT", "RYACGTAC", random_dna(rng, 70), "A", "ACGTXACG",
                "WSKMBDHV"]
    for k in (0, 2, 5):
        check(algorithm, text, patterns, k)


@pytest.mark.parametrize("algorithm", GPU_ALGORITHMS)
def test_many_patterns_owned_window_and_boundaries(algorithm):
    rng = random.Random(3)
    text = random_dna(rng, 50_000)
    patterns = [text[i:i + rng.randint(15, 40)] for i in rng.sample(range(49_000), 300)]
    patterns = [mutate(rng, p, 2) for p in patterns]
    check(algorithm, text, patterns, 3, lo=1_234, hi=41_000, use_oracle=False, use_emulation=False)


@pytest.mark.parametrize("algorithm", ["edit-rowdp", "edit-rowdp-shfl"])
@pytest.mark.parametrize("columns", rowdp.COLUMNS)
def test_every_tile_width(algorithm, columns):
    """Each rowdp_shfl_r<R> kernel (and rowdp_global with R columns per thread) over many tile borders."""
    rng = random.Random(columns)
    patterns = [random_dna(rng, m) for m in (5, 16, 33, 90)]
    parts = []
    for _ in range(40):
        parts.append(random_dna(rng, rng.randint(10, 300)))
        parts.append(mutate(rng, rng.choice(patterns), rng.randint(0, 4)))
    check(algorithm, "".join(parts), patterns, 4, lo=7, columns=columns)


def test_global_kernel_in_pieces_and_row_chunks(monkeypatch):
    """rowdp_global's launcher split into many text pieces (one X matrix each) and row chunks."""
    monkeypatch.setattr(rowdp_cuda, "SCRATCH_BYTES", 64 * 1024)
    monkeypatch.setattr(rowdp_cuda, "PIECE_CHARS", 3_000)
    rng = random.Random(21)
    text = random_dna(rng, 20_000)
    patterns = [mutate(rng, text[s:s + rng.randint(12, 60)], 2) for s in rng.sample(range(19_900), 30)]
    check("edit-rowdp", text, patterns, 3, lo=11, hi=19_990, use_oracle=False)


@pytest.mark.parametrize("algorithm", ["edit-rowdp", "edit-rowdp-shfl"])
def test_more_hits_than_slots_and_rows_past_the_tile(algorithm):
    """k = m - 1 on 40 rows (every end is a hit: the hit buffers overflow and the launch is rerun),
    a row too long for a tile (handed to edit-myers) and an empty row."""
    rng = random.Random(22)
    text = random_dna(rng, 5_000)
    long_pattern = mutate(rng, text[1_000:3_200], 5)
    check(algorithm, text, [random_dna(rng, 3) for _ in range(20)], 2, use_oracle=False)
    check(algorithm, text, [long_pattern, "ACGTAC", ""], 5, use_oracle=False, use_emulation=False)


def read_fasta(path) -> str:
    with gzip.open(path, "rt") as handle:
        return "".join(line.strip() for line in handle if not line.startswith(">"))


@pytest.fixture(scope="module")
def ecoli_job(real_data):
    """E. coli 536 and 500 patterns cut from it with up to 3 edits (both strands), k = 3,
    with the CPU backend's hits (computed once for both algorithms)."""
    letters = read_fasta(real_data / "ecoli536.fa.gz")
    genome = encode_text(letters)
    rng = random.Random(5)
    patterns = [mutate(rng, letters[s:s + rng.randint(20, 32)], rng.randint(0, 3))
                for s in rng.sample(range(len(letters) - 40), 500)]
    batch = batch_of(patterns)
    return genome, batch, 3, hits_set(find_ends("edit-myers", "cpu", genome, batch, 3, 0, genome.size))


@pytest.fixture(scope="module")
def lambda_job(real_data):
    """The lambda genome and the first 1,000 reads of lambda_reads_1.fq.gz (both strands), k = 5."""
    genome = encode_text(read_fasta(real_data / "lambda_phage.fa.gz"))
    reads = []
    with gzip.open(real_data / "lambda_reads_1.fq.gz", "rt") as handle:
        for i, line in enumerate(handle):
            if i % 4 == 1:
                reads.append(line.strip())
            if len(reads) == 1_000:
                break
    batch = batch_of(reads)
    return genome, batch, 5, hits_set(find_ends("edit-myers", "cpu", genome, batch, 5, 0, genome.size))


@pytest.mark.parametrize("algorithm", ["edit-rowdp", "edit-rowdp-shfl"])
def test_real_ecoli_500_patterns(ecoli_job, algorithm):
    genome, batch, k, expected = ecoli_job
    got = hits_set(find_ends(algorithm, "cuda", genome, batch, k, 0, genome.size))
    assert got == expected
    assert len({row // 2 for row, _, _ in got}) > 400


@pytest.mark.parametrize("algorithm", ["edit-rowdp", "edit-rowdp-shfl"])
def test_lambda_reads_against_lambda(lambda_job, algorithm):
    genome, batch, k, expected = lambda_job
    got = hits_set(find_ends(algorithm, "cuda", genome, batch, k, 0, genome.size))
    assert got == expected
    assert len({row // 2 for row, _, _ in got}) > 900
