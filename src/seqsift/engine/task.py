"""The worker side of a search: one task = one chunk group x one pattern range.

``run_task`` reads each chunk's window from the reference, encodes it, calls
the job's kernel through :func:`seqsift.kernels.find_ends` (the engine knows
no kernel's inside), and turns the kernel's ends into hit rows:

* Hamming: one row per hit, start = end - m.
* edit, ``ends``: one row per qualifying end.
* edit, ``best``: each maximal run of consecutive qualifying ends of one
  row (pattern x strand) becomes one locus at its smallest distance
  (leftmost on ties). The run's first and last ends travel with it, so the
  client can join runs that continue into the next chunk (``merge.py``).

Rows use indices (record, pattern) and absolute int64 coordinates; names are
attached by the writer. The ``aligned`` and ``cigar`` columns are Arrow
strings built from one buffer each (no Python object per hit). Each worker
process caches the reference windows it has read (``read_chunk``); on a GPU
worker the window's text codes stay on the device, uploaded once as raw
bytes and encoded there. Stages are timed with ``stages.timed`` (off unless
a benchmark asks).
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import kernels
from ..alphabet import TEXT_CODE_ARRAY, TEXT_CODE_TABLE
from ..kernels.cuda import task_stream
from ..partitioning import ChunkGroup
from . import stages
from .job import SearchJob
from .merge import sort_rows


def chunk_cache_budget() -> int:
    """Reference bytes a worker keeps on the host between tasks and jobs (raw + encoded).

    ``$SEQSIFT_CHUNK_CACHE_BYTES`` if set, else a quarter of the Dask worker's
    memory limit, at most 4 GiB (1 GiB outside a worker).
    """
    if "SEQSIFT_CHUNK_CACHE_BYTES" in os.environ:
        return int(os.environ["SEQSIFT_CHUNK_CACHE_BYTES"])
    try:
        from distributed import get_worker

        limit = get_worker().memory_manager.memory_limit
    except (ImportError, ValueError, AttributeError):
        limit = None
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


@dataclass
class ChunkWindow:
    """One chunk's read window in the forms the tasks have needed so far.

    raw     the newline-free bytes as in the file (uint8), or None
    codes   text codes on the host (uint8), or None
    device  text codes on the GPU (a CuPy array), or None
    ``start`` is where the window starts in its record; a cached window that
    starts earlier serves a later start by slicing (:meth:`from_start`).
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
    try:
        stat = os.stat(reference.path)
        identity = (reference.path, stat.st_size, stat.st_mtime_ns)
    except (OSError, AttributeError):  # not a file-backed reference: no caching
        return _complete(reference, chunk, ChunkWindow(chunk.read_start), need_raw, on_device)
    # Windows are keyed by where they end; one that starts earlier (a longer
    # halo, from a job with longer patterns) serves any later start by slicing.
    key = (identity, chunk.record_index, chunk.owned_end)
    window = _cached_window(key, chunk.read_start)
    if _has(window, need_raw, on_device):
        return window
    # One thread fills a window at a time: the other task thread, wanting the same
    # chunk for another pattern batch, waits and then finds it in the cache.
    with _loading_lock:
        loading = _loading.setdefault(key, threading.Lock())
    with loading:
        window = _cached_window(key, chunk.read_start)
        if _has(window, need_raw, on_device):
            return window
        window = _complete(reference, chunk, window, need_raw, on_device)
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
        for field in fields:
            setattr(window, field, None)
        _cached_bytes["host"] += window.host_bytes()
        _cached_bytes["device"] += window.device_bytes()
        if window.raw is None and window.codes is None and window.device is None:
            del _chunk_cache[key]


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


def searches_on_device(job: SearchJob) -> bool:
    """The job's kernel runs on the GPU, on text codes (so the chunk's codes live there)."""
    return (job.backend == "cuda" and job.alphabet == "dna"
            and "cuda" in kernels.ALGORITHMS[job.algorithm].backends)


_warmed_up: set[str] = set()
_warm_up_lock = threading.Lock()


def warm_up_locate(metric: str) -> None:
    """Load the kernels that locate a GPU-searched chunk's hits, in a background thread, once per process.

    Numba loads compiled kernels from its disk cache on their first call: in
    a fresh CLI process that took about a second of the first task that had
    hits (H100 host, benchmarks/README.md). Started with the first task, the
    loading overlaps that task's upload and search (started only once the
    window was on the device, a Hamming job's first locates waited for it:
    7.2 s instead of 6.9 s for 1,000 guides over 3.1 Gbp). A job that reads
    its reference first starts it then (engine._prepare_worker). The text is
    read-only raw bytes as in the real calls, since Numba loads one version
    per argument type.
    """
    with _warm_up_lock:
        if metric in _warmed_up:
            return
        _warmed_up.add(metric)

    def load() -> None:
        from ..patterns import PatternSet

        raw = np.frombuffer(b"ACGTACGT", np.uint8)
        batch = PatternSet(("warm-up",), ("ACGT",)).oriented(range(1), (0,))
        zero = np.zeros(1, np.int64)
        kernels.locate_packed(metric, raw, batch, zero.astype(np.int32), zero + 4, zero.astype(np.int16),
                              code_of=TEXT_CODE_ARRAY)
        kernels.gather_spans(raw, zero, zero + 4)

    threading.Thread(target=load, name="seqsift-warm-up-locate", daemon=True).start()


