"""Reference bytes -> the text a kernel searches: encoding, and whole records packed into one text.

Not an algorithm family (no registry entry): what every job does to a window
before its kernel runs. :func:`pack_records_cpu` builds the text of a
``partitioning.PackedRecords`` on the host; ``kernels.cuda.upload_and_encode``
and ``upload_and_encode_packed`` do the same on the GPU (``encode.cu``).
"""
from __future__ import annotations

import numpy as np

from ..threads import PARALLEL_REGIONS

SLICED_RECORDS = 10_000
"""Up to this many records a text is packed a NumPy slice per record (about a microsecond each); more
go to the Numba loop (``cpu.py``, imported only then). Few records are where slices win: a long record
is one vectorized copy, and a job whose kernel needs no Numba (CRISPR's vectorized one) does not pay
Numba's start-up (0.3 s or more per process) to pack a few thousand records."""


def pack_records_cpu(raw: np.ndarray, raw_starts: np.ndarray, text_starts: np.ndarray, lengths: np.ndarray,
                     text_length: int, table: np.ndarray, separator: int) -> np.ndarray:
    """The packed text: record i's bytes ``raw[raw_starts[i]:+lengths[i]]`` mapped through ``table`` (256
    entries) at ``text_starts[i]``, every other position ``separator``."""
    out = np.full(int(text_length), separator, dtype=np.uint8)
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    table = np.ascontiguousarray(table, dtype=np.uint8)
    if len(lengths) <= SLICED_RECORDS:
        for source, target, length in zip(raw_starts.tolist(), text_starts.tolist(), lengths.tolist()):
            np.take(table, raw[source:source + length], out=out[target:target + length], mode="clip")
    else:
        from .cpu import pack

        with PARALLEL_REGIONS:
            pack(raw, raw_starts, text_starts, lengths, table, out)
    return out
