"""The Numba loop that packs many records into one text (kernels.encode.pack_records_cpu, past
SLICED_RECORDS records): a module of its own, so that packing a few records never imports Numba."""
from __future__ import annotations

from numba import njit, prange


@njit(parallel=True, cache=True, nogil=True)
def pack(raw, raw_starts, text_starts, lengths, table, out):
    """Record i's bytes ``raw[raw_starts[i]:+lengths[i]]`` through ``table`` into ``out`` at ``text_starts[i]``."""
    for record in prange(lengths.shape[0]):
        source, target = raw_starts[record], text_starts[record]
        for i in range(lengths[record]):
            out[target + i] = table[raw[source + i]]
