"""Cutting a reference into chunks that own disjoint cores (DESIGN.md, partitioning).

A :class:`Chunk` owns the core ``[core_start, owned_end)`` of one record and
reads ``[read_start, owned_end)`` with ``read_start = max(0, core_start - halo)``.
A hit belongs to the chunk whose core holds its *last* character, so every
hit is found by exactly one chunk: none lost, none doubled.

The halo is the longest text a hit can span minus one: ``m_max - 1`` for
Hamming and ``m_max + k - 1`` for edit distance (an alignment of P with at
most k differences spans at most m + k text characters).

A task's text is one of two kinds:

* a :class:`ChunkGroup` holds one chunk of a record longer than the chunk
  size (core plus halo);
* a :class:`PackedRecords` holds consecutive whole records that fit the chunk
  size together, searched as one text: each record followed by ``gap``
  separator characters that match nothing (text code NEVER), so that a
  reference of a million small records costs one read, one upload and one
  kernel launch per chunk size of bases, not per record (DESIGN.md). Hits are
  mapped back to their records by one vectorized lookup
  (:meth:`PackedRecords.records_of`), and a hit whose window is not inside one
  record (it touches a separator) is not a hit. The separator must be at least
  k + 1 long for edit distance (an alignment through it costs one difference
  per separator character, more than k, so no distance is lowered by the
  record before) and 1 otherwise (:func:`record_gap`).

Chunks never cross records. All coordinates are Python ints (arbitrary
precision) or int64.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence

import numpy as np


CHUNK_LIMITS = {"cpu": (100_000, 4_000_000), "cuda": (1_000_000, 64_000_000)}
"""Default chunk cores lie in these bounds, aiming at 4 tasks per worker."""


def default_chunk_size(backend: str, total_bases: int, workers: int) -> int:
    """A chunk core giving each of ``workers`` about 4 tasks, within ``CHUNK_LIMITS[backend]``."""
    low, high = CHUNK_LIMITS[backend]
    return min(high, max(low, int(total_bases) // (4 * max(1, workers)) + 1))


def record_gap(metric: str, k: int) -> int:
    """Separator characters between packed records (module docstring): k + 1 for edit distance, else 1."""
    return k + 1 if metric == "edit" else 1


def halo_for(metric: str, m_max: int, k: int) -> int:
    """Characters a chunk must read before its core so that no hit is cut."""
    return m_max - 1 if metric == "hamming" else m_max + k - 1


@dataclass(frozen=True)
class Chunk:
    record_index: int
    read_start: int   # first character read (core_start - halo, clipped at 0)
    core_start: int   # first end-character this chunk owns
    owned_end: int    # one past the last end-character this chunk owns

    @property
    def owned_lo(self) -> int:
        """Core start relative to the read window (the kernels' ``owned_lo``)."""
        return self.core_start - self.read_start

    @property
    def owned_hi(self) -> int:
        """Core end relative to the read window (the kernels' ``owned_hi``)."""
        return self.owned_end - self.read_start

    @property
    def read_length(self) -> int:
        return self.owned_end - self.read_start


@dataclass(frozen=True)
class ChunkGroup:
    """Chunks processed by one task, in reference order."""

    index: int
    chunks: tuple[Chunk, ...]

    @property
    def bases(self) -> int:
        return sum(c.read_length for c in self.chunks)


def chunk_record(record_index: int, length: int, chunk_size: int, halo: int) -> list[Chunk]:
    """Cores of ``chunk_size`` characters tiling ``[0, length)`` of one record."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    return [
        Chunk(record_index, max(0, core_start - halo), core_start, min(core_start + chunk_size, length))
        for core_start in range(0, length, chunk_size)
    ]


@dataclass(frozen=True, eq=False)
class PackedRecords:
    """Whole records ``first .. first + len(lengths) - 1`` searched as one text (module docstring).

    In the text, record ``first + i`` occupies ``[text_starts[i], text_starts[i] + lengths[i])`` and
    ``gap`` separator characters follow each record. In the records' bytes read back to back (the
    genome cache's layout, what ``raw`` windows hold) it occupies ``[raw_starts[i], raw_starts[i] +
    lengths[i])``.
    """

    index: int
    first: int
    lengths: np.ndarray = field(repr=False)  # int64, one per record
    gap: int

    @property
    def stop(self) -> int:
        return self.first + len(self.lengths)

    @property
    def bases(self) -> int:
        return int(self.lengths.sum())

    @cached_property
    def raw_starts(self) -> np.ndarray:
        starts = np.zeros(len(self.lengths), dtype=np.int64)
        np.cumsum(self.lengths[:-1], out=starts[1:])
        return starts

    @cached_property
    def text_starts(self) -> np.ndarray:
        return self.raw_starts + self.gap * np.arange(len(self.lengths), dtype=np.int64)

    @property
    def text_length(self) -> int:
        """The text's length: every record and the separators between them (none after the last)."""
        return int(self.text_starts[-1] + self.lengths[-1]) if len(self.lengths) else 0

    def records_of(self, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For hits at text ``[start, end)``: (the record index in the reference, or -1 where the hit is not
        inside one record: it touches a separator or the text's end; the record's text start)."""
        start = np.asarray(start, dtype=np.int64)
        end = np.asarray(end, dtype=np.int64)
        local = np.searchsorted(self.text_starts, start, side="right") - 1
        local = np.maximum(local, 0)
        record_start = self.text_starts[local]
        inside = (start >= record_start) & (end <= record_start + self.lengths[local]) & (end > start)
        return np.where(inside, local + self.first, -1), record_start


def plan_chunks(record_lengths: Sequence[int], chunk_size: int, halo: int, min_length: int = 1, *,
                gap: int) -> list:
    """The tasks' texts, in reference order: a :class:`ChunkGroup` per chunk of each record longer than
    ``chunk_size``, and :class:`PackedRecords` of the consecutive shorter records in between, about
    ``chunk_size`` characters each (separators included).

    Records shorter than ``min_length`` (the shortest hit) can hold no hit: a packed text made of
    such records only is left out, and a chunked record never is one. ``gap``: the separators after
    each packed record, :func:`record_gap` of the job's metric and k (no default: too short a gap
    lets an edit-distance hit borrow bases from the record before). The packing is vectorized:
    the plan of a million records takes milliseconds.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    lengths = np.asarray(record_lengths, dtype=np.int64)
    groups: list = []
    long_records = np.flatnonzero(lengths > chunk_size).tolist()
    run_start = 0
    for boundary in long_records + [len(lengths)]:
        if boundary > run_start:
            _pack_run(groups, lengths, run_start, boundary, chunk_size, min_length, gap)
        if boundary < len(lengths):
            for chunk in chunk_record(boundary, int(lengths[boundary]), chunk_size, halo):
                groups.append(ChunkGroup(len(groups), (chunk,)))
        run_start = boundary + 1
    return groups


def _pack_run(groups: list, lengths: np.ndarray, first: int, stop: int, chunk_size: int, min_length: int,
              gap: int) -> None:
    """Append PackedRecords covering records [first, stop) (each at most chunk_size long) to ``groups``."""
    run = lengths[first:stop]
    text = run + gap
    before = np.cumsum(text) - text          # text characters before each record in the run
    number = before // chunk_size            # which pack each record falls in
    cuts = np.flatnonzero(np.diff(number)) + 1
    for a, b in zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [len(run)])).tolist()):
        if int(run[a:b].max()) >= min_length:
            groups.append(PackedRecords(len(groups), first + a, run[a:b].copy(), gap))


def adjacent(left: Chunk, right: Chunk) -> bool:
    """True when ``right``'s core starts where ``left``'s ends, in one record."""
    return left.record_index == right.record_index and left.owned_end == right.core_start
