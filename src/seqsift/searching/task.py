"""The worker side of a search: one task = one chunk group x one pattern range.

``run_task`` reads each chunk's window from the reference, encodes it, calls
the job's kernel through :func:`seqsift.kernels.find_ends` (the search knows
no kernel's inside), and turns the kernel's ends into hit rows:

* Hamming: one row per hit, start = end - m.
* edit, ``ends``: one row per qualifying end.
* edit, ``best``: each maximal run of consecutive qualifying ends of one
  row (pattern x strand) becomes one locus at its smallest distance
  (leftmost on ties). The run's first and last ends travel with it, so the
  client can join runs that continue into the next chunk (``merge.py``).

Starts and alignments are found where the text is (``kernels.locate_packed``):
on the device for a chunk searched there, so a GPU search loads no Numba.
Rows use indices (record, pattern) and absolute int64 coordinates; names are
attached by the writer. The ``aligned`` and ``cigar`` columns are Arrow
strings built from one buffer each (no Python object per hit). Each worker
process caches the reference windows it has read (``runtime.windows``); on a
GPU worker the window's text codes stay on the device, uploaded once as raw
bytes and encoded there. Stages are timed with ``stages.timed`` (off unless
a benchmark asks).
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import kernels
from ..alphabet import TEXT_CODE_ARRAY
from ..kernels import EndHits
from ..kernels.cuda import task_stream
from ..partitioning import ChunkGroup, PackedRecords
from ..runtime import stages
from ..runtime.windows import read_chunk, read_packed
from .job import SearchJob

if TYPE_CHECKING:  # pandas loads once a task has hits to return: its first kernel does not wait for it
    import pandas as pd


def searches_on_device(job: SearchJob) -> bool:
    """The job's kernel runs on the GPU, on text codes (so the chunk's codes live there)."""
    return (job.backend == "cuda" and job.alphabet == "dna"
            and "cuda" in kernels.ALGORITHMS[job.algorithm].backends)


def run_task(job: SearchJob, group: ChunkGroup, pattern_range: range) -> pd.DataFrame:
    """Hit rows of ``pattern_range`` in the chunks of ``group``, in output order."""
    batch = job.patterns.oriented(pattern_range, job.strands)
    on_device = searches_on_device(job)
    with (task_stream() if on_device else nullcontext()):
        frames = _search_chunks(job, group, batch, on_device)
    if not frames:
        return empty_rows(job)
    import pandas as pd

    from .merge import sort_rows

    # Sorted here, on the worker: the client then only merges sorted runs (merge.sort_rows).
    with stages.timed("merge"):
        return sort_rows(pd.concat(frames, ignore_index=True), job.reports_start)


def _search_chunks(job: SearchJob, group, batch, on_device: bool) -> list[pd.DataFrame]:
    """The group's hit rows, one frame per text searched (texts without hits left out)."""
    if isinstance(group, PackedRecords):
        return _search_packed(job, group, batch, on_device)
    frames = []
    for chunk in group.chunks:
        window = read_chunk(job.reference, chunk, need_raw=job.needs_raw_text, on_device=on_device)
        if job.alphabet == "bytes":  # raw bytes: no case folding, no N rule (DESIGN.md)
            text = window.raw
        else:
            text = window.device if on_device else window.codes
        with stages.timed("kernel", device=on_device):
            hits = kernels.find_ends(job.algorithm, job.backend, text, batch, job.k,
                                     chunk.owned_lo, chunk.owned_hi)
        stages.count_kernel_call()
        if len(hits) == 0:
            continue
        hits = hits.sorted()
        count = len(hits)
        place = _Placement(record=np.full(count, chunk.record_index, dtype=np.int32),
                           raw_shift=np.zeros(count, np.int64),
                           record_raw_start=np.full(count, -chunk.read_start, dtype=np.int64))
        # Located in the text searched: its codes (on the device or the host), or a byte text's raw bytes.
        with stages.timed("locate"):
            frames.append(_rows(job, batch, hits, place, window.raw, text, locate_in_raw=False))
    return frames


