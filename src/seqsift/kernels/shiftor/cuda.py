"""exact-shiftor-scan, edit-wm-scan and edit-wm-segmented on the GPU: the CuPy
launchers of ``shiftor.cu`` (the family's face, its constants and the shared
preparation: ``__init__.py``).
"""
from __future__ import annotations

import functools

import numpy as np

from .. import EndHits
from ..driver import concat_hits
from . import (BLOCK_SCAN_ALPHAS, DEFAULT_ALPHA, EXACT_ALPHAS, GBPR_SEGMENT, ROWS_PER_LAUNCH, SCAN_WARPS,
               SEGMENTED_ALPHAS, SEGMENTED_K_MAX, SEGMENTED_THREADS, TABLE_BYTES, WHOLE_ALPHA, WHOLE_MAX_M,
               WM_ALPHAS, WM_FIXED_ALPHAS, WM_FIXED_K, WM_K_MAX, _check_alpha, _clip, _prepare, default_alpha,
               uses_wildcard, whole_alpha_variant, word_bits)


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


def _capacity(span: int, rows: int) -> int:
    """Hit slots of the first run (a second run makes room for all when they overflow)."""
    return int(min(max(span * rows // 256, 1 << 18), 1 << 24))


class Launch:
    """The kernel launches over the rows ``rows`` of a batch: ``launch(hit_buffers, capacity)`` queues them,
    writing their hits (rows numbered within ``rows``) into ``hit_buffers`` (kernels/cuda.py's
    ``compact_hits_buffers``, ``capacity`` slots); :func:`_run_launches` runs it in the shared launch loop,
    ``benchmarks/bench_shiftor.py`` times it alone."""

    def __init__(self, rows: np.ndarray, run):
        self.rows = rows
        self.run = run

    def __call__(self, hit_buffers, capacity: int) -> None:
        self.run(hit_buffers, capacity)


def _prepared(batch, k: int, max_k: int, name: str):
    """``_prepare``'s lengths, mask tables and rows, built once per batch (PatternBatch.derived).

    Every chunk task of a batch needs the same tables, and building them is
    host work proportional to the rows (about 0.1 s for 2,000 rows here).
    """
    return batch.derived(("shiftor.prepare", k, max_k, name), lambda: _prepare(batch, k, max_k, name))


def scan_launches(kind: str, text, batch, k: int, owned_lo, owned_hi, alpha: int | None = None,
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

    from ..cuda import compact_hit_args, load_module

    device_text = _device_text(text)
    name = "exact-shiftor-scan" if kind == "exact" else "edit-wm-scan"
    if block_scan:
        allowed = BLOCK_SCAN_ALPHAS if kind == "exact" else (DEFAULT_ALPHA,)
        alpha = alpha or DEFAULT_ALPHA
        if alpha not in allowed:
            raise ValueError(f"{name}: the block-level scan is built for alpha in {allowed}, not {alpha}")
    if alpha is not None:
        _check_alpha(alpha, EXACT_ALPHAS if kind == "exact" else WM_ALPHAS + (WHOLE_ALPHA,), name)
    lengths, tables, rows = _prepared(batch, k, 0 if kind == "exact" else WM_K_MAX, name)
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

        def run(hit_buffers, capacity, kernel=kernel, group_rows=group_rows,
                tables_device=tables_device, lengths_device=lengths_device, blocks=blocks, warp_tiles=warp_tiles,
                tile_lo=tile_lo, tile_hi=tile_hi):
            for row_offset in range(0, group_rows.size, ROWS_PER_LAUNCH):
                grid = (blocks, min(ROWS_PER_LAUNCH, group_rows.size - row_offset))
                kernel(grid, (threads,),
                       (device_text, np.int64(n), tables_device, lengths_device, np.int32(row_offset), np.int32(k),
                        np.int64(lo), np.int64(hi), np.int64(tile_lo), np.int64(tile_hi), np.int64(warp_tiles),
                        *compact_hit_args(hit_buffers, capacity)),
                       shared_mem=TABLE_BYTES)

        launches.append(Launch(group_rows, run))
    return launches


def segmented_launches(text, batch, k: int, owned_lo, owned_hi, alpha: int = 1,
                       segment: int | None = None) -> list[Launch]:
    """edit-wm-segmented: one launch per word size; ``segment`` characters per thread."""
    import cupy

    from ..cuda import compact_hit_args, load_module

    device_text = _device_text(text)
    _check_alpha(alpha, SEGMENTED_ALPHAS, "edit-wm-segmented")
    lengths, tables, rows = _prepared(batch, k, SEGMENTED_K_MAX, "edit-wm-segmented")
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

        def run(hit_buffers, capacity, kernel=kernel, group_rows=group_rows,
                tables_device=tables_device, lengths_device=lengths_device):
            for row_offset in range(0, group_rows.size, ROWS_PER_LAUNCH):
                grid = (blocks, min(ROWS_PER_LAUNCH, group_rows.size - row_offset))
                kernel(grid, (SEGMENTED_THREADS,),
                       (device_text, np.int64(n), tables_device, lengths_device, np.int32(row_offset), np.int32(k),
                        np.int64(lo), np.int64(hi), np.int64(segment), *compact_hit_args(hit_buffers, capacity)))

        launches.append(Launch(group_rows, run))
    return launches


def _run_launches(launches: list[Launch], span: int) -> EndHits:
    """Each launch in kernels/cuda.py's shared launch loop; the hits with the batch's row numbers."""
    from ..cuda import launch_end_hits

    parts = []
    for launch in launches:
        hits = launch_end_hits(launch, _capacity(span, launch.rows.size))
        parts.append(EndHits(launch.rows[hits.row].astype(np.int32), hits.end, hits.distance))
    return concat_hits(parts)


def exact_scan_cuda(text, batch, k, owned_lo, owned_hi, *, alpha: int | None = None,
                    bits: int | None = None, tiles_per_warp: int | None = None,
                    block_scan: bool = False) -> EndHits:
    """exact-shiftor-scan on the GPU (shiftor.cu, ``exact_w{32,64}_a{alpha}_{wildcard,phase3}[_block]``)."""
    launches = scan_launches("exact", text, batch, k, owned_lo, owned_hi, alpha, bits, tiles_per_warp,
                             block_scan=block_scan)
    return _run_launches(launches, owned_hi - owned_lo)


def wm_scan_cuda(text, batch, k, owned_lo, owned_hi, *, alpha: int | None = None,
                 bits: int | None = None, tiles_per_warp: int | None = None, unrolled: bool = True,
                 block_scan: bool = False) -> EndHits:
    """edit-wm-scan on the GPU (shiftor.cu, ``wm_scan_w{32,64}_a{alpha}_{wildcard,phase3}[_k{k}|_block]``)."""
    launches = scan_launches("wm", text, batch, k, owned_lo, owned_hi, alpha, bits, tiles_per_warp,
                             unrolled, block_scan)
    return _run_launches(launches, owned_hi - owned_lo)


def segmented_cuda(text, batch, k, owned_lo, owned_hi, *, alpha: int = 1, segment: int | None = None) -> EndHits:
    """edit-wm-segmented on the GPU: GBPR (alpha = 1, 8 characters per thread) or
    the tiled GBPR (alpha > 1, 16 * alpha characters per thread by default)."""
    launches = segmented_launches(text, batch, k, owned_lo, owned_hi, alpha, segment)
    return _run_launches(launches, owned_hi - owned_lo)
