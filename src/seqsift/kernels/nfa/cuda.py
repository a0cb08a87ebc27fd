"""edit-nfa on the GPU: the CuPy launcher of ``nfa.cu`` (the family's face: ``__init__.py``).

    nfa_cuda(text, batch, k, owned_lo, owned_hi) -> EndHits   (kernels/__init__.py call shape)

Rows too long for one thread block (more than ``MAX_WORDS`` state words, or a
block needing more shared memory than the device gives one: 4,096 words take
102 KB, where the A10, L4 and RTX cards give 99 KB and the T4 64 KB) go to the
edit family's Myers search on the GPU.
"""
from __future__ import annotations

import numpy as np

from .. import EndHits
from ..driver import concat_hits, subset_rows
from ..edit import myers_cuda
from . import cpu as _cpu

MAX_THREADS = 1024       # threads of one block (CUDA's limit)
MAX_WORDS = 4096         # state words of one NFA on the GPU (4 per thread)
TILE = 512               # as NFA_TILE in nfa.cu: text characters per shared-memory tile
SMEM_DEFAULT = 48 * 1024


def _remap(rows: np.ndarray, hits: EndHits) -> EndHits:
    return EndHits(rows[hits.row].astype(np.int32), hits.end, hits.distance)


WPT_COST = {1: 1.0, 2: 0.79, 4: 0.69}
"""Relative time per state word with 1, 2 or 4 words per thread: bench_nfa.py on
the H100, m = 1,024, k = 15 (93.4, 73.5 and 64.2 ms; fewer shared-memory
exchanges and barriers per word with more words per thread)."""


