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
attached by the writer. Each worker process caches the reference windows it
has read (``read_chunk``).
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict

import numpy as np
import pandas as pd

from .. import kernels
from ..alphabet import TEXT_CODE_TABLE, encode_text
from ..partitioning import ChunkGroup
from .job import SearchJob
from .merge import sort_rows


def chunk_cache_budget() -> int:
    """Reference bytes a worker keeps between tasks and jobs (raw + encoded).

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


_chunk_cache: OrderedDict[tuple, tuple[int, bytes | None, np.ndarray]] = OrderedDict()  # -> (read_start, raw, codes)
_chunk_cache_bytes = 0
_chunk_cache_lock = threading.Lock()


def _cached_size(raw: bytes | None, text: np.ndarray) -> int:
    return len(text) + (len(raw) if raw is not None else 0)


def read_chunk(reference, chunk, need_raw: bool = True) -> tuple[bytes | None, np.ndarray]:
    """The chunk's window as raw bytes and text codes, from this worker's cache if seen.

    Without ``need_raw`` the raw bytes may come back as None: the window is
    then read and encoded in one pass (``alphabet.TEXT_CODE_TABLE``), about
    three times faster. A worker keeps the windows it has read (least recently
    used dropped past ``chunk_cache_budget()``), so a second pattern set over
    the same genome on the same cluster does not read the FASTA again. The key
    holds the file's size and modification time: a changed file is read afresh.
    """
    global _chunk_cache_bytes
    try:
        stat = os.stat(reference.path)
        identity = (reference.path, stat.st_size, stat.st_mtime_ns)
    except (OSError, AttributeError):  # not a file-backed reference: no caching
        return _read_window(reference, chunk, need_raw)
    # Windows are keyed by where they end; one that starts earlier (a longer
    # halo, from a job with longer patterns) serves any later start by slicing.
    key = (identity, chunk.record_index, chunk.owned_end)
    with _chunk_cache_lock:
        cached = _chunk_cache.get(key)
        if cached is not None and cached[0] <= chunk.read_start and (cached[1] is not None or not need_raw):
            _chunk_cache.move_to_end(key)
            cached_start, raw, text = cached
            skip = chunk.read_start - cached_start
            return (raw[skip:] if raw is not None else None), text[skip:]
    raw, text = _read_window(reference, chunk, need_raw)
    size = _cached_size(raw, text)
    budget = chunk_cache_budget()
    if size <= budget:
        with _chunk_cache_lock:
            replaced = _chunk_cache.pop(key, None)
            if replaced is not None:
                _chunk_cache_bytes -= _cached_size(replaced[1], replaced[2])
            _chunk_cache[key] = (chunk.read_start, raw, text)
            _chunk_cache_bytes += size
            while _chunk_cache_bytes > budget:
                _, (_, old_raw, old_text) = _chunk_cache.popitem(last=False)
                _chunk_cache_bytes -= _cached_size(old_raw, old_text)
    return raw, text


def _read_window(reference, chunk, need_raw: bool) -> tuple[bytes | None, np.ndarray]:
    if need_raw:
        raw = reference.read(chunk.record_index, chunk.read_start, chunk.owned_end)
        return raw, encode_text(raw)
    codes = reference.read(chunk.record_index, chunk.read_start, chunk.owned_end, table=TEXT_CODE_TABLE)
    return None, np.frombuffer(codes, dtype=np.uint8)


def run_task(job: SearchJob, group: ChunkGroup, pattern_range: range) -> pd.DataFrame:
    """Hit rows of ``pattern_range`` in the chunks of ``group``, in output order."""
    batch = job.patterns.oriented(pattern_range, job.strands)
    frames = []
    for chunk in group.chunks:
        raw, text = read_chunk(job.reference, chunk, need_raw=job.needs_raw_text)
        if job.alphabet == "bytes":  # raw bytes: no case folding, no N rule (DESIGN.md)
            text = np.frombuffer(raw, dtype=np.uint8)
        hits = kernels.find_ends(job.algorithm, job.backend, text, batch, job.k,
                                 chunk.owned_lo, chunk.owned_hi)
        if len(hits) == 0:
            continue
        frames.append(_rows_for_chunk(job, batch, chunk, raw, text, hits.sorted()))
    if not frames:
        return empty_rows(job)
    # Sorted here, on the worker: the client then only merges sorted runs (merge.sort_rows).
    return sort_rows(pd.concat(frames, ignore_index=True), job.reports_start)


def _rows_for_chunk(job, batch, chunk, raw: bytes, text: np.ndarray, hits) -> pd.DataFrame:
    row, end, distance = hits.row, hits.end, hits.distance
    columns: dict[str, np.ndarray] = {}
    if job.joins_runs:
        row, end, distance, first_end, last_end = _best_of_runs(row, end, distance)
        columns["first_end"] = first_end + chunk.read_start
        columns["last_end"] = last_end + chunk.read_start
    if job.reports_start:
        start, cigars = kernels.locate(job.metric, text, batch, row, end, distance)
        columns["start"] = start + chunk.read_start
        if job.align:
            columns["aligned"] = np.array(
                [raw[s:e].decode("ascii", errors="replace") for s, e in zip(start, end)], dtype=object)
            columns["cigar"] = np.array(cigars, dtype=object)
    columns["end"] = end + chunk.read_start
    columns["record"] = np.full(len(row), chunk.record_index, dtype=np.int32)
    columns["pattern"] = batch.pattern_index[row]
    columns["strand"] = batch.strand[row]
    columns["distance"] = distance.astype(np.int16)
    return pd.DataFrame(columns)


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
