"""sw-bpbc and sw-wordwise on the GPU: the CuPy launchers of ``sw.cu`` (the
family's face, its constants and the CPU paths: ``__init__.py``). The stages
are separate functions so that benchmarks can time W2B, SW and B2W apart, as
the paper's Table IV does.
"""
from __future__ import annotations

import numpy as np

from . import (GPU_SCORE_WIDTHS, SHARED_LIMIT, SW_MAX_WARPS, SW_RING, THREADS, Scoring, _constants, _linear_only,
               _shapes, _unpack_flags, _word, dpx_admits, reach_bits, rescore_saturated, score_bits)
from .constants import DPX_LANE_MAX, PLANES, dpx_bias, sliced_constant


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
    planes = cupy.empty((groups, PLANES, length_out), dtype=dtype)
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
    constants = cupy.asarray(np.concatenate([sliced_constant(v, width, dtype) for v in values]))
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
DPX_GAP = 64            # dpx.cu: N codes a PAIRS row has before its start and past the longest row
DPX_BOUND_PAD = 80      # dpx.cu: boundary row columns beyond n
DPX_MAX_SKEW = 4
"""The largest DPX_SKEW of dpx.cu (thread k of a group computes column t - S k at step t, so that a thread's
consecutive steps overlap): the table lead that shared memory is reserved for. See :func:`dpx_skew`."""
DPX_CHUNK_WORDS = 1024 + 8   # dpx.cu: DPX_CHUNK + DPX_TAIL; the PRODUCT table in shared memory has DPX_TABLE_LEAD more
DPX_MAX_ROWS = {(False, False): 20, (True, False): 16, (False, True): 20, (True, True): 20}
"""The most rows per thread (DPX_ROWS) per (gap model affine, all-vs-all tiles): beyond, ptxas spills at 128
registers (2 blocks per SM). The affine tiles keep no selector per row (their scores come from a profile
in shared memory), so they take 20 rows where the affine lists of pairs spill past 16."""
DPX_BOUNDARY_BYTES = 2 << 30
"""At most this much device memory for the rounds' boundary rows of one launch (PRODUCT launches are split
along y to stay under it; run 1 of round 2 split a 256 x 128 tile of two rounds into launches of 60 blocks
at 512 MB, half the speed of the same rounds as pairs)."""


def dpx_table_words(skew: int) -> int:
    """Words of a PRODUCT block's table (dpx.cu's DPX_TABLE_WORDS): the lead of 32 S columns, a chunk, its tail."""
    return 32 * skew + DPX_CHUNK_WORDS


def dpx_skew(rows: int, group: int, rounds: int, affine: bool, product: bool, floored: bool = False) -> int:
    """DPX_SKEW for a launch. One-round linear launches: 4 for up to 16 rows a thread, 2 for more (H200, the
    kernels alone, benchmarks/README.md: the 128 x 8,192 tile at R = 16 ran 1.10-1.12x faster at S = 4 than
    unskewed and 1.05-1.10x at S = 2; the 150 x 2,000 tile at R = 19 1.02-1.05x at 4 and 1.05-1.06x at 2).
    Lists of pairs take no more than their rows' N lead (DPX_GAP) allows. The floored affine cell (``floored``,
    DPX_FLOOR_E), one round: 4 (H100: 1.06x on the 128 x 8,192 tile and 1.085x on the 150 x 2,000 one against
    Gotoh's cell unskewed, 1.01-1.03x unskewed). Gotoh's cell as written and rounds: 1 (within 4% either way:
    the ALU pipe, not the steps' latency, bounds it)."""
    if (affine and not floored) or rounds > 1:
        return 1
    skew = DPX_MAX_SKEW if rows <= 16 or floored else 2
    while not product and not dpx_pairs_lead_fits(skew, group):
        skew //= 2
    return skew


