"""The search worker's per-task host work, done once (issue 17).

* ``PatternSet.oriented``: the rows equal an independent construction
  (letter table and complement written out here), built once per
  (indices, strands) however many tasks or threads ask, and rebuilt (the
  same) after pickling;
* ``PatternBatch.derived``: a launcher's per-batch data built once across
  threads;
* a window in the genome cache: ``Reference.cached_range`` names the bytes
  ``read`` returns (record boundaries, the last record), and
  ``io.genome_cache.read_file_into`` reads them into a buffer;
* ``runtime.windows.read_chunk`` on a GPU worker hands the upload a file range
  for a cached window and the array for one that is not (the upload is
  replaced by a host stand-in: no GPU here; tests/test_gpu_pipeline.py runs
  the real one);
* ``EndHits.sorted`` orders by (row, end) and keeps ties, on its packed-key
  and its lexsort paths;
* the task threads' pinned staging buffers come from one allocation, made
  ahead by ``prepare_device`` or by the first upload, never twice;
* ``searching._prepare_worker`` readies the device and loads the locating
  kernels only while the job still reads its reference.
"""
from __future__ import annotations

import os
import pickle
import random
import threading

import numpy as np
import pytest

import seqsift.pattern_set as patterns_module
from seqsift.io import genome_cache
from seqsift.io.reference import open_reference
from seqsift.kernels import cuda as kernels_cuda
from seqsift.partitioning import Chunk
from seqsift.pattern_set import STRAND_MINUS, STRAND_PLUS, PatternSet

# Written out here, not taken from seqsift.alphabet: bit 0 A, 1 C, 2 G, 3 T.
MASK = {"A": 1, "C": 2, "G": 4, "T": 8, "U": 8, "R": 5, "Y": 10, "S": 6, "W": 9, "K": 12, "M": 3,
        "B": 14, "D": 13, "H": 11, "V": 7, "N": 15}
COMPLEMENT = {"A": "T", "C": "G", "G": "C", "T": "A", "U": "A", "R": "Y", "Y": "R", "S": "S", "W": "W",
              "K": "M", "M": "K", "B": "V", "V": "B", "D": "H", "H": "D", "N": "N"}


def expected_rows(sequences, indices, strands):
    """(masks, lengths, pattern_index, strand) row by row, pattern-major."""
    rows = []
    for i in indices:
        for s in strands:
            text = sequences[i] if s == STRAND_PLUS else "".join(COMPLEMENT[c] for c in reversed(sequences[i]))
            rows.append((i, s, [MASK[c] for c in text]))
    width = max([len(r[2]) for r in rows] + [1])
    masks = np.zeros((len(rows), width), np.uint8)
    for n, (_, _, row) in enumerate(rows):
        masks[n, :len(row)] = row
    return (masks, np.array([len(r[2]) for r in rows]), np.array([r[0] for r in rows]),
            np.array([r[1] for r in rows]))


@pytest.mark.parametrize("strands", [(STRAND_PLUS,), (STRAND_MINUS,), (STRAND_PLUS, STRAND_MINUS)])
def test_oriented_rows_match_a_row_by_row_construction(strands):
    rng = random.Random(3)
    sequences = tuple("".join(rng.choice("ACGTNRYSWKMBDHVU") for _ in range(rng.randint(1, 70)))
                      for _ in range(40))
    patterns = PatternSet(tuple(map(str, range(40))), sequences)
    for indices in (range(0, 40), range(7, 19), range(39, 40)):
        batch = patterns.oriented(indices, strands)
        masks, lengths, pattern_index, strand = expected_rows(sequences, indices, strands)
        assert np.array_equal(batch.masks, masks)
        assert np.array_equal(batch.lengths, lengths) and batch.lengths.dtype == np.int32
        assert np.array_equal(batch.pattern_index, pattern_index) and batch.pattern_index.dtype == np.int32
        assert np.array_equal(batch.strand, strand) and batch.strand.dtype == np.int8


def test_byte_patterns_keep_their_bytes():
    patterns = PatternSet(("a", "b"), ("aBc\xff", "x"), alphabet="bytes")
    batch = patterns.oriented(range(2), (STRAND_PLUS,))
    assert batch.masks.tolist() == [[ord("a"), ord("B"), ord("c"), 0xFF], [ord("x"), 0, 0, 0]]
    assert batch.lengths.tolist() == [4, 1]


def counting_rows(monkeypatch) -> list[int]:
    """Count the builds of oriented rows through the seam patterns.py calls."""
    calls = []
    build = patterns_module.pattern_mask_rows

    def counted(*args, **kwargs):
        calls.append(1)
        return build(*args, **kwargs)

    monkeypatch.setattr(patterns_module, "pattern_mask_rows", counted)
    return calls


