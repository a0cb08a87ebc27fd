"""What one search job is: everything a worker needs to run any of its tasks.

A :class:`SearchJob` is sent to the workers once (``shared.on_workers``) and a
task is then just ``(group, pattern_range)``: which chunks of the reference,
against which slice of the pattern set.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..partitioning import halo_for
from ..pattern_input import shortest_hit_lengths
from ..patterns import STRAND_CHOICES, PatternSet

MODES = ("best", "ends")


@dataclass(frozen=True)
class SearchJob:
    reference: object          # seqsift.reference.Reference (paths, names, lengths)
    patterns: PatternSet
    metric: str                # "hamming" | "edit"
    k: int
    mode: str                  # "best" | "ends"
    strand: str                # "both" | "+" | "-"
    algorithm: str             # a name of seqsift.kernels.ALGORITHMS (never "auto" here)
    backend: str               # "cpu" | "cuda"
    align: bool                # add the aligned text and CIGAR columns (best mode)

    @property
    def strands(self) -> tuple[int, ...]:
        return STRAND_CHOICES[self.strand]

    @property
    def alphabet(self) -> str:
        """"dna" (text codes, IUPAC patterns) or "bytes" (raw bytes, literal patterns)."""
        return self.patterns.alphabet

    @cached_property
    def m_max(self) -> int:
        return int(self.patterns.lengths.max())

    @cached_property
    def m_min(self) -> int:
        return int(self.patterns.lengths.min())

    @cached_property
    def shortest_hit(self) -> int:
        """Records shorter than this hold no hit: m_min, or m_min - k under edit distance."""
        return int(shortest_hit_lengths(self.patterns.lengths, self.k, self.metric).min())

    @property
    def halo(self) -> int:
        return halo_for(self.metric, self.m_max, self.k)

    @property
    def reports_start(self) -> bool:
        """Rows carry a start (mode best); ``ends`` rows carry only the end."""
        return self.mode == "best"

    @property
    def needs_raw_text(self) -> bool:
        """Tasks need the reference bytes as in the file: the ``aligned`` column, or byte texts."""
        return (self.reports_start and self.align) or self.alphabet == "bytes"

    @property
    def joins_runs(self) -> bool:
        """Edit-distance ``best`` loci are runs of ends that may cross chunk cores."""
        return self.mode == "best" and self.metric == "edit"

    def columns(self) -> list[str]:
        """Output columns in order (DESIGN.md, output rows)."""
        if not self.reports_start:
            return ["record", "end", "pattern", "distance", "strand"]
        extra = ["aligned", "cigar"] if self.align else []
        return ["record", "start", "end", "pattern", "distance", "strand", *extra]