def dpx_pairs_lead_fits(skew: int, group: int) -> bool:
    """Whether a list of pairs' y rows, with DPX_GAP codes of N before and after them, hold every column that
    skew S and group G read: thread k reads column t - S k from t = 0, up to S (G - 1) + 3 past the row."""
    return skew * (group - 1) + 4 <= DPX_GAP


def dpx_tile_shared_bytes(rows: int, skew: int = DPX_MAX_SKEW) -> int:
    """Shared memory of a PRODUCT block of dpx.cu: its table, then each thread's score profile (5 target
    codes x ceil(R / 4) loads of 16 bytes). 104 KB at R = 20: two blocks still fit an SM (228 KB)."""
    return 4 * dpx_table_words(skew) + 5 * -(-rows // 4) * DPX_THREADS * 16


def dpx_max_tile_rows(shared_per_block: int) -> int:
    """The most rows per thread R whose PRODUCT block fits ``shared_per_block`` bytes of shared memory (a
    multiple of 4: the profile is loaded 4 rows at a time). The device's opt-in limit: 227 KB on Hopper
    (R = 44, past DPX_MAX_ROWS), 163 KB on the A100, 99 KB on sm_86 and sm_89 (the A10, L4 and RTX cards:
    R = 16), 64 KB on the T4 (R = 8)."""
    return 4 * ((shared_per_block - 4 * dpx_table_words(DPX_MAX_SKEW)) // (5 * DPX_THREADS * 16))


def dpx_geometry(m: int, rows: int | None = None, group: int | None = None,
                 affine: bool = False, product: bool = False, max_rows: int | None = None) -> tuple[int, int, int]:
    """(rows per thread R, threads per pair group G, rounds) of dpx.cu for x sequences of up to m rows.

    Unless given: the fewest rounds (each round after the first passes its top row through global
    memory and runs the target again), then the (R, G) that computes the fewest rows, weighed by the
    per-step work that R rows share (a shuffle, a table read, the loop): rounds G R (1 + 6 / R), with
    R <= DPX_MAX_ROWS and R <= ``max_rows`` (the device's :func:`dpx_max_tile_rows` for PRODUCT). 128 rows:
    R = 16 x G = 8 (run 1 of round 2, 128 x 8,192 linear: 6.45e12 cells/s, against 5.94e12 for 8 x 16 and
    2.27e12 for 16 x 4 in two rounds); 150: 19 x 8; 512: 16 x 32.
    """
    m = max(1, int(m))
    if rows and group:
        return rows, group, -(-m // (rows * group))
    best = None
    for g in ((group,) if group else (4, 8, 16, 32)):
        for r in ((rows,) if rows else range(4, min(DPX_MAX_ROWS[affine, product], max_rows or 1 << 30) + 1)):
            rounds = -(-m // (g * r))
            key = (rounds, rounds * g * r * (1 + 6 / r))
            if best is None or key < best[0]:
                best = (key, r, g, rounds)
    return best[1], best[2], best[3]


def _as_device(array, dtype):
    import cupy

    return cupy.ascontiguousarray(cupy.asarray(array, dtype=dtype))


def gather_device(codes_dev, starts, lengths, width: int, lead: int = 0, out=None):
    """(len(starts), width) uint8 on the device: row p holds codes[starts[p]:+lengths[p]] from column
    ``lead`` on, N (4) elsewhere (dpx.cu's sw_gather_rows; lengths are cut at width - lead). starts and
    lengths may be on the host or the device; ``out``: a C-contiguous device array of that shape to fill."""
    import cupy

    from ..cuda import load_module

    rows = len(starts)
    if out is None:
        out = cupy.empty((rows, width), dtype=cupy.uint8)
    if rows and width:
        lengths = cupy.minimum(_as_device(lengths, cupy.int32), max(0, width - lead)).astype(cupy.int32)
        total = rows * width
        load_module("sw/dpx.cu").get_function("sw_gather_rows")(
            ((total + 255) // 256,), (256,),
            (codes_dev, _as_device(starts, cupy.int64), lengths, np.int64(rows), np.int32(width), np.int32(lead),
             out))
    return out


def dpx_pair_rows(head_dev, codes_dev, y_start, y_len, n: int):
    """The buffer a list of pairs reads (dpx.cu, "The launch"): ``head_dev`` as it is (where the x sequences are
    read), then each y sequence of ``codes_dev`` in a row of n + 2 DPX_GAP codes, with DPX_GAP codes of N on
    both sides. Returns (buffer, each y's start in it), both on the device (for the 24 million pairs of
    ``seqsift bench``'s 32 x 256 bucket, starts made on the host and uploaded took as long as the kernel)."""
    import cupy

    count, width = len(y_start), n + 2 * DPX_GAP
    buffer = cupy.empty(head_dev.size + count * width, dtype=cupy.uint8)
    buffer[:head_dev.size] = head_dev.reshape(-1)
    gather_device(codes_dev, y_start, y_len, width, DPX_GAP, out=buffer[head_dev.size:].reshape(count, width))
    return buffer, cupy.arange(count, dtype=cupy.int64) * width + (DPX_GAP + head_dev.size)


def count_bases_cuda(codes_dev, starts, lengths) -> np.ndarray:
    """(sequences, 4) int32 on the host: how many A, C, G, T each sequence codes_dev[starts[k]:+lengths[k]]
    of a device code buffer holds (dpx.cu's sw_count_bases, a warp per sequence; starts and lengths on the
    host or the device)."""
    import cupy

    from ..cuda import load_module

    count = len(starts)
    counts = cupy.zeros((count, 4), dtype=cupy.int32)
    if count:
        load_module("sw/dpx.cu").get_function("sw_count_bases")(
            ((count + 7) // 8,), (256,),
            (cupy.asarray(codes_dev), _as_device(starts, cupy.int64), _as_device(lengths, cupy.int64),
             np.int64(count), counts))
    return counts.get()


QGRAM_WARPS = 8
"""Warps per block of qgram.cu's kernels."""
QGRAM_X_PER_BLOCK = 128
"""sw_qgram_tiles: xs per block (a block indexes one y, then its warps take these xs). Filter alone on an
H200 (session 33, medians of 7): a screen task's 8,192 x 256 tile of 150 x 2,000 took 2.71-2.87 ms at 128
against 2.96-3.23 ms at 64, 3.5-3.7 ms at 32 and 2.75-2.86 ms at 256-1,024; the 256 x 128 tile of 128 x 8,192
0.27 ms at 64 and 128, 0.32-0.38 ms at 256 and more (fewer blocks than the GPU has SMs)."""


def qgram_filter_cuda(codes_dev, x_start, x_len, y_start, y_len, plan, *, product: bool):
    """qgram.cu's filter on sequences in one device code buffer: (first, last) passing bins per pair, int32
    CuPy arrays, each (len x, len y) for a product, else (len x,); None where a sequence is past what
    shared memory holds (an indexed sequence over 65,535 codes, or more diagonal bins than fit)."""
    import cupy

    from ..cuda import load_module, shared_memory_per_block

    x_len, y_len = np.asarray(x_len, np.int64), np.asarray(y_len, np.int64)
    x_count, y_count = len(x_len), len(y_len)
    x_cap, y_cap = int(x_len.max()), int(y_len.max())
    bins = ((y_cap + x_cap) >> plan.width_shift) + 2   # the most bins a pair has
    bin_cap = (bins + 4 + 3) // 4 * 4                   # qgram.cu reads 4 a time and the one after them
    words = 1 << (2 * plan.q)
    limit = shared_memory_per_block(cupy.cuda.Device().id)
    shape = (x_count, y_count) if product else (x_count,)
    first, last = cupy.empty(shape, dtype=cupy.int32), cupy.empty(shape, dtype=cupy.int32)
    module = load_module("sw/qgram.cu")
    common = (np.int32(plan.q), np.int32(plan.width_shift), np.int32(plan.need))
    if product:   # y's index and every warp's bins in one block
        fixed = 4 * words + 2 * (y_cap + 1)
        warps = min(QGRAM_WARPS, (limit - fixed) // (4 * bin_cap))
        if y_cap > 0xFFFF or warps < 1:
            return None
        shared = fixed + 4 * warps * bin_cap
        kernel = module.get_function("sw_qgram_tiles")
        args = (cupy.asarray(codes_dev), _as_device(x_start, cupy.int64), _as_device(x_len, cupy.int32),
                np.int64(x_count), _as_device(y_start, cupy.int64), _as_device(y_len, cupy.int32),
                np.int64(y_count), np.int32(QGRAM_X_PER_BLOCK), *common, np.int32(bin_cap), first, last)
        grid = (-(-x_count // QGRAM_X_PER_BLOCK), min(y_count, 65535))
    else:         # each warp: its x's index and its bins
        per_warp = 4 * (words + bin_cap + (x_cap + 7) // 8 * 4)   # qgram.cu's position_words
        warps = min(QGRAM_WARPS, limit // per_warp)
        if x_cap > 0xFFFF or warps < 1:
            return None
        shared = warps * per_warp
        kernel = module.get_function("sw_qgram_pairs")
        args = (cupy.asarray(codes_dev), _as_device(x_start, cupy.int64), _as_device(x_len, cupy.int32),
                _as_device(y_start, cupy.int64), _as_device(y_len, cupy.int32), np.int64(x_count), *common,
                np.int32(x_cap), np.int32(bin_cap), first, last)
        grid = (-(-x_count // warps),)
    kernel.max_dynamic_shared_size_bytes = shared
    kernel(grid, (32 * warps,), args, shared_mem=shared)
    return first, last


def reach_z(scoring: Scoring, threshold: int, half: bool = False) -> int | None:
    """The lane value of score T in dpx.cu, or None where a lane cannot flag T exactly (T past the 16-bit
    lanes, or T < 1): T + B + c2, or with ``half`` lanes the bits of the half T as a signed 16-bit integer."""
    if half:
        return int(np.float16(threshold).view(np.int16)) if 1 <= threshold <= HALF_EXACT - scoring.match else None
    value = int(threshold) + dpx_bias(scoring.open, scoring.mismatch) + scoring.mismatch
    return value if 1 <= threshold and value <= DPX_LANE_MAX - scoring.match else None


HALF_EXACT = 2048
"""dpx.cu's half lanes hold every integer of magnitude up to this exactly."""


def dpx_half_admits(scoring: Scoring, m: int, n: int, affine: bool, product: bool) -> bool:
    """Whether dpx.cu's linear cell can run on half lanes (DPX_HALF) for x of up to m and y of up to n bases
    on this device: linear gaps on Hopper (sm_90), every value exact (no score can pass c1 (min(m, n) + 1), and
    the penalties are small), and for lists of pairs a table byte for c1 + c2 (its half's low byte 0, as for
    the integers 0-8 and the even ones up to 16)."""
    import cupy

    if affine or int(cupy.cuda.Device().compute_capability) < 90:
        return False
    c1, c2, g = scoring.match, scoring.mismatch, scoring.open
    if c1 * (min(m, n) + 1) + c1 + c2 + g > HALF_EXACT:
        return False
    return product or int(np.float16(c1 + c2).view(np.uint16)) & 0xFF == 0


def dpx_floor_admits(scoring: Scoring, affine: bool, product: bool) -> bool:
    """Whether dpx.cu's affine cell can keep E floored at 0 (DPX_FLOOR_E: three maxima a cell pair on the ALU
    pipe, not four): its plain 32-bit adds must neither borrow nor carry across lanes, so E's floor B + c2
    must cover E, and the tiles' profile s + O must be >= 0 (O >= c2)."""
    if not affine:
        return False
    floor = dpx_bias(scoring.open, scoring.mismatch) + scoring.mismatch
    return floor >= scoring.extend and (not product or scoring.open >= scoring.mismatch)


def _variant(asked: bool | None, admitted: bool, default: bool, refusal: str) -> bool:
    """A launch variant (half lanes, the floored cell): ``default`` unless asked for or against; asking for it
    where it is not admitted raises ValueError(``refusal``)."""
    if asked and not admitted:
        raise ValueError(refusal)
    return default if asked is None else bool(asked)


def dpx_launch(codes_dev, x_start, x_len, y_start, y_len, m: int, n: int, scoring: Scoring, affine: bool, *,
               product: bool, threshold: int | None = None, rows: int | None = None, group: int | None = None,
               half: bool | None = None, skew: int | None = None, floor_e: bool | None = None):
    """dpx.cu's kernels on sequences in one device code buffer; int32 on the device.

    x_start/x_len (int64/int32, host or device): the x sequences; y_start/y_len: the y ones. ``product``:
    every x against every y, out (len x, len y); else x[p] against y[p], out (len x,), whose y rows must
    hold N for DPX_GAP codes before their start and past n (:func:`gather_device` with lead DPX_GAP).
    m, n: the longest x and y. Scores (-1: the lane may have wrapped; rescore it), or with a
    ``threshold`` whose :func:`reach_z` exists, flags 1 / 0 (score >= T). ``half``: the linear cell on
    half lanes (None: wherever :func:`dpx_half_admits`; True where it does not raises ValueError). ``skew``:
    dpx.cu's DPX_SKEW (None: :func:`dpx_skew`'s; one-round launches only, else 1). ``floor_e``: the affine cell
    with E floored at 0 (None: the tiles, wherever :func:`dpx_floor_admits`; True where it does not raises
    ValueError). Lists of pairs keep Gotoh's cell unless asked: floored, their 4 IMADs a cell pair (Y and W
    both kept) load the FMA pipe as much as the ALU one, and they ran 0.91-0.94x (H100, benchmarks/README.md).
    The running maximum is taken over the diagonal terms (dpx.cu's DPX_BEST_FROM_P) except in linear tiles.
    """
    import cupy

    from ..cuda import load_module, shared_memory_per_block
    x_count, y_count = len(x_start), len(y_start)
    out = cupy.zeros((x_count, y_count) if product else (x_count,), dtype=cupy.int32)
    if x_count == 0 or y_count == 0 or m == 0 or n == 0:
        return out
    max_rows = dpx_max_tile_rows(shared_memory_per_block(cupy.cuda.Device().id)) if product else None
    rows, group, rounds = dpx_geometry(m, rows, group, affine, product, max_rows)
    half_admitted = dpx_half_admits(scoring, m, n, affine, product)
    half = _variant(half, half_admitted, half_admitted,
                    f"half lanes cannot score {m} x {n} with {scoring.describe()} on this device")
    if half and threshold is not None and reach_z(scoring, threshold, half=True) is None:
        half = False   # a threshold past what half lanes hold exactly: no score reaches it, the integers say so
    z = 0 if threshold is None else reach_z(scoring, threshold, half)
    if z is None:
        raise ValueError(f"threshold {threshold} cannot be flagged in 16-bit lanes with {scoring.describe()}")
    # g = c2 (linear): the lists of pairs keep one value a cell, not two (dpx.cu, DPX_GAP_IS_MISMATCH)
    same = {"DPX_GAP_IS_MISMATCH": 1} if not affine and scoring.open == scoring.mismatch else {}
    if half:
        same["DPX_HALF"] = 1
    floor_admitted = dpx_floor_admits(scoring, affine, product)
    floored = _variant(floor_e, floor_admitted, floor_admitted and product,
                       f"the floored affine cell cannot score {scoring.describe()}{' in tiles' if product else ''}")
    if floored:
        same["DPX_FLOOR_E"] = 1
    if affine or not product:   # H100, A/B: 1.02-1.04x; the linear tiles ran 0.97-1.01x
        same["DPX_BEST_FROM_P"] = 1
    if skew is None or rounds > 1:
        skew = dpx_skew(rows, group, rounds, affine, product, floored)
    if skew not in (1, 2, 4) or (not product and not dpx_pairs_lead_fits(skew, group)):
        raise ValueError(f"skew {skew}: 1, 2 or 4, and for lists of pairs S (G - 1) + 4 <= {DPX_GAP}")
    if skew > 1:
        same["DPX_SKEW"] = skew
    module = load_module("sw/dpx.cu", DPX_ROWS=rows, DPX_AFFINE=int(affine), **same)
    name = (f"sw_dpx_{'tiles' if product else 'pairs'}_{'affine' if affine else 'linear'}"
            f"{'' if threshold is None else '_reach'}{'_rounds' if rounds > 1 else ''}")
    kernel = module.get_function(name)
    lane_pairs = (x_count + 1) // 2
    groups_per_block = DPX_THREADS // group
    blocks_x = -(-lane_pairs // groups_per_block)
    bound_row = 2 * (n + DPX_BOUND_PAD)
    y_per_launch = y_count if product else 1
    if rounds > 1:
        per_y = lane_pairs * 2 * bound_row * 4
        y_per_launch = max(1, min(y_per_launch, DPX_BOUNDARY_BYTES // per_y))
    if product:
        y_per_launch = min(y_per_launch, 65535)   # gridDim.y
    slots = lane_pairs * y_per_launch
    boundary = cupy.empty((slots * 2 * bound_row,) if rounds > 1 else (1,), dtype=cupy.uint32)
    codes_dev = cupy.asarray(codes_dev)
    xs, xl = _as_device(x_start, cupy.int64), _as_device(x_len, cupy.int32)
    ys, yl = _as_device(y_start, cupy.int64), _as_device(y_len, cupy.int32)
    bias = dpx_bias(scoring.open, scoring.mismatch)
    constants = (np.int32(rounds), np.int32(group), np.int32(scoring.match), np.int32(scoring.mismatch),
                 np.int32(scoring.open), np.int32(scoring.extend), np.int32(bias), np.int32(z),
                 np.int64(bound_row), boundary)
    if not product:
        kernel((blocks_x,), (DPX_THREADS,), (codes_dev, xs, xl, np.int64(x_count), ys, yl) + constants
               + (out, np.int64(1)))
        return out
    shared = dpx_tile_shared_bytes(rows, skew)
    kernel.max_dynamic_shared_size_bytes = shared
    for first in range(0, y_count, y_per_launch):
        last = min(y_count, first + y_per_launch)
        kernel((blocks_x, last - first), (DPX_THREADS,),
               (codes_dev, xs, xl, np.int64(x_count), ys[first:last], yl[first:last]) + constants
               + (out[:, first:], np.int64(y_count)), shared_mem=shared)
    return out


def _dpx_pairs_device(x_dev, y_dev, scoring: Scoring, affine: bool, threshold=None, rows=None, group=None):
    """dpx_launch on code matrices (pairs x m, pairs x n, on the device): one buffer of the x rows as they
    are, then the y rows gathered with DPX_GAP codes of N on both sides."""
    import cupy

    pairs, m = x_dev.shape
    n = y_dev.shape[1]
    index = cupy.arange(pairs, dtype=cupy.int64)
    y_len = cupy.full(pairs, n, dtype=cupy.int32)
    buffer, y_rows = dpx_pair_rows(x_dev, y_dev.reshape(-1), index * n, y_len, n)
    return dpx_launch(buffer, index * m, cupy.full(pairs, m, dtype=cupy.int32), y_rows, y_len, m, n, scoring, affine,
                      product=False, threshold=threshold, rows=rows, group=group)


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
    scores = _dpx_pairs_device(x_dev, y_dev, scoring, affine, rows=rows, group=group).get()
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


# --------------------------------------------------------------------------
# The buffer call shape (kernels/sw/__init__.py, "Sequences in one buffer")
# --------------------------------------------------------------------------

def _dpx_buffer_cuda(codes, x_start, x_len, y_start, y_len, scoring: Scoring, affine: bool, *, product: bool,
                     threshold=None):
    import cupy

    x_start, x_len = np.asarray(x_start, np.int64), np.asarray(x_len, np.int64)
    y_start, y_len = np.asarray(y_start, np.int64), np.asarray(y_len, np.int64)
    shape = (len(x_start), len(y_start)) if product else (len(x_start),)
    if 0 in shape:
        return np.zeros(shape, bool if threshold is not None else np.int32)
    codes_dev = cupy.asarray(codes, dtype=cupy.uint8)
    m, n = int(x_len.max()), int(y_len.max())
    if not dpx_admits(scoring):   # every pair by sw-gotoh
        scores = _buffer_gotoh(codes_dev, x_start, x_len, y_start, y_len, m, n, scoring, product)
        return scores if threshold is None else scores >= threshold
    flag = threshold is not None and reach_z(scoring, threshold) is not None
    if product:
        result = dpx_launch(codes_dev, x_start, x_len, y_start, y_len, m, n, scoring, affine, product=True,
                            threshold=threshold if flag else None).get()
    else:
        buffer, rows_start = dpx_pair_rows(codes_dev, codes_dev, y_start, y_len, n)   # x read where it lies
        result = dpx_launch(buffer, x_start, x_len, rows_start, y_len, m, n, scoring, affine, product=False,
                            threshold=threshold if flag else None).get()
        del buffer
    if flag:
        return result.astype(bool)
    flagged = np.argwhere(result < 0)   # lanes that may have wrapped: sw-gotoh's 32-bit scores
    if flagged.size:
        xi = flagged[:, 0]
        yi = flagged[:, 1] if product else xi
        again = _buffer_gotoh(codes_dev, x_start[xi], x_len[xi], y_start[yi], y_len[yi], m, n, scoring, False)
        result[tuple(flagged.T)] = again
    return result if threshold is None else result >= threshold


def _buffer_gotoh(codes_dev, x_start, x_len, y_start, y_len, m: int, n: int, scoring: Scoring, product: bool):
    """sw-gotoh's scores of buffer pairs (every x with every y for ``product``), through padded rows."""
    if product:
        xi, yi = np.repeat(np.arange(len(x_start)), len(y_start)), np.tile(np.arange(len(y_start)), len(x_start))
        return _buffer_gotoh(codes_dev, x_start[xi], x_len[xi], y_start[yi], y_len[yi], m, n, scoring,
                             False).reshape(len(x_start), len(y_start))
    x_rows = gather_device(codes_dev, x_start, x_len, m)
    y_rows = gather_device(codes_dev, y_start, y_len, n)
    return gotoh_cuda(x_rows, y_rows, scoring)


def dpx_buffer_cuda(codes, x_start, x_len, y_start, y_len, scoring: Scoring, *, product: bool, threshold=None):
    """sw-dpx on sequences in one code buffer (host or device), read where they lie (dpx.cu, "The launch")."""
    _linear_only(scoring, "sw-dpx")
    return _dpx_buffer_cuda(codes, x_start, x_len, y_start, y_len, scoring, False, product=product,
                            threshold=threshold)


def dpx_affine_buffer_cuda(codes, x_start, x_len, y_start, y_len, scoring: Scoring, *, product: bool,
                           threshold=None):
    """sw-dpx-affine on sequences in one code buffer (host or device), read where they lie."""
    return _dpx_buffer_cuda(codes, x_start, x_len, y_start, y_len, scoring, True, product=product,
                            threshold=threshold)
