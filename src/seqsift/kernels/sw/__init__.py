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
sequence as x (the paper's m <= n), which is how the screen job calls them.

Algorithms (entries of metric ``sw`` in the one registry, ``seqsift.kernels.ALGORITHMS``):

* ``sw-bpbc``: Nishimura et al.'s bitwise parallel bulk computation, 32 or
  64 pairs per word (cpu.py: Numba; sw.cu: CUDA, one thread per DP row,
  anti-diagonal sweep with warp shuffles);
* ``sw-wordwise``: one pair per thread (CUDA) or loop iteration (CPU), the
  conventional kernel the paper compares with;
* ``sw-gotoh`` (issue 26): Gotoh's affine-gap DP, one pair per thread, 32-bit
  cells: the reference of affine gaps, and the fall-back of the 16-bit kernels;
* ``sw-dpx`` and ``sw-dpx-affine`` (dpx.cu): Hopper's DPX instructions on two
  pairs per register in 16-bit lanes, query rows in registers, a warp-shuffle
  pipeline along the target; pairs that may saturate a lane are rescored by
  sw-gotoh. Their CPU paths run the cells in 16-bit integer lanes (cpu.dpx_lanes);
* ``sw-lanes`` (CPU cores only): 32 pairs at once, one per SIMD lane of int16
  where the scores provably fit (else int32, else a scalar int64 pass), linear
  and affine gaps (Rognes 2011, SWIPE's inter-sequence SIMD; cpu.score_pairs,
  the first pass of :func:`align`'s lanes). The CPU's default.

Scoring may be affine (``Scoring(gap_open=O, gap_extend=E)``: a gap of length
L scores -(O + (L - 1) E), parasail's convention); sw-bpbc, sw-wordwise and
sw-dpx score linear gaps only and refuse it.

Sequences in one buffer (the screen job's call shape, issue 26): every kernel also runs as

    buffer_scores(algorithm, backend, codes, x_start, x_len, y_start, y_len, scoring, *, product,
                  threshold=None) -> scores, or bools (score >= threshold)

codes      uint8: the text codes of all sequences, one after another (host or device)
x_start, x_len, y_start, y_len
           where each x and y sequence lies in codes
product    True: every x against every y (an all-vs-all tile), result (len x, len y);
           False: x[p] against y[p], result (len x,)

sw-dpx, sw-dpx-affine and sw-lanes have kernels of this shape (``Algorithm.buffer_backends``; dpx.cu reads
the sequences where they lie, an all-vs-all tile one target per block; sw-lanes reads each pair's own
lengths); the others run on code matrices gathered from the buffer (on the device for cuda), so that no job
pads a matrix per pair on the host.

:func:`pairs_reaching` answers "score >= T?" for every pair; sw-bpbc does it
with a flag kernel that keeps one bit per pair instead of its running maximum
and numbers only wide enough for T (faster: see sw.cu, REACHED).
With a threshold, :func:`buffer_scores` first runs the exact q-gram filter
(:class:`QgramFilter`; qgram.cu, cpu.qgram_filter) where the scoring lets
it screen, and answers the pairs it keeps on their windows of y
(:class:`QgramWindows`); :func:`scores_of_passing` scores passing pairs on
theirs.
:func:`align` computes the local alignments (coordinates and CIGAR) of the
pairs that pass a threshold, on the host.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from .. import ALGORITHMS, resolve_kernel
from ..threads import PARALLEL_REGIONS
from .constants import DPX_LANE_MAX, PLANES, dpx_bias, sliced_constant

# cpu.py (Numba) is imported by the functions that run on the CPU, not here: a GPU screen never loads Numba.

__all__ = ["Scoring", "sw_algorithms", "affine_algorithms", "score_bits", "reach_bits", "pair_scores",
           "pairs_reaching", "buffer_scores", "align", "align_soon", "base_counts", "composition_bound",
           "qgram_filter", "scores_of_passing", "GPU_SCORE_WIDTHS"]

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
    """SW scores: +match for equal bases, -mismatch otherwise, and gaps.

    Linear gaps (the default): -gap per gap position. Affine gaps: give
    ``gap_open`` O and ``gap_extend`` E; a gap of length L then scores
    -(O + (L - 1) E), parasail's convention (its ``open``/``extend``), and
    ``gap`` is ignored. O = E is the linear form and is stored as such
    (``Scoring(2, 1, 3) == Scoring(2, 1, gap_open=3, gap_extend=3)``).
    """

    match: int = 2
    mismatch: int = 1
    gap: int = 1
    gap_open: int | None = None
    gap_extend: int | None = None

    def __post_init__(self):
        go, ge = self.gap_open, self.gap_extend
        if (isinstance(go, (int, np.integer)) and isinstance(ge, (int, np.integer)) and not isinstance(go, bool)
                and not isinstance(ge, bool) and go == ge):
            object.__setattr__(self, "gap", int(go))
            object.__setattr__(self, "gap_open", None)
            object.__setattr__(self, "gap_extend", None)

    @property
    def affine(self) -> bool:
        """Whether gaps are affine (O != E); linear-only kernels refuse such scoring."""
        return self.gap_open is not None or self.gap_extend is not None

    @property
    def open(self) -> int:
        """O: the score subtracted for a gap's first position (g for linear gaps)."""
        return int(self.gap if self.gap_open is None else self.gap_open)

    @property
    def extend(self) -> int:
        """E: the score subtracted for each further gap position (g for linear gaps)."""
        return int(self.gap if self.gap_extend is None else self.gap_extend)

    def describe(self) -> str:
        gaps = f"gap open {self.open}, extend {self.extend}" if self.affine else f"gap {self.gap}"
        return f"match {self.match}, mismatch {self.mismatch}, {gaps}"

    def check(self) -> None:
        """ValueError (one line) unless every value is a whole number, match >= 1, the others >= 0."""
        values = [("match", self.match), ("mismatch", self.mismatch), ("gap", self.gap)]
        if self.affine:
            if self.gap_open is None or self.gap_extend is None:
                raise ValueError("affine gaps need both a gap open and a gap extend penalty")
            values += [("gap open", self.gap_open), ("gap extend", self.gap_extend)]
        for name, value in values:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name} score must be a whole number, not {value!r}")
        if self.match < 1:
            raise ValueError(f"match score must be at least 1 (it is added for equal bases), not {self.match}")
        if self.mismatch < 0:
            raise ValueError(f"mismatch penalty must be 0 or more (it is subtracted), not {self.mismatch}")
        for name, value in values[2:]:
            if value < 0:
                raise ValueError(f"{name} penalty must be 0 or more (it is subtracted), not {value}")
        if self.affine and self.gap_open < self.gap_extend:
            # With O < E a long gap would score better as several gaps of one: "a gap of length L
            # scores -(O + (L-1) E)" would no longer be what the DP maximises (parasail refuses it too).
            raise ValueError(f"gap open penalty ({self.gap_open}) must be at least the gap extend penalty "
                             f"({self.gap_extend})")


def _linear_only(scoring: Scoring, algorithm: str) -> None:
    if scoring.affine:
        raise ValueError(f"{algorithm} scores linear gaps only; for affine gaps use "
                         f"{', '.join(affine_algorithms())} (or auto)")


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
    return ((1 << MAX_SCORE_BITS) - 1 - max(scoring.gap, scoring.open, scoring.extend)) // scoring.match


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
    from . import cpu as sw_cpu

    _linear_only(scoring, "sw-bpbc")
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
    _linear_only(scoring, "sw-bpbc")
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
    from . import cpu as sw_cpu

    pairs, m = x_codes.shape
    n = y_codes.shape[1]
    dtype = _word(word_bits)
    masks, shifts = sw_cpu.transpose_tables(word_bits)
    word = np.zeros(word_bits, dtype)
    groups = -(-pairs // word_bits)
    x_planes = np.empty((groups, PLANES, m), dtype)
    y_planes = np.empty((groups, PLANES, n), dtype)
    sw_cpu.w2b(x_codes, pairs, m, word, masks, shifts, x_planes)
    sw_cpu.w2b(y_codes, pairs, n, word, masks, shifts, y_planes)
    sliced = np.empty((groups, s), dtype)
    if paper_cell:   # the paper's cell takes c1, c2, g themselves
        constants, sat = (scoring.match, scoring.mismatch, scoring.gap), False
    else:
        k1, k2, sat, kg = _constants(scoring, s)
        constants = (k1, k2, kg)
    k1_words, k2_words, kg_words = (sliced_constant(value, s, dtype) for value in constants)
    flag_at = sliced_constant(threshold, s, dtype) if threshold else np.empty(0, dtype)
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
    _linear_only(scoring, "sw-wordwise")
    x_codes = np.ascontiguousarray(x_codes, dtype=np.uint8)
    y_codes = np.ascontiguousarray(y_codes, dtype=np.uint8)
    pairs = _shapes(x_codes, y_codes, min_length)[0]
    scores = np.zeros(pairs, np.int32)
    if pairs and x_codes.shape[1] and y_codes.shape[1]:
        from . import cpu as sw_cpu

        sw_cpu.wordwise_scores(x_codes, y_codes, scoring.match, scoring.mismatch, scoring.gap, scores)
    return scores


def gotoh_cpu(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None):
    """sw-gotoh on CPU cores: Gotoh's three-matrix DP, one pair per loop iteration, 64-bit cells.

    Scores affine gaps (parasail's convention: a gap of length L costs
    O + (L - 1) E) and linear ones (O = E = g); the reference every other
    affine kernel is tested against, and their fall-back for pairs that
    saturate 16-bit lanes. word_bits and min_length are ignored.
    """
    x_codes = np.ascontiguousarray(x_codes, dtype=np.uint8)
    y_codes = np.ascontiguousarray(y_codes, dtype=np.uint8)
    pairs = _shapes(x_codes, y_codes, min_length)[0]
    scores = np.zeros(pairs, np.int32)
    if pairs and x_codes.shape[1] and y_codes.shape[1]:
        from . import cpu as sw_cpu

        sw_cpu.gotoh_scores(x_codes, y_codes, scoring.match, scoring.mismatch, scoring.open, scoring.extend, scores)
    return scores


DPX_MAX_TABLE = 127
"""sw-dpx's byte-permute score table holds c1 + c2 in one byte whose top bit must be clear (dpx.cu)."""


def dpx_admits(scoring: Scoring) -> bool:
    """Whether the 16-bit DPX kernels can run this scoring at all (else sw-gotoh scores every pair):
    c1 + c2 fits the score table's byte, and the bias and gap penalties leave room in a 16-bit lane."""
    bias = dpx_bias(scoring.open, scoring.mismatch)
    return (scoring.match + scoring.mismatch <= DPX_MAX_TABLE
            and bias + scoring.mismatch + scoring.match + max(scoring.open, scoring.extend) < DPX_LANE_MAX // 2)


def rescore_saturated(scores, x_codes, y_codes, scoring: Scoring, backend: str):
    """Scores of -1 (a 16-bit lane that may have wrapped) replaced by sw-gotoh's 32-bit scores."""
    flagged = np.flatnonzero(scores < 0)
    if flagged.size:
        rescore = resolve_kernel("sw-gotoh", backend)
        xs = x_codes[flagged] if isinstance(x_codes, np.ndarray) else x_codes[__import__("cupy").asarray(flagged)]
        ys = y_codes[flagged] if isinstance(y_codes, np.ndarray) else y_codes[__import__("cupy").asarray(flagged)]
        scores[flagged] = rescore(xs, ys, scoring)
    return scores


def _dpx_cpu(x_codes, y_codes, scoring: Scoring, affine: bool):
    x_codes = np.ascontiguousarray(x_codes, dtype=np.uint8)
    y_codes = np.ascontiguousarray(y_codes, dtype=np.uint8)
    pairs = x_codes.shape[0]
    if pairs == 0 or x_codes.shape[1] == 0 or y_codes.shape[1] == 0:
        return np.zeros(pairs, np.int32)
    if not dpx_admits(scoring):
        return gotoh_cpu(x_codes, y_codes, scoring)
    from . import cpu as sw_cpu

    scores = np.empty(pairs, np.int32)
    sw_cpu.dpx_lanes(x_codes, y_codes, scoring.match, scoring.mismatch, scoring.open, scoring.extend,
                     dpx_bias(scoring.open, scoring.mismatch), affine, scores)
    return rescore_saturated(scores, x_codes, y_codes, scoring, "cpu")


def dpx_cpu(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None):
    """sw-dpx's CPU path: dpx.cu's linear cell in 16-bit lanes, lane by lane (Numba), saturating
    pairs rescored by sw-gotoh: the GPU kernel's arithmetic, testable without a GPU."""
    _linear_only(scoring, "sw-dpx")
    _shapes(x_codes, y_codes, min_length)
    return _dpx_cpu(x_codes, y_codes, scoring, affine=False)


def dpx_affine_cpu(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None):
    """sw-dpx-affine's CPU path: dpx.cu's Gotoh cell in 16-bit lanes (Numba), saturating pairs
    rescored by sw-gotoh. Linear scoring runs as O = E."""
    _shapes(x_codes, y_codes, min_length)
    return _dpx_cpu(x_codes, y_codes, scoring, affine=True)


def lanes_cpu(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None):
    """sw-lanes on CPU cores (module docstring): pair p is the rows x_codes[p] against y_codes[p], each its
    whole padded width (the padding, N, changes no score). word_bits and min_length are ignored."""
    x_codes = np.ascontiguousarray(x_codes, dtype=np.uint8)
    y_codes = np.ascontiguousarray(y_codes, dtype=np.uint8)
    pairs, m, n, _ = _shapes(x_codes, y_codes, min_length)
    if pairs == 0 or m == 0 or n == 0:
        return np.zeros(pairs, np.int32)
    first = np.arange(pairs, dtype=np.int64)
    return lanes_buffer_cpu(np.concatenate([x_codes.ravel(), y_codes.ravel()]), first * m, np.full(pairs, m),
                            pairs * m + first * n, np.full(pairs, n), scoring, product=False)


def lanes_buffer_cpu(codes, x_start, x_len, y_start, y_len, scoring: Scoring, *, product: bool, threshold=None):
    """sw-lanes on one code buffer: each pair read where it lies, at its own lengths (cpu.score_pairs)."""
    from . import cpu as sw_cpu

    shape = (len(x_start), len(y_start)) if product else (len(x_start),)
    xi, yi = _buffer_pairs(len(x_start), len(y_start), product)
    x_start, x_len, y_start, y_len = (np.asarray(a, np.int64) for a in (x_start, x_len, y_start, y_len))
    scores = np.zeros(len(xi), np.int64)
    if len(xi):
        sw_cpu.score_pairs(np.ascontiguousarray(codes, dtype=np.uint8), x_start[xi], x_len[xi], y_start[yi],
                           y_len[yi], scoring.match, scoring.mismatch, scoring.open, scoring.extend, scoring.affine,
                           scores)
    scores = scores.astype(np.int32).reshape(shape)
    return scores if threshold is None else scores >= threshold


# --------------------------------------------------------------------------
# Sequences in one buffer (module docstring)
# --------------------------------------------------------------------------

def _buffer_pairs(x_count: int, y_count: int, product: bool) -> tuple[np.ndarray, np.ndarray]:
    """(x index, y index) of every pair, in the result's order."""
    if product:
        return np.repeat(np.arange(x_count), y_count), np.tile(np.arange(y_count), x_count)
    return np.arange(x_count), np.arange(x_count)


def _gathered(codes, x_start, x_len, y_start, y_len, product: bool):
    """The pairs' code matrices (pairs x max x length, pairs x max y length), padded with N, where codes is
    (host: NumPy; device: CuPy, gathered on the device)."""
    xi, yi = _buffer_pairs(len(x_start), len(y_start), product)
    m, n = int(np.max(x_len)), int(np.max(y_len))
    if isinstance(codes, np.ndarray):
        from .cpu import gather_rows

        x = np.empty((len(xi), m), np.uint8)
        y = np.empty((len(yi), n), np.uint8)
        gather_rows(codes, np.asarray(x_start, np.int64)[xi], np.asarray(x_len, np.int64)[xi], m, x)
        gather_rows(codes, np.asarray(y_start, np.int64)[yi], np.asarray(y_len, np.int64)[yi], n, y)
        return x, y
    from .cuda import gather_device

    return (gather_device(codes, np.asarray(x_start)[xi], np.asarray(x_len)[xi], m),
            gather_device(codes, np.asarray(y_start)[yi], np.asarray(y_len)[yi], n))


def _dpx_buffer_cpu(codes, x_start, x_len, y_start, y_len, scoring: Scoring, affine: bool, product: bool,
                    threshold):
    shape = (len(x_start), len(y_start)) if product else (len(x_start),)
    if 0 in shape:
        return np.zeros(shape, np.int32 if threshold is None else bool)
    x, y = _gathered(np.ascontiguousarray(codes, dtype=np.uint8), x_start, x_len, y_start, y_len, product)
    scores = _dpx_cpu(x, y, scoring, affine).reshape(shape)
    return scores if threshold is None else scores >= threshold


def dpx_buffer_cpu(codes, x_start, x_len, y_start, y_len, scoring: Scoring, *, product: bool, threshold=None):
    """sw-dpx's CPU path on one code buffer: the pairs gathered, then dpx.cu's lanes (dpx_cpu)."""
    _linear_only(scoring, "sw-dpx")
    return _dpx_buffer_cpu(codes, x_start, x_len, y_start, y_len, scoring, False, product, threshold)


def dpx_affine_buffer_cpu(codes, x_start, x_len, y_start, y_len, scoring: Scoring, *, product: bool,
                          threshold=None):
    """sw-dpx-affine's CPU path on one code buffer (dpx_affine_cpu's lanes)."""
    return _dpx_buffer_cpu(codes, x_start, x_len, y_start, y_len, scoring, True, product, threshold)


def buffer_scores(algorithm: str, backend: str, codes, x_start, x_len, y_start, y_len, scoring: Scoring, *,
                  product: bool, threshold: int | None = None, word_bits=None, bound=None) -> np.ndarray:
    """Scores (or, with ``threshold``, whether each pair reaches it) of pairs read from one code buffer
    (module docstring), on the algorithm's buffer kernel or on matrices gathered from the buffer.

    ``bound``: an upper bound of each pair's score, shaped like the result (:func:`composition_bound`);
    with a threshold, pairs bounded below it are False without any DP (all-vs-all tiles still run
    whole unless no pair is left). With a threshold the q-gram filter (:func:`qgram_filter`) runs too
    where the scoring lets it screen: the pairs it keeps are answered on their windows of y.
    """
    shape = (len(x_start), len(y_start)) if product else (len(x_start),)
    if threshold is not None and threshold <= 0:
        return np.ones(shape, bool)
    candidates = None if threshold is None or bound is None else np.asarray(bound) >= threshold
    windows = (None if threshold is None or (candidates is not None and not candidates.any())
               else qgram_filter(codes, x_start, x_len, y_start, y_len, scoring, threshold, product=product))
    if windows is not None:
        candidates = windows.may if candidates is None else candidates & windows.may
    if candidates is not None:
        if not candidates.any():
            return np.zeros(shape, bool)
        # a tile with few pairs left, a list with some pairs out, or pairs with windows: the pairs left
        # alone, as a list of pairs
        if windows is not None or ((candidates.mean() < 0.5) if product else (not candidates.all())):
            kept = np.nonzero(candidates)   # (x index, y index) per pair of a tile; (pair index,) of a list
            xi, yi = kept if product else (kept[0], kept[0])
            kept_y_start, kept_y_len = np.asarray(y_start)[yi], np.asarray(y_len)[yi]
            if windows is not None:
                y_from, y_to = windows.windows(kept)
                kept_y_start, kept_y_len = kept_y_start + y_from, y_to - y_from
            reached = np.zeros(shape, bool)
            reached[kept] = _kernel_scores(algorithm, backend, codes, np.asarray(x_start)[xi], np.asarray(x_len)[xi],
                                           kept_y_start, kept_y_len, scoring, False, threshold, word_bits)
            return reached
    result = _kernel_scores(algorithm, backend, codes, x_start, x_len, y_start, y_len, scoring, product, threshold,
                            word_bits)
    return result if candidates is None else result & candidates


def _kernel_scores(algorithm: str, backend: str, codes, x_start, x_len, y_start, y_len, scoring: Scoring,
                   product: bool, threshold, word_bits) -> np.ndarray:
    """buffer_scores on the algorithm's buffer kernel or on matrices gathered from the buffer, no filter."""
    shape = (len(x_start), len(y_start)) if product else (len(x_start),)
    kernel = resolve_kernel(algorithm, backend, buffer=True)
    with PARALLEL_REGIONS if backend == "cpu" else nullcontext():   # (the GPU's task threads never wait)
        if kernel is not None:
            result = kernel(codes, x_start, x_len, y_start, y_len, scoring, product=product, threshold=threshold)
        elif 0 in shape:
            result = np.zeros(shape, np.int32 if threshold is None else bool)
        else:
            x, y = _gathered(codes, x_start, x_len, y_start, y_len, product)
            options = dict(word_bits=word_bits, min_length=int(min(np.max(x_len), np.max(y_len))))
            if threshold is None:
                result = pair_scores(algorithm, backend, x, y, scoring, **options)
            else:
                result = pairs_reaching(algorithm, backend, x, y, scoring, threshold, **options)
            result = np.asarray(result).reshape(shape)
    return result


# --------------------------------------------------------------------------
# The exact threshold filter: an upper bound of the score from base counts
# --------------------------------------------------------------------------

def base_counts(codes, starts, lengths) -> np.ndarray:
    """(sequences, 4) int32: how many A, C, G, T each sequence codes[starts[k]:+lengths[k]] holds; on the
    device where ``codes`` is a CuPy array (dpx.cu), else on CPU cores (Numba)."""
    if hasattr(codes, "__cuda_array_interface__"):
        from .cuda import count_bases_cuda

        return count_bases_cuda(codes, starts, lengths)
    from . import cpu as sw_cpu

    counts = np.zeros((len(starts), 4), np.int32)
    if len(starts):
        with PARALLEL_REGIONS:
            sw_cpu.count_bases(np.ascontiguousarray(codes, dtype=np.uint8), np.ascontiguousarray(starts, np.int64),
                               np.ascontiguousarray(lengths, np.int64), counts)
    return counts


def composition_bound(x_counts, y_counts, scoring: Scoring) -> np.ndarray:
    """An upper bound of each pair's SW score: c1 x sum over bases of min(count in x, count in y).

    Every alignment column that scores positively is a match of two equal
    bases (N matches nothing), each base of x and of y in at most one column,
    so an alignment holds at most that many matches of each base; every other
    column subtracts. The bound holds for linear and affine gaps alike.
    Counts broadcast over their leading axes (bases last): x_counts[:, None]
    with y_counts[None] bound every x with every y.
    """
    return scoring.match * np.minimum(x_counts, y_counts).sum(axis=-1, dtype=np.int64)


# --------------------------------------------------------------------------
# The exact threshold filter, second stage: shared q-grams near one diagonal
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class QgramFilter:
    """Which pairs may reach a threshold T, told from their shared q-grams (the q-gram lemma of Jokinen
    and Ukkonen 1991, counted on diagonal strips as SWIFT does: Rasmussen, Stoye and Myers 2006).

    A local alignment of score S >= T with M matches has at most B = (c1 M - T) / p breaks, where
    p = min(c2, O): a break is a mismatch column or a whole gap, and each costs at least p. Its matches
    then form at most B + 1 runs, and a run of r matches holds r - q + 1 matching q-grams (x[i:i+q] ==
    y[j:j+q], no N), so the alignment holds at least M - (B + 1)(q - 1) of them (``need``: the least
    over every M the pairs allow). Their diagonals j - i move only at gaps, by the gap's length, so
    they lie within ``span`` = 1 + (the longest total gap length S >= T allows) neighbouring
    diagonals. A pair whose every strip of ``span`` diagonals holds fewer than ``need`` q-gram hits
    therefore scores below T: it is out without any DP, exactly. The kernels count hits in bins of
    2**width_shift >= span diagonals and take the best two neighbouring bins (every strip lies
    within two), which can only count more.
    """

    q: int             # q-gram length (codes 0..3 only: a q-gram holding N matches nothing)
    width_shift: int   # diagonal bins of 2**width_shift
    need: int          # the hits a pair that may reach T has in some two neighbouring bins


QGRAM_LENGTHS = (3, 4, 5)
"""q-gram lengths the filter picks from (q = 5: an index of 4^5 words per sequence, 4 KiB of the GPU's
shared memory per warp)."""


def qgram_filter_plan(scoring: Scoring, threshold: int, shorter: int) -> QgramFilter | None:
    """The q-gram filter for pairs whose shorter sequence is at most ``shorter`` long, or None where it
    would keep (nearly) every pair: T within reach of random sequences, or gaps or mismatches free.

    Of the q-gram lengths, the one whose ``need`` stands furthest above the hits two random sequences
    share in two bins (x's q-grams against 2 x 2**width_shift diagonals, a hit 4^-q each; the longer
    side does not matter: a diagonal strip crosses x once).
    """
    c1, c2, gap_open, gap_extend = scoring.match, scoring.mismatch, scoring.open, scoring.extend
    threshold, shorter = int(threshold), int(shorter)
    penalty = min(c2, gap_open)
    if c1 <= 0 or threshold <= 0 or penalty <= 0 or gap_extend <= 0 or c1 * shorter < threshold:
        return None
    matches = np.arange(-(-threshold // c1), shorter + 1, dtype=np.int64)   # every M with c1 M >= T
    budget = c1 * shorter - threshold                 # the most S >= T leaves for gaps and mismatches
    longest_gap_total = max((budget - gap_open) // gap_extend + 1 if budget >= gap_open else 0,
                            budget // gap_open)        # one long gap, or gaps of one position each
    width_shift = int(longest_gap_total).bit_length()  # 2**shift > longest total: a bin holds a strip
    breaks = (c1 * matches - threshold) // penalty
    best = None
    for q in QGRAM_LENGTHS:
        need = int((matches - (breaks + 1) * (q - 1)).min())
        random_hits = max(shorter - q + 1, 0) * 2 * (1 << width_shift) / 4.0 ** q
        margin = (need - random_hits) / np.sqrt(random_hits + 1.0)
        if need >= 1 and margin >= 4.0 and (best is None or margin > best[0]):
            best = (margin, QgramFilter(q, width_shift, need))
    return None if best is None else best[1]


@dataclass(frozen=True)
class QgramWindows:
    """What the q-gram filter tells of each pair: whether it may reach the threshold (``may``, shaped as
    buffer_scores' result), and, through :meth:`windows`, the window y[y_from:y_to] that holds every
    alignment of it that may: the columns of the diagonals of its passing bins (QgramFilter), for every
    row of x. A pair's score on its window is its whole score wherever that reaches the threshold (its
    best alignment lies there), and below the threshold otherwise, so a window answers a threshold
    exactly. ``first`` and ``last`` (its first and last passing bin) stay where the filter ran (host or
    device): a tile's windows are taken only for the pairs kept."""

    may: np.ndarray            # bool, on the host
    first: object              # int32 or int64, shaped as ``may``, on the host or the device
    last: object
    x_len: np.ndarray
    y_len: np.ndarray
    plan: QgramFilter

    def windows(self, kept: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(y_from, y_to), int64, of the pairs at ``kept`` (np.nonzero's index arrays of ``may``)."""
        flat = np.ravel_multi_index(kept, self.may.shape)
        if hasattr(self.first, "__cuda_array_interface__"):
            import cupy

            at = cupy.asarray(flat)
            first, last = self.first.reshape(-1)[at].get(), self.last.reshape(-1)[at].get()
        else:
            first, last = self.first.reshape(-1)[flat], self.last.reshape(-1)[flat]
        first, last = first.astype(np.int64), last.astype(np.int64)
        m = self.x_len[kept[0]]
        n = self.y_len[kept[1] if len(kept) == 2 else kept[0]]
        # bins first..last + 1 hold diagonals j - i + m - q in [first w, (last + 2) w); rows i in [0, m)
        width, q = 1 << self.plan.width_shift, self.plan.q
        return np.clip(first * width - (m - q), 0, n), np.clip((last + 2) * width + q - 1, 0, n)


def qgram_filter(codes, x_start, x_len, y_start, y_len, scoring: Scoring, threshold: int, *,
                 product: bool) -> QgramWindows | None:
    """The q-gram filter of every pair (every x with every y for a ``product``, else x[p] with y[p]): which
    may reach ``threshold``, and where (:class:`QgramWindows`). None where no filter would screen these
    pairs (:func:`qgram_filter_plan`). On the device where ``codes`` is a CuPy array (qgram.cu), else on
    CPU cores (Numba). x should be the shorter side."""
    x_len, y_len = np.asarray(x_len, np.int64), np.asarray(y_len, np.int64)
    if len(x_len) == 0 or len(y_len) == 0:
        return None
    shorter = int(min(x_len.max(), y_len.max()) if product else np.minimum(x_len, y_len).max())
    plan = qgram_filter_plan(scoring, threshold, shorter)
    if plan is None:
        return None
    if hasattr(codes, "__cuda_array_interface__"):
        from .cuda import qgram_filter_cuda

        bins = qgram_filter_cuda(codes, x_start, x_len, y_start, y_len, plan, product=product)
        if bins is None:
            return None
        first, last = bins
        may = (first >= 0).get()
    else:
        from . import cpu as sw_cpu

        shape = (len(x_len), len(y_len)) if product else (len(x_len),)
        first, last = np.empty(shape, np.int64), np.empty(shape, np.int64)
        with PARALLEL_REGIONS:
            sw_cpu.qgram_filter(np.ascontiguousarray(codes, dtype=np.uint8), np.ascontiguousarray(x_start, np.int64),
                                x_len, np.ascontiguousarray(y_start, np.int64), y_len, plan.q, plan.width_shift,
                                plan.need, product, first.reshape(-1), last.reshape(-1))
        may = first >= 0
    return QgramWindows(may, first, last, x_len, y_len, plan)


def scores_of_passing(algorithm: str, backend: str, codes, x_start, x_len, y_start, y_len, scoring: Scoring,
                      threshold: int, **options) -> np.ndarray:
    """Scores of pairs x[p], y[p] that each reach ``threshold`` (a flag kernel said so), computed on each
    pair's q-gram window of y where the filter applies (:class:`QgramWindows`: exact, and a pair's DP
    along a few hundred columns instead of its whole y), else as :func:`buffer_scores` computes them."""
    windows = qgram_filter(codes, x_start, x_len, y_start, y_len, scoring, threshold, product=False)
    if windows is not None:
        y_from, y_to = windows.windows((np.arange(len(x_len)),))
        y_start, y_len = np.asarray(y_start, np.int64) + y_from, y_to - y_from
    return buffer_scores(algorithm, backend, codes, x_start, x_len, y_start, y_len, scoring, product=False,
                         **options)


# --------------------------------------------------------------------------
# Registry and dispatch
# --------------------------------------------------------------------------

DEFAULT_SW_ALGORITHM = {("cpu", False): "sw-lanes", ("cuda", False): "sw-bpbc",
                        ("cpu", True): "sw-lanes", ("cuda", True): "sw-dpx-affine"}
"""What ``auto`` runs without measurements, per (backend, affine gaps)."""


def choose_sw_algorithm(backend: str, algorithm: str = "auto", scoring: Scoring | None = None,
                        m: int | None = None, n: int | None = None) -> str:
    """The algorithm to run; ValueError (one line) for an unknown one or one that cannot score
    ``scoring``'s gaps. ``auto``: the measured-fastest for a bucket of shorter length m and
    longer length n (``planner.plan_sw``, from ``seqsift bench``), else the default."""
    affine = bool(scoring is not None and scoring.affine)
    if algorithm == "auto":
        if m is not None and n is not None:
            from ..planner import plan_sw

            choice = plan_sw(backend, int(m), int(n), affine,
                             lambda name: name in ALGORITHMS and ALGORITHMS[name].serves("sw")
                             and backend in ALGORITHMS[name].backends
                             and (ALGORITHMS[name].affine_gaps or not affine))
            if choice is not None:
                return choice.algorithm
        return DEFAULT_SW_ALGORITHM[(backend, affine)]
    if sw_algorithms().count(algorithm) == 0:
        raise ValueError(f"unknown screening algorithm {algorithm!r} (known: auto, {', '.join(sw_algorithms())})")
    if affine and not ALGORITHMS[algorithm].affine_gaps:
        raise ValueError(f"{algorithm} scores linear gaps only; for affine gaps (gap open != gap extend) "
                         f"use auto or {', '.join(affine_algorithms())}")
    if backend not in ALGORITHMS[algorithm].backends:
        raise ValueError(f"{algorithm} runs on CPU cores only (--backend cpu); on the GPU use auto or "
                         f"{', '.join(n for n in sw_algorithms() if backend in ALGORITHMS[n].backends)}")
    return algorithm


def pair_scores(algorithm: str, backend: str, x_codes, y_codes, scoring: Scoring, *, word_bits=None,
                min_length=None) -> np.ndarray:
    """Run ``algorithm`` on ``backend`` with the common call shape (module docstring)."""
    kernel = resolve_kernel(algorithm, backend)
    return kernel(x_codes, y_codes, scoring, word_bits=word_bits, min_length=min_length)


def pairs_reaching(algorithm: str, backend: str, x_codes, y_codes, scoring: Scoring, threshold: int, *,
                   word_bits=None, min_length=None, bound=None) -> np.ndarray:
    """Bool per pair: does its score reach ``threshold``? Exactly ``pair_scores(...) >= threshold``.

    ``bound``: an upper bound of each pair's score (:func:`composition_bound`);
    pairs whose bound is below the threshold are answered False without any
    DP, the others go to the kernel. sw-bpbc answers with its flag kernels,
    whose numbers need only enough bits for the threshold (``reach_bits``),
    where that is fewer than the scores need.
    """
    pairs, _, _, bound_length = _shapes(x_codes, y_codes, min_length)
    if threshold <= 0:
        return np.ones(pairs, bool)
    if bound is not None:
        candidates = np.flatnonzero(np.asarray(bound) >= threshold)
        reached = np.zeros(pairs, bool)
        if candidates.size == pairs:
            return pairs_reaching(algorithm, backend, x_codes, y_codes, scoring, threshold, word_bits=word_bits,
                                  min_length=min_length)
        if candidates.size:
            reached[candidates] = pairs_reaching(algorithm, backend, x_codes[candidates], y_codes[candidates],
                                                 scoring, threshold, word_bits=word_bits, min_length=min_length)
        return reached
    flag_kernel = resolve_kernel(algorithm, backend, threshold=True)
    if flag_kernel is None or reach_bits(scoring, threshold) >= score_bits(scoring, bound_length):
        return pair_scores(algorithm, backend, x_codes, y_codes, scoring, word_bits=word_bits,
                           min_length=min_length) >= threshold
    return flag_kernel(x_codes, y_codes, scoring, threshold, word_bits=word_bits, min_length=min_length)


def sw_algorithms() -> list[str]:
    """The screening algorithms: the registry's entries of metric ``sw`` (kernels/__init__.py)."""
    return [name for name, entry in ALGORITHMS.items() if entry.serves("sw")]


def affine_algorithms() -> list[str]:
    """The screening algorithms that also score affine gaps."""
    return [name for name in sw_algorithms() if ALGORITHMS[name].affine_gaps]


# --------------------------------------------------------------------------
# Alignments of the survivors, on the host
# --------------------------------------------------------------------------

MAX_ALIGN_CELLS = 1 << 31
"""Largest traceback matrix (bytes) one alignment may use."""


def align_soon(scoring: Scoring) -> None:
    """Begin readying :func:`align`'s SIMD lanes for ``scoring``'s gap model on a thread of its own:
    Numba's import and the lanes' loads from its cache, or on a fresh machine their compile in a child
    process (numba_ahead), once per process. A one-GPU screen that aligns its survivors calls this ahead,
    while it reads its inputs: its first batch of alignments had waited 0.9 s for them on both task
    threads, the GPU idle (H100 host, benchmarks/README.md)."""
    from . import cpu as sw_cpu

    sw_cpu.compile_lanes_soon(scoring.affine)


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
    from ..locate.cpu import cigar_bytes
    from . import cpu as sw_cpu

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
    # One align at a time in a process. Its Numba drivers release the GIL (nogil), so that a GPU screen's
    # other task threads launch their kernels meanwhile (the GIL held through the alignments had left the
    # GPU idle: 1.7 s of the issue-26 screen on the H100 host); two at once would gain nothing (each runs
    # on every core).
    with PARALLEL_REGIONS:
        if scoring.affine:   # three-state traceback (Gotoh); linear gaps keep their own, unchanged
            sw_cpu.align_pairs_affine(codes, q_start, q_len, t_start, t_len, scores, scoring.match,
                                      scoring.mismatch, scoring.open, scoring.extend, np.int64(max_cells),
                                      op_offsets, ops, op_counts, coords, status)
        else:
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
    char_room = 2 * op_counts   # a run of L ops takes at most 2 L characters (cigar_bytes)
    char_offsets = np.cumsum(char_room) - char_room
    text = np.zeros(int(char_room.sum()) + 1, np.uint8)
    written = cigar_bytes(ops, op_offsets, op_counts, char_offsets, text)
    decoded = text.tobytes().decode("ascii")
    cigars = [decoded[a:a + w] if w else "*" for a, w in zip(char_offsets.tolist(), written.tolist())]
    return coords, cigars


# The CUDA launchers (cuda.py; CuPy is imported only when one runs).
from .cuda import (bpbc_cuda, bpbc_reach_cuda, dpx_affine_buffer_cuda, dpx_affine_cuda,  # noqa: E402
                   dpx_buffer_cuda, dpx_cuda, gotoh_cuda, wordwise_cuda)
