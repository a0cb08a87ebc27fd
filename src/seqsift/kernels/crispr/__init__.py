"""CRISPR off-target kernels: PAM candidates first, then every guide at each candidate.

The family's only public face (the ``seqsift.crispr`` job calls nothing else):

* :func:`orient_guides`: guides and PAM -> :class:`GuideRows`, one row per
  (guide, strand) in forward-text orientation, plus the PAM per strand;
* :func:`find_sites`: one chunk's text codes -> :class:`SiteHits`, on the
  ``cpu`` (Numba, ``cpu.py``) or ``cuda`` (CuPy RawModule over ``crispr.cu``,
  ``cuda.py``) backend.

What a site is (issue 16; Cas-OFFinder 2.4's meaning, bulges as Cas-OFFinder 3):
on ``+`` the text T[s:e] reads guide + PAM (``pam_side=3``, Cas9) or
PAM + guide (``pam_side=5``, Cas12a); on ``-`` its reverse complement does.
The PAM matches exactly (a text base within its IUPAC set; non-ACGT text never
matches); the guide part has at most ``limit`` mismatches (non-ACGT text is a
mismatch). With bulges, the protospacer (the genome bases paired with the
guide) is L + b long (DNA bulge: b extra genome bases between guide positions
i and i + 1, 1 <= i < L) or L - b long (RNA bulge: guide bases i .. i + b - 1
unpaired, never the first or the last); the PAM stays adjacent to it.

In forward orientation every row is a guide (reverse complemented on ``-``)
with its PAM to the left or to the right (``pam_right``):

    + strand, 3' PAM: [guide][PAM]     - strand, 3' PAM: [PAM'][guide']
    + strand, 5' PAM: [PAM][guide]     - strand, 5' PAM: [guide'][PAM']

so a PAM match at text position p fixes where the protospacer ends (PAM to
the right: at p) or starts (PAM to the left: at p + P), for every guide of
that strand at once. That is the point of the PAM-first design: candidates
are found once per chunk (NGG: 1/16 of positions per strand) and only they are
checked, guide by guide.

Hits report the site's start and length in the chunk's text, the bulge (type
0 none, 1 DNA, 2 RNA; size; ``bulge_at`` = j, the number of row bases before
the bulge in forward orientation) and the mismatches. Of several bulge
positions for one site, the one with the fewest mismatches is kept, and on a
tie the leftmost in the guide's own 5'->3' orientation (smallest j on ``+``,
largest on ``-``). Different bulge sizes give different site lengths, hence
different rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...alphabet import reverse_complement_masks
from ...memo import Memo
from ...pattern_set import orient_rows

BACKENDS = ("cpu", "cuda")
BULGE_NONE, BULGE_DNA, BULGE_RNA = 0, 1, 2
BULGE_NAMES = ("none", "DNA", "RNA")
MAX_BULGE = 2
"""Largest DNA or RNA bulge size supported (Cas-OFFinder 3 users ask for 1-2)."""
CUDA_MAX_GUIDE = 32
"""Longest guide the CUDA kernel packs (4 bits a base in 128 bits); longer ones run on the CPU kernel."""


@dataclass(frozen=True)
class GuideRows:
    """Guides oriented for the forward text: one row per (guide, strand).

    masks       (rows, L_max) uint8 IUPAC masks (seqsift.alphabet), row r valid in [0, lengths[r])
    lengths     (rows,) int32
    strand      (rows,) int8: 0 (+) or 1 (-)
    limit       (rows,) int16: mismatches allowed for the row's guide
    guide_index (rows,) int32: the guide's index in the job
    pam_masks   (2, P) uint8: the PAM in forward orientation for + (row 0) and - (row 1)
    pam_right   (2,) bool: the PAM lies right of the protospacer in forward orientation
    on_device   what a GPU launcher made of these rows, kept with them (kernels/crispr/cuda.py):
                one object serves every chunk and task of its guide range, and no other rows'
    """

    masks: np.ndarray
    lengths: np.ndarray
    strand: np.ndarray
    limit: np.ndarray
    guide_index: np.ndarray
    pam_masks: np.ndarray
    pam_right: np.ndarray
    on_device: Memo = field(default_factory=Memo, compare=False, repr=False)

    @property
    def rows(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def pam_length(self) -> int:
        return int(self.pam_masks.shape[1])


@dataclass(frozen=True)
class SiteHits:
    """Kernel output, parallel arrays, one entry per site (any order)."""

    row: np.ndarray          # int32, row of GuideRows
    start: np.ndarray        # int64, site start (PAM included) relative to text[0]
    length: np.ndarray       # int32, site length (PAM + protospacer)
    bulge_type: np.ndarray   # int8, BULGE_NONE / BULGE_DNA / BULGE_RNA
    bulge_size: np.ndarray   # int8
    bulge_at: np.ndarray     # int16, row bases before the bulge (forward orientation)
    mismatches: np.ndarray   # int16

    @classmethod
    def empty(cls) -> "SiteHits":
        return cls(np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, np.int8),
                   np.empty(0, np.int8), np.empty(0, np.int16), np.empty(0, np.int16))

    def __len__(self) -> int:
        return int(self.row.shape[0])

    def sorted(self) -> "SiteHits":
        """Ordered by (start, length, row), ties kept in their order.

        One argsort of a packed key (:func:`packed_key`) instead of a three-key
        lexsort (about 7x faster on a GPU task's millions of hits); hits already
        in order are returned as they are.
        """
        key = packed_key([self.start, self.length, self.row])
        if key is None:
            order = np.lexsort((self.row, self.length, self.start))
        elif (key[1:] >= key[:-1]).all():
            return self
        else:
            order = np.argsort(key)  # NumPy's quicksort: distinct keys (the usual case) need no stable sort
            ordered = key[order]
            if (ordered[1:] == ordered[:-1]).any():
                order = np.argsort(key, kind="stable")
        return SiteHits(*(getattr(self, f)[order] for f in self.__dataclass_fields__))


def packed_key(columns: list[np.ndarray]) -> np.ndarray | None:
    """One int64 per row that orders the rows as ``columns`` do lexicographically (the first most significant).

    Each column, less its smallest value, is a digit in the base of its value
    range: one key compares (and sorts) at the speed of one integer column.
    None where the ranges multiplied pass 2**63.
    """
    count = len(columns[0])
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    ranges = [(int(c.min()), int(c.max())) for c in columns]
    if np.prod([float(high - low + 1) for low, high in ranges]) >= 2.0 ** 62:  # a margin for float rounding
        return None
    key = np.zeros(count, dtype=np.int64)
    for column, (low, high) in zip(columns, ranges):
        key *= high - low + 1
        if low >= 0:  # in this order the sums stay within int64 (the final key is below 2**62)
            key -= low
            key += column
        else:
            key += column
            key -= low
    return key


def mask_table(guide_masks) -> tuple[np.ndarray, np.ndarray]:
    """IUPAC masks of each guide (a list of 1-D arrays) -> ((guides, L_max) zero-padded table, lengths)."""
    lengths = np.fromiter((len(m) for m in guide_masks), dtype=np.int32, count=len(guide_masks))
    table = np.zeros((len(lengths), int(lengths.max(initial=1))), dtype=np.uint8)
    if len(lengths):
        table[np.arange(len(lengths)).repeat(lengths), _positions(lengths)] = np.concatenate(guide_masks)
    return table, lengths


def _positions(lengths: np.ndarray) -> np.ndarray:
    """0, 1, .., lengths[0] - 1, 0, 1, .., lengths[1] - 1, ...: each base's position in its guide."""
    ends = np.cumsum(lengths)
    return np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - lengths, lengths)


