"""Pattern sets as the user gives them, and pattern batches as kernels see them.

A :class:`PatternSet` is the job's patterns in input order (names and
sequences). Kernels never see it: the engine cuts it into batches and orients
each batch into a :class:`PatternBatch`, one *row* per (pattern, strand), the
``-`` rows holding the reverse complement. A kernel therefore never knows about
strands: it searches every row against the forward text.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .alphabet import pattern_masks, reverse_complement_masks

STRAND_PLUS = 0
STRAND_MINUS = 1
STRAND_SYMBOLS = ("+", "-")
STRAND_CHOICES = {"both": (STRAND_PLUS, STRAND_MINUS), "+": (STRAND_PLUS,), "-": (STRAND_MINUS,)}


@dataclass(frozen=True)
class PatternSet:
    """The job's patterns, in input order (upper case, validated IUPAC)."""

    names: tuple[str, ...]
    sequences: tuple[str, ...]
    alphabet: str = "dna"  # "bytes": sequences are literal bytes (case kept, no IUPAC, no complement)

    def __len__(self) -> int:
        return len(self.sequences)

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(s) for s in self.sequences), dtype=np.int64, count=len(self))

    def batches(self, batch_size: int) -> list[range]:
        """Consecutive index ranges of at most ``batch_size`` patterns."""
        return [range(i, min(i + batch_size, len(self))) for i in range(0, len(self), batch_size)]

    def oriented(self, indices: range, strands: tuple[int, ...]) -> "PatternBatch":
        """Rows for ``indices`` x ``strands`` (pattern-major), ready for a kernel.

        Byte patterns (``alphabet="bytes"``) hold their raw bytes in ``masks``
        and have the + strand only.
        """
        if self.alphabet == "bytes" and STRAND_MINUS in strands:
            raise ValueError("byte patterns have no reverse complement: search the + strand only")
        rows_masks, pattern_index, strand = [], [], []
        for i in indices:
            forward = (np.frombuffer(self.sequences[i].encode("latin-1"), dtype=np.uint8)
                       if self.alphabet == "bytes" else pattern_masks(self.sequences[i]))
            for s in strands:
                rows_masks.append(forward if s == STRAND_PLUS else reverse_complement_masks(forward))
                pattern_index.append(i)
                strand.append(s)
        lengths = np.array([len(m) for m in rows_masks], dtype=np.int32)
        masks = np.zeros((len(rows_masks), int(lengths.max(initial=1))), dtype=np.uint8)
        for row, m in enumerate(rows_masks):
            masks[row, : len(m)] = m
        return PatternBatch(
            masks=masks,
            lengths=lengths,
            pattern_index=np.array(pattern_index, dtype=np.int32),
            strand=np.array(strand, dtype=np.int8),
            alphabet=self.alphabet,
        )


@dataclass(frozen=True)
class PatternBatch:
    """What a kernel searches: ``rows`` oriented patterns as IUPAC masks.

    masks:         (rows, m_max) uint8, row r valid in [0, lengths[r]), 0 beyond
    lengths:       (rows,) int32
    pattern_index: (rows,) int32, index of the row's pattern in the PatternSet
    strand:        (rows,) int8, STRAND_PLUS or STRAND_MINUS
    alphabet:      "dna" (masks are IUPAC masks, the text holds text codes) or
                   "bytes" (masks hold the pattern's bytes, the text raw bytes,
                   and a position matches when they are equal)
    """

    masks: np.ndarray
    lengths: np.ndarray
    pattern_index: np.ndarray
    strand: np.ndarray
    alphabet: str = "dna"

    @property
    def rows(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def m_max(self) -> int:
        return int(self.masks.shape[1])
