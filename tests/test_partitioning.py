"""Chunks tile every record exactly once, read enough halo, and keep int64 offsets."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqsift.partitioning import ChunkGroup, PackedRecords, adjacent, chunk_record, halo_for, plan_chunks


def iter_chunks(groups):
    """Every chunk of every chunked record, in order."""
    for group in groups:
        if isinstance(group, ChunkGroup):
            yield from group.chunks


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 5_000), min_size=1, max_size=12),
       chunk_size=st.integers(1, 3_000), halo=st.integers(0, 200), min_length=st.integers(1, 50),
       gap=st.integers(1, 8))
def test_every_record_that_can_hold_a_hit_is_searched_once(lengths, chunk_size, halo, min_length, gap):
    groups = plan_chunks(lengths, chunk_size, halo, min_length=min_length, gap=gap)
    covered = {i: [] for i in range(len(lengths))}
    packed = set()
    for group in groups:
        if isinstance(group, PackedRecords):
            assert group.gap == gap and all(0 <= n <= chunk_size for n in group.lengths)
            assert list(group.lengths) == lengths[group.first:group.stop]
            packed.update(range(group.first, group.stop))
    for chunk in iter_chunks(groups):
        covered[chunk.record_index].append((chunk.core_start, chunk.owned_end))
        assert chunk.read_start == max(0, chunk.core_start - halo) or chunk.read_start == 0
        assert 0 <= chunk.owned_lo <= chunk.owned_hi == chunk.read_length
    for record, length in enumerate(lengths):
        if length <= chunk_size:  # packed whole, unless its pack holds nothing that can hit
            assert covered[record] == []
            assert record in packed or length < min_length  # a pack is left out only if none of it can hit
            continue
        cores = sorted(covered[record])  # chunked: consecutive cores from 0 to the record's end
        assert record not in packed
        assert cores[0][0] == 0 and cores[-1][1] == length
        assert all(a[1] == b[0] for a, b in zip(cores, cores[1:]))
    assert [g.index for g in groups] == list(range(len(groups)))
    order = [g.first if isinstance(g, PackedRecords) else g.chunks[0].record_index for g in groups]
    assert order == sorted(order)


def test_small_records_are_packed_into_one_text_per_task():
    groups = plan_chunks([100] * 50 + [10_000], chunk_size=1_000, halo=19, gap=1)
    packed = [g for g in groups if isinstance(g, PackedRecords)]
    assert len(packed) == 5 and sum(len(g.lengths) for g in packed) == 50
    assert all(g.text_length <= 1_000 + 101 for g in packed)
    assert sum(len(g.chunks) for g in groups if isinstance(g, ChunkGroup)) == 10


def test_packed_hits_map_to_their_record_and_those_on_a_separator_do_not():
    group = PackedRecords(0, 7, np.array([5, 0, 3], np.int64), gap=2)
    # text: r7 [0,5) gap [5,7) r8 [7,7) gap [7,9) r9 [9,12)
    assert list(group.text_starts) == [0, 7, 9] and group.text_length == 12
    record, start = group.records_of(np.array([0, 3, 4, 9, 9, 5, 8]), np.array([5, 5, 6, 12, 10, 6, 10]))
    assert list(record) == [7, 7, -1, 9, 9, -1, -1]
    assert list(start[record >= 0]) == [0, 0, 9, 9]


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
