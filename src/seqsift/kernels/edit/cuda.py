"""CUDA launchers of the edit-distance family (kernels in ``edit.cu``).

``myers(text, batch, k, owned_lo, owned_hi) -> EndHits``: the common call
shape (kernels/__init__.py). Rows of at most 32 characters run in
``myers_short32`` (32-bit words), of at most 64 in ``myers_short``, longer
rows (up to 64 * MAX_WORDS) in ``myers_long``; rows longer than that run on
the CPU path, so every pattern length works.
"""
from __future__ import annotations

import numpy as np

from .. import EndHits
from ..driver import concat_hits, subset_rows

ROWS_PER_BLOCK = 128   # as in edit.cu
MAX_WORDS = 16         # as in edit.cu: rows up to 1,024 characters on the GPU
SEGMENT = 8192         # text characters per block (shared memory: SEGMENT + m + k bytes)
MAX_SEGMENTS = 60_000  # grid.y stays under CUDA's 65,535


def peq_words(masks: np.ndarray, lengths: np.ndarray, words: int) -> np.ndarray:
    """(rows, 5, words) uint64: bit i of word w set when position 64w + i matches code c."""
    rows = masks.shape[0]
    peq = np.zeros((rows, 5, words), dtype=np.uint64)
    positions = np.arange(masks.shape[1])
    valid = positions[None, :] < lengths[:, None]
    for code in range(4):
        matches = ((masks >> code) & 1).astype(bool) & valid
        for w in range(words):
            part = matches[:, 64 * w: 64 * (w + 1)]
            bits = (np.uint64(1) << np.arange(part.shape[1], dtype=np.uint64))[None, :]
            peq[:, code, w] = np.bitwise_or.reduce(np.where(part, bits, np.uint64(0)), axis=1) if part.size else 0
    return peq  # code 4 (N and every other byte) matches nothing: all zero


def _launch(function, text_device, rows_peq, lengths, extra_args, rows: int, k: int, max_m: int,
            owned_lo: int, owned_hi: int) -> EndHits:
    """Launch over the owned range in pieces (kernels/cuda.py's shared launch loop); the hits on the host."""
    from ..cuda import compact_hit_args, launch_end_hits

    piece = SEGMENT * MAX_SEGMENTS

    def launch(hit_buffers, capacity):
        for lo in range(owned_lo, owned_hi, piece):
            hi = min(owned_hi, lo + piece)
            grid = ((rows + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK, (hi - lo + SEGMENT - 1) // SEGMENT)
            function(grid, (ROWS_PER_BLOCK,),
                     (text_device, np.int64(text_device.size), rows_peq, lengths, np.int32(rows), *extra_args,
                      np.int32(k), np.int32(max_m), np.int64(lo), np.int64(hi), np.int64(SEGMENT),
                      *compact_hit_args(hit_buffers, capacity)),
                     shared_mem=SEGMENT + max_m + k + 16)

    return launch_end_hits(launch, max(1 << 20, 4 * (owned_hi - owned_lo)))


def myers(text, batch, k: int, owned_lo: int, owned_hi: int) -> EndHits:
    import cupy

    from ..cuda import load_module, to_device_text, uploaded_once

    lengths = np.asarray(batch.lengths, dtype=np.int32)
    text_device = to_device_text(text)
    lo, hi = max(0, int(owned_lo)), min(int(text_device.size), int(owned_hi))
    if hi <= lo or batch.rows == 0:
        return EndHits.empty()
    module = load_module("edit/edit.cu")
    parts = []
    short32 = np.flatnonzero((lengths > 0) & (lengths <= 32))
    short = np.flatnonzero((lengths > 32) & (lengths <= 64))
    long_rows = np.flatnonzero((lengths > 64) & (lengths <= 64 * MAX_WORDS))
    too_long = np.flatnonzero(lengths > 64 * MAX_WORDS)
    for selected, kernel_name in ((short32, "myers_short32"), (short, "myers_short"), (long_rows, "myers_long")):
        if selected.size == 0:
            continue
        sub_lengths = lengths[selected]
        one_word = kernel_name != "myers_long"
        words = 1 if one_word else int((sub_lengths.max() + 63) // 64)
        # The rows' bit vectors go to the device once per batch (every chunk task of the batch reuses them).
        peq, device_lengths = uploaded_once(
            batch.derived, ("edit.peq", kernel_name, cupy.cuda.Device().id),
            lambda: (cupy.asarray(peq_words(batch.masks[selected], sub_lengths, words)), cupy.asarray(sub_lengths)))
        extra = () if one_word else (np.int32(words),)
        hits = _launch(module.get_function(kernel_name), text_device, peq, device_lengths,
                       extra, int(selected.size), k, int(sub_lengths.max()), lo, hi)
        parts.append(EndHits(selected[hits.row].astype(np.int32), hits.end, hits.distance))
    if too_long.size:
        from . import myers_cpu

        host_text = text if isinstance(text, np.ndarray) else text_device.get()
        sub = subset_rows(batch, too_long)
        hits = myers_cpu(host_text, sub, k, owned_lo, owned_hi)
        parts.append(EndHits(too_long[hits.row].astype(np.int32), hits.end, hits.distance))
    return concat_hits(parts)
