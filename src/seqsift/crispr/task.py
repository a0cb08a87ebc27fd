"""The CRISPR job: what it is (:class:`CrisprJob`, its side of the runtime's job protocol) and its
worker task, one chunk group x one guide range.

``run_crispr_task`` reads each chunk's window (``runtime.windows.read_chunk``,
the worker's chunk cache), runs the kernel family's :func:`find_sites`, and
turns the hits into rows: coordinates made absolute, the site and the aligned
guide written out in the guide's orientation, CFD and MIT scores. Rows carry
indices (record, guide, strand): records numbered across all the job's
reference files in order; names are attached by the writer. The client
keeps rows in reference order with :class:`SiteRows`.
"""
from __future__ import annotations

import dataclasses
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..alphabet import IUPAC_MASKS, pattern_mask_rows, pattern_masks
from ..io.text_list import TextList
from ..runtime.columns import arrow_strings, text_column
from ..runtime.windows import read_chunk, read_packed
from ..kernels.cuda import task_stream
from ..kernels.crispr import (BULGE_DNA, BULGE_NAMES, BULGE_NONE, BULGE_RNA, MAX_BULGE, GuideRows, SiteHits,
                              find_sites, orient_guides, site_halo, small_job)
from ..memo import Memo
from ..partitioning import ChunkGroup, PackedRecords, default_chunk_size, plan_chunks, record_gap
from ..pattern_set import PatternSet
from ..runtime import stages
from ..runtime.job import Plan
from ..runtime.output import INTERVAL_FORMATS
from ..runtime.order import sort_rows as sort_by_columns
from ..runtime.job import reference_fingerprint, sequences_sha256
from .scores import cfd_scores, mit_scores, scores_defined

if TYPE_CHECKING:  # pandas loads with a task's first rows: the job is made and submitted without it
    import pandas as pd

DEFAULT_GUIDE_BATCH = {"cpu": 512, "cuda": 8192}
"""Guides per task: all candidates of a chunk are checked against a batch at once."""

ROW_DTYPES = {"record": np.int32, "start": np.int64, "end": np.int64, "guide": np.int32, "strand": np.int8,
              "mismatches": np.int16, "bulge_type": object, "bulge_size": np.int16, "guide_aligned": object,
              "site": object, "cfd": np.float64, "mit": np.float64}


@dataclass(frozen=True)
class CrisprUnit:
    """One task's text: a chunk group of one of the job's reference files."""

    index: int                 # in the job's plan (output order)
    reference: int             # which of CrisprJob.references
    record_offset: int         # records of the files before it: rows number records across all files
    group: ChunkGroup

    @property
    def bases(self) -> int:
        return self.group.bases