def _search_packed(job: SearchJob, group: PackedRecords, batch, on_device: bool) -> list[pd.DataFrame]:
    """Whole records packed into one text (partitioning.PackedRecords): one kernel call for all of them;
    each hit mapped to its record at once, and those that touch a separator dropped."""
    window = read_packed(job.reference, group, on_device=on_device, alphabet=job.alphabet)
    with stages.timed("kernel", device=on_device):
        hits = kernels.find_ends(job.algorithm, job.backend, window.device if on_device else window.codes, batch,
                                 job.k, 0, group.text_length)
    stages.count_kernel_call()
    if len(hits) == 0:
        return []
    with stages.timed("locate"):
        hits = hits.sorted()
        # The hit's text: a Hamming window (end - m, end]; an edit end's last character (its start is found
        # below, never before its record).
        first = hits.end - (batch.lengths[hits.row].astype(np.int64) if job.metric == "hamming" else 1)
        record, text_start = group.records_of(first, hits.end)
        inside = record >= 0
        if not inside.all():
            hits = EndHits(hits.row[inside], hits.end[inside], hits.distance[inside])
            record, text_start = record[inside], text_start[inside]
        if len(hits) == 0:
            return []
        local = record - group.first
        raw_start = group.raw_starts[local]
        place = _Placement(record=record.astype(np.int32), raw_shift=raw_start - text_start, record_raw_start=raw_start)
        # On the GPU, located in the packed text on the device; on the host, in the records' raw bytes.
        if on_device:
            return [_rows(job, batch, hits, place, window.raw, window.device, locate_in_raw=False)]
        return [_rows(job, batch, hits, place, window.raw, window.raw, locate_in_raw=True)]


@dataclass(frozen=True)
class _Placement:
    """Where each hit of a searched text lies: its record, how far the raw bytes are from the text (raw =
    text + raw_shift), and where its record starts in the raw bytes (record position = raw - record_raw_start;
    negative for a chunk's window, which starts inside its record)."""

    record: np.ndarray
    raw_shift: np.ndarray
    record_raw_start: np.ndarray


def _rows(job, batch, hits, place: _Placement, raw: np.ndarray, locate_text, locate_in_raw: bool) -> pd.DataFrame:
    """The hit rows of ``hits`` (sorted by row, end) of one searched text (record coordinates).

    ``locate_text``: where starts and alignments are found: the searched text's codes (on the device or
    the host; ``locate_in_raw`` False) or the raw bytes (True, through the code table for DNA).
    """
    import pandas as pd

    from ..runtime.columns import string_column

    row, end, distance = hits.row, hits.end, hits.distance
    record, raw_shift, record_raw_start = place.record, place.raw_shift, place.record_raw_start
    columns: dict[str, object] = {}
    if job.joins_runs:
        selected, first_end, last_end = _best_of_runs(row, end, distance)
        row, end, distance = row[selected], end[selected], distance[selected]
        record, raw_shift, record_raw_start = record[selected], raw_shift[selected], record_raw_start[selected]
        columns["first_end"] = first_end + raw_shift - record_raw_start
        columns["last_end"] = last_end + raw_shift - record_raw_start
    raw_end = end + raw_shift
    if job.reports_start:
        # Positions in locate_text are raw positions there, else the searched text's (raw - raw_shift).
        to_locate = 0 if locate_in_raw else -raw_shift
        code_of = TEXT_CODE_ARRAY if locate_in_raw and job.alphabet == "dna" else None
        start, (cigar_offsets, cigar_data) = kernels.locate_packed(
            job.metric, locate_text, batch, row, raw_end + to_locate, distance, code_of=code_of,
            lowest=np.maximum(record_raw_start, 0) + to_locate)
        start = start - to_locate
        columns["start"] = start - record_raw_start
        if job.align:
            columns["aligned"] = string_column(*kernels.gather_spans(raw, start, raw_end))
            columns["cigar"] = string_column(cigar_offsets, cigar_data)
    columns["end"] = raw_end - record_raw_start
    columns["record"] = record
    columns["pattern"] = batch.pattern_index[row]
    columns["strand"] = batch.strand[row]
    columns["distance"] = distance.astype(np.int16)
    return pd.DataFrame(columns)


def _best_of_runs(row, end, distance):
    """Group (row, end)-sorted ends into runs of consecutive ends of one row.

    Returns the index of each run's best end (smallest distance, leftmost on
    ties), and each run's first and last ends.
    """
    breaks = np.flatnonzero((np.diff(row) != 0) | (np.diff(end) != 1)) + 1
    run_starts = np.concatenate(([0], breaks))
    run_stops = np.concatenate((breaks, [len(row)]))
    # Leftmost minimum within each run: sort each run's members by (distance, end).
    run_id = np.repeat(np.arange(len(run_starts)), run_stops - run_starts)
    order = np.lexsort((end, distance, run_id))
    best = order[np.searchsorted(run_id[order], np.arange(len(run_starts)))]
    return best, end[run_starts], end[run_stops - 1]


def empty_rows(job: SearchJob) -> pd.DataFrame:
    import pandas as pd

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
