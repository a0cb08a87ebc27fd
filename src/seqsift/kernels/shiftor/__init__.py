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
become the mask table B[c] (cpu.mask_tables), so the kernels never
see the difference.
"""
from __future__ import annotations

import numba
import numpy as np

from .. import EndHits
from . import cpu as _cpu
from ..driver import run_buffered_tasks

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
    """Row lengths, the mask tables and the rows that take a kernel (all but empty ones, which are refused upstream)."""
    lengths = np.asarray(batch.lengths, dtype=np.int32)
    if lengths.size and int(lengths.max()) > MAX_M:
        raise ValueError(f"{name} handles patterns up to {MAX_M} characters, not {int(lengths.max())}")
    if k < 0 or k > max_k:
        raise ValueError(f"{name} handles k from 0 to {max_k}, not {k}")
    tables = _cpu.mask_tables(batch.masks, lengths, getattr(batch, "alphabet", "dna"))
    return lengths, tables, np.flatnonzero(lengths > 0)


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
# CPU paths (Numba; the GPU kernels' formulation, cpu.py)
# ---------------------------------------------------------------------------

def _tribrid_cpu(tasks, level_args: tuple, name: str, max_k: int, text, batch, k, owned_lo, owned_hi,
                 alpha: int, warps: int, bits: int | None, tiles_per_task: int | None) -> EndHits:
    """A scan's CPU path: the rows' tiles split into tasks, run by the Numba ``tasks``
    kernel of cpu.py (``level_args``: Wu-Manber's k, nothing for exact matching)."""
    lengths, tables, rows = _prepare(batch, k, max_k, name)
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
    return hits


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
    lengths, tables, rows = _prepare(batch, k, SEGMENTED_K_MAX, "edit-wm-segmented")
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
    return hits


# The CUDA launchers (cuda.py; CuPy is imported only when one runs).
from .cuda import exact_scan_cuda, segmented_cuda, wm_scan_cuda  # noqa: E402