@dataclass(frozen=True)
class CrisprJob:
    """Everything a task needs; travels to the workers once (runtime.shared.on_workers)."""

    name = "crispr"
    formats = INTERVAL_FORMATS

    references: tuple          # seqsift.io.reference.Reference of each file, in order
    guides: PatternSet
    limits: tuple[int, ...]    # mismatches allowed per guide
    pam: str
    pam_side: int
    dna_bulge: int
    rna_bulge: int
    strands: tuple[int, ...]
    backend: str
    small: bool = False        # run the NumPy kernel (kernels.crispr.small_job), never Numba; crispr() decides
    output: object = None      # crispr.output.SiteOutput: how the client writes the rows (format, summary)
    merge_window: int | None = None  # --merge W: one site per guide and strand per cluster (crispr/merge.py)
    _rows: Memo = field(default_factory=Memo, init=False, compare=False, repr=False)  # per guide range

    @property
    def bases(self) -> int:
        return sum(int(ref.lengths.sum()) for ref in self.references)

    @property
    def record_names(self) -> TextList:
        """Every record's name, across the reference files in order (the rows' record numbers)."""
        return TextList.concatenate(ref.names for ref in self.references)

    @property
    def record_headers(self) -> TextList:
        """Every record's whole header line after '>' where the reference knows it, else its name
        (Cas-OFFinder's chromosome column)."""
        return TextList.concatenate(ref.headers or ref.names for ref in self.references)

    def small_enough(self) -> bool:
        """Whether this CPU job's work is below kernels.crispr.small_job's line (Numba's start costs more)."""
        return self.backend == "cpu" and small_job(self.bases, self.rows(range(len(self.guides))),
                                                   self.dna_bulge, self.rna_bulge)

    @cached_property
    def pam_masks(self) -> np.ndarray:
        return pattern_masks(self.pam)

    @cached_property
    def guide_letters(self) -> np.ndarray:
        """Every guide's letters (ASCII, upper case), a zero-padded (guides, L_max) uint8 table."""
        return pattern_mask_rows(self.guides.sequences, literal=True)[0]

    @cached_property
    def guide_masks(self) -> tuple[np.ndarray, np.ndarray]:
        """Every guide's IUPAC masks, a zero-padded (guides, L_max) table, and the lengths."""
        return pattern_mask_rows(self.guides.sequences)

    @cached_property
    def guide_rejects(self) -> np.ndarray:
        """Per guide and position, the base bits (task._base_bits) a site base must not have to match: the
        complement of the letter's IUPAC mask within 0x1F (0x10: a letter other than A/C/G/T)."""
        return ~self.guide_masks[0] & np.uint8(0x1F)

    @cached_property
    def aligned_strings(self):
        """Each guide as given with the PAM on its side (guide_aligned without a DNA bulge), as Arrow strings."""
        import pyarrow as pa

        return pa.array([g + self.pam if self.pam_side == 3 else self.pam + g for g in self.guides.sequences],
                        type=pa.large_string())

    def rows(self, guide_range: range) -> GuideRows:
        """The oriented rows of ``guide_range``, built once per job object and range.

        The job reaches a worker once and its tasks share it (runtime.shared), so
        every chunk and task of a guide range gets the same GuideRows object: the
        CUDA launcher keeps the rows' device words on it (kernels/crispr/cuda.py).
        Task threads ask at once; the Memo builds it once.
        """
        def orient() -> GuideRows:
            table, lengths = self.guide_masks
            chosen = slice(guide_range.start, guide_range.stop)
            return orient_guides(table[chosen], self.limits[chosen], self.pam_masks, self.pam_side, self.strands,
                                 guide_indices=np.arange(guide_range.start, guide_range.stop), lengths=lengths[chosen])

        return self._rows.get((guide_range.start, guide_range.stop), orient)

    def __getstate__(self) -> dict:
        """Only the fields travel to the workers: each worker builds its own caches."""
        return {name: self.__dict__[name] for name in self.__dataclass_fields__}

    @property
    def halo(self) -> int:
        return site_halo(self.rows(range(len(self.guides))), self.dna_bulge)

    @property
    def shortest_site(self) -> int:
        return int(self.guides.lengths.min()) + len(self.pam) - self.rna_bulge

    # -- the runtime's job protocol (runtime/job.py) ------------------------------------------

    def plan(self, client, layout: dict) -> Plan:
        """Chunk groups of every reference file, in order, x guide batches."""
        from ..cluster import worker_count

        chunk_size = layout.get("chunk_size") or default_chunk_size(self.backend, self.bases, worker_count(client))
        batch_size = layout.get("guide_batch_size") or DEFAULT_GUIDE_BATCH[self.backend]
        units, offset = [], 0
        for number, reference in enumerate(self.references):
            for group in plan_chunks(reference.lengths, chunk_size, self.halo, min_length=self.shortest_site,
                                     gap=record_gap("hamming", 0)):
                units.append(CrisprUnit(len(units), number, offset, group))
            offset += len(reference.names)
        batches = self.guides.batches(batch_size)
        notes = [f"{self.bases:,} bases in {len(units):,} task(s) of up to {int(chunk_size):,} bases x "
                 f"{len(batches):,} batch(es) of up to {int(batch_size):,} guides, on {self.backend}"]
        return Plan(units=units, batches=batches, weights=[u.bases for u in units],
                    layout={"chunk_size": int(chunk_size), "guide_batch_size": int(batch_size)},
                    unit_name="bp", label="crispr", notes=notes)

    def fingerprint(self, plan: Plan) -> dict:
        return {"job": self.name,
                "references": [reference_fingerprint(ref) for ref in self.references],
                "guides_sha256": sequences_sha256(self.guides.names, self.guides.sequences, self.limits),
                "parameters": {"pam": self.pam, "pam_side": self.pam_side, "dna_bulge": self.dna_bulge,
                               "rna_bulge": self.rna_bulge, "strands": list(self.strands)},
                "layout": plan.layout}

    @staticmethod
    def task(job: "CrisprJob", unit: CrisprUnit, guide_range: range) -> pd.DataFrame:
        return run_crispr_task(job, unit, guide_range)

    def collector(self, plan: Plan, spill_rows: int):
        rows = SiteRows(plan.units, self.halo)
        if self.merge_window is None:
            return rows
        from .merge import MergedSites

        return MergedSites(rows, self.merge_window)

    def writer(self, output):
        from .output import site_writer

        return site_writer(self, output)


