"""CUDA launcher of the CRISPR family (kernels in ``crispr.cu``, loaded with kernels/cuda.py's ``load_module``).

Per strand: ``crispr_pam_candidates`` compacts the PAM matches of the chunk
on the device; then per group of rows of one length (L <= 32)
``crispr_check`` runs one thread per candidate over tiles of 256 rows held in
shared memory, each row a 128-bit one-hot word (4 bits a base: IUPAC codes
are several bits). Candidates and hits are compacted on the device; a launch
whose output did not fit runs again with room for all (kernels/cuda.py's
``launch_into_hit_buffers``, with this family's own output arrays). Rows
longer than 32 bases go to the CPU kernel. CuPy is imported inside the
functions only.
"""
from __future__ import annotations

import numpy as np

from . import CUDA_MAX_GUIDE, GuideRows, SiteHits

THREADS = 256
ROWS_PER_BLOCK = 256  # as in crispr.cu
INITIAL_CAPACITY = 1 << 16
NIBBLES = 16  # bases per 64-bit half of a row's word


def guide_words(rows: GuideRows, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) 64-bit halves of each row's one-hot word: nibble i = the IUPAC mask of base i (i < 32)."""
    masks = rows.masks[row_ids, :CUDA_MAX_GUIDE].astype(np.uint64)
    masks[np.arange(masks.shape[1]) >= rows.lengths[row_ids, None]] = 0
    masks = np.pad(masks, ((0, 0), (0, 2 * NIBBLES - masks.shape[1])))
    shifts = (4 * np.arange(NIBBLES)).astype(np.uint64)
    # The nibbles are disjoint bits: their sum is their OR.
    return (masks[:, :NIBBLES] << shifts).sum(axis=1, dtype=np.uint64), \
        (masks[:, NIBBLES:] << shifts).sum(axis=1, dtype=np.uint64)


def _device_rows(rows: GuideRows, strand: int, length: int):
    """(row ids, low words, high words, limits, ids on the device) of one strand's rows of one length.

    Built and uploaded once per (rows, GPU), kept in ``rows.on_device``: every
    chunk and task of the guide range reuses them (the job caches its rows,
    crispr/task.py). Keyed by the current device: a worker may own another GPU.
    """
    import cupy

    from ..cuda import uploaded_once

    def upload():
        ids = np.flatnonzero((rows.strand == strand) & (rows.lengths == length)).astype(np.int32)
        low, high = guide_words(rows, ids)
        return (ids, cupy.asarray(low), cupy.asarray(high), cupy.asarray(rows.limit[ids].astype(np.int16)),
                cupy.asarray(ids))

    return uploaded_once(rows.on_device.get, (cupy.cuda.runtime.getDevice(), "check", strand, length), upload)


def _device_pam(rows: GuideRows, strand: int):
    import cupy

    from ..cuda import uploaded_once

    return uploaded_once(rows.on_device.get, (cupy.cuda.runtime.getDevice(), "pam", strand),
                         lambda: cupy.asarray(rows.pam_masks[strand], dtype=cupy.uint8))


