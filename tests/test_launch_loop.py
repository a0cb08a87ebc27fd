"""The GPU families' one launch loop (kernels/cuda.py's ``launch_into_hit_buffers``), run on the CPU.

No GPU here: NumPy arrays with CuPy's ``get()`` stand in for the device
buffers, and fake kernels do what hits.cuh's ``emit`` does (take a slot from
the counter for every hit, write it only when the slot is below the
capacity). Checked: a launch whose hits overflow runs once more with buffers
of exactly the count; one that fits, exactly or with room to spare, runs
once; no hits; several launches sharing one counter; the crispr kernels' own
output arrays; and that the families' launchers (hamming, shift-or, crispr)
hand their kernels the same arguments through the loop.
"""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from seqsift.kernels import EndHits
from seqsift.kernels import cuda as kernels_cuda


class HostArray(np.ndarray):
    """A NumPy array standing in for a CuPy one: ``get()`` is its copy on the host (a plain ndarray)."""

    gets = 0  # how many get() calls were made, over all arrays (reset by each test)

    def get(self):
        HostArray.gets += 1
        return np.array(self)


def on_host(array) -> HostArray:
    return np.asarray(array).view(HostArray)


def host_hit_buffers(capacity: int):
    """compact_hits_buffers with NumPy: (counter, row int32, end int64, distance int16); the arrays hold garbage."""
    return (on_host(np.zeros(1, np.uint64)), on_host(np.full(capacity, -7, np.int32)),
            on_host(np.full(capacity, -7, np.int64)), on_host(np.full(capacity, -7, np.int16)))


def emit(counter, capacity: int, columns, values) -> None:
    """hits.cuh's emit for every hit in ``values`` (one sequence per column): slots from the counter, written below
    ``capacity`` only; the counter counts them all."""
    first = int(counter[0])
    hits = len(values[0])
    slots = np.arange(first, first + hits)
    kept = slots < capacity
    for column, column_values in zip(columns, values):
        column[slots[kept]] = np.asarray(column_values)[kept]
    counter[0] = first + hits


def never_a_third_launch(capacities: list[int]) -> None:
    """The second launch has room for every hit: a loop that launches again is broken (fail, do not hang)."""
    assert len(capacities) <= 2, f"launched with capacities {capacities}"


class FakeSearch:
    """A search kernel that finds ``hits`` (row, end, distance) hits each time it is launched."""

    def __init__(self, hits: int):
        self.rows = np.arange(hits, dtype=np.int32) % 5
        self.ends = 100 + 3 * np.arange(hits, dtype=np.int64)
        self.distances = (np.arange(hits) % 3).astype(np.int16)
        self.capacities: list[int] = []  # the capacity of every launch, in order
        self.counters_at_launch: list[int] = []

    def __call__(self, hit_buffers, capacity):
        counter, *columns = hit_buffers
        self.capacities.append(capacity)
        never_a_third_launch(self.capacities)
        self.counters_at_launch.append(int(counter[0]))
        emit(counter, capacity, columns, (self.rows, self.ends, self.distances))

    def expected(self):
        return self.rows, self.ends, self.distances


@pytest.fixture(autouse=True)
def count_gets():
    HostArray.gets = 0


def check_found(found, search: FakeSearch) -> None:
    assert len(found) == 3
    for got, want in zip(found, search.expected()):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)


def test_overflow_on_the_first_launch_runs_again_with_room_for_exactly_all():
    search = FakeSearch(hits=10)
    found = kernels_cuda.launch_into_hit_buffers(search, 4, buffers=host_hit_buffers)
    assert search.capacities == [4, 10]
    assert search.counters_at_launch == [0, 0]  # fresh, zeroed counter for the second launch
    check_found(found, search)


def test_hits_that_fit_run_once():
    search = FakeSearch(hits=3)
    found = kernels_cuda.launch_into_hit_buffers(search, 8, buffers=host_hit_buffers)
    assert search.capacities == [8]
    check_found(found, search)


def test_hits_that_fill_every_slot_run_once():
    search = FakeSearch(hits=6)
    found = kernels_cuda.launch_into_hit_buffers(search, 6, buffers=host_hit_buffers)
    assert search.capacities == [6]
    check_found(found, search)


def test_no_hits():
    search = FakeSearch(hits=0)
    found = kernels_cuda.launch_into_hit_buffers(search, 16, buffers=host_hit_buffers)
    assert search.capacities == [16]
    assert [len(array) for array in found] == [0, 0, 0]


