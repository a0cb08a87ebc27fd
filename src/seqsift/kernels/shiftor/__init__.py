"""Shift-Or and Wu-Manber as inclusive scans (Mitani et al. 2017): launchers.

Every launcher has the common call shape (kernels/__init__.py)::

    kernel(text, batch, k, owned_lo, owned_hi) -> EndHits

and takes the paper's tuning knobs as keywords (the benchmark sweeps them):

==================  =======================  =========================  ==========================
algorithm           CPU (Numba, CI-tested)   CUDA (shiftor.cu)          knobs
==================  =======================  =========================  ==========================
exact-shiftor-scan  :func:`exact_scan_cpu`   :func:`exact_scan_cuda`    alpha (1..32), bits, block_scan
edit-wm-scan        :func:`wm_scan_cpu`      :func:`wm_scan_cuda`       alpha (1..16; 32), bits, unrolled, block_scan
edit-wm-segmented   :func:`segmented_cpu`    :func:`segmented_cuda`     alpha (1 = GBPR; 4..16 tiled), segment
==================  =======================  =========================  ==========================

* exact-shiftor-scan: exact matching (k = 0), the same hits for Hamming and
  edit distance. Algorithm 1 in the tribrid scheme: overlapping segments per
  GPU warp (the paper's block-level scan only with ``block_scan=True``: it
  costs a barrier per tile, see shiftor.cu), a scan within each warp
  (shuffles), alpha characters per thread by sequential Shift-Or, and the
  wildcard extension that skips the last addition when m <= w - alpha + 1.
  w = 32 for m <= 32, else 64; patterns up to 64 characters. On the GPU alpha is 32 or 16 (:func:`default_alpha`).
* edit-wm-scan: Wu-Manber's k differences (Algorithm 2), each level an
  inclusive scan under double-dagger in the same tribrid scheme; any k < m.
  The wildcard extension applies to every level too (m <= w - alpha + 1);
  kernels compiled for k = 1, 2, 3 unroll the levels (Section 5.2). On the
  GPU, alpha = 32 = w needs no scan steps, and runs two 16-character scans
  side by side in each 32-bit word for m <= 15 (k = 1..3, m <= 32; the
  default there: :func:`whole_alpha_variant`).
* edit-wm-segmented: the GBPR baseline: each GPU thread runs sequential
  Wu-Manber over ``segment`` characters plus a halo of m + k - 1 before them
  (alpha = 1, segment = 8 as in the paper); alpha > 1 is the tiled GBPR, which
  fetches alpha contiguous characters at a time. k <= 8.

The Wu-Manber algorithms report d(e) = min over s of ED(P, text[s:e]): the
first level whose state at e is active. Pattern rows are IUPAC masks (DNA:
text code 4 never matches) or raw bytes (``batch.alphabet == "bytes"``); both
become the mask table B[c] (shiftor_cpu.mask_tables), so the kernels never
see the difference.
"""
from __future__ import annotations

import functools

import numba
import numpy as np

from .. import EndHits
from . import cpu as _cpu
from ..driver import concat_hits, empty_pattern_hits, run_buffered_tasks

MAX_M = 64
SCAN_WARPS = 8            # warps per block of the scans, as in shiftor.cu
CPU_BLOCK_WARPS = 1       # the CPU emulation's warps per scan block (the GPU's: 1, no block level)
SEGMENTED_THREADS = 256   # GBPR: threads per block
WM_K_MAX = 63             # as in shiftor.cu
SEGMENTED_K_MAX = 8       # as in shiftor.cu
EXACT_ALPHAS = (1, 2, 4, 8, 16, 32)
WM_ALPHAS = (1, 2, 4, 8, 16)
SEGMENTED_ALPHAS = (1, 4, 8, 16)
DEFAULT_ALPHA = 16        # the paper's choice (Section 6.1)
GBPR_SEGMENT = 8          # the paper's GBPR segment size (Section 6)
TABLE_BYTES = 256 * 256   # the per-lane mask table in shared memory (shiftor.cu, TABLE_STRIDE)
ROWS_PER_LAUNCH = 65_535  # grid.y limit