def _candidates(module, text, n: int, pam_device):
    """Positions where the PAM matches, compacted on the device (kernels/cuda.py's shared launch loop)."""
    import cupy

    from ..cuda import launch_into_hit_buffers

    blocks = min(65_535 * 4, max(1, (n + THREADS - 1) // THREADS))

    def candidate_buffers(capacity):
        return cupy.zeros(1, dtype=cupy.uint64), cupy.empty(capacity, dtype=cupy.int64)

    def launch(hit_buffers, capacity):
        count, out = hit_buffers
        module.get_function("crispr_pam_candidates")(
            (blocks,), (THREADS,), (text, np.int64(n), pam_device, np.int32(len(pam_device)), count, out,
                                    np.uint64(capacity)))

    (candidates,) = launch_into_hit_buffers(launch, max(1024, n // 8), buffers=candidate_buffers)
    return candidates


def find_sites_cuda(text, rows: GuideRows, dna_bulge: int, rna_bulge: int, owned_lo: int, owned_hi: int) -> SiteHits:
    """The CUDA kernel behind :func:`seqsift.kernels.crispr.find_sites`."""
    import cupy

    from ..cuda import load_module, to_device_text

    module = load_module("crispr/crispr.cu")
    text_device = to_device_text(text)
    n = int(text_device.shape[0])
    parts: list[SiteHits] = []
    long_rows = np.flatnonzero(rows.lengths > CUDA_MAX_GUIDE)
    for strand in (0, 1):
        ids = np.flatnonzero((rows.strand == strand) & (rows.lengths <= CUDA_MAX_GUIDE))
        if len(ids) == 0:
            continue
        candidates = _candidates(module, text_device, n, _device_pam(rows, strand))
        if len(candidates) == 0:
            continue
        for length in np.unique(rows.lengths[ids]):
            parts.append(_check(module, text_device, n, candidates, rows, int(length), strand,
                                dna_bulge, rna_bulge, owned_lo, owned_hi))
    if len(long_rows):
        from .cpu import find_sites_cpu

        subset = GuideRows(rows.masks[long_rows], rows.lengths[long_rows], rows.strand[long_rows],
                           rows.limit[long_rows], rows.guide_index[long_rows], rows.pam_masks, rows.pam_right)
        hits = find_sites_cpu(cupy.asnumpy(text_device), subset, dna_bulge, rna_bulge, owned_lo, owned_hi)
        parts.append(SiteHits(long_rows[hits.row].astype(np.int32), *(getattr(hits, f) for f in
                                                                         list(SiteHits.__dataclass_fields__)[1:])))
    parts = [p for p in parts if len(p)]
    if not parts:
        return SiteHits.empty()
    return SiteHits(*(np.concatenate([getattr(p, f) for p in parts]) for f in SiteHits.__dataclass_fields__))


SITE_COLUMNS = (np.int32, np.int64, np.int32, np.int8, np.int8, np.int16, np.int16)
"""dtypes of crispr_check's output arrays, in SiteHits' field order (row, start, length, bulge type, size, at,
mismatches)."""


def _site_buffers(capacity: int):
    """(counter, one device array per SiteHits column) for ``capacity`` sites."""
    import cupy

    return (cupy.zeros(1, dtype=cupy.uint64), *(cupy.empty(capacity, dtype) for dtype in SITE_COLUMNS))


def _check(module, text, n, candidates, rows: GuideRows, length, strand, dna_bulge, rna_bulge,
           owned_lo, owned_hi) -> SiteHits:
    """crispr_check over the candidates for one strand's rows of one length (kernels/cuda.py's shared launch
    loop); the sites come back in one copy."""
    import cupy

    from ..cuda import launch_into_hit_buffers

    row_ids, low, high, limits, ids = _device_rows(rows, strand, length)
    tiles = (len(row_ids) + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
    blocks = min(4096, max(1, (len(candidates) + THREADS - 1) // THREADS))

    def launch(hit_buffers, capacity):
        count, *out = hit_buffers
        module.get_function("crispr_check")(
            (blocks, tiles), (THREADS,),
            (text, np.int64(n), candidates, np.int64(len(candidates)), low, high, limits, ids,
             np.int32(len(row_ids)), np.int32(length), np.int32(rows.pam_length), np.int32(bool(rows.pam_right[strand])),
             np.int32(strand == 1), np.int32(dna_bulge), np.int32(rna_bulge), np.int64(owned_lo), np.int64(owned_hi),
             count, np.uint64(capacity), *out))

    columns = launch_into_hit_buffers(launch, INITIAL_CAPACITY, buffers=_site_buffers)
    sites = len(columns[0])
    return SiteHits(*split_bytes(packed_bytes(columns, sites, cupy).get(), columns, sites))


def packed_bytes(arrays, count: int, xp):
    """The first ``count`` entries of each 1-D array, their bytes one after another (``xp``: cupy or numpy).

    The hits come back in one device-to-host copy instead of one per column
    (seven synchronising copies a launch cost more than the kernel on small chunks).
    """
    if count == 0:
        return xp.empty(0, dtype=xp.uint8)
    return xp.concatenate([xp.ascontiguousarray(a[:count]).view(xp.uint8) for a in arrays])


def split_bytes(data: np.ndarray, arrays, count: int) -> list[np.ndarray]:
    """:func:`packed_bytes`'s host copy cut back into one array per column, each with its column's dtype."""
    columns, at = [], 0
    for a in arrays:
        size = count * a.dtype.itemsize
        columns.append(data[at:at + size].copy().view(np.dtype(a.dtype.str)))  # a copy: aligned, writable
        at += size
    return columns