def all_at_once(call, threads: int = 4) -> list:
    """``call()``'s results from ``threads`` threads released together (as a worker's task threads start)."""
    start = threading.Barrier(threads)
    got = []

    def task():
        start.wait()
        got.append(call())

    workers = [threading.Thread(target=task) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return got


def test_oriented_batch_is_built_once_per_range_across_threads(monkeypatch):
    calls = counting_rows(monkeypatch)
    patterns = PatternSet(("a", "b", "c"), ("ACGT", "GGNA", "TTTTC"))
    got = all_at_once(lambda: patterns.oriented(range(0, 3), (0, 1)))
    assert len(calls) == 1 and all(b is got[0] for b in got)
    other = patterns.oriented(range(1, 3), (0, 1))
    assert len(calls) == 2 and other.rows == 4
    with pytest.raises(ValueError):
        got[0].masks[0, 0] = 3  # shared by every task: read-only


def test_a_pickled_pattern_set_rebuilds_the_same_batch(monkeypatch):
    patterns = PatternSet(("a", "b"), ("ACGTAC", "GGNA"))
    first = patterns.oriented(range(2), (0, 1))
    calls = counting_rows(monkeypatch)
    copy = pickle.loads(pickle.dumps(patterns))
    again = copy.oriented(range(2), (0, 1))
    assert copy == patterns and len(calls) == 1 and again is not first
    assert np.array_equal(again.masks, first.masks) and np.array_equal(again.strand, first.strand)


def test_derived_is_built_once_per_key_across_threads():
    batch = PatternSet(("a",), ("ACGT",)).oriented(range(1), (0, 1))
    built = []

    def build():
        built.append(1)
        return object()

    got = all_at_once(lambda: batch.derived(("peq", 0), build))
    assert len(built) == 1 and all(value is got[0] for value in got)
    assert batch.derived(("peq", 1), build) is not got[0] and len(built) == 2


# ---- windows read from the genome cache file ---------------------------------

@pytest.fixture()
def cached_reference(tmp_path, monkeypatch):
    """A 3-record FASTA (one record shorter than a line) opened with its genome cache, and its records."""
    monkeypatch.setenv("SEQSIFT_CACHE", str(tmp_path / "cache"))
    rng = random.Random(5)
    records = [("chr1", "".join(rng.choice("ACGTNacgtn") for _ in range(1000))), ("tiny", "AC"),
               ("chr3", "".join(rng.choice("ACGT") for _ in range(777)))]
    path = tmp_path / "g.fa"
    path.write_text("".join(f">{name}\n" + "".join(seq[i:i + 60] + "\n" for i in range(0, len(seq), 60))
                            for name, seq in records))
    reference = open_reference(path)
    assert reference.genome_path is not None
    return reference, records


WINDOWS = [(0, 0, 1000), (0, 940, 1000), (0, 59, 61), (1, 0, 2), (1, 1, 2), (2, 0, 777), (2, 700, 777),
           (2, 776, 777), (2, 5, 5)]


@pytest.mark.parametrize("record, start, end", WINDOWS)
def test_cached_range_names_the_bytes_read_returns(cached_reference, record, start, end):
    reference, records = cached_reference
    path, offset = reference.cached_range(record, start, end)
    with open(path, "rb") as f:
        f.seek(offset)
        assert f.read(end - start).decode() == records[record][1][start:end]
    fd = os.open(path, os.O_RDONLY)
    try:
        buffer = np.full(end - start, 0xAA, np.uint8)
        genome_cache.read_file_into(fd, buffer, offset)
        assert buffer.tobytes().decode() == records[record][1][start:end]
    finally:
        os.close(fd)


def test_read_file_into_stops_at_the_end_of_the_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    try:
        buffer = np.zeros(4, np.uint8)
        genome_cache.read_file_into(fd, buffer, 6)
        assert buffer.tobytes() == b"6789"
        with pytest.raises(EOFError):
            genome_cache.read_file_into(fd, np.zeros(5, np.uint8), 6)
    finally:
        os.close(fd)


def test_cached_range_is_none_without_the_cache(cached_reference):
    reference, _ = cached_reference
    import dataclasses

    plain = dataclasses.replace(reference, genome_path=None, record_starts=None, genome_identity=None)
    assert plain.cached_range(0, 0, 10) is None
    with pytest.raises(IndexError):
        reference.cached_range(1, 0, 3)


@pytest.fixture()
def host_upload(monkeypatch):
    """Stand in for the GPU upload: what it was given, and the text codes it would hold (a NumPy array)."""
    from seqsift.alphabet import encode_text

    given = []
    monkeypatch.setenv("SEQSIFT_DEVICE_CACHE_BYTES", str(1 << 20))  # the budget would ask CuPy for the device's size

    def upload(raw, clock=None):
        given.append(raw)
        if isinstance(raw, kernels_cuda.FileRange):
            data = np.empty(raw.length, np.uint8)
            fd = os.open(raw.path, os.O_RDONLY)
            try:
                genome_cache.read_file_into(fd, data, raw.offset)
            finally:
                os.close(fd)
            raw = data
        return encode_text(np.asarray(raw).tobytes())

    monkeypatch.setattr(kernels_cuda, "upload_and_encode", upload)
    return given


@pytest.mark.parametrize("need_raw", [False, True])
@pytest.mark.parametrize("record, start, end", [(0, 0, 1000), (0, 100, 520), (1, 0, 2), (2, 650, 777)])
def test_gpu_window_of_the_cache_is_uploaded_from_the_file(cached_reference, host_upload, need_raw,
                                                           record, start, end):
    from seqsift.alphabet import encode_text
    from seqsift.runtime import windows
    from seqsift.searching import task

    reference, records = cached_reference
    window = windows.read_chunk(reference, Chunk(record, start, start, end), need_raw=need_raw, on_device=True)
    expected = records[record][1][start:end].encode()
    assert isinstance(host_upload[-1], kernels_cuda.FileRange)
    assert np.array_equal(window.device, encode_text(expected))
    assert (window.raw.tobytes() == expected) if need_raw else window.raw is None


def test_gpu_window_without_the_cache_is_uploaded_from_the_array(cached_reference, host_upload):
    import dataclasses

    from seqsift.alphabet import encode_text
    from seqsift.runtime import windows

    reference, records = cached_reference
    plain = dataclasses.replace(reference, genome_path=None, record_starts=None, genome_identity=None)
    window = windows._complete(plain, Chunk(2, 3, 3, 700), windows.ChunkWindow(3), need_raw=False, on_device=True)
    assert isinstance(host_upload[-1], np.ndarray)
    assert np.array_equal(window.device, encode_text(records[2][1][3:700].encode()))


# ---- EndHits.sorted ----------------------------------------------------------

@pytest.mark.parametrize("row_high, end_high", [(2_000, 64 << 20), (1 << 30, 1 << 40), (3, 5)])
def test_end_hits_sorted_orders_by_row_then_end_keeping_ties(row_high, end_high):
    from seqsift.kernels import EndHits

    rng = np.random.default_rng(row_high)
    row = rng.integers(0, row_high, 3_000).astype(np.int32)
    end = rng.integers(0, end_high, 3_000).astype(np.int64)
    distance = np.arange(3_000, dtype=np.int16)  # tells equal (row, end) apart: their order must stay
    got = EndHits(row, end, distance).sorted()
    expected = sorted(zip(row.tolist(), end.tolist(), distance.tolist()), key=lambda h: (h[0], h[1]))
    assert list(zip(got.row.tolist(), got.end.tolist(), got.distance.tolist())) == expected
    assert got.row.dtype == np.int32 and got.end.dtype == np.int64 and got.distance.dtype == np.int16
    assert len(EndHits.empty().sorted()) == 0


# ---- pinned staging buffers: one allocation for the worker's task threads -----

def test_every_task_thread_of_a_gpu_worker_has_staging_in_the_one_allocation():
    """kernels.cuda cannot import the cluster package (it knows no kernels), so the staging allocation's
    thread count is its own constant: it must match the task threads a GPU worker runs."""
    from seqsift import cluster

    assert kernels_cuda.STAGING_THREADS == cluster.GPU_TASK_THREADS


def test_task_threads_share_one_pinned_allocation(monkeypatch):
    """Every task thread's staging buffers come from one cudaHostAlloc (CuPy replaced by a recorder: no GPU here)."""
    import sys
    import types

    allocations = []

    def alloc_pinned_memory(size):
        allocations.append(size)
        return bytearray(size)

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(alloc_pinned_memory=alloc_pinned_memory,
                                                            Stream=lambda non_blocking: object()))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(kernels_cuda, "STAGE_BYTES", 1 << 12)
    monkeypatch.setattr(kernels_cuda, "_staging_free", [])
    monkeypatch.setattr(kernels_cuda, "_uploader", kernels_cuda._Uploader())
    start = threading.Barrier(kernels_cuda.STAGING_THREADS)
    taken = []

    def task():
        start.wait()
        taken.append(kernels_cuda._uploader.ready().buffers)

    threads = [threading.Thread(target=task) for _ in range(kernels_cuda.STAGING_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert allocations == [2 * kernels_cuda.STAGING_THREADS * (1 << 12)]
    starts = {buffer.ctypes.data for pair in taken for buffer in pair}
    assert len(starts) == 2 * kernels_cuda.STAGING_THREADS  # every buffer its own
    assert all(buffer.size == 1 << 12 and buffer.flags.writeable for pair in taken for buffer in pair)


def test_prepare_device_allocates_the_staging_once_for_every_task_thread(monkeypatch):
    """prepare_device makes the one pinned allocation ahead, however often it is called, and the
    task threads then take their buffers from it (CuPy, the module and the code table replaced by
    recorders: no GPU here; tests/test_gpu_pipeline.py runs the real one)."""
    import sys
    import types

    allocations, prepared = [], []

    def alloc_pinned_memory(size):
        allocations.append(size)
        return bytearray(size)

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(
        alloc_pinned_memory=alloc_pinned_memory, Stream=lambda non_blocking: object(),
        Device=lambda: types.SimpleNamespace(id=0)))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(kernels_cuda, "STAGE_BYTES", 1 << 12)
    monkeypatch.setattr(kernels_cuda, "_staging_free", [])
    monkeypatch.setattr(kernels_cuda, "_staging_allocations", 0)
    monkeypatch.setattr(kernels_cuda, "_uploader", kernels_cuda._Uploader())
    monkeypatch.setattr(kernels_cuda, "load_module", lambda name: prepared.append(name) or
                        types.SimpleNamespace(get_function=lambda function: prepared.append(function)))
    monkeypatch.setattr(kernels_cuda, "_device_code_table", lambda device, table: prepared.append(len(table)))
    kernels_cuda.prepare_device()
    kernels_cuda.prepare_device()
    assert allocations == [2 * kernels_cuda.STAGING_THREADS * (1 << 12)]
    assert prepared == ["encode/encode.cu", "encode_text_codes", 256] * 2
    taken = []
    threads = [threading.Thread(target=lambda: taken.append(kernels_cuda._uploader.ready().buffers))
               for _ in range(kernels_cuda.STAGING_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(allocations) == 1  # the threads took what prepare_device allocated
    assert len({buffer.ctypes.data for pair in taken for buffer in pair}) == 2 * kernels_cuda.STAGING_THREADS


@pytest.mark.parametrize("mode", ["best", "ends"])
@pytest.mark.parametrize("still_reading", [True, False])
def test_worker_is_prepared_ahead_only_while_the_reference_is_read(monkeypatch, mode, still_reading):
    import seqsift.searching as engine
    from seqsift.kernels.locate import cuda as locate_cuda

    done = []
    monkeypatch.setattr(kernels_cuda, "prepare_device", lambda: done.append("device"))
    monkeypatch.setattr(locate_cuda, "load", lambda: done.append("locate"))
    reading = threading.Event()
    if not still_reading:
        reading.set()
    engine._prepare_worker(mode, reading)
    # The device first; then, where rows get starts, the kernels that locate them.
    assert done == ((["device", "locate"] if mode == "best" else ["device"]) if still_reading else [])


def test_a_screen_readies_the_device_before_it_reads_its_inputs(monkeypatch):
    """screen hands the cluster started ahead what it readies before it reads its two inputs, so that a
    one-GPU screen loads CuPy (and the CUDA context: kernels.cuda.ready_device) while it reads, and, when
    it aligns its survivors, the alignment lanes (kernels.sw.align_soon, with the job's gaps); start_ahead
    is recorded here (it starts nothing for a CPU job) and its prepare called, with the device and
    numba_ahead's load replaced by recorders."""
    from seqsift import numba_ahead
    from seqsift.runtime import clients
    from seqsift.screening import run as screen_run
    from seqsift.screening import screen

    events = []
    monkeypatch.setattr(clients.JobClient, "start_ahead",
                        lambda self, backend, prepare=None: events.append(("ahead", backend, prepare)))
    real_read = screen_run.read_sequences
    monkeypatch.setattr(screen_run, "read_sequences",
                        lambda source, what="sequences": events.append(("read", what)) or real_read(source, what))
    monkeypatch.setattr(screen_run, "ready_device", lambda: events.append(("device",)))
    monkeypatch.setattr(numba_ahead, "load_once", lambda key, warm_ups: events.append(("lanes", key)))
    for kwargs, readied in (({}, [("device",)]),
                            (dict(threshold=4), [("device",), ("lanes", "sw-lanes-linear")]),
                            (dict(threshold=4, gap_open=5, gap_extend=2), [("device",), ("lanes", "sw-lanes-affine")]),
                            (dict(threshold=4, align=False), [("device",)])):
        events.clear()
        result = screen(["ACGTACGTAA", "GGGG"], ["ACGTACGTAA", "TTTT"], backend="cpu", workers=1, **kwargs)
        assert [e[:2] for e in events] == [("ahead", "cpu"), ("read", "queries"), ("read", "targets")], kwargs
        events[0][2]()   # what the cluster thread would run
        assert events[3:] == readied, kwargs
        assert (result.tolist() == [20, 0]) if "threshold" not in kwargs else len(result) == 1