def word_bits(m: int, alpha: int = DEFAULT_ALPHA) -> int:
    """The word size w for a pattern of length m: 32 bits when it fits, else 64."""
    return 32 if m <= 32 else 64


WM_FIXED_K = (1, 2, 3)     # edit-wm-scan kernels compiled for one k (shiftor.cu, WM_KERNEL_FIXED)
WM_FIXED_ALPHAS = (8, 16)
BLOCK_SCAN_ALPHAS = (16, 32)  # exact-shiftor-scan kernels with Table 1's block level (shiftor.cu, _block)


WHOLE_ALPHA = 32           # edit-wm-scan with alpha = w (shiftor.cu, wm_alpha_w): k = 1..3
HALVES_MAX_M = 15          # ... two 16-character scans per 32-bit word up to here
WHOLE_MAX_M = 32           # ... one 32-bit scan up to here


def whole_alpha_variant(m: int, k: int, bits: int | None = None) -> str | None:
    """The alpha = 32 kernel of edit-wm-scan for a row: ``w16x2`` (two 16-bit scans per
    word, m <= 15), ``w32`` (one 32-bit scan, m <= 32; ``bits=32`` picks it for short
    patterns too), or None where there is none (k outside 1..3, m > 32, bits = 64)."""
    if k not in WM_FIXED_K or m > WHOLE_MAX_M or bits == 64:
        return None
    return "w16x2" if m <= HALVES_MAX_M and bits is None else "w32"


def default_alpha(kind: str, m: int, k: int = 0, bits: int | None = None) -> int:
    """Characters per thread on the GPU, as measured fastest on the H100 (benchmarks/README.md):
    exact matching 32 (two 16-byte loads per lane; the wildcard extension up to m = 33 with
    w = 64, the last addition beyond) except 16 for 33 < m <= 49, where 16 keeps the wildcard
    extension; Wu-Manber 32 (alpha = w: no scan steps, two 16-character scans per
    word for m <= 15) for k = 1..3 and m <= 32 (:func:`whole_alpha_variant`), else the
    paper's 16."""
    if kind == "exact":
        return 16 if 33 < m <= 49 else 32
    return WHOLE_ALPHA if whole_alpha_variant(m, k, bits) else DEFAULT_ALPHA


def uses_wildcard(m: int, alpha: int, bits: int) -> bool:
    """Section 5.1: the last addition phase is skipped when m <= w - alpha + 1."""
    return m + alpha - 1 <= bits


# ---------------------------------------------------------------------------
# Shared preparation
# ---------------------------------------------------------------------------

def _prepare(batch, k: int, max_k: int, name: str):
    """Row lengths, the mask tables, the rows that take a kernel and the empty rows."""
    lengths = np.asarray(batch.lengths, dtype=np.int32)
    if lengths.size and int(lengths.max()) > MAX_M:
        raise ValueError(f"{name} handles patterns up to {MAX_M} characters, not {int(lengths.max())}")
    if k < 0 or k > max_k:
        raise ValueError(f"{name} handles k from 0 to {max_k}, not {k}")
    tables = _cpu.mask_tables(batch.masks, lengths, getattr(batch, "alphabet", "dna"))
    return lengths, tables, np.flatnonzero(lengths > 0), np.flatnonzero(lengths == 0)


def _check_alpha(alpha: int, allowed: tuple[int, ...], name: str) -> None:
    if alpha not in allowed:
        raise ValueError(f"{name}: alpha must be one of {allowed}, not {alpha}")


