"""A worker's reference windows: read once, encoded once, kept between tasks and jobs.

Every job that reads a reference (search, crispr) asks :func:`read_chunk`
for a chunk's read window in the forms its task needs: the bytes as in the
file (``raw``), host text codes (``codes``), or text codes on the GPU
(``device``: the raw bytes cross PCIe once and are encoded there). A worker
process keeps the windows it has read, host arrays within
:func:`chunk_cache_budget` and device arrays within
:func:`device_cache_budget`, least recently used dropped first, so a second
pattern set over the same genome on the same cluster neither reads the FASTA
again nor sends it to the GPU again (``seqsift serve`` keeps them between
jobs).

A window handed to a task is never changed afterwards: eviction replaces the
cache's entry with a smaller one (or drops it), and the task keeps the
arrays it was given for as long as it holds them. A budget smaller than one
window still returns that window whole.
"""
from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from ..alphabet import IDENTITY_CODES, TEXT_CODE_ARRAY, TEXT_CODE_TABLE
from . import stages

__all__ = ["ChunkWindow", "read_chunk", "read_packed", "chunk_cache_budget", "device_cache_budget"]


def chunk_cache_budget() -> int:
    """Reference bytes a worker keeps on the host between tasks and jobs (raw + encoded).

    ``$SEQSIFT_CHUNK_CACHE_BYTES`` if set, else a quarter of the Dask worker's
    memory limit, at most 4 GiB (1 GiB outside a worker).
    """
    if "SEQSIFT_CHUNK_CACHE_BYTES" in os.environ:
        return int(os.environ["SEQSIFT_CHUNK_CACHE_BYTES"])
    limit = None
    distributed = sys.modules.get("distributed")  # loaded in every Dask worker; task threads never load it
    if distributed is not None:
        try:
            limit = distributed.get_worker().memory_manager.memory_limit
        except (ValueError, AttributeError):  # not in a worker
            pass
    return min(4 << 30, limit // 4) if limit else 1 << 30


def device_cache_budget() -> int:
    """Text-code bytes a GPU worker keeps on its device between tasks and jobs.

    ``$SEQSIFT_DEVICE_CACHE_BYTES`` if set, else 40% of the device's memory:
    a 3.1 Gbp genome (3.1 GB of codes) stays on an 80 GB GPU, so a second
    search over it in the same cluster sends nothing across PCIe.
    """
    if "SEQSIFT_DEVICE_CACHE_BYTES" in os.environ:
        return int(os.environ["SEQSIFT_DEVICE_CACHE_BYTES"])
    import cupy

    return int(cupy.cuda.Device().mem_info[1] * 0.4)


@dataclass(frozen=True)
class ChunkWindow:
    """One window in the forms the tasks have needed so far (never changed once handed out).

    raw     the newline-free bytes as in the file (uint8), or None
    codes   text codes on the host (uint8), or None
    device  text codes on the GPU (a CuPy array), or None
    ``start`` is where the window starts in its record; a cached window that
    starts earlier serves a later start by slicing (:meth:`from_start`).
    A window of packed records (:func:`read_packed`) starts at 0 and its
    ``codes``/``device`` are the packed text, its ``raw`` the records' bytes
    back to back (partitioning.PackedRecords: text and raw coordinates).
    """

    start: int
    raw: np.ndarray | None = None
    codes: np.ndarray | None = None
    device: object = None

    def host_bytes(self) -> int:
        return sum(a.nbytes for a in (self.raw, self.codes) if a is not None)

    def device_bytes(self) -> int:
        return int(self.device.nbytes) if self.device is not None else 0

    def from_start(self, start: int) -> "ChunkWindow":
        skip = start - self.start
        cut = (lambda a: a[skip:] if a is not None else None)
        return ChunkWindow(start, cut(self.raw), cut(self.codes), cut(self.device))


_chunk_cache: OrderedDict[tuple, ChunkWindow] = OrderedDict()
_chunk_cache_lock = threading.Lock()


def read_chunk(reference, chunk, need_raw: bool = True, on_device: bool = False) -> ChunkWindow:
    """The chunk's window with what the task needs, from this worker's cache if seen.

    need_raw   the bytes as in the file (the ``aligned`` column, byte texts,
               locating hits of a chunk searched on the GPU)
    on_device  the text codes on the GPU: the raw bytes cross PCIe once and
               are encoded there (``kernels.cuda.upload_and_encode``);
               otherwise host text codes. Without ``need_raw`` a host-only
               window is read and encoded in one pass
               (``alphabet.TEXT_CODE_TABLE``), about three times faster.

    A worker keeps the windows it has read, host arrays within
    ``chunk_cache_budget()`` and device arrays within
    ``device_cache_budget()`` (least recently used dropped first), so a second
    pattern set over the same genome on the same cluster neither reads the
    FASTA again nor sends it to the GPU again. The key holds the file's size
    and modification time: a changed file is read afresh.
    """
    # Windows are keyed by where they end; one that starts earlier (a longer
    # halo, from a job with longer patterns) serves any later start by slicing.
    return _read(reference, ("chunk", chunk.record_index, chunk.owned_end), chunk.read_start, need_raw, on_device,
                 partial(_complete, reference, chunk))


def read_packed(reference, group, on_device: bool = False, alphabet: str = "dna") -> ChunkWindow:
    """The window of whole records packed into one text (partitioning.PackedRecords), cached as
    :func:`read_chunk`'s.

    ``raw``: the records' bytes back to back (a view of the genome cache: one
    read however many records), where hits are located and their text
    gathered; ``codes`` (host) or ``device`` (GPU): the packed text the
    kernel searches, each record followed by ``group.gap`` separators (text
    code NEVER; with ``alphabet`` "bytes" the bytes as they are and 0).
    """
    key = ("packed", group.first, group.stop, group.gap, alphabet)
    return _read(reference, key, 0, True, on_device, partial(_complete_packed, reference, group, alphabet))


def _read(reference, place: tuple, start: int, need_raw: bool, on_device: bool, complete) -> ChunkWindow:
    """The window at ``place`` with what the task needs: this worker's cached one, or ``complete(window,
    need_raw, on_device)``'s, which is then cached (module docstring)."""
    try:
        stat = os.stat(reference.path)
        identity = (reference.path, stat.st_size, stat.st_mtime_ns)
    except (OSError, AttributeError):  # not a file-backed reference: no caching
        return complete(ChunkWindow(start), need_raw, on_device)
    key = (identity, *place)
    window = _cached_window(key, start)
    if _has(window, need_raw, on_device):
        return window
    # One thread fills a window at a time: the other task thread, wanting the same
    # window for another pattern batch, waits and then finds it in the cache.
    with _loading_lock:
        loading = _loading.setdefault(key, threading.Lock())
    with loading:
        window = _cached_window(key, start)
        if _has(window, need_raw, on_device):
            return window
        window = complete(window, need_raw, on_device)
        with _chunk_cache_lock:
            # The completed window (it holds the cached forms too, sliced) replaces the entry.
            _forget(_chunk_cache.pop(key, None))
            _chunk_cache[key] = window
            _cached_bytes["host"] += window.host_bytes()
            _cached_bytes["device"] += window.device_bytes()
            _evict("host", chunk_cache_budget(), ("raw", "codes"))
            if window.device is not None:
                _evict("device", device_cache_budget(), ("device",))
    return window


_loading: dict[tuple, threading.Lock] = {}  # per window: held by the thread filling it
_loading_lock = threading.Lock()


def _cached_window(key: tuple, start: int) -> ChunkWindow:
    """What the cache holds of the window from ``start`` (an empty window if nothing)."""
    with _chunk_cache_lock:
        cached = _chunk_cache.get(key)
        if cached is not None and cached.start <= start:
            _chunk_cache.move_to_end(key)
            return cached.from_start(start)
    return ChunkWindow(start)


_cached_bytes = {"host": 0, "device": 0}


def _forget(window: ChunkWindow | None) -> None:
    if window is not None:
        _cached_bytes["host"] -= window.host_bytes()
        _cached_bytes["device"] -= window.device_bytes()


def _has(window: ChunkWindow, need_raw: bool, on_device: bool) -> bool:
    return ((not need_raw or window.raw is not None)
            and (window.device is not None if on_device else window.codes is not None))


def _evict(where: str, budget: int, fields: tuple[str, ...]) -> None:
    """Drop ``fields`` of the least recently used windows until the ``where`` bytes fit ``budget``."""
    for key in list(_chunk_cache):
        if _cached_bytes[where] <= budget:
            break
        window = _chunk_cache[key]
        _forget(window)
        # A new, smaller entry: the window object itself may be in a task's hands (never changed).
        smaller = replace(window, **{field: None for field in fields})
        if smaller.raw is None and smaller.codes is None and smaller.device is None:
            del _chunk_cache[key]
            continue
        _chunk_cache[key] = smaller
        _cached_bytes["host"] += smaller.host_bytes()
        _cached_bytes["device"] += smaller.device_bytes()


def _complete(reference, chunk, window: ChunkWindow, need_raw: bool, on_device: bool) -> ChunkWindow:
    """``window`` with the missing forms read, encoded or uploaded."""
    raw, codes, device = window.raw, window.codes, window.device
    # A window in the genome cache file goes to the GPU straight from the file (read into pinned memory).
    in_file = _cached_range(reference, chunk) if on_device and device is None else None
    if raw is None and (need_raw or (on_device and device is None and in_file is None)):
        with stages.timed("read"):
            raw = _read_raw(reference, chunk)
    if on_device and device is None:
        from ..kernels.cuda import upload_and_encode

        device = upload_and_encode(raw if in_file is None else in_file,
                                   clock=stages.timed if stages.enabled() else None)
        if not need_raw:
            raw = window.raw  # uploaded only: not kept on the host
    if not on_device and codes is None:
        with stages.timed("read" if raw is None else "encode"):
            if raw is not None:
                codes = TEXT_CODE_ARRAY[raw]
            else:
                codes = np.frombuffer(reference.read(chunk.record_index, chunk.read_start, chunk.owned_end,
                                                     table=TEXT_CODE_TABLE), dtype=np.uint8)
    return ChunkWindow(chunk.read_start, raw, codes, device)


def _complete_packed(reference, group, alphabet: str, window: ChunkWindow, need_raw: bool,
                     on_device: bool) -> ChunkWindow:
    """``window`` of packed records (read_packed) with the missing forms read, packed or uploaded."""
    from ..alphabet import NEVER

    raw, codes, device = window.raw, window.codes, window.device
    if raw is None:
        with stages.timed("read"):
            raw = reference.read_records(group.first, group.stop)
    if on_device and device is None:
        from ..io.genome_cache import FileRange
        from ..kernels.cuda import upload_and_encode_packed

        where = getattr(reference, "cached_records_range", lambda first, stop: None)(group.first, group.stop)
        source = FileRange(*where) if where is not None else raw
        device = upload_and_encode_packed(source, group, clock=stages.timed if stages.enabled() else None)
    if not on_device and codes is None:
        from ..kernels.encode import pack_records_cpu

        table, separator = (TEXT_CODE_ARRAY, NEVER) if alphabet == "dna" else (IDENTITY_CODES, 0)
        with stages.timed("encode"):
            codes = pack_records_cpu(raw, group.raw_starts, group.text_starts, group.lengths, group.text_length,
                                     table, separator)
    return ChunkWindow(0, raw, codes, device)


def _cached_range(reference, chunk):
    """The window as an ``io.genome_cache.FileRange`` of the genome cache file, or None (not in one)."""
    cached_range = getattr(reference, "cached_range", None)
    where = cached_range(chunk.record_index, chunk.read_start, chunk.owned_end) if cached_range else None
    if where is None:
        return None
    from ..io.genome_cache import FileRange

    return FileRange(where[0], where[1], chunk.owned_end - chunk.read_start)


def _read_raw(reference, chunk) -> np.ndarray:
    """The window's newline-free bytes as in the file: a zero-copy view where the reader has one."""
    read_view = getattr(reference, "read_view", None)
    if read_view is not None:
        return read_view(chunk.record_index, chunk.read_start, chunk.owned_end)
    return np.frombuffer(reference.read(chunk.record_index, chunk.read_start, chunk.owned_end), dtype=np.uint8)
