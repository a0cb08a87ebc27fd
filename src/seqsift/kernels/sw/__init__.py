"""Smith-Waterman screening kernels: launchers with one call shape for both backends.

Every kernel is a function

    kernel(x_codes, y_codes, scoring, *, word_bits=None, min_length=None) -> scores

x_codes    uint8 (pairs, M): text codes (seqsift.alphabet: A0 C1 G2 T3, 4 for N
           and anything else) of the first sequence of every pair, padded
           with 4 past its end
y_codes    uint8 (pairs, N): the second sequences, likewise
scoring    :class:`Scoring` (match c1, mismatch c2, gap g; all >= 0)
word_bits  32 or 64 pair instances per word (sw-bpbc; None: the backend's best)
min_length an upper bound of min(len x, len y) over the pairs (default
           min(M, N)): sets the score width s of sw-bpbc

and returns the int32 SW score of every pair (DESIGN.md: linear gap, max over
the DP matrix, never below 0). Padding is harmless: a padded position
mismatches everything, so no cell through it can beat the cells it came from.
The score is symmetric in x and y; the kernels run fastest with the shorter
sequence as x (the paper's m <= n), which is how the screen engine calls them.

Algorithms (:data:`SW_ALGORITHMS`, registered like ``seqsift.kernels.ALGORITHMS``):

* ``sw-bpbc``: Nishimura et al.'s bitwise parallel bulk computation, 32 or
  64 pairs per word (sw_cpu.py: Numba; sw.cu: CUDA, one thread per DP row,
  anti-diagonal sweep with warp shuffles);
* ``sw-wordwise``: one pair per thread (CUDA) or loop iteration (CPU), the
  conventional kernel the paper compares with.

:func:`pairs_reaching` answers "score >= T?" for every pair; sw-bpbc does it
with a flag kernel that keeps one bit per pair instead of its running maximum
and numbers only wide enough for T (faster: see sw.cu, REACHED).
:func:`align` computes the local alignments (coordinates and CIGAR) of the
pairs that pass a threshold, on the host.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import Algorithm
from . import cpu as sw_cpu

__all__ = ["Scoring", "SW_ALGORITHMS", "score_bits", "reach_bits", "pair_scores", "pairs_reaching", "align",
           "GPU_SCORE_WIDTHS"]

MAX_SCORE_BITS = 31
"""Scores are int32: c1 * min(len x, len y) + g must stay below 2^31."""

GPU_SCORE_WIDTHS = tuple(range(2, 17)) + (20, 24, 28, 31)
"""Score widths s that sw-bpbc's CUDA kernel is compiled for (one module each, on first use);
a job runs the smallest one >= its s."""

# Launch geometry of sw.cu (keep in step with its #defines).
SW_STEPS = 32        # anti-diagonal steps between block barriers
SW_LAG = 64          # steps each warp runs behind the warp above it
SW_RING = 128        # columns per shared-memory ring between two warps
SW_MAX_WARPS = 8     # warps (32-row stripes) per block; more rows run in rounds
SHARED_LIMIT = 48 * 1024
THREADS = 256


@dataclass(frozen=True)
class Scoring:
    """Linear-gap SW scores: +match for equal bases, -mismatch otherwise, -gap per gap position."""

    match: int = 2
    mismatch: int = 1
    gap: int = 1

    def check(self) -> None:
        """ValueError (one line) unless every value is a whole number, match >= 1, the others >= 0."""
        for name, value in (("match", self.match), ("mismatch", self.mismatch), ("gap", self.gap)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name} score must be a whole number, not {value!r}")
        if self.match < 1:
            raise ValueError(f"match score must be at least 1 (it is added for equal bases), not {self.match}")
        if self.mismatch < 0:
            raise ValueError(f"mismatch penalty must be 0 or more (it is subtracted), not {self.mismatch}")
        if self.gap < 0:
            raise ValueError(f"gap penalty must be 0 or more (it is subtracted), not {self.gap}")


def score_bits(scoring: Scoring, min_length: int) -> int:
    """Bits s of sw-bpbc's bit-sliced numbers for pairs whose shorter sequence has <= min_length bases.

    H <= c1 * min(m, n) everywhere, and sw_cpu.sw_cell adds c1 + g to a cell
    before it subtracts g again: s holds c1 * min_length + g, and the
    constants c2 and g, so no addition can overflow (Section IV: s = log2(c1 m),
    plus the room the paper's bound misses when every base matches).
    """
    bound = max(scoring.match * max(1, int(min_length)) + scoring.gap, scoring.mismatch, scoring.gap, 1)
    return int(bound).bit_length()


def reach_bits(scoring: Scoring, threshold: int) -> int:
    """Bits s of the sw_reach kernels for threshold T >= 1: T - 1 + c1 + g and the constants fit (sw.cu)."""
    bound = max(int(threshold) - 1 + scoring.match + scoring.gap, scoring.mismatch, scoring.gap, 1)
    return int(bound).bit_length()


def max_min_length(scoring: Scoring) -> int:
    """The longest shorter-sequence length whose scores fit the int32 output."""
    return ((1 << MAX_SCORE_BITS) - 1 - scoring.gap) // scoring.match


def _constants(scoring: Scoring, s: int):
    """(k1, k2, sat, kg) of sw_cell: c1 + g, (g - c2) mod 2^s, whether c2 > g, g."""
    k1 = scoring.match + scoring.gap
    k2 = (scoring.gap - scoring.mismatch) % (1 << s)
    return k1, k2, scoring.mismatch > scoring.gap, scoring.gap


def _word(word_bits: int):
    if word_bits not in (32, 64):
        raise ValueError(f"word_bits must be 32 or 64, not {word_bits!r}")
    return np.uint32 if word_bits == 32 else np.uint64


def _shapes(x_codes, y_codes, min_length):
    pairs, m = x_codes.shape
    if y_codes.shape[0] != pairs:
        raise ValueError(f"x_codes has {pairs} rows but y_codes has {y_codes.shape[0]}")
    n = y_codes.shape[1]
    bound = min(m, n) if min_length is None else int(min_length)
    return pairs, m, n, bound


# --------------------------------------------------------------------------
# CPU (Numba)
# --------------------------------------------------------------------------

def bpbc_cpu(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None, paper_cell=False):
    """sw-bpbc on CPU cores: W2B, the bit-sliced DP per word group, B2W.

    paper_cell: run the paper's own SW function instead of the reordered one
    (same scores, more operations; for tests and comparison).
    """
    x_codes = np.ascontiguousarray(x_codes, dtype=np.uint8)
    y_codes = np.ascontiguousarray(y_codes, dtype=np.uint8)
    pairs, m, n, bound = _shapes(x_codes, y_codes, min_length)
    if pairs == 0 or m == 0 or n == 0:
        return np.zeros(pairs, np.int32)
    s = score_bits(scoring, bound)
    sliced, transpose = _cpu_bit_sliced(x_codes, y_codes, scoring, word_bits or 64, s, None, paper_cell)
    scores = np.empty(pairs, np.int32)
    sw_cpu.b2w(sliced, pairs, *transpose, scores)
    return scores


def bpbc_reach_cpu(x_codes, y_codes, scoring: Scoring, threshold: int, *, word_bits=None, min_length=None):
    """Whether each pair's score reaches ``threshold`` (>= 1), by sw-bpbc with a 1-bit flag per pair (sw.cu)."""
    x_codes = np.ascontiguousarray(x_codes, dtype=np.uint8)
    y_codes = np.ascontiguousarray(y_codes, dtype=np.uint8)
    pairs, m, n, _ = _shapes(x_codes, y_codes, min_length)
    if pairs == 0 or m == 0 or n == 0:
        return np.zeros(pairs, bool)
    word_bits = word_bits or 64
    sliced, _ = _cpu_bit_sliced(x_codes, y_codes, scoring, word_bits, reach_bits(scoring, threshold), threshold)
    return _unpack_flags(sliced[:, 0], word_bits, pairs)


def _cpu_bit_sliced(x_codes, y_codes, scoring: Scoring, word_bits: int, s: int, threshold, paper_cell=False):
    """W2B and the bit-sliced DP on the CPU: (groups, s) words, and the (word, masks, shifts) of B2W."""
    pairs, m = x_codes.shape
    n = y_codes.shape[1]
    dtype = _word(word_bits)
    masks, shifts = sw_cpu.transpose_tables(word_bits)
    word = np.zeros(word_bits, dtype)
    groups = -(-pairs // word_bits)
    x_planes = np.empty((groups, sw_cpu.PLANES, m), dtype)
    y_planes = np.empty((groups, sw_cpu.PLANES, n), dtype)
    sw_cpu.w2b(x_codes, pairs, m, word, masks, shifts, x_planes)
    sw_cpu.w2b(y_codes, pairs, n, word, masks, shifts, y_planes)
    sliced = np.empty((groups, s), dtype)
    if paper_cell:   # the paper's cell takes c1, c2, g themselves
        constants, sat = (scoring.match, scoring.mismatch, scoring.gap), False
    else:
        k1, k2, sat, kg = _constants(scoring, s)
        constants = (k1, k2, kg)
    k1_words, k2_words, kg_words = (sw_cpu.sliced_constant(value, s, dtype) for value in constants)
    flag_at = sw_cpu.sliced_constant(threshold, s, dtype) if threshold else np.empty(0, dtype)
    sw_cpu.bpbc_sliced(x_planes, y_planes, k1_words, k2_words, np.array([np.iinfo(dtype).max if sat else 0], dtype),
                       kg_words, flag_at, paper_cell, sliced)
    return sliced, (word, masks, shifts)


def _unpack_flags(words, word_bits: int, pairs: int):
    """One flag word per group (bit k: pair k of the group) -> a bool per pair (NumPy or CuPy)."""
    xp = np if isinstance(words, np.ndarray) else __import__("cupy")
    bits = (words[:, None] >> xp.arange(word_bits, dtype=words.dtype)[None, :]) & 1
    return bits.reshape(-1)[:pairs].astype(bool)


def wordwise_cpu(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None):
    """sw-wordwise on CPU cores: one pair per loop iteration (word_bits is ignored)."""
    x_codes = np.ascontiguousarray(x_codes, dtype=np.uint8)
    y_codes = np.ascontiguousarray(y_codes, dtype=np.uint8)
    pairs = _shapes(x_codes, y_codes, min_length)[0]
    scores = np.zeros(pairs, np.int32)
    if pairs and x_codes.shape[1] and y_codes.shape[1]:
        sw_cpu.wordwise_scores(x_codes, y_codes, scoring.match, scoring.mismatch, scoring.gap, scores)
    return scores


# --------------------------------------------------------------------------
# CUDA (CuPy RawModule of sw.cu). The stages are separate functions so that
# benchmarks can time W2B, SW and B2W apart, as the paper's Table IV does.
# --------------------------------------------------------------------------

def gpu_score_width(s: int) -> int:
    """The compiled kernel width for s-bit scores."""
    for width in GPU_SCORE_WIDTHS:
        if width >= s:
            return width
    raise ValueError(f"scores of {s} bits exceed the widest GPU kernel ({GPU_SCORE_WIDTHS[-1]} bits)")


def cuda_w2b(codes, pairs: int, length_out: int, word_bits: int):
    """W2B on the device: codes (pairs x L uint8, CuPy) -> planes (groups, 3, length_out)."""
    import cupy

    from ..cuda import load_module

    dtype = _word(word_bits)
    groups = -(-pairs // word_bits)
    planes = cupy.empty((groups, sw_cpu.PLANES, length_out), dtype=dtype)
    threads = groups * length_out
    if threads:
        kernel = load_module("sw/sw.cu").get_function(f"sw_w2b{word_bits}")
        kernel(((threads + THREADS - 1) // THREADS,), (THREADS,),
               (codes, np.int64(pairs), np.int32(codes.shape[1]), np.int32(length_out), np.int64(groups), planes))
    return planes


def bpbc_geometry(m32: int, width: int, word_bits: int) -> tuple[int, int]:
    """(warps per block, dynamic shared bytes) of sw_bpbc for m32 rows and s = width."""
    word_bytes = word_bits // 8
    warps = max(1, min(m32 // 32, SW_MAX_WARPS))

    def shared(w: int) -> int:
        return max((w - 1) * SW_RING, w) * width * word_bytes

    while warps > 1 and shared(warps) > SHARED_LIMIT:
        warps -= 1
    return warps, shared(warps)


def cuda_sw_bpbc(x_planes, y_planes, m32: int, n: int, scoring: Scoring, width: int, word_bits: int,
                 threshold: int | None = None):
    """The bit-sliced SW kernel on the device: the best scores of every group, (groups, width)
    words; with a ``threshold`` T (sw_reach kernels), one flag word per group, (groups, 1)."""
    import cupy

    from ..cuda import load_module

    groups = x_planes.shape[0]
    k1, k2, sat, kg = _constants(scoring, width)
    warps, shared = bpbc_geometry(m32, width, word_bits)
    stripes = m32 // 32
    rounds = -(-stripes // warps)
    dtype = _word(word_bits)
    out = cupy.zeros((groups, 1 if threshold else width), dtype=dtype)
    # Rows past one block's warps run in rounds; the last row of a round reaches
    # the next round through this buffer (n columns x width words per group).
    boundary = cupy.empty((groups, n, width) if rounds > 1 else (1,), dtype=dtype)
    values = (k1, k2, kg) + ((threshold,) if threshold else ())
    constants = cupy.asarray(np.concatenate([sw_cpu.sliced_constant(v, width, dtype) for v in values]))
    if groups:
        paper = "_paper" if (scoring.match, scoring.mismatch, scoring.gap) == (2, 1, 1) else ""
        name = f"sw_{'reach' if threshold else 'bpbc'}{word_bits}_s{width}{paper}"
        kernel = load_module("sw/sw.cu", SW_SCORE_BITS=width).get_function(name)
        kernel((groups,), (32 * warps,),
               (x_planes, y_planes, np.int32(m32), np.int32(n), constants, np.int32(1 if sat else 0),
                constants[3 * width:], boundary, out),
               shared_mem=shared)
    return out


def cuda_b2w(sliced, pairs: int, word_bits: int):
    """B2W on the device: (groups, width) bit-sliced scores -> int32 per pair."""
    import cupy

    from ..cuda import load_module

    groups, width = sliced.shape
    scores = cupy.zeros(pairs, dtype=cupy.int32)
    if groups:
        kernel = load_module("sw/sw.cu").get_function(f"sw_b2w{word_bits}")
        kernel(((groups + 127) // 128,), (128,),
               (sliced, np.int32(width), np.int64(pairs), np.int64(groups), scores))
    return scores


def bpbc_cuda(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None):
    """sw-bpbc on the GPU: H2G, W2B, SW, B2W, G2H (Section V, steps 1-5).

    x_codes / y_codes may be NumPy (copied to the device) or CuPy arrays.
    Rows are padded to a multiple of 32 (one warp per 32-row stripe); the
    padding rows are N and change no score.
    """
    pairs, m, n, bound = _shapes(x_codes, y_codes, min_length)
    if pairs == 0 or m == 0 or n == 0:
        return np.zeros(pairs, np.int32)
    word_bits = word_bits or 32
    width = gpu_score_width(score_bits(scoring, bound))
    sliced = cuda_sw_bpbc(*_cuda_planes(x_codes, y_codes, word_bits), scoring, width, word_bits)
    return cuda_b2w(sliced, pairs, word_bits).get()


def bpbc_reach_cuda(x_codes, y_codes, scoring: Scoring, threshold: int, *, word_bits=None, min_length=None):
    """Whether each pair's score reaches ``threshold`` (>= 1): sw-bpbc's sw_reach kernels on the GPU."""
    pairs, m, n, _ = _shapes(x_codes, y_codes, min_length)
    if pairs == 0 or m == 0 or n == 0:
        return np.zeros(pairs, bool)
    word_bits = word_bits or 32
    width = gpu_score_width(reach_bits(scoring, threshold))
    flags = cuda_sw_bpbc(*_cuda_planes(x_codes, y_codes, word_bits), scoring, width, word_bits, threshold)
    return _unpack_flags(flags[:, 0], word_bits, pairs).get()


def _cuda_planes(x_codes, y_codes, word_bits: int):
    """W2B on the device of both code matrices: (x planes, y planes, m32, n); x rows padded to 32."""
    import cupy

    x_dev = cupy.ascontiguousarray(cupy.asarray(x_codes, dtype=cupy.uint8))
    y_dev = cupy.ascontiguousarray(cupy.asarray(y_codes, dtype=cupy.uint8))
    pairs, m = x_dev.shape
    n = y_dev.shape[1]
    m32 = -(-m // 32) * 32
    return cuda_w2b(x_dev, pairs, m32, word_bits), cuda_w2b(y_dev, pairs, n, word_bits), m32, n


def cuda_wordwise_device(x_pos_major, y_pos_major, pairs: int, scoring: Scoring):
    """The wordwise kernel on position-major codes (M x pairs, N x pairs, CuPy); int32 scores on the device."""
    import cupy

    from ..cuda import load_module

    m, n = x_pos_major.shape[0], y_pos_major.shape[0]
    scores = cupy.zeros(pairs, dtype=cupy.int32)
    if pairs and m and n:
        scratch = cupy.empty((m, pairs), dtype=cupy.int32)
        kernel = load_module("sw/sw.cu").get_function("sw_wordwise")
        kernel(((pairs + 127) // 128,), (128,),
               (x_pos_major, y_pos_major, np.int64(pairs), np.int32(m), np.int32(n),
                np.int32(scoring.match), np.int32(scoring.mismatch), np.int32(scoring.gap), scratch, scores))
    return scores


def wordwise_cuda(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None):
    """sw-wordwise on the GPU: one pair per thread over position-major codes (coalesced loads)."""
    import cupy

    x_dev = cupy.asarray(x_codes, dtype=cupy.uint8)
    y_dev = cupy.asarray(y_codes, dtype=cupy.uint8)
    pairs = _shapes(x_dev, y_dev, min_length)[0]
    scores = cuda_wordwise_device(cupy.ascontiguousarray(x_dev.T), cupy.ascontiguousarray(y_dev.T), pairs, scoring)
    return scores.get()


# --------------------------------------------------------------------------
# Registry and dispatch
# --------------------------------------------------------------------------

SW_ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("sw-bpbc", "sw", {"cpu": "sw:bpbc_cpu", "cuda": "sw:bpbc_cuda"},
                  "bit-sliced bulk Smith-Waterman, 32/64 pairs per word (Nishimura et al., BPBC)"),
        Algorithm("sw-wordwise", "sw", {"cpu": "sw:wordwise_cpu", "cuda": "sw:wordwise_cuda"},
                  "conventional Smith-Waterman, one pair per thread (the paper's wordwise baseline)"),
    )
}
"""Smith-Waterman screening algorithms (metric "sw"), shaped like kernels.ALGORITHMS."""

DEFAULT_SW_ALGORITHM = {"cpu": "sw-bpbc", "cuda": "sw-bpbc"}


def choose_sw_algorithm(backend: str, algorithm: str = "auto") -> str:
    """The algorithm to run; ValueError (one line) for an unknown one."""
    if algorithm == "auto":
        return DEFAULT_SW_ALGORITHM[backend]
    if algorithm not in SW_ALGORITHMS:
        raise ValueError(f"unknown screening algorithm {algorithm!r} (known: auto, {', '.join(SW_ALGORITHMS)})")
    return algorithm


def pair_scores(algorithm: str, backend: str, x_codes, y_codes, scoring: Scoring, *, word_bits=None,
                min_length=None) -> np.ndarray:
    """Run ``algorithm`` on ``backend`` with the common call shape (module docstring)."""
    backends = SW_ALGORITHMS[algorithm].backends
    kernel = _resolve(backends.get(backend) or backends["cpu"])
    return kernel(x_codes, y_codes, scoring, word_bits=word_bits, min_length=min_length)


REACH_KERNELS = {"sw-bpbc": {"cpu": "sw:bpbc_reach_cpu", "cuda": "sw:bpbc_reach_cuda"}}
"""Algorithms with a threshold-only kernel (a flag per pair instead of its score)."""


def pairs_reaching(algorithm: str, backend: str, x_codes, y_codes, scoring: Scoring, threshold: int, *,
                   word_bits=None, min_length=None) -> np.ndarray:
    """Bool per pair: does its score reach ``threshold``? Exactly ``pair_scores(...) >= threshold``.

    sw-bpbc answers with its flag kernels, whose numbers need only enough bits
    for the threshold (``reach_bits``), where that is fewer than the scores need.
    """
    pairs, _, _, bound = _shapes(x_codes, y_codes, min_length)
    flag_kernels = REACH_KERNELS.get(algorithm)
    if threshold <= 0:
        return np.ones(pairs, bool)
    if flag_kernels is None or reach_bits(scoring, threshold) >= score_bits(scoring, bound):
        return pair_scores(algorithm, backend, x_codes, y_codes, scoring, word_bits=word_bits,
                           min_length=min_length) >= threshold
    kernel = _resolve(flag_kernels.get(backend) or flag_kernels["cpu"])
    return kernel(x_codes, y_codes, scoring, threshold, word_bits=word_bits, min_length=min_length)


def _resolve(path: str):
    import importlib

    module_name, function_name = path.split(":")
    return getattr(importlib.import_module(f"..{module_name}", __package__), function_name)


# --------------------------------------------------------------------------
# Alignments of the survivors, on the host
# --------------------------------------------------------------------------

MAX_ALIGN_CELLS = 1 << 31
"""Largest traceback matrix (bytes) one alignment may use."""


def align(codes, q_start, q_len, t_start, t_len, scores, scoring: Scoring,
          max_cells: int = MAX_ALIGN_CELLS) -> tuple[np.ndarray, list[str]]:
    """Coordinates (int64, (pairs, 4): query start, end, target start, end; 0-based,
    half-open) and CIGAR (=, X, I, D; "*" for a score of 0) of one optimal local
    alignment per pair with the given score. I: a query base against no target
    base, D: a target base against no query base.

    codes: every sequence's text codes, concatenated; pair p is the query at
    codes[q_start[p]:+q_len[p]] and the target at codes[t_start[p]:+t_len[p]].
    ValueError if a score is not the pair's SW score, or an alignment would
    need a traceback matrix of more than ``max_cells`` cells.
    """
    from ..align_cpu import cigar_bytes

    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    q_start = np.ascontiguousarray(q_start, dtype=np.int64)
    q_len = np.ascontiguousarray(q_len, dtype=np.int64)
    t_start = np.ascontiguousarray(t_start, dtype=np.int64)
    t_len = np.ascontiguousarray(t_len, dtype=np.int64)
    scores = np.ascontiguousarray(scores, dtype=np.int64)
    pairs = scores.shape[0]
    coords = np.zeros((pairs, 4), np.int64)
    if pairs == 0:
        return coords, []
    room = q_len + t_len
    op_offsets = np.cumsum(room) - room
    ops = np.empty(int(room.sum()) + 1, np.uint8)
    op_counts = np.zeros(pairs, np.int64)
    status = np.zeros(pairs, np.int8)
    sw_cpu.align_pairs(codes, q_start, q_len, t_start, t_len, scores, scoring.match, scoring.mismatch,
                       scoring.gap, np.int64(max_cells), op_offsets, ops, op_counts, coords, status)
    bad = np.flatnonzero(status)
    if bad.size:
        p = int(bad[0])
        if status[p] == sw_cpu.ALIGN_TOO_LARGE:
            raise ValueError(f"the alignment of a pair of {q_len[p]:,} and {t_len[p]:,} bases needs more than "
                             f"{max_cells:,} traceback cells; leave alignments out (align=False, --no-align)")
        raise ValueError(f"score {scores[p]} is not the Smith-Waterman score of pair {p} "
                         f"({bad.size} such pair(s))")
    char_offsets = 2 * op_offsets
    text = np.zeros(int(2 * room.sum()) + 1, np.uint8)
    written = cigar_bytes(ops, op_offsets, op_counts, char_offsets, text)
    decoded = text.tobytes().decode("ascii")
    cigars = [decoded[a:a + w] if w else "*" for a, w in zip(char_offsets.tolist(), written.tolist())]
    return coords, cigars
