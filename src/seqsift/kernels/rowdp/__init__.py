"""edit-rowdp and edit-rowdp-shfl: the row-parallel X-matrix DP of Ho, Oh & Kim (2017).

    kernel(text, batch, k, owned_lo, owned_hi) -> EndHits   (see kernels/__init__.py)

* :func:`rowdp_global` (``edit-rowdp``, CUDA): the paper's baseline PASM_GPU,
  Algorithm 1 / equation (3), X matrix and DP rows in global memory;
* :func:`rowdp_shfl` (``edit-rowdp-shfl``, CUDA): the paper's WsPASM_GPUshared,
  Algorithm 2 / equation (4), D[i-1][j-1] by ``__shfl_up_sync``, text tile,
  pattern, X and rows in shared memory;
* :func:`rowdp_cpu` (both, CPU): the same recurrence in Numba (cpu.py).

The kernels are in ``rowdp.cu`` (its header proves the recurrence, the IUPAC
form of X and the bounded window), launched by ``cuda.py``. The paper's algorithm searches one
pattern over one text; here the grid is (text tile, row of the batch): a
block of THREADS threads runs the DP of one row over a tile of
THREADS x R columns (R columns per thread), the first m + k of which are the
warm-up before the tile's owned ends. Rows are grouped by R, which is chosen
so that the warm-up is a small share of the tile (:func:`columns_per_thread`).
Rows whose m + k exceeds MAX_WARM_UP are handed to edit-myers (on the GPU).
"""
from __future__ import annotations

import numpy as np

from .. import EndHits
from . import cpu as _cpu
from ..driver import (prepare_inputs, run_buffered_tasks,
                      split_rows_over_text)

THREADS = 256                      # ROWDP_THREADS in rowdp.cu
COLUMNS = (1, 2, 4, 8, 16)         # the rowdp_shfl_r<R> kernels
WARM_UP_SHARE = 64                 # aim: tile >= 64 x its warm-up (m + k)
MAX_WARM_UP = THREADS * COLUMNS[-1] // 2  # m + k up to half the widest tile (2,048)


def columns_per_thread(m: int, k: int) -> int | None:
    """R for a row of length m: the smallest with THREADS * R >= 64 (m + k), or None (too long).

    (bench_rowdp.py, H100: at m = 16, k = 6 the wider tiles are a few per cent faster, R = 8 best.)
    """
    warm = m + k
    if warm > MAX_WARM_UP:
        return None
    for r in COLUMNS:
        if THREADS * r >= WARM_UP_SHARE * warm:
            return r
    return COLUMNS[-1]


# ---------------------------------------------------------------------------
# CPU
# ---------------------------------------------------------------------------

def rowdp_cpu(text, batch, k, owned_lo, owned_hi, tile_span: int | None = None) -> EndHits:
    """Every (row, end, d(end)) with d(end) <= k and end - 1 in [owned_lo, owned_hi).

    ``tile_span``: owned ends per tile, each tile with its own warm-up of
    m + k characters as on the GPU (default: 16,384 or 8 (m + k)); tests set
    it small to cross many tile borders.
    """
    text, masks, lengths, lo, hi = prepare_inputs(text, batch, owned_lo, owned_hi)
    if k < 0 or hi <= lo:
        return EndHits.empty()
    rows = np.arange(lengths.size, dtype=np.int64)  # every row: empty patterns are refused when read
    warm = int(lengths.max()) + k
    span = tile_span or max(1 << 14, 8 * warm)
    task_rows, task_lo, task_hi = split_rows_over_text(rows, lo, hi, min_span=max(span, 4 * warm))
    return run_buffered_tasks(
        _cpu.rowdp_tasks, len(task_rows),
        (text, masks, lengths, np.int64(k), task_rows, task_lo, task_hi, np.int64(span)))


# The CUDA launchers (cuda.py; CuPy is imported only when one runs).
from .cuda import rowdp_global, rowdp_shfl  # noqa: E402
