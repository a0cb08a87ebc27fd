"""The worker side of a CRISPR job: one task = one chunk group x one guide range.

``run_crispr_task`` reads each chunk's window (``engine.task.read_chunk``, the
worker's chunk cache), runs the kernel family's :func:`find_sites`, and turns
the hits into rows: coordinates made absolute, the site and the aligned guide
written out in the guide's orientation, CFD and MIT scores. Rows carry
indices (record, guide, strand); names are attached by the writer.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from ..alphabet import IUPAC_MASKS, encode_text, pattern_masks
from ..engine.task import read_chunk
from ..kernels.crispr import BULGE_DNA, BULGE_NAMES, BULGE_NONE, BULGE_RNA, find_sites, orient_guides, site_halo
from ..partitioning import ChunkGroup
from ..patterns import PatternSet
from .scores import cfd_scores, mit_scores, scores_defined

ROW_DTYPES = {"record": np.int32, "start": np.int64, "end": np.int64, "guide": np.int32, "strand": np.int8,
              "mismatches": np.int16, "bulge_type": object, "bulge_size": np.int16, "guide_aligned": object,
              "site": object, "cfd": np.float64, "mit": np.float64}
_COMPLEMENT = bytes.maketrans(b"ACGTRYKMBVDHSWNacgtrykmbvdhswn", b"TGCAYRMKVBHDSWNtgcayrmkvbhdswn")


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

    @cached_property
    def pam_masks(self) -> np.ndarray:
        return pattern_masks(self.pam)

    def rows(self, guide_range: range):
        return orient_guides([pattern_masks(self.guides.sequences[i]) for i in guide_range],
                             [self.limits[i] for i in guide_range], self.pam_masks, self.pam_side,
                             self.strands, guide_indices=list(guide_range))

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
        hits = find_sites(job.backend, text, rows, job.dna_bulge, job.rna_bulge, chunk.owned_lo, chunk.owned_hi)
        if len(hits):
            frames.append(_rows_for_chunk(job, rows, chunk, window.raw, hits.sorted()))
    if not frames:
        return empty_rows()
    return sort_rows(pd.concat(frames, ignore_index=True))


def sort_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["record", "start", "end", "guide", "strand"], kind="stable", ignore_index=True)


def empty_rows() -> pd.DataFrame:
    return pd.DataFrame({name: np.empty(0, dtype=dtype) for name, dtype in ROW_DTYPES.items()})


def _rows_for_chunk(job: CrisprJob, rows, chunk, raw: np.ndarray, hits) -> pd.DataFrame:
    """Rows of one chunk's hits; ``raw`` holds the window's bytes as in the file (uint8)."""
    count = len(hits)
    guide_aligned = np.empty(count, dtype=object)
    site = np.empty(count, dtype=object)
    cfd = np.full(count, np.nan)
    mit = np.full(count, np.nan)
    pam_length = len(job.pam)
    plain = np.flatnonzero(hits.bulge_type == BULGE_NONE)
    lengths = rows.lengths[hits.row[plain]]
    for length in np.unique(lengths):  # sites without a bulge: whole arrays at once
        chosen = plain[lengths == length]
        guide_aligned[chosen], site[chosen], cfd[chosen], mit[chosen] = _plain_sites(job, rows, raw, hits, chosen,
                                                                                    int(length))
    for h in np.flatnonzero(hits.bulge_type != BULGE_NONE):
        r = int(hits.row[h])
        guide = job.guides.sequences[int(rows.guide_index[r])]
        start = int(hits.start[h])
        window = raw[start:start + int(hits.length[h])].tobytes().upper()
        if rows.strand[r] == 1:
            window = window.translate(_COMPLEMENT)[::-1]
        window = window.decode("ascii", errors="replace")
        if job.pam_side == 3:
            protospacer, site_pam = window[:len(window) - pam_length], window[len(window) - pam_length:]
        else:
            site_pam, protospacer = window[:pam_length], window[pam_length:]
        kind, size = int(hits.bulge_type[h]), int(hits.bulge_size[h])
        at = int(hits.bulge_at[h])
        if rows.strand[r] == 1:  # j counted from the guide's own 5' end
            at = len(guide) - at - (size if kind == BULGE_RNA else 0)
        aligned_guide, aligned_site = _alignment(guide, protospacer, kind, size, at)
        if job.pam_side == 3:
            guide_aligned[h], site[h] = aligned_guide + job.pam, aligned_site + site_pam
        else:
            guide_aligned[h], site[h] = job.pam + aligned_guide, site_pam + aligned_site
        # CFD and MIT stay empty: neither is defined for a site with a bulge (scores.py).
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


_UPPER_COMPLEMENT = np.frombuffer(bytes(range(256)).upper().translate(_COMPLEMENT), dtype=np.uint8)
_UPPER = np.frombuffer(bytes(range(256)).upper(), dtype=np.uint8)


def _plain_sites(job: CrisprJob, rows, raw: np.ndarray, hits, chosen: np.ndarray, length: int):
    """(guide_aligned, site, cfd, mit) of bulge-free sites of guides of one ``length``, as arrays.

    The same strings as :func:`_alignment` writes one by one: the site in the
    guide's orientation, mismatched bases (outside the guide letter's IUPAC
    set, or not A/C/G/T) in lower case; the guide and the PAM as given.
    """
    span = length + len(job.pam)
    windows = raw[hits.start[chosen, None] + np.arange(span)]
    minus = rows.strand[hits.row[chosen]] == 1
    windows = np.where(minus[:, None], _UPPER_COMPLEMENT[windows][:, ::-1], _UPPER[windows])
    guide_of = rows.guide_index[hits.row[chosen]]
    present, which = np.unique(guide_of, return_inverse=True)
    guides = np.array([np.frombuffer(job.guides.sequences[g].encode(), np.uint8) for g in present])
    guide_rows = guides[which]
    proto = slice(0, length) if job.pam_side == 3 else slice(len(job.pam), span)
    codes = encode_text(windows[:, proto].tobytes()).reshape(len(chosen), length)
    masks = pattern_masks(guide_rows.tobytes().decode()).reshape(len(chosen), length)
    mismatched = (codes > 3) | ((masks >> np.minimum(codes, 3)) & 1 == 0)
    marked = windows.copy()
    marked[:, proto] = np.where(mismatched, windows[:, proto] | 0x20, windows[:, proto])  # ASCII lower case
    site = marked.view(f"S{span}").ravel().astype(str).astype(object)
    aligned = np.array([job.guides.sequences[g] + job.pam if job.pam_side == 3 else job.pam + job.guides.sequences[g]
                        for g in present], dtype=object)
    guide_aligned = aligned[which]
    cfd = np.full(len(chosen), np.nan)
    mit = np.full(len(chosen), np.nan)
    if scores_defined(length, job.pam, job.pam_side):
        pam = windows[:, length:]
        cfd, mit = cfd_scores(guide_rows, windows[:, :length], pam), mit_scores(guide_rows, windows[:, :length])
    return guide_aligned, site, cfd, mit


def _matches(guide_letter: str, base: str) -> bool:
    mask = IUPAC_MASKS.get(guide_letter, 0)
    return base in "ACGT" and bool(mask >> "ACGT".index(base) & 1)


def _alignment(guide: str, protospacer: str, kind: int, size: int, at: int) -> tuple[str, str]:
    """(guide with '-' over DNA-bulge bases, protospacer with mismatches lower case and '-' over RNA-bulge bases)."""
    if kind == BULGE_DNA:
        guide = guide[:at] + "-" * size + guide[at:]
    elif kind == BULGE_RNA:
        protospacer = protospacer[:at] + "-" * size + protospacer[at:]
    marked = [b if g == "-" or b == "-" or _matches(g, b) else b.lower() for g, b in zip(guide, protospacer)]
    return guide, "".join(marked)