def test_launches_sharing_one_counter_count_together():
    """edit and nfa queue several launches (pieces of text or of rows) into one set of buffers."""
    pieces = [FakeSearch(hits=3), FakeSearch(hits=4)]

    def launch(hit_buffers, capacity):
        for piece in pieces:
            piece(hit_buffers, capacity)

    found = kernels_cuda.launch_into_hit_buffers(launch, 5, buffers=host_hit_buffers)
    assert pieces[0].capacities == pieces[1].capacities == [5, 7]
    assert pieces[1].counters_at_launch == [3, 3]
    for got, first, second in zip(found, pieces[0].expected(), pieces[1].expected()):
        np.testing.assert_array_equal(np.asarray(got), np.concatenate([first, second]))


def test_the_default_buffers_are_compact_hits_buffers(monkeypatch):
    monkeypatch.setattr(kernels_cuda, "compact_hits_buffers", host_hit_buffers)
    search = FakeSearch(hits=5)
    check_found(kernels_cuda.launch_into_hit_buffers(search, 2), search)
    assert search.capacities == [2, 5]


def test_other_output_arrays():
    """The crispr kernels' buffers: a counter and one array (candidates) or seven (sites)."""
    positions = np.arange(0, 300, 7, dtype=np.int64)

    def candidate_buffers(capacity):
        return on_host(np.zeros(1, np.uint64)), on_host(np.full(capacity, -1, np.int64))

    capacities = []

    def launch(hit_buffers, capacity):
        count, out = hit_buffers
        capacities.append(capacity)
        never_a_third_launch(capacities)
        emit(count, capacity, (out,), (positions,))

    (found,) = kernels_cuda.launch_into_hit_buffers(launch, 8, buffers=candidate_buffers)
    assert capacities == [8, len(positions)]
    np.testing.assert_array_equal(np.asarray(found), positions)


def test_launch_end_hits_copies_the_hits_back(monkeypatch):
    monkeypatch.setattr(kernels_cuda, "compact_hits_buffers", host_hit_buffers)
    search = FakeSearch(hits=9)
    hits = kernels_cuda.launch_end_hits(search, 4)
    assert isinstance(hits, EndHits) and type(hits.row) is np.ndarray  # on the host
    assert search.capacities == [4, 9]
    check_found((hits.row, hits.end, hits.distance), search)


def test_launch_end_hits_copies_nothing_back_when_there_are_no_hits(monkeypatch):
    monkeypatch.setattr(kernels_cuda, "compact_hits_buffers", host_hit_buffers)
    hits = kernels_cuda.launch_end_hits(FakeSearch(hits=0), 4)
    assert len(hits) == 0
    assert (hits.row.dtype, hits.end.dtype, hits.distance.dtype) == (np.int32, np.int64, np.int16)
    assert HostArray.gets == 1  # the counter only


# ---- the families' launchers through the loop ---------------------------------------------------

def test_hamming_run_passes_the_hit_buffers_as_the_kernels_last_arguments(monkeypatch):
    from seqsift.kernels.hamming import cuda as hamming_cuda

    monkeypatch.setattr(kernels_cuda, "compact_hits_buffers", host_hit_buffers)
    search = FakeSearch(hits=7)
    calls = []

    def kernel(grid, block, args, shared_mem=0):
        *own, count, capacity, out_row, out_end, out_dist = args
        calls.append((grid, block, tuple(own), capacity, shared_mem))
        assert type(capacity) is np.uint64
        search((count, out_row, out_end, out_dist), int(capacity))

    own_args = ("text", np.int64(1000), np.int32(3))
    hits = hamming_cuda._run(kernel, (12, 2), (256,), own_args, capacity=5, shared_mem=300)
    assert calls == [((12, 2), (256,), own_args, 5, 300), ((12, 2), (256,), own_args, 7, 300)]
    check_found((hits.row, hits.end, hits.distance), search)


def test_shiftor_launches_map_their_rows_back_to_the_batch(monkeypatch):
    from seqsift.kernels.shiftor import cuda as shiftor_cuda

    monkeypatch.setattr(kernels_cuda, "compact_hits_buffers", host_hit_buffers)
    first, second = FakeSearch(hits=4), FakeSearch(hits=2)
    launches = [shiftor_cuda.Launch(np.array([0, 2, 4, 6, 8]), first),
                shiftor_cuda.Launch(np.array([1, 3, 5, 7, 9]), second)]
    hits = shiftor_cuda._run_launches(launches, span=1000)
    assert first.capacities == second.capacities == [shiftor_cuda._capacity(1000, 5)]
    expected_rows = np.concatenate([launches[0].rows[first.rows], launches[1].rows[second.rows]])
    np.testing.assert_array_equal(hits.row, expected_rows)
    np.testing.assert_array_equal(hits.end, np.concatenate([first.ends, second.ends]))


