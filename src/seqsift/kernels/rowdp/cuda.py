"""edit-rowdp and edit-rowdp-shfl on the GPU: the CuPy launchers of ``rowdp.cu``
(the family's face and the tiling it shares with the CPU path: ``__init__.py``).

Rows whose m + k exceeds MAX_WARM_UP go to the edit family's Myers search on the GPU.
"""
from __future__ import annotations

import numpy as np

from .. import EndHits
from ..driver import concat_hits, subset_rows
from ..edit import myers_cuda
from . import COLUMNS, MAX_WARM_UP, THREADS, columns_per_thread

MAX_BLOCKS_Y = 65_535
SCRATCH_BYTES = 256 << 20          # rowdp_global: its rows of D in global memory per launch
PIECE_CHARS = 1 << 25              # rowdp_global: text per X matrix (8 bytes per character)


def rowdp_global(text, batch, k: int, owned_lo: int, owned_hi: int, columns: int | None = None) -> EndHits:
    """edit-rowdp: PASM_GPU (Algorithm 1, equation 3) on the GPU."""
    return _search_cuda(text, batch, k, owned_lo, owned_hi, shuffle=False, columns=columns)


def rowdp_shfl(text, batch, k: int, owned_lo: int, owned_hi: int, columns: int | None = None) -> EndHits:
    """edit-rowdp-shfl: WsPASM_GPUshared (Algorithm 2, equation 4) on the GPU."""
    return _search_cuda(text, batch, k, owned_lo, owned_hi, shuffle=True, columns=columns)


def _shared_bytes(r: int, m_max: int) -> int:
    """rowdp_shfl_r<r>'s dynamic shared memory: 2 rows of D, X (4 x W), pattern and its codes, text tile."""
    width = THREADS * r
    return 2 * 2 * (width + 1) + 4 * 2 * width + 2 * m_max + width


def tile_groups(lengths: np.ndarray, k: int, columns: int | None = None):
    """Rows by tile width: ([(R, rows)], rows for edit-myers). ``columns`` forces R where it fits."""
    chosen = np.array([(columns or columns_per_thread(int(m), k) or 0) if m > 0 else -1 for m in lengths],
                      dtype=np.int64)
    if columns is not None:
        chosen[(lengths + k > MAX_WARM_UP) | (lengths + k >= THREADS * columns)] = 0
        chosen[lengths == 0] = -1
    groups = [(int(r), np.flatnonzero(chosen == r).astype(np.int32)) for r in COLUMNS if (chosen == r).any()]
    return groups, np.flatnonzero(chosen == 0)


def launch_kernels(text_device, batch, k: int, lo: int, hi: int, shuffle: bool, groups, hit_buffers) -> None:
    """Every launch of one search into ``hit_buffers`` (count, row, end, distance; capacity = their size).

    Asynchronous: nothing is read back. Also what bench_rowdp.py times as "the kernels".
    """
    import cupy

    from ..cuda import compact_hit_args, load_module, uploaded_once

    module = load_module("rowdp/rowdp.cu")
    lengths = np.asarray(batch.lengths, dtype=np.int32)
    # The rows go to the device once per batch (every chunk task of the batch reuses them).
    masks, lengths_device = uploaded_once(
        batch.derived, ("rowdp.rows", cupy.cuda.Device().id),
        lambda: (cupy.asarray(np.ascontiguousarray(batch.masks, dtype=np.uint8)), cupy.asarray(lengths)))
    hit_args = compact_hit_args(hit_buffers, hit_buffers[1].size)
    for r, rows in groups:
        _launch_group(module, text_device, masks, lengths_device, lengths, rows, r, k, lo, hi, shuffle, hit_args)