def run_task(job: SearchJob, group: ChunkGroup, pattern_range: range) -> pd.DataFrame:
    """Hit rows of ``pattern_range`` in the chunks of ``group``, in output order."""
    batch = job.patterns.oriented(pattern_range, job.strands)
    on_device = searches_on_device(job)
    if on_device and job.reports_start:
        warm_up_locate(job.metric)
    with (task_stream() if on_device else nullcontext()):
        frames = _search_chunks(job, group, batch, on_device)
    if not frames:
        return empty_rows(job)
    # Sorted here, on the worker: the client then only merges sorted runs (merge.sort_rows).
    with stages.timed("merge"):
        return sort_rows(pd.concat(frames, ignore_index=True), job.reports_start)


def _search_chunks(job: SearchJob, group: ChunkGroup, batch, on_device: bool) -> list[pd.DataFrame]:
    """Each chunk's hit rows (chunks without hits left out)."""
    frames = []
    for chunk in group.chunks:
        # A chunk searched on the GPU is located on the host from its raw bytes.
        window = read_chunk(job.reference, chunk, need_raw=job.needs_raw_text or (on_device and job.reports_start),
                            on_device=on_device)
        if job.alphabet == "bytes":  # raw bytes: no case folding, no N rule (DESIGN.md)
            text = window.raw
        else:
            text = window.device if on_device else window.codes
        with stages.timed("kernel", device=on_device):
            hits = kernels.find_ends(job.algorithm, job.backend, text, batch, job.k,
                                     chunk.owned_lo, chunk.owned_hi)
        if len(hits) == 0:
            continue
        with stages.timed("locate"):
            frames.append(_rows_for_chunk(job, batch, chunk, window, hits.sorted()))
    return frames


def _rows_for_chunk(job, batch, chunk, window: ChunkWindow, hits) -> pd.DataFrame:
    row, end, distance = hits.row, hits.end, hits.distance
    columns: dict[str, object] = {}
    if job.joins_runs:
        row, end, distance, first_end, last_end = _best_of_runs(row, end, distance)
        columns["first_end"] = first_end + chunk.read_start
        columns["last_end"] = last_end + chunk.read_start
    if job.reports_start:
        # Locate on the host codes, or on the raw bytes through the code table (searched on the GPU).
        if job.alphabet == "bytes":
            text, code_of = window.raw, None
        elif window.codes is not None:
            text, code_of = window.codes, None
        else:
            text, code_of = window.raw, TEXT_CODE_ARRAY
        start, (cigar_offsets, cigar_data) = kernels.locate_packed(job.metric, text, batch, row, end, distance,
                                                                   code_of=code_of)
        columns["start"] = start + chunk.read_start
        if job.align:
            columns["aligned"] = string_column(*kernels.gather_spans(window.raw, start, end))
            columns["cigar"] = string_column(cigar_offsets, cigar_data)
    columns["end"] = end + chunk.read_start
    columns["record"] = np.full(len(row), chunk.record_index, dtype=np.int32)
    columns["pattern"] = batch.pattern_index[row]
    columns["strand"] = batch.strand[row]
    columns["distance"] = distance.astype(np.int16)
    return pd.DataFrame(columns)


def string_column(offsets: np.ndarray, data: np.ndarray) -> pd.arrays.ArrowStringArray:
    """Packed strings (item h = data[offsets[h]:offsets[h + 1]]) as pandas' ``str`` column, zero-copy.

    The same dtype a column of Python strings gets, backed by one Arrow
    buffer (:func:`arrow_strings`): no Python object per row, and it pickles
    and writes as Arrow.
    """
    import pyarrow as pa

    array = arrow_strings(offsets, data)
    return pd.arrays.ArrowStringArray(pa.chunked_array([array], type=pa.large_string()), dtype=STRING_DTYPE)


def arrow_strings(offsets: np.ndarray, data: np.ndarray):
    """Packed strings (item h = data[offsets[h]:offsets[h + 1]], int64 offsets) as an Arrow large_string array.

    The bytes are the array's buffer as they are; only a byte outside ASCII
    (none in a validated reference) sends them through Python, where it reads
    as U+FFFD, as ``bytes.decode("ascii", errors="replace")`` would.
    """
    import pyarrow as pa

    if data.size and int(data.max()) >= 0x80:
        text = data.tobytes()
        bounds = offsets.tolist()
        return pa.array([text[a:b].decode("ascii", errors="replace") for a, b in zip(bounds, bounds[1:])],
                        type=pa.large_string())
    return pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))


STRING_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)
"""pandas' default ``str`` dtype: what object columns of strings become."""


def _best_of_runs(row, end, distance):
    """Group (row, end)-sorted ends into runs of consecutive ends of one row.

    Returns per run: row, the best end (smallest distance, leftmost on
    ties), its distance, and the run's first and last ends.
    """
    breaks = np.flatnonzero((np.diff(row) != 0) | (np.diff(end) != 1)) + 1
    run_starts = np.concatenate(([0], breaks))
    run_stops = np.concatenate((breaks, [len(row)]))
    # Leftmost minimum within each run: sort each run's members by (distance, end).
    run_id = np.repeat(np.arange(len(run_starts)), run_stops - run_starts)
    order = np.lexsort((end, distance, run_id))
    best = order[np.searchsorted(run_id[order], np.arange(len(run_starts)))]
    return row[best], end[best], distance[best], end[run_starts], end[run_stops - 1]


def empty_rows(job: SearchJob) -> pd.DataFrame:
    dtypes = {"record": np.int32, "start": np.int64, "end": np.int64, "pattern": np.int32,
              "strand": np.int8, "distance": np.int16, "aligned": object, "cigar": object,
              "first_end": np.int64, "last_end": np.int64}
    names = ["record", "end", "pattern", "strand", "distance"]
    if job.reports_start:
        names.append("start")
        if job.align:
            names += ["aligned", "cigar"]
    if job.joins_runs:
        names += ["first_end", "last_end"]
    return pd.DataFrame({n: np.empty(0, dtype=dtypes[n]) for n in names})
