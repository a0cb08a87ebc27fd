"""Chunks tile every record exactly once, read enough halo, and keep int64 offsets."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqsift.partitioning import adjacent, chunk_record, halo_for, plan_chunks


def iter_chunks(groups):
    """Every chunk of every group, in order."""
    for group in groups:
        yield from group.chunks


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 5_000), min_size=1, max_size=12),
       chunk_size=st.integers(1, 3_000), halo=st.integers(0, 200), min_length=st.integers(1, 50))
def test_cores_tile_each_long_enough_record_once(lengths, chunk_size, halo, min_length):
    groups = plan_chunks(lengths, chunk_size, halo, min_length=min_length)
    covered = {i: [] for i in range(len(lengths))}
    for chunk in iter_chunks(groups):
        covered[chunk.record_index].append((chunk.core_start, chunk.owned_end))
        assert chunk.read_start == max(0, chunk.core_start - halo) or chunk.read_start == 0
        assert 0 <= chunk.owned_lo <= chunk.owned_hi == chunk.read_length
    for record, length in enumerate(lengths):
        cores = sorted(covered[record])
        if length < min_length:
            assert cores == []
            continue
        # Consecutive cores, starting at 0 and ending at the record's end.
        assert cores[0][0] == 0 and cores[-1][1] == length
        assert all(a[1] == b[0] for a, b in zip(cores, cores[1:]))
    # Groups are numbered in order and never mix a chunked record with others.
    assert [g.index for g in groups] == list(range(len(groups)))
    for group in groups:
        if len(group.chunks) > 1:
            assert all(c.core_start == 0 and c.owned_end == lengths[c.record_index] for c in group.chunks)


def test_small_records_are_packed_into_one_task():
    groups = plan_chunks([100] * 50 + [10_000], chunk_size=1_000, halo=19)
    packed = [g for g in groups if len(g.chunks) > 1]
    assert len(packed) == 5 and all(len(g.chunks) == 10 for g in packed)
    assert sum(len(g.chunks) for g in groups) == 50 + 10


def test_halo_is_the_longest_hit_span_minus_one():
    assert halo_for("hamming", 20, 3) == 19
    assert halo_for("edit", 20, 3) == 22


def test_offsets_beyond_two_to_the_31():
    length = 3_100_000_000  # a human-size record, described only by its length
    chunks = chunk_record(0, length, chunk_size=1_000_000_000, halo=22)
    assert [c.core_start for c in chunks] == [0, 1_000_000_000, 2_000_000_000, 3_000_000_000]
    last = chunks[-1]
    assert last.read_start == 2_999_999_978 and last.owned_end == length
    assert last.owned_lo == 22 and last.owned_hi == 100_000_022
    assert all(adjacent(a, b) for a, b in zip(chunks, chunks[1:]))
    # The engine adds kernel offsets (int64 arrays) to read_start: no overflow.
    relative_end = np.array([last.owned_hi], dtype=np.int64)
    assert int((relative_end + last.read_start)[0]) == length


def test_chunk_size_must_be_positive():
    with pytest.raises(ValueError):
        chunk_record(0, 10, 0, 0)
