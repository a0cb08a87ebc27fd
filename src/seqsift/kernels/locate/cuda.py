"""CUDA launcher of the locate family (kernels in ``locate.cu``): one thread per hit, on the text codes
a GPU search holds on the device.

:func:`locate_ops` returns what the face (``__init__.py``) turns into starts and a CIGAR buffer:
(starts, status, cigar_at, cigar_length, cigars), on the host. CuPy is imported only when it runs.
"""
from __future__ import annotations

import numpy as np

THREADS = 128
BAND_BYTES = 256 << 20
"""Device bytes of edit DP scratch per launch: more hits than fit run in several launches."""
KERNELS = ("locate_hamming", "locate_edit")


def load() -> None:
    """Compile (or load from CuPy's disk cache) and load this family's kernels on the current device.

    A one-GPU search calls this ahead, once its device is ready (``searching._prepare_worker``):
    on a fresh machine the compile then overlaps the job's reading and first kernels.
    """
    from ..cuda import load_module

    module = load_module("locate/locate.cu")
    for name in KERNELS:
        module.get_function(name)


def _pattern_arrays(batch):
    """The batch's masks and lengths on the device, uploaded once per batch and device."""
    import cupy

    from ..cuda import uploaded_once

    return uploaded_once(batch.derived, ("locate.masks", cupy.cuda.Device().id),
                         lambda: (cupy.asarray(np.ascontiguousarray(batch.masks, dtype=np.uint8)),
                                  cupy.asarray(np.ascontiguousarray(batch.lengths, dtype=np.int32))))


def locate_ops(metric: str, text, batch, row: np.ndarray, end: np.ndarray, distance: np.ndarray,
               lowest: np.ndarray):
    """Every hit's start, status (0 fine, else locate.cu's BAD_*), and CIGAR text: hit h wrote
    ``cigar_length[h]`` characters at ``cigars[cigar_at[h]:]``; all on the host.

    ``text``: text codes on the device (a CuPy array, complete: its upload was waited for); ``end`` and
    ``lowest`` in its coordinates. Runs on the thread's priority stream (kernels.cuda.priority_stream):
    the task thread waits for it before its next search.
    """
    from ..cuda import priority_stream

    with priority_stream():
        return _locate_ops(metric, text, batch, row, end, distance, lowest)


def _locate_ops(metric, text, batch, row, end, distance, lowest):
    import cupy

    from ..cuda import load_module

    hits = int(row.shape[0])
    lengths = np.asarray(batch.lengths, dtype=np.int64)[row]
    distances = np.maximum(np.asarray(distance, dtype=np.int64), 0)
    room = 2 * (lengths + (distances if metric == "edit" else 0))  # 2 characters per operation
    cigar_at = np.cumsum(room) - room
    masks, device_lengths = _pattern_arrays(batch)
    module = load_module("locate/locate.cu")
    text = cupy.ascontiguousarray(text, dtype=cupy.uint8)
    n = np.int64(text.size)
    stride = np.int32(masks.shape[1])
    rows_d = cupy.asarray(np.ascontiguousarray(row, dtype=np.int32))
    ends_d = cupy.asarray(np.ascontiguousarray(end, dtype=np.int64))
    cigar_at_d = cupy.asarray(cigar_at)
    cigars = cupy.empty(max(int(room.sum()), 1), dtype=cupy.uint8)
    cigar_length = cupy.empty(hits, dtype=cupy.int32)
    starts = cupy.empty(hits, dtype=cupy.int64)
    status = cupy.empty(hits, dtype=cupy.int8)
    if metric == "hamming":
        module.get_function("locate_hamming")(
            ((hits + THREADS - 1) // THREADS,), (THREADS,),
            (text, n, masks, stride, device_lengths, rows_d, ends_d, np.int32(hits), cigars, cigar_at_d,
             cigar_length, starts, status))
    else:
        distances_d = cupy.asarray(np.ascontiguousarray(distance, dtype=np.int32))
        lowest_d = cupy.asarray(np.ascontiguousarray(lowest, dtype=np.int64))
        # One band of (m + 1) x (2 d + 1) cells per hit, as large as the batch's largest, laid out cell-major.
        cells = (int(lengths.max()) + 1) * (2 * int(distances.max()) + 1)
        per_launch = max(1, min(hits, BAND_BYTES // (4 * cells)))
        band = cupy.empty(per_launch * cells, dtype=cupy.int32)
        kernel = module.get_function("locate_edit")
        for first in range(0, hits, per_launch):
            part = slice(first, min(hits, first + per_launch))
            count = part.stop - first
            kernel(((count + THREADS - 1) // THREADS,), (THREADS,),
                   (text, n, masks, stride, device_lengths, rows_d[part], ends_d[part], distances_d[part],
                    lowest_d[part], np.int32(count), band, cigars, cigar_at_d[part], cigar_length[part],
                    starts[part], status[part]))
    return starts.get(), status.get(), cigar_at, cigar_length.get().astype(np.int64), cigars.get()
