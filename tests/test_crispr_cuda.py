"""The CUDA kernel of seqsift.kernels.crispr: on the GPU (``-m gpu``) and, here, its source run on the host.

``crispr.cu`` is plain C++ apart from a few CUDA words, so the host test
compiles it with g++ and a shim (one block of one thread; atomics as plain
increments) and runs the same launches as ``kernels/crispr/cuda.py`` against
the CPU kernel (tests/test_cu_compile.py compiles it with nvcc). The GPU tests compare ``find_sites("cuda", ...)`` with
``find_sites("cpu", ...)`` and run a whole job on the CUDA backend.
"""
from __future__ import annotations

import ctypes
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from seqsift.alphabet import encode_text, pattern_masks
from seqsift.kernels.crispr import GuideRows, SiteHits, find_sites, orient_guides

SOURCE = Path(__file__).parents[1] / "src" / "seqsift" / "kernels" / "crispr" / "crispr.cu"

SHIM = r"""
#include <algorithm>
#include <cstdint>
struct grid_index { unsigned x, y, z; };
static grid_index blockIdx, threadIdx, gridDim, blockDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads()
using std::min;
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) { unsigned long long o = *a; *a += v; return o; }
static inline int atomicOr(int* a, int v) { int o = *a; *a |= v; return o; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
#define __ballot_sync(mask, predicate) ((predicate) ? 1u : 0u)
template <class T> static inline T __shfl_sync(unsigned, T value, int) { return value; }
extern "C" void host_block(unsigned y, unsigned tiles) {
    blockIdx = {0, y, 0}; threadIdx = {0, 0, 0}; gridDim = {1, tiles, 1}; blockDim = {1, 1, 1};
}
"""


def sites_set(hits: SiteHits, rows: GuideRows) -> set[tuple]:
    return {(int(rows.guide_index[r]), int(rows.strand[r]), int(s), int(n), int(t), int(z), int(a), int(m))
            for r, s, n, t, z, a, m in zip(hits.row, hits.start, hits.length, hits.bulge_type, hits.bulge_size,
                                           hits.bulge_at, hits.mismatches)}


def random_job(seed: int, length: int = 20, guides: int = 40, size: int = 20_000, iupac: bool = True):
    rng = random.Random(seed)
    text = "".join(rng.choice("ACGTACGTACGTN") for _ in range(size))
    chosen = []
    for g in range(guides):
        start = rng.randrange(size - length)
        guide = "".join(c if c != "N" else "A" for c in text[start:start + length])
        if iupac and g % 5 == 0:
            guide = guide[:3] + "R" + guide[4:]
        chosen.append(guide)
    return text, chosen