def _search_cuda(text, batch, k, owned_lo, owned_hi, shuffle: bool, columns: int | None) -> EndHits:
    from ..cuda import launch_end_hits, to_device_text

    lengths = np.asarray(batch.lengths, dtype=np.int32)
    text_device = to_device_text(text)
    lo, hi = max(0, int(owned_lo)), min(int(text_device.size), int(owned_hi))
    if k < 0 or hi <= lo or batch.rows == 0:
        return EndHits.empty()
    parts = []
    # Rows by columns per thread (the tile width); too long rows go to edit-myers.
    groups, too_long = tile_groups(lengths, k, columns)
    if groups:
        searched = sum(rows.size for _, rows in groups)
        # launch_kernels reads the capacity from the buffers' size (as bench_rowdp.py calls it).
        parts.append(launch_end_hits(
            lambda hit_buffers, capacity: launch_kernels(text_device, batch, k, lo, hi, shuffle, groups, hit_buffers),
            max(1 << 16, min(4, searched) * (hi - lo))))
    if too_long.size:
        hits = myers_cuda(text_device, subset_rows(batch, too_long), k, lo, hi)
        parts.append(EndHits(too_long[hits.row].astype(np.int32), hits.end, hits.distance))
    return concat_hits(parts)


def _launch_group(module, text_device, masks, lengths_device, lengths, rows, r: int, k: int, lo: int, hi: int,
                  shuffle: bool, hit_args: tuple) -> None:
    """All launches for the rows of one tile width: pieces of text x chunks of rows."""
    import cupy

    width = THREADS * r
    m_max = int(lengths[rows].max())
    owned_per_tile = width - (m_max + k)  # >= width / 2 by MAX_WARM_UP
    if shuffle:
        kernel = module.get_function(f"rowdp_shfl_r{r}")
        shared = _shared_bytes(r, m_max)
        if shared > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = shared
        max_blocks = 1 << 30
        piece = hi - lo
    else:
        kernel = module.get_function("rowdp_global")
        x_kernel = module.get_function("rowdp_x_matrix")
        max_blocks = max(1, SCRATCH_BYTES // (2 * 2 * (width + 1)))
        piece = min(PIECE_CHARS, max_blocks * owned_per_tile)
        scratch = None
    rows_device = cupy.asarray(rows)
    for piece_lo in range(lo, hi, piece):
        piece_hi = min(hi, piece_lo + piece)
        tiles = -(-(piece_hi - piece_lo) // owned_per_tile)
        if not shuffle:
            # Algorithm 1, lines 4-8: the X matrix of this piece (and its warm-up).
            x_lo = max(0, piece_lo - (m_max + k))
            x_len = piece_hi - x_lo
            x_matrix = cupy.empty(4 * x_len, dtype=cupy.uint16)
            x_kernel((min(-(-x_len // 256), 1 << 16),), (256,),
                     (text_device, np.int64(x_lo), np.int64(x_len), np.int32(k), x_matrix))
        rows_per_launch = max(1, min(MAX_BLOCKS_Y, max_blocks // tiles))
        for first in range(0, rows.size, rows_per_launch):
            chunk = rows_device[first:first + rows_per_launch]
            grid = (tiles, int(chunk.size))
            if shuffle:
                kernel(grid, (THREADS,),
                       (text_device, masks, np.int32(masks.shape[1]), lengths_device, chunk, np.int32(k),
                        np.int32(m_max), np.int64(piece_lo), np.int64(piece_hi), np.int32(owned_per_tile),
                        *hit_args),
                       shared_mem=shared)
            else:
                blocks = tiles * int(chunk.size)
                if scratch is None or scratch.size < blocks * 2 * (width + 1):
                    scratch = cupy.empty(blocks * 2 * (width + 1), dtype=cupy.int16)
                kernel(grid, (THREADS,),
                       (x_matrix, np.int64(x_lo), np.int64(x_len), masks, np.int32(masks.shape[1]),
                        lengths_device, chunk, np.int32(k), np.int64(piece_lo), np.int64(piece_hi),
                        np.int32(owned_per_tile), np.int32(r), scratch, *hit_args))
