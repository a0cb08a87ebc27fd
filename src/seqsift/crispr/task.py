"""The worker side of a CRISPR job: one task = one chunk group x one guide range.

``run_crispr_task`` reads each chunk's window (``engine.task.read_chunk``, the
worker's chunk cache), runs the kernel family's :func:`find_sites`, and turns
the hits into rows: coordinates made absolute, the site and the aligned guide
written out in the guide's orientation, CFD and MIT scores. Rows carry
indices (record, guide, strand); names are attached by the writer.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from ..alphabet import encode_text, pattern_mask_rows, pattern_masks
from ..engine.task import read_chunk
from ..kernels.crispr import (BULGE_DNA, BULGE_NAMES, BULGE_NONE, BULGE_RNA, MAX_BULGE, GuideRows, find_sites,
                              orient_guides, site_halo, small_job)
from ..memo import Memo
from ..partitioning import ChunkGroup
from ..patterns import PatternSet
from .scores import cfd_scores, mit_scores, scores_defined

ROW_DTYPES = {"record": np.int32, "start": np.int64, "end": np.int64, "guide": np.int32, "strand": np.int8,
              "mismatches": np.int16, "bulge_type": object, "bulge_size": np.int16, "guide_aligned": object,
              "site": object, "cfd": np.float64, "mit": np.float64}


@dataclass(frozen=True)
class CrisprJob:
    """Everything a task needs; travels to the workers once (engine.shared.on_workers)."""

    reference: object          # seqsift.io.reference.Reference
    guides: PatternSet
    limits: tuple[int, ...]    # mismatches allowed per guide
    pam: str
    pam_side: int
    dna_bulge: int
    rna_bulge: int
    strands: tuple[int, ...]
    backend: str
    small: bool = False        # run the NumPy kernel (kernels.crispr.small_job), never Numba; crispr() decides
    _rows: Memo = field(default_factory=Memo, init=False, compare=False, repr=False)  # per guide range

    def small_enough(self) -> bool:
        """Whether this CPU job's work is below kernels.crispr.small_job's line (Numba's start costs more)."""
        return self.backend == "cpu" and small_job(int(sum(int(n) for n in self.reference.lengths)),
                                                   self.rows(range(len(self.guides))), self.dna_bulge, self.rna_bulge)

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

    def rows(self, guide_range: range) -> GuideRows:
        """The oriented rows of ``guide_range``, built once per job object and range.

        The job reaches a worker once and its tasks share it (engine.shared), so
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


def run_crispr_task(job: CrisprJob, group: ChunkGroup, guide_range: range) -> pd.DataFrame:
    """Rows of ``guide_range`` in the chunks of ``group``, sorted by (record, start, end, guide, strand)."""
    rows = job.rows(guide_range)
    frames = []
    on_device = job.backend == "cuda"
    for chunk in group.chunks:
        window = read_chunk(job.reference, chunk, need_raw=True, on_device=on_device)
        text = window.device if on_device else window.codes
        hits = find_sites(job.backend, text, rows, job.dna_bulge, job.rna_bulge, chunk.owned_lo, chunk.owned_hi,
                          small=job.small)
        if len(hits):
            frames.append(_rows_for_chunk(job, rows, chunk, window.raw, hits.sorted()))
    if not frames:
        return empty_rows()
    return sort_rows(pd.concat(frames, ignore_index=True))


SORT_KEYS = ("record", "start", "end", "guide", "strand")
"""The row order of every output: reference order, then guide order (the guides' input order), + before -."""


def sort_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` in SORT_KEYS order: one NumPy lexsort of the integer columns (pandas' sort_values factorizes each)."""
    order = np.lexsort([frame[key].to_numpy() for key in reversed(SORT_KEYS)])
    if (order[1:] > order[:-1]).all():
        return frame.reset_index(drop=True)
    return frame.take(order).reset_index(drop=True)


def empty_rows() -> pd.DataFrame:
    return pd.DataFrame({name: np.empty(0, dtype=dtype) for name, dtype in ROW_DTYPES.items()})


def _rows_for_chunk(job: CrisprJob, rows: GuideRows, chunk, raw: np.ndarray, hits) -> pd.DataFrame:
    """Rows of one chunk's hits; ``raw`` holds the window's bytes as in the file (uint8)."""
    count = len(hits)
    guide_aligned = np.empty(count, dtype=object)
    site = np.empty(count, dtype=object)
    cfd = np.full(count, np.nan)
    mit = np.full(count, np.nan)
    lengths = rows.lengths[hits.row]
    # Hits of one (bulge type, size, guide length) have sites of one shape: whole arrays at once.
    longest = int(lengths.max(initial=0)) + 1
    shapes = (hits.bulge_type.astype(np.int64) * (MAX_BULGE + 1) + hits.bulge_size) * longest + lengths
    present, shape_of = np.unique(shapes, return_inverse=True)
    for number, shape in enumerate(present.tolist()):
        kind, size, length = shape // longest // (MAX_BULGE + 1), shape // longest % (MAX_BULGE + 1), shape % longest
        chosen = np.flatnonzero(shape_of == number)
        guide_aligned[chosen], site[chosen], cfd[chosen], mit[chosen] = _sites(job, rows, raw, hits, chosen, kind,
                                                                              size, length)
    start = hits.start + chunk.read_start
    return pd.DataFrame({
        "record": np.full(count, chunk.record_index, dtype=np.int32),
        "start": start.astype(np.int64),
        "end": (start + hits.length).astype(np.int64),
        "guide": rows.guide_index[hits.row],
        "strand": rows.strand[hits.row],
        "mismatches": hits.mismatches.astype(np.int16),
        "bulge_type": np.asarray(BULGE_NAMES, dtype=object)[hits.bulge_type],
        "bulge_size": hits.bulge_size.astype(np.int16),
        "guide_aligned": guide_aligned,
        "site": site,
        "cfd": cfd,
        "mit": mit,
    })


_COMPLEMENT = bytes.maketrans(b"ACGTRYKMBVDHSWNacgtrykmbvdhswn", b"TGCAYRMKVBHDSWNtgcayrmkvbhdswn")
_UPPER_COMPLEMENT = np.frombuffer(bytes(range(256)).upper().translate(_COMPLEMENT), dtype=np.uint8)
_UPPER = np.frombuffer(bytes(range(256)).upper(), dtype=np.uint8)
_LOWER = np.frombuffer(bytes(range(256)).lower(), dtype=np.uint8)
_GAP = ord("-")


def _sites(job: CrisprJob, rows: GuideRows, raw: np.ndarray, hits, chosen: np.ndarray, kind: int, size: int,
           length: int):
    """(guide_aligned, site, cfd, mit) of the ``chosen`` hits, all of one bulge type and size and guide length.

    ``site``: the genome bases in the guide's orientation, upper case, a base
    that mismatches its guide letter (outside the letter's IUPAC set, or not
    A/C/G/T) in lower case, ``-`` over the guide bases of an RNA bulge;
    ``guide_aligned``: the guide with ``-`` over the genome bases of a DNA
    bulge. Both carry the PAM on its side. Built as byte matrices, one row a
    site: the bulge of row k starts at column at[k] (j counted from the
    guide's 5' end) and takes ``size`` columns of the side without partners.
    """
    pam_length = len(job.pam)
    span = length + size if kind == BULGE_DNA else length - size  # protospacer: the genome bases paired or bulged
    windows = raw[hits.start[chosen, None] + np.arange(pam_length + span)]
    minus = rows.strand[hits.row[chosen]] == 1
    windows = np.where(minus[:, None], _UPPER_COMPLEMENT[windows][:, ::-1], _UPPER[windows])
    protospacer, site_pam = ((windows[:, :span], windows[:, span:]) if job.pam_side == 3
                             else (windows[:, pam_length:], windows[:, :pam_length]))
    guide_of = rows.guide_index[hits.row[chosen]]
    letters, masks = job.guide_letters[guide_of, :length], job.guide_masks[0][guide_of, :length]

    at = hits.bulge_at[chosen].astype(np.int64)[:, None]
    if kind == BULGE_RNA:  # kernels count j in forward orientation; on - the guide reads backwards
        at = np.where(minus[:, None], length - at - size, at)
    elif kind == BULGE_DNA:
        at = np.where(minus[:, None], length - at, at)
    column = np.arange(length + size if kind == BULGE_DNA else length)[None, :]
    gap = (column >= at) & (column < at + size)  # never for size 0
    source = np.where(column < at, column, column - size)  # the column's base in the side without the gap
    picked = np.arange(len(chosen))[:, None]
    if kind == BULGE_DNA:
        letters = np.where(gap, _GAP, letters[picked, np.clip(source, 0, length - 1)])
        masks = np.where(gap, 0, masks[picked, np.clip(source, 0, length - 1)])
    elif kind == BULGE_RNA:
        protospacer = np.where(gap, _GAP, protospacer[picked, np.clip(source, 0, span - 1)])
    codes = encode_text(protospacer)
    matched = (codes <= 3) & ((masks >> np.minimum(codes, 3)) & 1 == 1)
    marked = np.where(gap | matched, protospacer, _LOWER[protospacer])
    pam_bytes = np.frombuffer(job.pam.encode(), np.uint8)
    if job.pam_side == 3:
        site = _strings(np.hstack([marked, site_pam]))
    else:
        site = _strings(np.hstack([site_pam, marked]))
    if kind == BULGE_DNA:
        pam_columns = np.broadcast_to(pam_bytes, (len(chosen), pam_length))
        guide_aligned = _strings(np.hstack([letters, pam_columns] if job.pam_side == 3 else [pam_columns, letters]))
    else:  # the guide as given, one string per guide
        present, which = np.unique(guide_of, return_inverse=True)
        aligned = np.array([job.guides.sequences[g] + job.pam if job.pam_side == 3 else job.pam + job.guides.sequences[g]
                            for g in present], dtype=object)
        guide_aligned = aligned[which]
    cfd = np.full(len(chosen), np.nan)
    mit = np.full(len(chosen), np.nan)
    if kind == BULGE_NONE and scores_defined(length, job.pam, job.pam_side):
        cfd, mit = cfd_scores(letters, protospacer, site_pam), mit_scores(letters, protospacer)
    return guide_aligned, site, cfd, mit


def _strings(matrix: np.ndarray) -> np.ndarray:
    """Each row of a uint8 matrix as a str (object array); a byte outside ASCII reads as U+FFFD."""
    matrix = np.ascontiguousarray(matrix, dtype=np.uint8)
    if len(matrix) == 0:
        return np.empty(0, dtype=object)
    if (matrix > 0).all() and (matrix < 0x80).all():  # NumPy's bytes strings drop trailing NULs
        return matrix.view(f"S{matrix.shape[1]}").ravel().astype(str).astype(object)
    return np.array([row.tobytes().decode("ascii", errors="replace") for row in matrix], dtype=object)