def run_crispr_task(job: CrisprJob, unit: CrisprUnit, guide_range: range) -> pd.DataFrame:
    """Rows of ``guide_range`` in the chunks of ``unit``, sorted by (record, start, end, guide, strand)."""
    rows = job.rows(guide_range)
    reference = job.references[unit.reference]
    frames = []
    on_device = job.backend == "cuda"
    with (task_stream() if on_device else nullcontext()):  # each task thread's kernels on a stream of its own
        if isinstance(unit.group, PackedRecords):
            frames = _search_packed(job, rows, reference, unit, on_device)
        for chunk in getattr(unit.group, "chunks", ()):
            window = read_chunk(reference, chunk, need_raw=True, on_device=on_device)
            text = window.device if on_device else window.codes
            with stages.timed("kernel", device=on_device):
                hits = find_sites(job.backend, text, rows, job.dna_bulge, job.rna_bulge, chunk.owned_lo,
                                  chunk.owned_hi, small=job.small)
            stages.count_kernel_call()
            if len(hits):
                count = len(hits)
                frames.append(_site_rows(job, rows, hits.sorted(), window.raw,
                                         record=np.full(count, unit.record_offset + chunk.record_index, np.int32),
                                         record_raw_start=np.full(count, -chunk.read_start, np.int64)))
    if not frames:
        return empty_rows()
    import pandas as pd

    return sort_rows(pd.concat(frames, ignore_index=True))


def _search_packed(job: CrisprJob, rows: GuideRows, reference, unit: CrisprUnit, on_device: bool) -> list:
    """Whole records packed into one text (partitioning.PackedRecords): one kernel call for all of them;
    sites mapped to their records at once, and those that touch a separator dropped."""
    group = unit.group
    window = read_packed(reference, group, on_device=on_device)
    with stages.timed("kernel", device=on_device):
        hits = find_sites(job.backend, window.device if on_device else window.codes, rows, job.dna_bulge,
                          job.rna_bulge, 0, group.text_length, small=job.small)
    stages.count_kernel_call()
    if len(hits) == 0:
        return []
    hits = hits.sorted()
    record, text_start = group.records_of(hits.start, hits.start + hits.length)
    inside = record >= 0
    if not inside.all():
        hits = SiteHits(*(getattr(hits, f)[inside] for f in SiteHits.__dataclass_fields__))
        record, text_start = record[inside], text_start[inside]
    if len(hits) == 0:
        return []
    raw_start = group.raw_starts[record - group.first]
    # In the raw bytes (records back to back), where the site strings are cut from.
    hits = dataclasses.replace(hits, start=hits.start + (raw_start - text_start))
    return [_site_rows(job, rows, hits, window.raw, record=(record + unit.record_offset).astype(np.int32),
                       record_raw_start=raw_start)]


SORT_KEYS = ("record", "start", "end", "guide", "strand")
"""The row order of every output: reference order, then guide order (the guides' input order), + before -."""


