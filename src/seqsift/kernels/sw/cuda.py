"""sw-bpbc and sw-wordwise on the GPU: the CuPy launchers of ``sw.cu`` (the
family's face, its constants and the CPU paths: ``__init__.py``). The stages
are separate functions so that benchmarks can time W2B, SW and B2W apart, as
the paper's Table IV does.
"""
from __future__ import annotations

import numpy as np

from . import (GPU_SCORE_WIDTHS, SHARED_LIMIT, SW_MAX_WARPS, SW_RING, THREADS, Scoring, _constants, _linear_only,
               _shapes, _unpack_flags, _word, dpx_admits, reach_bits, rescore_saturated, score_bits)
from . import cpu as sw_cpu


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
    _linear_only(scoring, "sw-bpbc")
    pairs, m, n, bound = _shapes(x_codes, y_codes, min_length)
    if pairs == 0 or m == 0 or n == 0:
        return np.zeros(pairs, np.int32)
    word_bits = word_bits or 32
    width = gpu_score_width(score_bits(scoring, bound))
    sliced = cuda_sw_bpbc(*_cuda_planes(x_codes, y_codes, word_bits), scoring, width, word_bits)
    return cuda_b2w(sliced, pairs, word_bits).get()


def bpbc_reach_cuda(x_codes, y_codes, scoring: Scoring, threshold: int, *, word_bits=None, min_length=None):
    """Whether each pair's score reaches ``threshold`` (>= 1): sw-bpbc's sw_reach kernels on the GPU."""
    _linear_only(scoring, "sw-bpbc")
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

    _linear_only(scoring, "sw-wordwise")
    x_dev = cupy.asarray(x_codes, dtype=cupy.uint8)
    y_dev = cupy.asarray(y_codes, dtype=cupy.uint8)
    pairs = _shapes(x_dev, y_dev, min_length)[0]
    scores = cuda_wordwise_device(cupy.ascontiguousarray(x_dev.T), cupy.ascontiguousarray(y_dev.T), pairs, scoring)
    return scores.get()


# --------------------------------------------------------------------------
# sw-gotoh, sw-dpx and sw-dpx-affine (dpx.cu)
# --------------------------------------------------------------------------