def orient_guides(guide_masks, limits, pam_masks: np.ndarray, pam_side: int,
                  strands: tuple[int, ...] = (0, 1), guide_indices=None, lengths=None) -> GuideRows:
    """Rows for each guide x strand (guide-major), with the PAM of each strand.

    ``guide_masks``: IUPAC masks of each guide (5'->3'), a list of arrays or,
    with ``lengths``, a zero-padded (guides, L_max) table (:func:`mask_table`);
    ``limits``: mismatches allowed per guide; ``pam_masks``: the PAM's masks
    (5'->3'); ``pam_side``: 3 or 5. Whole arrays at once: a job of 10,000
    guides orients them in milliseconds.
    """
    if pam_side not in (3, 5):
        raise ValueError(f"pam_side must be 3 or 5, not {pam_side!r}")
    forward, lengths = mask_table(guide_masks) if lengths is None else (np.asarray(guide_masks, dtype=np.uint8),
                                                                        np.asarray(lengths, dtype=np.int32))
    guides = len(lengths)
    indices = np.arange(guides) if guide_indices is None else np.asarray(guide_indices)
    width = max(int(lengths.max(initial=0)), 1)  # the longest of these guides (a job's table may be wider)
    forward = np.pad(forward[:, :width], ((0, 0), (0, max(width - forward.shape[1], 0))))
    table, row_lengths, guide_index, strand = orient_rows(forward, lengths, strands, indices)
    limit = np.repeat(np.asarray(list(limits)[:guides], dtype=np.int16), len(strands))
    pam = np.asarray(pam_masks, dtype=np.uint8)
    # + strand: the PAM is right of the guide for a 3' PAM; - strand: mirrored.
    pam_right = np.array([pam_side == 3, pam_side != 3])
    return GuideRows(masks=table.astype(np.uint8), lengths=row_lengths, strand=strand, limit=limit,
                     guide_index=guide_index, pam_masks=np.stack([pam, reverse_complement_masks(pam)]),
                     pam_right=pam_right)