def _tile_tasks(rows: np.ndarray, base: int, hi: int, tile: int, tiles_per_task: int | None = None):
    """CPU tasks (row, whole tiles from base): about four per thread over all rows,
    or segments of ``tiles_per_task`` tiles (a GPU block's share)."""
    tiles = -(-(hi - base) // tile)
    if tiles_per_task is None:
        target = 4 * numba.get_num_threads()
        per_row = max(1, min(tiles, -(-target // max(1, rows.size))))
        tiles_per_task = -(-tiles // per_row)
    starts = np.arange(0, tiles, tiles_per_task, dtype=np.int64)
    task_rows = np.repeat(rows.astype(np.int64), starts.size)
    task_lo = np.tile(base + starts * tile, rows.size)
    task_hi = np.tile(base + np.minimum(starts + tiles_per_task, tiles) * tile, rows.size)
    return task_rows, task_lo, task_hi


def _clip(text_size: int, owned_lo: int, owned_hi: int) -> tuple[int, int]:
    return max(0, int(owned_lo)), min(int(text_size), int(owned_hi))


# ---------------------------------------------------------------------------
# CPU paths (Numba; the GPU kernels' formulation, shiftor_cpu.py)
# ---------------------------------------------------------------------------

def _tribrid_cpu(tasks, level_args: tuple, name: str, max_k: int, text, batch, k, owned_lo, owned_hi,
                 alpha: int, warps: int, bits: int | None, tiles_per_task: int | None) -> EndHits:
    """A scan's CPU path: the rows' tiles split into tasks, run by the Numba ``tasks``
    kernel of shiftor_cpu (``level_args``: Wu-Manber's k, nothing for exact matching)."""
    lengths, tables, rows, empty = _prepare(batch, k, max_k, name)
    text = np.ascontiguousarray(text, dtype=np.uint8)
    lo, hi = _clip(text.size, owned_lo, owned_hi)
    if hi <= lo:
        return EndHits.empty()
    row_bits = np.array([bits or word_bits(int(m), alpha) for m in lengths], dtype=np.int64)
    base = lo - lo % 16
    task_rows, task_lo, task_hi = _tile_tasks(rows, base, hi, 32 * warps * alpha, tiles_per_task)
    hits = run_buffered_tasks(tasks, len(task_rows),
                              (text, tables, lengths, row_bits, *level_args, task_rows, task_lo, task_hi,
                               np.int64(lo), np.int64(hi), np.int64(alpha), np.int64(warps)))
    return concat_hits([empty_pattern_hits(empty, lo, hi), hits])


def exact_scan_cpu(text, batch, k, owned_lo, owned_hi, *, alpha: int = DEFAULT_ALPHA, warps: int = CPU_BLOCK_WARPS,
                   bits: int | None = None, tiles_per_task: int | None = None) -> EndHits:
    """exact-shiftor-scan on the CPU: the tribrid scheme of shiftor.cu, emulated
    (``warps`` > 1 adds the paper's block-level scan over that many warps)."""
    _check_alpha(alpha, EXACT_ALPHAS, "exact-shiftor-scan")
    return _tribrid_cpu(_cpu.tribrid_exact_tasks, (), "exact-shiftor-scan (exact matching)", 0, text, batch, k,
                        owned_lo, owned_hi, alpha, warps, bits, tiles_per_task)


def wm_scan_cpu(text, batch, k, owned_lo, owned_hi, *, alpha: int = DEFAULT_ALPHA, warps: int = CPU_BLOCK_WARPS,
                bits: int | None = None, tiles_per_task: int | None = None) -> EndHits:
    """edit-wm-scan on the CPU: Algorithm 2 in the tribrid scheme of shiftor.cu, emulated
    (``warps`` > 1 adds the paper's block-level scan over that many warps). alpha = 32
    runs the plain scan with 32 characters per lane."""
    _check_alpha(alpha, WM_ALPHAS + (WHOLE_ALPHA,), "edit-wm-scan")
    return _tribrid_cpu(_cpu.tribrid_wm_tasks, (np.int64(k),), "edit-wm-scan", WM_K_MAX, text, batch, k,
                        owned_lo, owned_hi, alpha, warps, bits, tiles_per_task)


def segmented_cpu(text, batch, k, owned_lo, owned_hi, *, alpha: int = 1, segment: int | None = None) -> EndHits:
    """edit-wm-segmented on the CPU: plain Wu-Manber per segment plus its halo (GBPR).

    ``segment`` defaults to a length that gives every core a few tasks (GBPR's
    own 8 would spend most of the time in halos on a CPU); the hits do not
    depend on it.
    """
    _check_alpha(alpha, SEGMENTED_ALPHAS, "edit-wm-segmented")
    lengths, tables, rows, empty = _prepare(batch, k, SEGMENTED_K_MAX, "edit-wm-segmented")
    text = np.ascontiguousarray(text, dtype=np.uint8)
    lo, hi = _clip(text.size, owned_lo, owned_hi)
    if hi <= lo:
        return EndHits.empty()
    if segment is None:
        target = 4 * numba.get_num_threads()
        segment = max(1 << 14, -(-(hi - lo) * max(1, rows.size) // target))
    starts = np.arange(lo, hi, segment, dtype=np.int64)
    task_rows = np.repeat(rows.astype(np.int64), starts.size)
    task_lo = np.tile(starts, rows.size)
    task_hi = np.minimum(task_lo + segment, hi)
    hits = run_buffered_tasks(_cpu.segmented_wm_tasks, len(task_rows),
                              (text, tables, lengths, np.int64(k), task_rows, task_lo, task_hi, np.int64(alpha)))
    return concat_hits([empty_pattern_hits(empty, lo, hi), hits])


# ---------------------------------------------------------------------------
# CUDA launchers
# ---------------------------------------------------------------------------

def _device_text(text):
    """Text bytes on the device, 16-byte aligned (the kernels' vector loads need it)."""
    from ..cuda import to_device_text

    device_text = to_device_text(text)
    if device_text.data.ptr % 16:
        device_text = device_text.copy()
    return device_text


@functools.lru_cache(maxsize=None)
def _device_limits(device_id: int) -> tuple[int, int]:
    """(multiprocessors, shared memory per multiprocessor) of a device (asked once: slow)."""
    import cupy

    properties = cupy.cuda.runtime.getDeviceProperties(device_id)
    return int(properties["multiProcessorCount"]), int(properties.get("sharedMemPerMultiprocessor", 228 * 1024))


def _resident_blocks(kernel, threads: int, dynamic_smem: int) -> int:
    """Blocks of ``threads`` threads that fit on the whole GPU at once (registers, shared memory)."""
    import cupy

    sms, smem_per_sm = _device_limits(cupy.cuda.Device().id)
    per_sm = 2048 // threads
    try:
        registers = max(1, int(kernel.num_regs))
        per_sm = min(per_sm, 65536 // (((registers + 7) // 8) * 8 * threads))
        per_sm = min(per_sm, smem_per_sm // (int(kernel.shared_size_bytes) + dynamic_smem + 1024))
    except (AttributeError, TypeError, ValueError):
        per_sm = min(per_sm, 4)
    return sms * max(1, per_sm)


def _segment_grid(kernel, tiles: int, rows: int, group: int = 1) -> int:
    """Tiles per segment (a segment: one warp's, or with the block-level scan one
    block's, ``group`` warps sharing each tile): every row gets a whole number of
    blocks and all rows' blocks fill whole waves of resident blocks (a block's warps
    share its row's table); a warp takes at least 1,024 of its tiles' parts when the
    text is long enough (its halo, one or a few tiles, and its block's table fill are
    then a small fraction of its work: Section 4.4). Every tile costs the same, so
    one wave balances."""
    resident_blocks = _resident_blocks(kernel, 32 * SCAN_WARPS, TABLE_BYTES)
    waves = max(1, (tiles * group * rows) // (resident_blocks * SCAN_WARPS * 1024))
    blocks_per_row = max(1, (resident_blocks * waves) // rows)
    return max(1, -(-tiles // (blocks_per_row * SCAN_WARPS // group)))


def _run_compacted(launch, capacity: int):
    """Call ``launch(count, capacity, out_row, out_end, out_dist)`` until every hit fits."""
    from ..cuda import compact_hits_buffers

    while True:
        count, out_row, out_end, out_dist = compact_hits_buffers(capacity)
        launch(count, capacity, out_row, out_end, out_dist)
        found = int(count.get()[0])
        if found <= capacity:
            return out_row[:found].get(), out_end[:found].get(), out_dist[:found].get()
        capacity = found  # more hits than slots: run again with room for all


def _capacity(span: int, rows: int) -> int:
    """Hit slots of the first run (a second run makes room for all when they overflow)."""
    return int(min(max(span * rows // 256, 1 << 18), 1 << 24))


class Launch:
    """One kernel launch over the rows ``rows`` of a batch: ``launch(count, capacity,
    out_row, out_end, out_dist)`` appends their hits (rows numbered within ``rows``)."""

    def __init__(self, rows: np.ndarray, run):
        self.rows = rows
        self.run = run

    def __call__(self, count, capacity, out_row, out_end, out_dist):
        self.run(count, capacity, out_row, out_end, out_dist)


def kernel_launches(algorithm: str, text, batch, k: int, owned_lo, owned_hi, **knobs) -> list[Launch]:
    """The GPU launches of one call of ``algorithm`` (exact-shiftor-scan, edit-wm-scan or
    edit-wm-segmented), ready to run: the benchmark times them alone, text on the device."""
    device_text = _device_text(text)
    if algorithm == "edit-wm-segmented":
        return _segmented_launches(device_text, batch, k, owned_lo, owned_hi, **knobs)
    kind = {"exact-shiftor-scan": "exact", "edit-wm-scan": "wm"}[algorithm]
    return _scan_launches(kind, device_text, batch, k, owned_lo, owned_hi, **knobs)


def _scan_launches(kind: str, device_text, batch, k: int, owned_lo, owned_hi, alpha: int | None = None,
                   bits: int | None = None, tiles_per_warp: int | None = None,
                   unrolled: bool = True, block_scan: bool = False) -> list[Launch]:
    """exact-shiftor-scan (kind "exact") or edit-wm-scan (kind "wm"): one launch per kernel
    variant (word size, alpha; wildcard or phase 3), rows in grid.y. ``alpha`` None:
    :func:`default_alpha` per row. ``tiles_per_warp`` fixes each warp's segment (tests);
    by default a whole number of waves of resident warps shares the tiles. ``unrolled``:
    edit-wm-scan uses the kernel compiled for this k where there is one (WM_FIXED_K).
    ``block_scan``: keep Table 1's block-level scan (a block's warps share one segment;
    alpha 16 or 32 for exact matching, 16 for Wu-Manber); ``tiles_per_warp`` then
    counts a block's tiles."""
    import cupy

    from ..cuda import load_module

    name = "exact-shiftor-scan" if kind == "exact" else "edit-wm-scan"
    if block_scan:
        allowed = BLOCK_SCAN_ALPHAS if kind == "exact" else (DEFAULT_ALPHA,)
        alpha = alpha or DEFAULT_ALPHA
        if alpha not in allowed:
            raise ValueError(f"{name}: the block-level scan is built for alpha in {allowed}, not {alpha}")
    if alpha is not None:
        _check_alpha(alpha, EXACT_ALPHAS if kind == "exact" else WM_ALPHAS + (WHOLE_ALPHA,), name)
    lengths, tables, rows, _ = _prepare(batch, k, 0 if kind == "exact" else WM_K_MAX, name)
    n = int(device_text.size)
    lo, hi = _clip(n, owned_lo, owned_hi)
    if hi <= lo or rows.size == 0:
        return []
    module = load_module("shiftor/shiftor.cu")
    threads = 32 * SCAN_WARPS
    groups: dict[tuple[str, int], list[int]] = {}
    for row in rows.tolist():
        m = int(lengths[row])
        row_alpha = alpha or default_alpha(kind, m, k, bits)
        w = bits or word_bits(m, row_alpha)
        ends = "wildcard" if uses_wildcard(m, row_alpha, w) else "phase3"
        if kind == "exact":
            variant = f"exact_w{w}_a{row_alpha}_{ends}" + ("_block" if block_scan else "")
        elif block_scan:
            variant = f"wm_scan_w{w}_a{row_alpha}_{ends}_block"
        elif row_alpha == WHOLE_ALPHA:
            words = whole_alpha_variant(m, k, bits)
            if words is None:
                raise ValueError(f"{name}: alpha = {WHOLE_ALPHA} takes m <= {WHOLE_MAX_M}, k in {WM_FIXED_K} "
                                 f"and 32-bit words, not m = {m}, k = {k}, bits = {bits}")
            variant = f"wm_scan_{words}_a32_k{k}"
        else:
            fixed = unrolled and k in WM_FIXED_K and row_alpha in WM_FIXED_ALPHAS
            variant = f"wm_scan_w{w}_a{row_alpha}_{ends}" + (f"_k{k}" if fixed else "")
        groups.setdefault((variant, row_alpha), []).append(row)
    launches = []
    for (variant, row_alpha), group in groups.items():
        group_rows = np.array(group, dtype=np.int64)
        group = SCAN_WARPS if block_scan else 1  # warps sharing a segment and its tiles
        tile = 32 * group * row_alpha  # tiles are numbered from text position 0 (shiftor.cu, warp_segment)
        tile_lo, tile_hi = lo // tile, -(-hi // tile)
        kernel = module.get_function(variant)
        kernel.max_dynamic_shared_size_bytes = TABLE_BYTES
        tables_device = cupy.asarray(tables[group_rows])
        lengths_device = cupy.asarray(lengths[group_rows])
        warp_tiles = tiles_per_warp or _segment_grid(kernel, tile_hi - tile_lo, group_rows.size, group)
        blocks = -(-(-(-(tile_hi - tile_lo) // warp_tiles)) * group // SCAN_WARPS)

        def run(count, capacity, out_row, out_end, out_dist, kernel=kernel, group_rows=group_rows,
                tables_device=tables_device, lengths_device=lengths_device, blocks=blocks, warp_tiles=warp_tiles,
                tile_lo=tile_lo, tile_hi=tile_hi):
            for row_offset in range(0, group_rows.size, ROWS_PER_LAUNCH):
                grid = (blocks, min(ROWS_PER_LAUNCH, group_rows.size - row_offset))
                kernel(grid, (threads,),
                       (device_text, np.int64(n), tables_device, lengths_device, np.int32(row_offset), np.int32(k),
                        np.int64(lo), np.int64(hi), np.int64(tile_lo), np.int64(tile_hi), np.int64(warp_tiles),
                        count, np.uint64(capacity), out_row, out_end, out_dist),
                       shared_mem=TABLE_BYTES)

        launches.append(Launch(group_rows, run))
    return launches


def _segmented_launches(device_text, batch, k: int, owned_lo, owned_hi, alpha: int = 1,
                        segment: int | None = None) -> list[Launch]:
    """edit-wm-segmented: one launch per word size; ``segment`` characters per thread."""
    import cupy

    from ..cuda import load_module

    _check_alpha(alpha, SEGMENTED_ALPHAS, "edit-wm-segmented")
    lengths, tables, rows, _ = _prepare(batch, k, SEGMENTED_K_MAX, "edit-wm-segmented")
    if segment is None:
        segment = GBPR_SEGMENT if alpha == 1 else 16 * alpha
    if segment % alpha:
        raise ValueError(f"edit-wm-segmented: the segment ({segment}) must be a multiple of alpha ({alpha})")
    n = int(device_text.size)
    lo, hi = _clip(n, owned_lo, owned_hi)
    if hi <= lo or rows.size == 0:
        return []
    module = load_module("shiftor/shiftor.cu")
    blocks = -(-(-(-(hi - lo) // segment)) // SEGMENTED_THREADS)
    launches = []
    for w in (32, 64):
        group_rows = np.array([r for r in rows.tolist() if word_bits(int(lengths[r]), alpha) == w], dtype=np.int64)
        if group_rows.size == 0:
            continue
        kernel = module.get_function(f"wm_segmented_w{w}_a{alpha}")
        tables_device = cupy.asarray(tables[group_rows])
        lengths_device = cupy.asarray(lengths[group_rows])

        def run(count, capacity, out_row, out_end, out_dist, kernel=kernel, group_rows=group_rows,
                tables_device=tables_device, lengths_device=lengths_device):
            for row_offset in range(0, group_rows.size, ROWS_PER_LAUNCH):
                grid = (blocks, min(ROWS_PER_LAUNCH, group_rows.size - row_offset))
                kernel(grid, (SEGMENTED_THREADS,),
                       (device_text, np.int64(n), tables_device, lengths_device, np.int32(row_offset), np.int32(k),
                        np.int64(lo), np.int64(hi), np.int64(segment), count, np.uint64(capacity),
                        out_row, out_end, out_dist))

        launches.append(Launch(group_rows, run))
    return launches


def _run_launches(launches: list[Launch], batch, span: int, owned_lo, owned_hi, text_size: int) -> EndHits:
    lengths = np.asarray(batch.lengths)
    lo, hi = _clip(text_size, owned_lo, owned_hi)
    parts = [empty_pattern_hits(np.flatnonzero(lengths == 0), lo, hi)]
    for launch in launches:
        row, end, dist = _run_compacted(launch, _capacity(span, launch.rows.size))
        parts.append(EndHits(launch.rows[row].astype(np.int32), end, dist))
    return concat_hits(parts)


def exact_scan_cuda(text, batch, k, owned_lo, owned_hi, *, alpha: int | None = None,
                    bits: int | None = None, tiles_per_warp: int | None = None,
                    block_scan: bool = False) -> EndHits:
    """exact-shiftor-scan on the GPU (shiftor.cu, ``exact_w{32,64}_a{alpha}_{wildcard,phase3}[_block]``)."""
    device_text = _device_text(text)
    launches = _scan_launches("exact", device_text, batch, k, owned_lo, owned_hi, alpha, bits, tiles_per_warp,
                              block_scan=block_scan)
    return _run_launches(launches, batch, owned_hi - owned_lo, owned_lo, owned_hi, int(device_text.size))


def wm_scan_cuda(text, batch, k, owned_lo, owned_hi, *, alpha: int | None = None,
                 bits: int | None = None, tiles_per_warp: int | None = None, unrolled: bool = True,
                 block_scan: bool = False) -> EndHits:
    """edit-wm-scan on the GPU (shiftor.cu, ``wm_scan_w{32,64}_a{alpha}_{wildcard,phase3}[_k{k}|_block]``)."""
    device_text = _device_text(text)
    launches = _scan_launches("wm", device_text, batch, k, owned_lo, owned_hi, alpha, bits, tiles_per_warp,
                              unrolled, block_scan)
    return _run_launches(launches, batch, owned_hi - owned_lo, owned_lo, owned_hi, int(device_text.size))


def segmented_cuda(text, batch, k, owned_lo, owned_hi, *, alpha: int = 1, segment: int | None = None) -> EndHits:
    """edit-wm-segmented on the GPU: GBPR (alpha = 1, 8 characters per thread) or
    the tiled GBPR (alpha > 1, 16 * alpha characters per thread by default)."""
    device_text = _device_text(text)
    launches = _segmented_launches(device_text, batch, k, owned_lo, owned_hi, alpha, segment)
    return _run_launches(launches, batch, owned_hi - owned_lo, owned_lo, owned_hi, int(device_text.size))