def words_per_thread(words: int) -> int:
    """Words per thread for an NFA of ``words`` words: of 4, 2 and 1, the one with
    the least estimated time, i.e. padded words (threads rounded up to whole
    warps, x words per thread) x WPT_COST, within one block of MAX_THREADS."""
    best = None
    for wpt in (4, 2, 1):
        threads = -(-(-(-words // wpt)) // 32) * 32
        if threads > MAX_THREADS:
            continue
        cost = threads * wpt * WPT_COST[wpt]
        if best is None or cost < best[0]:
            best = (cost, wpt)
    return best[1]


def _shared_bytes(threads, wpt):
    """As laid out in nfa.cu: M[5][words], 2 or 4 edge arrays, best[TILE] and code offsets[TILE] (ints or
    arrays of them)."""
    return 4 * (5 * threads * wpt + np.where(wpt == 1, 2, 4) * (threads + 2) + 2 * TILE)


def block_shapes(words: np.ndarray, wpt: int | None, shared_limit: int):
    """(words per thread, threads, fits) per row of ``words`` state words: :func:`words_per_thread` (or
    ``wpt``), raised so that the row fits one block of MAX_THREADS; fits: within MAX_WORDS, and the
    block's shared memory within ``shared_limit`` bytes (else the row goes to edit-myers)."""
    words = np.asarray(words, dtype=np.int64)
    row_wpt = np.array([wpt or words_per_thread(int(w)) for w in np.minimum(words, MAX_WORDS)], dtype=np.int64)
    row_wpt = np.maximum(row_wpt, -(-words // MAX_THREADS))
    row_wpt = np.where(row_wpt > 2, 4, row_wpt)
    threads = -(-words // row_wpt)
    threads = -(-threads // 32) * 32
    fits = (words <= MAX_WORDS) & (_shared_bytes(threads, row_wpt) <= shared_limit)
    return row_wpt, threads, fits


def _resident_blocks(function, threads: int, shared: int) -> int:
    """Blocks the whole GPU holds at once (threads, registers, shared memory and CUDA's 32 per SM)."""
    import cupy

    device = cupy.cuda.Device()
    sms = device.attributes["MultiProcessorCount"]
    try:
        registers = max(1, int(function.num_regs))
    except Exception:  # attribute missing in an older CuPy: nfa.cu keeps <= 32 (launch bounds)
        registers = 32
    per_sm = min(32, 2048 // threads, 65536 // (registers * threads),
                 (228 * 1024) // (shared + 1024))
    return sms * max(1, per_sm)


def pack_text_device(text_device):
    """(packed, n_plane): the text 2-bit packed, 16 characters per uint32, and one N bit per character."""
    import cupy

    from ..cuda import load_module

    n = int(text_device.size)
    groups = max(1, -(-n // 32))
    packed = cupy.empty(2 * groups, dtype=cupy.uint32)
    n_plane = cupy.empty(groups, dtype=cupy.uint32)
    load_module("nfa/nfa.cu").get_function("nfa_pack_text")(
        ((groups + 255) // 256,), (256,), (text_device, np.int64(n), packed, n_plane))
    return packed, n_plane


def _rows_device(masks, lengths, k: int, words: int):
    """The group's compiled rows on the device: (peq, final, lengths int32)."""
    import cupy

    peq, final = _cpu.compile_rows(masks, lengths, k, words)
    return cupy.asarray(peq), cupy.asarray(final), cupy.asarray(lengths.astype(np.int32))


def _launch_group(packed, n_plane, n: int, rows_device, lengths, k: int, lo: int, hi: int,
                  threads: int, wpt: int):
    """One launch (in pieces of at most 65,535 rows) for rows sharing a block shape (kernels/cuda.py's shared
    launch loop). ``rows_device``: the group's ``_rows_device``. Returns the hits (rows numbered within the
    group) on the host."""
    from ..cuda import compact_hit_args, launch_end_hits, load_module

    peq_device, final_device, lengths_device = rows_device
    function = load_module("nfa/nfa.cu").get_function(f"nfa_s{_cpu.slot_bits(k)}_w{wpt}")
    shared = _shared_bytes(threads, wpt)
    if shared > SMEM_DEFAULT:
        function.max_dynamic_shared_size_bytes = shared
    rows = len(lengths)
    span = hi - lo
    # Segments: about one wave of blocks over the GPU, each segment long enough
    # that its m + k warm-up characters stay a small fraction of it.
    overlap = int(lengths.max()) + k
    resident = _resident_blocks(function, threads, shared)
    segments = max(1, min(-(-resident // rows), span // max(TILE, 4 * overlap)))
    segment_length = -(-span // segments)
    segments = -(-span // segment_length)
    def launch(hit_buffers, capacity):
        for first in range(0, rows, 65_535):
            last = min(rows, first + 65_535)
            function((segments, last - first), (threads,),
                     (packed, n_plane, np.int64(n), peq_device[first:last], final_device[first:last],
                      lengths_device[first:last], np.int32(first), np.int32(k), np.int64(lo), np.int64(hi),
                      np.int64(segment_length), *compact_hit_args(hit_buffers, capacity)),
                     shared_mem=shared)

    # Hits are rare for long patterns; a larger count (rows with m <= k hit at
    # every end) reruns the launch once with room for all.
    return launch_end_hits(launch, max(1 << 20, min(rows * span // 8, 1 << 26)))


def nfa_cuda(text, batch, k, owned_lo, owned_hi, *, wpt: int | None = None) -> EndHits:
    """Every (row, end, d(end)) with d(end) <= k and end - 1 in [owned_lo, owned_hi), on the GPU.

    ``wpt`` forces the words per thread (benchmarks); by default
    :func:`words_per_thread` picks it per row.
    """
    import cupy

    from ..cuda import shared_memory_per_block, to_device_text, uploaded_once

    text_device = to_device_text(text)
    n = int(text_device.size)
    lo, hi = max(0, int(owned_lo)), min(n, int(owned_hi))
    if k < 0 or hi <= lo or batch.rows == 0:
        return EndHits.empty()
    lengths = np.asarray(batch.lengths, dtype=np.int64)
    words = _cpu.words_needed(lengths, k)
    parts = []
    row_wpt, threads, fits = block_shapes(words, wpt, shared_memory_per_block(cupy.cuda.Device().id))
    too_long = np.flatnonzero(~fits)
    if too_long.size:
        parts.append(_remap(too_long, myers_cuda(text_device, subset_rows(batch, too_long), k, lo, hi)))
    gpu_rows = np.flatnonzero((lengths > 0) & fits)
    if gpu_rows.size:
        packed, n_plane = pack_text_device(text_device)
        # Rows sharing (words per thread, threads) run in one launch.
        row_wpt, threads = row_wpt[gpu_rows], threads[gpu_rows]
        for group_wpt, group_threads in sorted(set(zip(row_wpt.tolist(), threads.tolist()))):
            selected = gpu_rows[(row_wpt == group_wpt) & (threads == group_threads)]
            # The group's compiled rows go to the device once per batch (every chunk task reuses them).
            rows_device = uploaded_once(
                batch.derived, ("nfa.rows", wpt, group_wpt, group_threads, k, cupy.cuda.Device().id),
                lambda: _rows_device(batch.masks[selected], lengths[selected], k, group_threads * group_wpt))
            hits = _launch_group(packed, n_plane, n, rows_device, lengths[selected], k,
                                 lo, hi, group_threads, group_wpt)
            parts.append(_remap(selected, hits))
    return concat_hits(parts)