def site_halo(rows: GuideRows, dna_bulge: int) -> int:
    """Text a chunk must read before its core so that no site is cut: the longest site minus one."""
    return int(rows.lengths.max(initial=1)) + rows.pam_length + dna_bulge - 1


SMALL_JOB_PAIRS = 500_000_000
"""(PAM candidate, row) pairs below which a bulge-free plain job runs on NumPy (kernels/crispr/vectorized.py):
Numba's first call in a process (~0.7 s) costs more than NumPy's slower checks (~1 ns a pair more)."""


def small_job(bases: int, rows: GuideRows, dna_bulge: int, rna_bulge: int) -> bool:
    """Whether a CPU job over ``bases`` of text is better run without Numba (SMALL_JOB_PAIRS).

    Only bulge-free jobs whose rows are all plain A/C/G/T of at most 32 bases
    qualify; the candidates are estimated from the PAM (a position matches
    each PAM letter with probability |letter's set| / 4).
    """
    from .vectorized import packable

    if dna_bulge or rna_bulge or not packable(rows, np.arange(rows.rows)).all():
        return False
    per_strand = {s: rows.rows and int((rows.strand == s).sum()) for s in (0, 1)}
    pairs = sum(bases * np.prod([bin(int(m)).count("1") / 4 for m in rows.pam_masks[s]]) * per_strand[s]
                for s in (0, 1))
    return pairs < SMALL_JOB_PAIRS


def find_sites(backend: str, text, rows: GuideRows, dna_bulge: int, rna_bulge: int,
               owned_lo: int, owned_hi: int, small: bool = False) -> SiteHits:
    """Every site of every row in ``text`` whose last base lies in [owned_lo, owned_hi).

    Runs the registry's ``crispr-pam-first`` (kernels/__init__.py) on ``backend``: ``cuda``
    runs guides of up to CUDA_MAX_GUIDE bases on the GPU (mismatches and bulges); longer
    guides go to the CPU kernel. ``small`` (``cpu`` only; a job :func:`small_job`
    approves): ``crispr-vectorized``, the NumPy kernel, Numba never called.
    """
    from .. import resolve_kernel

    if max(dna_bulge, rna_bulge) > MAX_BULGE or min(dna_bulge, rna_bulge) < 0:
        raise ValueError(f"bulge sizes must lie in 0..{MAX_BULGE}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r} (choose {' or '.join(BACKENDS)})")
    algorithm = "crispr-vectorized" if backend == "cpu" and small else "crispr-pam-first"
    return resolve_kernel(algorithm, backend)(text, rows, dna_bulge, rna_bulge, owned_lo, owned_hi)


def pam_first_cpu(text, rows: GuideRows, dna_bulge: int, rna_bulge: int, owned_lo: int, owned_hi: int) -> SiteHits:
    """``crispr-pam-first`` on CPU cores (Numba, cpu.py)."""
    from .cpu import find_sites_cpu

    return find_sites_cpu(text, rows, dna_bulge, rna_bulge, owned_lo, owned_hi)


def vectorized_cpu(text, rows: GuideRows, dna_bulge: int, rna_bulge: int, owned_lo: int, owned_hi: int) -> SiteHits:
    """``crispr-vectorized``: bulge-free rows checked in NumPy (vectorized.py); no Numba."""
    from .vectorized import find_sites_vectorized

    if dna_bulge or rna_bulge:
        raise ValueError("crispr-vectorized finds sites without bulges only")
    return find_sites_vectorized(text, rows, owned_lo, owned_hi)


__all__ = ["BULGE_DNA", "BULGE_NAMES", "BULGE_NONE", "BULGE_RNA", "CUDA_MAX_GUIDE", "GuideRows", "MAX_BULGE",
           "SiteHits", "find_sites", "mask_table", "orient_guides", "packed_key", "pam_first_cpu", "pam_first_cuda",
           "site_halo", "small_job", "vectorized_cpu"]

# The CUDA launcher (cuda.py imports CuPy only inside its functions).
from .cuda import find_sites_cuda as pam_first_cuda  # noqa: E402