def cuda_gotoh_device(x_pos_major, y_pos_major, pairs: int, scoring: Scoring):
    """sw_gotoh on position-major codes (M x pairs, N x pairs, CuPy); int32 scores on the device."""
    import cupy

    from ..cuda import load_module

    m, n = x_pos_major.shape[0], y_pos_major.shape[0]
    scores = cupy.zeros(pairs, dtype=cupy.int32)
    if pairs and m and n:
        scratch_h = cupy.empty((m, pairs), dtype=cupy.int32)
        scratch_e = cupy.empty((m, pairs), dtype=cupy.int32)
        kernel = load_module("sw/dpx.cu").get_function("sw_gotoh")
        kernel(((pairs + 127) // 128,), (128,),
               (x_pos_major, y_pos_major, np.int64(pairs), np.int32(m), np.int32(n), np.int32(scoring.match),
                np.int32(scoring.mismatch), np.int32(scoring.open), np.int32(scoring.extend), scratch_h, scratch_e,
                scores))
    return scores


def gotoh_cuda(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None):
    """sw-gotoh on the GPU: one pair per thread, 32-bit cells, affine or linear gaps."""
    import cupy

    x_dev = cupy.asarray(x_codes, dtype=cupy.uint8)
    y_dev = cupy.asarray(y_codes, dtype=cupy.uint8)
    pairs = _shapes(x_dev, y_dev, min_length)[0]
    scores = cuda_gotoh_device(cupy.ascontiguousarray(x_dev.T), cupy.ascontiguousarray(y_dev.T), pairs, scoring)
    return scores.get()


DPX_THREADS = 256
DPX_ROW_CHOICES = (4, 8, 16)


def dpx_geometry(m: int, rows: int | None = None, group: int | None = None) -> tuple[int, int, int]:
    """(rows per thread R, threads per pair group G, rounds) of dpx.cu for x rows of length m.

    Default: R = 8 and the smallest power of two G >= m / R (at least 4, at most 32); longer x runs
    in rounds of G R rows.
    """
    rows = rows or 8
    if group is None:
        group = 4
        while group < 32 and group * rows < m:
            group *= 2
    rounds = max(1, -(-m // (group * rows)))
    return rows, group, rounds


def y_shifts(y_dev, n4: int):
    """dpx.cu's target format: 8 x code for A/C/G/T, 32 otherwise, rows padded to n4 columns with 32."""
    import cupy

    pairs, n = y_dev.shape
    out = cupy.full((pairs, n4), 32, dtype=cupy.uint8)
    out[:, :n] = cupy.where(y_dev < 4, y_dev * 8, 32).astype(cupy.uint8)
    return out


def cuda_dpx_device(x_dev, ysh_dev, n: int, scoring: Scoring, affine: bool, rows: int | None = None,
                    group: int | None = None):
    """The DPX kernel on device codes x (pairs x m) and target shifts (pairs x n4); int32 scores on the
    device, -1 for a pair that may have saturated its 16-bit lane."""
    import cupy

    from ..cuda import load_module
    from .cpu import dpx_bias

    pairs, m = x_dev.shape
    n4 = ysh_dev.shape[1]
    rows, group, rounds = dpx_geometry(m, rows, group)
    scores = cupy.zeros(pairs, dtype=cupy.int32)
    if pairs == 0 or m == 0 or n == 0:
        return scores
    groups = (pairs + 1) // 2
    boundary = cupy.empty((groups, 4 * n) if rounds > 1 else (1,), dtype=cupy.uint32)
    threads = groups * group
    blocks = -(-threads // DPX_THREADS)
    bias = dpx_bias(scoring.open, scoring.mismatch)
    module = load_module("sw/dpx.cu", DPX_ROWS=rows)
    common = (x_dev, ysh_dev, np.int64(pairs), np.int32(m), np.int32(rounds), np.int32(n), np.int32(n4),
              np.int32(group), np.int32(scoring.match), np.int32(scoring.mismatch))
    if affine:
        module.get_function("sw_dpx_affine")((blocks,), (DPX_THREADS,), common + (
            np.int32(scoring.open), np.int32(scoring.extend), np.int32(bias), boundary, scores))
    else:
        module.get_function("sw_dpx_linear")((blocks,), (DPX_THREADS,), common + (
            np.int32(scoring.gap), np.int32(bias), boundary, scores))
    return scores


def _dpx_cuda(x_codes, y_codes, scoring: Scoring, affine: bool, rows=None, group=None):
    import cupy

    x_dev = cupy.ascontiguousarray(cupy.asarray(x_codes, dtype=cupy.uint8))
    y_dev = cupy.ascontiguousarray(cupy.asarray(y_codes, dtype=cupy.uint8))
    pairs, m = x_dev.shape
    n = y_dev.shape[1]
    if pairs == 0 or m == 0 or n == 0:
        return np.zeros(pairs, np.int32)
    if not dpx_admits(scoring):
        return gotoh_cuda(x_dev, y_dev, scoring)
    n4 = -(-n // 4) * 4
    scores = cuda_dpx_device(x_dev, y_shifts(y_dev, n4), n, scoring, affine, rows, group).get()
    return rescore_saturated(scores, x_dev, y_dev, scoring, "cuda")


def dpx_cuda(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None):
    """sw-dpx on the GPU: dpx.cu's linear cell in 16-bit lanes; saturating pairs rescored by sw-gotoh."""
    _linear_only(scoring, "sw-dpx")
    _shapes(x_codes, y_codes, min_length)
    return _dpx_cuda(x_codes, y_codes, scoring, affine=False)


def dpx_affine_cuda(x_codes, y_codes, scoring: Scoring, *, word_bits=None, min_length=None):
    """sw-dpx-affine on the GPU: dpx.cu's Gotoh cell in 16-bit lanes; saturating pairs rescored by sw-gotoh."""
    _shapes(x_codes, y_codes, min_length)
    return _dpx_cuda(x_codes, y_codes, scoring, affine=True)
