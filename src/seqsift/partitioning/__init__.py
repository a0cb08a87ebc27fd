"""Cutting a reference into chunks that own disjoint cores (DESIGN.md, partitioning).

A :class:`Chunk` owns the core ``[core_start, owned_end)`` of one record and
reads ``[read_start, owned_end)`` with ``read_start = max(0, core_start - halo)``.
A hit belongs to the chunk whose core holds its *last* character, so every
hit is found by exactly one chunk: none lost, none doubled.

The halo is the longest text a hit can span minus one: ``m_max - 1`` for
Hamming and ``m_max + k - 1`` for edit distance (an alignment of P with at
most k differences spans at most m + k text characters).

A :class:`ChunkGroup` is one task's worth of text: either one chunk of a long
record, or several whole small records packed together. Chunks never cross
records. All coordinates are Python ints (arbitrary precision) or int64.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


CHUNK_LIMITS = {"cpu": (100_000, 4_000_000), "cuda": (1_000_000, 64_000_000)}
"""Default chunk cores lie in these bounds, aiming at 4 tasks per worker."""


def default_chunk_size(backend: str, total_bases: int, workers: int) -> int:
    """A chunk core giving each of ``workers`` about 4 tasks, within ``CHUNK_LIMITS[backend]``."""
    low, high = CHUNK_LIMITS[backend]
    return min(high, max(low, int(total_bases) // (4 * max(1, workers)) + 1))


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


def plan_chunks(record_lengths: Sequence[int], chunk_size: int, halo: int,
                min_length: int = 1) -> list[ChunkGroup]:
    """Chunk groups covering every record that is at least ``min_length`` long.

    Records shorter than ``min_length`` (the shortest pattern) can hold no
    hit and are skipped. Records of at most ``chunk_size`` characters are
    packed whole into groups of about ``chunk_size`` characters; longer
    records are cut into cores of ``chunk_size`` characters, one per group.
    Groups come out in reference order.
    """
    groups: list[ChunkGroup] = []
    packed: list[Chunk] = []
    packed_bases = 0

    def flush_packed() -> None:
        nonlocal packed, packed_bases
        if packed:
            groups.append(ChunkGroup(len(groups), tuple(packed)))
            packed, packed_bases = [], 0

    for record_index, length in enumerate(record_lengths):
        length = int(length)
        if length < min_length:
            continue
        if length <= chunk_size:
            if packed_bases + length > chunk_size:
                flush_packed()
            packed.append(Chunk(record_index, 0, 0, length))
            packed_bases += length
            continue
        flush_packed()
        for chunk in chunk_record(record_index, length, chunk_size, halo):
            groups.append(ChunkGroup(len(groups), (chunk,)))
    flush_packed()
    return groups


def adjacent(left: Chunk, right: Chunk) -> bool:
    """True when ``right``'s core starts where ``left``'s ends, in one record."""
    return left.record_index == right.record_index and left.owned_end == right.core_start