def sort_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` in SORT_KEYS order (stable; runtime.order: a few sorted runs are merged, not sorted;
    ``end`` breaks ties of one start, so it is sorted as the site's length, ``end - start``)."""
    return sort_by_columns(frame, list(SORT_KEYS), relative={"end": "start"})


class SiteRows:
    """The crispr job's collector (runtime.job.Collector): rows in reference order, as units complete.

    A unit's rows are final up to the next unit's first core start minus the
    halo (a later chunk's sites end in its core, so they start at or after
    that); the rest waits for the next unit, merged with it.
    """

    def __init__(self, units: list[CrisprUnit], halo: int):
        self.units, self.halo = units, halo
        self.pending: pd.DataFrame | None = None

    def take(self, unit: CrisprUnit, frames: list[pd.DataFrame]):
        frames = ([self.pending] if self.pending is not None else []) + [f for f in frames if len(f)]
        self.pending = None
        if not frames:
            return
        import pandas as pd

        # Each frame is in order; sort_rows merges them only where they interleave.
        rows = sort_rows(frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True))
        if unit.index + 1 >= len(self.units):
            yield rows
            return
        following = self.units[unit.index + 1]
        if isinstance(following.group, PackedRecords):  # whole records: none of its sites starts before them
            first_record, first_start = following.record_offset + following.group.first, 0
        else:
            first = following.group.chunks[0]
            first_record, first_start = following.record_offset + first.record_index, first.core_start - self.halo
        # Final: the rows before (first_record, first_start), a prefix of the sorted rows.
        record, start = rows["record"].to_numpy(), rows["start"].to_numpy()
        low, high = np.searchsorted(record, first_record, side="left"), np.searchsorted(record, first_record,
                                                                                        side="right")
        final = int(low + np.searchsorted(start[low:high], first_start, side="left"))
        self.pending = rows.iloc[final:].reset_index(drop=True) if final < len(rows) else None
        if final:
            yield rows.iloc[:final]

    def finish(self):
        if self.pending is not None and len(self.pending):
            yield self.pending
        self.pending = None

    def close(self) -> None:
        self.pending = None


def empty_rows() -> pd.DataFrame:
    """No rows, each column of the dtype rows have (text: :func:`text_dtype`).

    An empty object column would turn every text column it is concatenated
    with (a group's other tasks) into Python objects, and the job's frame
    would have object or str columns depending on how it was cut in chunks.
    """
    import pandas as pd
    import pyarrow as pa

    no_text = text_column(pa.array([], type=pa.large_string()))
    return pd.DataFrame({name: no_text if dtype is object else np.empty(0, dtype=dtype)
                         for name, dtype in ROW_DTYPES.items()})


def _site_rows(job: CrisprJob, rows: GuideRows, hits, raw: np.ndarray, record: np.ndarray,
               record_raw_start: np.ndarray) -> pd.DataFrame:
    """Rows of one searched text's hits, in the hits' order: ``hits.start`` in ``raw`` (the bytes as in the
    file, uint8), each hit's record (numbered across the job's files) and where that record starts in
    ``raw`` (negative for a chunk's window, which starts inside its record).

    Hits of one shape (bulge type and size, guide length, strand) have sites of
    one width: each shape's sites are built at once as byte matrices
    (:func:`_shape_bytes`). The strings of all shapes then become Arrow strings
    from one buffer, put back in the hits' order by one take: no Python object
    per site (a GPU task has millions of sites).
    """
    import pyarrow as pa

    count = len(hits)
    if count == 0:
        return empty_rows()
    strand = rows.strand[hits.row]
    guide = rows.guide_index[hits.row]
    cfd = np.full(count, np.nan)
    mit = np.full(count, np.nan)
    sites, site_hits = [], []
    gapped, gapped_hits = [], []    # guide_aligned of DNA-bulge sites; the others show their guide as given
    for kind, size, length, minus, chosen in _shapes(hits, rows.lengths[hits.row], strand):
        at = hits.bulge_at[chosen].astype(np.int64)
        if minus and kind == BULGE_RNA:  # kernels count j in forward orientation; on - the guide reads backwards
            at = length - at - size
        elif minus and kind == BULGE_DNA:
            at = length - at
        site, aligned, shape_cfd, shape_mit = _shape_bytes(job, raw, hits.start[chosen], guide[chosen], at, kind,
                                                           size, length, minus)
        sites.append(site)
        site_hits.append(chosen)
        if aligned is not None:
            gapped.append(aligned)
            gapped_hits.append(chosen)
        if shape_cfd is not None:
            cfd[chosen], mit[chosen] = shape_cfd, shape_mit
    site_strings = _in_hit_order(_arrow_strings(sites), np.concatenate(site_hits), count)
    aligned_index = guide.astype(np.int64)  # into job.aligned_strings, then the gapped ones
    candidates = job.aligned_strings
    if gapped:
        gapped_order = np.concatenate(gapped_hits)
        aligned_index[gapped_order] = len(candidates) + np.arange(len(gapped_order))
        candidates = pa.concat_arrays([candidates, _arrow_strings(gapped)])
    import pandas as pd

    start = hits.start - record_raw_start
    return pd.DataFrame({
        "record": record,
        "start": start.astype(np.int64),
        "end": (start + hits.length).astype(np.int64),
        "guide": guide,
        "strand": strand,
        "mismatches": hits.mismatches.astype(np.int16),
        "bulge_type": text_column(pa.array(BULGE_NAMES, type=pa.large_string()).take(pa.array(hits.bulge_type))),
        "bulge_size": hits.bulge_size.astype(np.int16),
        "guide_aligned": text_column(candidates.take(pa.array(aligned_index))),
        "site": text_column(site_strings),
        "cfd": cfd,
        "mit": mit,
    })


def _shapes(hits, lengths: np.ndarray, strand: np.ndarray):
    """(bulge type, bulge size, guide length, minus strand?, the indices of its hits in order) per shape present.

    One 16-bit shape number per hit and one stable argsort of it (NumPy sorts
    16-bit keys by radix) split the hits, instead of one full scan per shape.
    """
    longest = int(lengths.max()) + 1
    shape = ((hits.bulge_type.astype(np.int64) * (MAX_BULGE + 1) + hits.bulge_size) * 2 + strand) * longest + lengths
    counts = np.bincount(shape)
    present = np.flatnonzero(counts)
    if len(present) == 1:
        order = np.arange(len(shape))
    else:
        dense = np.zeros(len(counts), dtype=np.min_scalar_type(len(present)))
        dense[present] = np.arange(len(present))
        order = np.argsort(dense[shape], kind="stable")
    stops = np.cumsum(counts[present]).tolist()
    for number, stop, begin in zip(present.tolist(), stops, [0] + stops[:-1]):
        rest, length = divmod(number, longest)
        rest, minus = divmod(rest, 2)
        kind, size = divmod(rest, MAX_BULGE + 1)
        yield kind, size, length, bool(minus), order[begin:stop]


_COMPLEMENT = bytes.maketrans(b"ACGTRYKMBVDHSWNacgtrykmbvdhswn", b"TGCAYRMKVBHDSWNtgcayrmkvbhdswn")
_UPPER_COMPLEMENT = np.frombuffer(bytes(range(256)).upper().translate(_COMPLEMENT), dtype=np.uint8)
_UPPER = np.frombuffer(bytes(range(256)).upper(), dtype=np.uint8)
_GAP = ord("-")
_LOWER_CASE = np.uint8(0x20)
"""Added to an upper-case ASCII letter, its lower case."""


def _base_bits(letters: np.ndarray) -> np.ndarray:
    """Per file byte, the bit its site letter (``letters[byte]``, upper case) has in a guide letter's IUPAC mask.

    A, C, G, T: their mask bit (seqsift.alphabet); any other letter 0x10, a bit
    no guide mask has (a mismatch: written in lower case); any other byte 0,
    which no guide position rejects (it has no lower case, and stays as it is).
    """
    bits = np.zeros(256, dtype=np.uint8)
    bits[(letters >= ord("A")) & (letters <= ord("Z"))] = 0x10
    for base in "ACGT":
        bits[letters == ord(base)] = IUPAC_MASKS[base]
    return bits


_PLUS_BITS, _MINUS_BITS = _base_bits(_UPPER), _base_bits(_UPPER_COMPLEMENT)


def _shape_bytes(job: CrisprJob, raw: np.ndarray, starts: np.ndarray, guides: np.ndarray, at: np.ndarray,
                 kind: int, size: int, length: int, minus: bool):
    """One shape's sites: (site, guide_aligned, cfd, mit); site a byte matrix, one row a site.

    ``site``: the genome bases in the guide's orientation, upper case, a base
    that mismatches its guide letter (outside the letter's IUPAC set, or not
    A/C/G/T) in lower case, ``-`` over the guide bases of an RNA bulge;
    ``guide_aligned``: with a DNA bulge a byte matrix, the guide with ``-``
    over the genome's extra bases, else None (each site shows its guide as
    given: job.aligned_strings). Both carry the PAM on its side. ``at``: the
    columns before the bulge, counted from the guide's 5' end. cfd and mit:
    None where undefined.

    Each window is one row copy out of a sliding-window view of ``raw`` (no
    index matrix), each byte table is applied once, and a mismatch is a base
    bit the guide position rejects (job.guide_rejects): lower case is upper
    case + 0x20 for the letters, the only bytes that can mismatch.
    """
    pam_length = len(job.pam)
    span = length + size if kind == BULGE_DNA else length - size  # protospacer: the genome bases paired or bulged
    columns = length if kind == BULGE_RNA else span  # the site's protospacer columns (an RNA bulge adds gaps)
    windows = np.lib.stride_tricks.sliding_window_view(raw, pam_length + span)[starts]
    oriented = windows[:, ::-1] if minus else windows  # the guide's orientation; complemented below
    if job.pam_side == 3:
        protospacer, pam = slice(0, columns), slice(columns, columns + pam_length)
        genome_protospacer, genome_pam = oriented[:, :span], oriented[:, span:]
    else:
        protospacer, pam = slice(pam_length, pam_length + columns), slice(0, pam_length)
        genome_protospacer, genome_pam = oriented[:, pam_length:], oriented[:, :pam_length]
    if kind == BULGE_RNA:  # '-' passes the byte tables below as it is, and no guide position rejects it
        genome = np.empty((len(starts), pam_length + columns), dtype=np.uint8)
        genome[:, pam] = genome_pam
        _insert_gap(genome_protospacer, at, size, _GAP, genome[:, protospacer])
    else:
        genome = oriented
    site = np.take(_UPPER_COMPLEMENT if minus else _UPPER, genome)
    bits = np.take(_MINUS_BITS if minus else _PLUS_BITS, genome[:, protospacer])
    rejects = job.guide_rejects[guides, :length]
    aligned = cfd = mit = None
    if kind == BULGE_DNA:  # the genome's extra bases face a gap, which rejects nothing
        rejects = _insert_gap(rejects, at, size, 0)
        aligned = np.empty((len(starts), pam_length + columns), dtype=np.uint8)
        aligned[:, pam] = np.frombuffer(job.pam.encode(), dtype=np.uint8)
        _insert_gap(job.guide_letters[guides, :length], at, size, _GAP, aligned[:, protospacer])
    if kind == BULGE_NONE and scores_defined(length, job.pam, job.pam_side):
        letters = job.guide_letters[guides, :length]
        cfd, mit = cfd_scores(letters, site[:, protospacer], site[:, pam]), mit_scores(letters, site[:, protospacer])
    site[:, protospacer] += ((bits & rejects) != 0).view(np.uint8) * _LOWER_CASE
    return site, aligned, cfd, mit


def _insert_gap(rows: np.ndarray, at: np.ndarray, size: int, fill: int, out: np.ndarray | None = None) -> np.ndarray:
    """Each row with ``size`` columns of ``fill`` inserted before its column ``at[k]`` (into ``out``, returned).

    Whole columns move, not single bytes: the row shifted right by ``size``,
    then its columns before the gap put back where each row's mask says.
    """
    count, width = rows.shape
    if out is None:
        out = np.empty((count, width + size), dtype=rows.dtype)
    out[:, size:] = rows
    np.copyto(out[:, :width], rows, where=np.arange(width) < at[:, None])
    out[np.repeat(np.arange(count), size), (at[:, None] + np.arange(size)).ravel()] = fill
    return out


def _arrow_strings(matrices: list[np.ndarray]):
    """The rows of uint8 matrices, one matrix after another, as one Arrow large_string array
    (runtime.columns.arrow_strings: the matrices' bytes are its buffer)."""
    widths = np.concatenate([np.full(len(m), m.shape[1], dtype=np.int64) for m in matrices])
    offsets = np.zeros(len(widths) + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    return arrow_strings(offsets, np.concatenate([np.ascontiguousarray(m).ravel() for m in matrices]))


def _in_hit_order(strings, hit_of: np.ndarray, count: int):
    """``strings[i]`` belongs to hit ``hit_of[i]``: the strings in hit order (one Arrow take)."""
    import pyarrow as pa

    if (hit_of[1:] > hit_of[:-1]).all():
        return strings
    position = np.empty(count, dtype=np.int64)
    position[hit_of] = np.arange(count)
    return strings.take(pa.array(position))