def fake_cupy() -> types.SimpleNamespace:
    """The few CuPy names kernels/crispr/cuda.py's launch code calls, on HostArrays."""
    return types.SimpleNamespace(
        uint8=np.uint8, uint64=np.uint64, int64=np.int64,
        zeros=lambda shape, dtype: on_host(np.zeros(shape, dtype)),
        empty=lambda shape, dtype: on_host(np.full(shape, -1, dtype)),
        concatenate=lambda arrays: on_host(np.concatenate(arrays)),
        ascontiguousarray=lambda array: on_host(np.ascontiguousarray(array)))


class FakeModule:
    """``get_function(name)`` of a RawModule: the named fake kernel."""

    def __init__(self, **kernels):
        self.kernels = kernels

    def get_function(self, name):
        return self.kernels[name]


def test_crispr_candidates_grow_to_every_pam_match(monkeypatch):
    from seqsift.kernels.crispr import cuda as crispr_cuda

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    n = 4_000
    matches = np.arange(1, n, 2, dtype=np.int64)  # 1,999 matches: more than the first capacity, n // 8 = 1,024
    launches = []

    def crispr_pam_candidates(grid, block, args):
        text, size, pam, pam_length, count, out, capacity = args
        launches.append((grid, block, int(size), int(pam_length), type(capacity), int(capacity)))
        never_a_third_launch(launches)
        emit(count, int(capacity), (out,), (matches,))

    pam = np.array([15, 4, 4], np.uint8)
    found = crispr_cuda._candidates(FakeModule(crispr_pam_candidates=crispr_pam_candidates), "text", n, pam)
    blocks = (n + crispr_cuda.THREADS - 1) // crispr_cuda.THREADS
    assert launches == [((blocks,), (crispr_cuda.THREADS,), n, 3, np.uint64, 1024),
                        ((blocks,), (crispr_cuda.THREADS,), n, 3, np.uint64, len(matches))]
    np.testing.assert_array_equal(np.asarray(found), matches)


def test_crispr_check_grows_its_seven_columns_and_copies_them_back_once(monkeypatch):
    from seqsift.kernels.crispr import GuideRows, SiteHits
    from seqsift.kernels.crispr import cuda as crispr_cuda

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    monkeypatch.setattr(crispr_cuda, "INITIAL_CAPACITY", 4)
    row_ids = np.arange(3, dtype=np.int32)
    monkeypatch.setattr(crispr_cuda, "_device_rows",
                        lambda rows, strand, length: (row_ids, "low", "high", "limits", "ids"))
    sites = 11
    want = SiteHits(np.arange(sites, dtype=np.int32) % 3, 10 * np.arange(sites, dtype=np.int64),
                    np.full(sites, 23, np.int32), np.zeros(sites, np.int8), np.zeros(sites, np.int8),
                    np.zeros(sites, np.int16), (np.arange(sites) % 4).astype(np.int16))
    capacities = []

    def crispr_check(grid, block, args):
        count, capacity, *out = args[-9:]
        capacities.append(int(capacity))
        never_a_third_launch(capacities)
        assert type(capacity) is np.uint64 and len(out) == 7
        emit(count, int(capacity), out, [getattr(want, f) for f in SiteHits.__dataclass_fields__])

    rows = GuideRows(np.zeros((3, 20), np.uint8), np.full(3, 20, np.int32), np.zeros(3, np.int8),
                     np.full(3, 4, np.int16), np.arange(3, dtype=np.int32), np.zeros((2, 3), np.uint8),
                     np.array([True, False]))
    candidates = on_host(np.arange(50, dtype=np.int64))
    got = crispr_cuda._check(FakeModule(crispr_check=crispr_check), "text", 1_000, candidates, rows, 20, 0,
                             0, 0, 0, 1_000)
    assert capacities == [4, sites]
    for field in SiteHits.__dataclass_fields__:
        assert getattr(got, field).dtype == getattr(want, field).dtype
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    assert HostArray.gets == 3  # the counter of each launch, then every column in one copy