@pytest.fixture(scope="module")
def host_kernels(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not on PATH")
    folder = tmp_path_factory.mktemp("crispr_cu")
    (folder / "shim.h").write_text(SHIM)
    library = folder / "crispr_host.so"
    result = subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-include", str(folder / "shim.h"), "-x", "c++",
                             str(SOURCE), "-o", str(library)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return ctypes.CDLL(str(library))


def host_find_sites(lib, text: np.ndarray, rows: GuideRows, dna_bulge: int, rna_bulge: int, lo: int, hi: int):
    """cuda.py's launch sequence, with crispr.cu's kernels run on the host."""
    from seqsift.kernels.crispr.cuda import ROWS_PER_BLOCK, guide_words

    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    i64, i32, u64 = ctypes.c_longlong, ctypes.c_int, ctypes.c_ulonglong
    text = np.ascontiguousarray(text, dtype=np.uint8)
    parts = []
    for strand in (0, 1):
        pam = np.ascontiguousarray(rows.pam_masks[strand])
        count = np.zeros(1, np.uint64)
        candidates = np.empty(len(text) + 1, np.int64)
        lib.host_block(0, 1)
        lib.crispr_pam_candidates(ptr(text), i64(len(text)), ptr(pam), i32(len(pam)), ptr(count), ptr(candidates),
                                  u64(len(candidates)))
        candidates = candidates[:int(count[0])]
        ids_all = np.flatnonzero(rows.strand == strand)
        for length in np.unique(rows.lengths[ids_all]):
            ids = ids_all[rows.lengths[ids_all] == length].astype(np.int32)
            low, high = guide_words(rows, ids)
            limits = rows.limit[ids].astype(np.int16)
            capacity = 200_000
            out = [np.empty(capacity, t) for t in (np.int32, np.int64, np.int32, np.int8, np.int8, np.int16, np.int16)]
            count = np.zeros(1, np.uint64)
            tiles = (len(ids) + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
            for tile in range(tiles):
                lib.host_block(tile, tiles)
                lib.crispr_check(ptr(text), i64(len(text)), ptr(candidates), i64(len(candidates)), ptr(low), ptr(high),
                                 ptr(limits), ptr(ids), i32(len(ids)), i32(int(length)), i32(rows.pam_length),
                                 i32(int(rows.pam_right[strand])), i32(strand), i32(dna_bulge), i32(rna_bulge),
                                 i64(lo), i64(hi), ptr(count), u64(capacity), *(ptr(a) for a in out))
            found = int(count[0])
            assert found <= capacity
            parts.append(SiteHits(*(a[:found] for a in out)))
    return SiteHits(*(np.concatenate([getattr(p, f) for p in parts]) for f in SiteHits.__dataclass_fields__))


@pytest.mark.parametrize("iupac", [True, False], ids=["iupac-guides", "acgt-guides"])
@pytest.mark.parametrize("pam, side, dna, rna", [("NGG", 3, 0, 0), ("TTTV", 5, 0, 0), ("NRG", 3, 1, 1),
                                                 ("TTTV", 5, 2, 1), ("NGG", 3, 0, 2)])
def test_cuda_source_on_the_host_matches_the_cpu_kernel(host_kernels, pam, side, dna, rna, iupac):
    """With IUPAC guides every tile runs the one-hot layout; with plain A/C/G/T guides the 2-bit one."""
    sequence, guides = random_job(len(pam) * 10 + dna * 3 + rna, length=20 if side == 3 else 23, guides=300,
                                  iupac=iupac)
    text = encode_text(sequence)
    limit = 4 if dna + rna == 0 else 3
    rows = orient_guides([pattern_masks(g) for g in guides], [limit] * len(guides), pattern_masks(pam), side)
    lo, hi = 37, len(text) - 11
    expected = find_sites("cpu", text, rows, dna, rna, lo, hi)
    got = host_find_sites(host_kernels, text, rows, dna, rna, lo, hi)
    assert len(expected) > 0
    assert sites_set(got, rows) == sites_set(expected, rows)
    assert len(got) == len(expected)


@pytest.mark.gpu
@pytest.mark.parametrize("iupac", [True, False], ids=["iupac-guides", "acgt-guides"])
@pytest.mark.parametrize("pam, side, dna, rna, length", [("NGG", 3, 0, 0, 20), ("TTTV", 5, 0, 0, 23),
                                                         ("NRG", 3, 1, 1, 20), ("NGG", 3, 2, 2, 18),
                                                         ("NGG", 3, 0, 0, 36), ("NGG", 3, 0, 0, 32)])
def test_cuda_kernel_matches_the_cpu_kernel(pam, side, dna, rna, length, iupac):
    sequence, guides = random_job(7 + length + dna, length=length, guides=700, size=200_000, iupac=iupac)
    text = encode_text(sequence)
    limit = 4 if dna + rna == 0 else 2
    rows = orient_guides([pattern_masks(g) for g in guides], [limit] * len(guides), pattern_masks(pam), side)
    expected = find_sites("cpu", text, rows, dna, rna, 50, len(text) - 3)
    got = find_sites("cuda", text, rows, dna, rna, 50, len(text) - 3)
    assert len(expected) > 0
    assert sites_set(got, rows) == sites_set(expected, rows)
    assert len(got) == len(expected)


@pytest.mark.gpu
def test_crispr_job_on_the_cuda_backend_matches_the_cpu_backend(tmp_path):
    import seqsift

    sequence, guides = random_job(99, guides=200, size=300_000)
    reference = tmp_path / "ref.fa"
    reference.write_text(">a\n" + sequence[:150_000] + "\n>b\n" + sequence[150_000:] + "\n")
    named = [(f"g{i}", g) for i, g in enumerate(guides)]
    cpu = seqsift.crispr(str(reference), named, mismatches=4, backend="cpu", workers=1, chunk_size=40_000)
    gpu = seqsift.crispr(str(reference), named, mismatches=4, backend="cuda", chunk_size=40_000)
    assert len(cpu) > 0
    assert cpu.equals(gpu)


def test_guide_words_hold_each_base_mask_in_its_nibble():
    """guide_words, read independently: nibble i of the 128-bit word is the mask of the row's base i."""
    from seqsift.kernels.crispr.cuda import guide_words

    rng = random.Random(8)
    guides = ["".join(rng.choice("ACGTRYSWKMBDHVN") for _ in range(rng.choice([1, 7, 16, 17, 20, 31, 32, 40])))
              for _ in range(60)]
    rows = orient_guides([pattern_masks(g) for g in guides], [1] * len(guides), pattern_masks("NGG"), 3)
    ids = np.flatnonzero(rows.lengths <= 32)
    low, high = guide_words(rows, ids)
    for r, lo, hi in zip(ids, low, high):
        word = int(lo) | int(hi) << 64
        nibbles = [(word >> (4 * i)) & 15 for i in range(32)]
        assert nibbles == rows.masks[r, :rows.lengths[r]].tolist() + [0] * (32 - int(rows.lengths[r]))


@pytest.mark.gpu
def test_device_words_belong_to_their_rows():
    """The launcher keeps each GuideRows' device words: reused over chunks, never taken for other rows."""
    sequence, drawn = random_job(41, guides=600, size=120_000)
    guides, other_guides = drawn[:300], drawn[300:]  # as many guides, of the same length, with sites in sequence
    text = encode_text(sequence)
    rows = orient_guides([pattern_masks(g) for g in guides], [3] * len(guides), pattern_masks("NGG"), 3)
    other = orient_guides([pattern_masks(g) for g in other_guides], [3] * len(guides), pattern_masks("NGG"), 3)
    for piece, lo, hi in ((text[:70_000], 0, 70_000), (text[50_000:], 20_000, 70_000), (text, 0, len(text))):
        for these in (rows, other, rows):
            expected = find_sites("cpu", piece, these, 0, 1, lo, hi)
            got = find_sites("cuda", piece, these, 0, 1, lo, hi)
            assert len(expected) > 0
            assert sites_set(got, these) == sites_set(expected, these)
    import cupy

    from seqsift.kernels.crispr.cuda import guide_words

    for these in (rows, other):
        kept = [value for key, value in these.on_device.items() if "check" in key]
        assert len(kept) == 2  # one per strand
        for ids, low, high, _, _ in kept:
            assert (cupy.asnumpy(low) == guide_words(these, ids)[0]).all()


@pytest.mark.gpu
def test_two_cuda_jobs_on_one_cluster_keep_their_own_guides(tmp_path):
    import seqsift
    from seqsift.cluster import connect

    sequence, drawn = random_job(43, guides=300, size=200_000)
    guides, other_guides = drawn[:150], drawn[150:]  # both sets drawn from sequence: both have sites
    reference = tmp_path / "ref.fa"
    reference.write_text(">a\n" + sequence + "\n")
    with connect("cuda") as client:
        for chosen in (guides, other_guides, guides):
            named = [(f"g{i}", g) for i, g in enumerate(chosen)]
            cpu = seqsift.crispr(str(reference), named, mismatches=3, backend="cpu", workers=1, chunk_size=50_000)
            gpu = seqsift.crispr(str(reference), named, mismatches=3, backend="cuda", client=client,
                                 chunk_size=50_000)
            assert len(cpu) > 0
            assert cpu.equals(gpu)


def test_hit_columns_survive_one_packed_copy():
    """cuda.py copies a launch's hit columns back as one byte buffer: cut back, each column is whole."""
    from seqsift.kernels.crispr.cuda import packed_bytes, split_bytes

    rng = np.random.default_rng(3)
    capacity = 50
    columns = [rng.integers(-100, 100, capacity).astype(t)
               for t in (np.int32, np.int64, np.int32, np.int8, np.int8, np.int16, np.int16)]
    for count in (0, 1, 7, capacity):
        back = split_bytes(packed_bytes(columns, count, np), columns, count)
        assert [b.dtype for b in back] == [c.dtype for c in columns]
        for b, c in zip(back, columns):
            assert np.array_equal(b, c[:count]) and b.flags.writeable and b.flags.aligned
