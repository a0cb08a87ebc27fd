"""Pattern sets as the user gives them, and pattern batches as kernels see them.

A :class:`PatternSet` is the job's patterns in input order (names and
sequences). Kernels never see it: a job cuts it into batches and orients
each batch into a :class:`PatternBatch`, one *row* per (pattern, strand), the
``-`` rows holding the reverse complement. A kernel therefore never knows about
strands: it searches every row against the forward text.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .alphabet import pattern_mask_rows, reverse_complement_mask_rows
from .memo import Memo

STRAND_PLUS = 0
STRAND_MINUS = 1
STRAND_SYMBOLS = ("+", "-")
STRAND_CHOICES = {"both": (STRAND_PLUS, STRAND_MINUS), "+": (STRAND_PLUS,), "-": (STRAND_MINUS,)}


@dataclass(frozen=True)
class PatternSet:
    """The job's patterns, in input order (upper case, validated IUPAC).

    ``oriented`` batches are built once per instance and kept: a worker
    receives the job once and runs every chunk task of a pattern range with
    the same batch (about 50 tasks per 3.1 Gbp job), so the batch's arrays,
    and what launchers derive from them (``PatternBatch.derived``), are
    computed once. The kept batches are not pickled.
    """

    names: tuple[str, ...]
    sequences: tuple[str, ...]
    alphabet: str = "dna"  # "bytes": sequences are literal bytes (case kept, no IUPAC, no complement)

    def __post_init__(self):
        object.__setattr__(self, "_batches", Memo())

    def __len__(self) -> int:
        return len(self.sequences)

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(s) for s in self.sequences), dtype=np.int64, count=len(self))

    def batches(self, batch_size: int) -> list[range]:
        """Consecutive index ranges of at most ``batch_size`` patterns."""
        return [range(i, min(i + batch_size, len(self))) for i in range(0, len(self), batch_size)]

    def oriented(self, indices: range, strands: tuple[int, ...]) -> "PatternBatch":
        """Rows for ``indices`` x ``strands`` (pattern-major), ready for a kernel; built once per (indices, strands).

        Byte patterns (``alphabet="bytes"``) hold their raw bytes in ``masks``
        and have the + strand only. The batch's arrays are read-only: every
        task of the range shares them.
        """
        if self.alphabet == "bytes" and STRAND_MINUS in strands:
            raise ValueError("byte patterns have no reverse complement: search the + strand only")
        key = (("range", indices.start, indices.stop, indices.step) if isinstance(indices, range) else tuple(indices),
               tuple(strands))
        return self._batches.get(key, lambda: self._orient(list(indices), tuple(strands)))

    def _orient(self, indices: list[int], strands: tuple[int, ...]) -> "PatternBatch":
        """The rows of ``oriented``, built with whole-array operations (no Python loop per pattern)."""
        forward, lengths = pattern_mask_rows([self.sequences[i] for i in indices], literal=self.alphabet == "bytes")
        masks, row_lengths, pattern_index, strand = orient_rows(forward, lengths, strands, indices)
        arrays = dict(masks=masks, lengths=row_lengths, pattern_index=pattern_index, strand=strand)
        for array in arrays.values():
            array.flags.writeable = False
        return PatternBatch(**arrays, alphabet=self.alphabet)


def orient_rows(forward: np.ndarray, lengths: np.ndarray, strands, indices):
    """One row per (pattern, strand), pattern-major: (masks, lengths, pattern index, strand) per row.

    ``forward``: the patterns' masks as a zero-padded (patterns, width) table
    (``alphabet.pattern_mask_rows``); a ``STRAND_MINUS`` row is its pattern's
    reverse complement; ``indices``: each pattern's index in its set. Shared by
    ``PatternSet.oriented`` and crispr's ``orient_guides``.
    """
    strands = list(strands)
    by_strand = [forward if s == STRAND_PLUS else reverse_complement_mask_rows(forward, lengths) for s in strands]
    count, ways = len(lengths), len(strands)
    masks = np.stack(by_strand, axis=1).reshape(count * ways, forward.shape[1])
    return (masks, np.repeat(np.asarray(lengths, dtype=np.int32), ways),
            np.repeat(np.asarray(indices, dtype=np.int32), ways), np.tile(np.asarray(strands, dtype=np.int8), count))


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

    def __post_init__(self):
        object.__setattr__(self, "_derived", Memo())

    def derived(self, key: tuple, build):
        """``build()``, computed once per batch and ``key`` and kept with the batch.

        For what a launcher derives from the rows and would otherwise redo
        for every chunk: bit vectors, row plans, the rows copied to a GPU
        (put the device id in ``key``). It lives as long as the batch, which
        ``PatternSet.oriented`` keeps for the job. Thread-safe: ``build``
        runs once even when two task threads ask together.
        """
        return self._derived.get(key, build)

    @property
    def rows(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def m_max(self) -> int:
        return int(self.masks.shape[1])
