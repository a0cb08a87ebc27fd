"""The host pipeline around the kernels: packed aligned/CIGAR columns, locating from raw bytes,
the worker's window cache, Arrow output, stage timers (issue 17).

Oracles: Python slicing and ``bytes.decode`` for the packed strings, edlib
(an independent C++ implementation) for the edit-distance starts and CIGAR
costs, the object-column writer path for the output bytes.
"""
from __future__ import annotations

import random
import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import seqsift
from seqsift.alphabet import TEXT_CODE_ARRAY, encode_text
from seqsift.kernels import gather_spans, locate_packed
from seqsift.partitioning import plan_chunks
from seqsift.pattern_set import PatternSet
from seqsift.runtime import stages, windows
from seqsift.runtime.columns import string_column, text_dtype
from seqsift.runtime.windows import read_chunk
from seqsift.searching.job import SearchJob
from seqsift.searching.output import HitWriter
from seqsift.searching.task import run_task
from seqsift.io.reference import open_reference

from cross_check import optional, require
from locate_strings import locate
from test_engine import write_fasta

STRING_DTYPE = text_dtype()

edlib = optional("edlib")


def test_gather_spans_equals_slicing():
    rng = np.random.default_rng(3)
    source = rng.integers(0, 256, 5000).astype(np.uint8)
    starts = rng.integers(0, 4000, 300)
    ends = starts + rng.integers(0, 60, 300)
    offsets, data = gather_spans(source, starts, ends)
    assert offsets[0] == 0 and len(offsets) == 301
    for h in range(300):
        assert data[offsets[h]:offsets[h + 1]].tobytes() == source[starts[h]:ends[h]].tobytes()


def test_string_column_is_the_str_column_of_the_same_strings():
    words = [b"ACGT", b"", b"acgtN", b"3=1X"]
    offsets = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    column = pd.Series(string_column(offsets, np.frombuffer(b"".join(words), np.uint8)))
    as_objects = pd.Series(np.array([w.decode() for w in words], dtype=object))
    assert column.dtype == as_objects.dtype == STRING_DTYPE
    pd.testing.assert_series_equal(column, as_objects)


def test_string_column_replaces_non_ascii_as_decode_does():
    raw = b"AC\xffGT"
    column = string_column(np.array([0, 5], np.int64), np.frombuffer(raw, np.uint8))
    assert list(column) == [raw.decode("ascii", errors="replace")]


def _random_dna(rng, n):
    return "".join(rng.choice("ACGTacgtN") for _ in range(n))


@pytest.mark.parametrize("metric", ["hamming", "edit"])
def test_locate_on_raw_bytes_equals_locate_on_codes(metric):
    rng = random.Random(5)
    raw = _random_dna(rng, 3000).encode()
    patterns = PatternSet(("p0", "p1"), ("ACGTAC", "GGNTRCA"))
    batch = patterns.oriented(range(2), (0, 1))
    ends = np.array([10, 57, 300, 2999, 1500, 6], np.int64)
    rows = np.array([0, 1, 2, 3, 0, 1], np.int64)
    codes = encode_text(raw)
    if metric == "hamming":
        distance = np.array([_hamming(batch, r, codes, e) for r, e in zip(rows, ends)], np.int64)
    else:
        distance = np.array([_best_edit(batch, r, codes, e) for r, e in zip(rows, ends)], np.int64)
    starts, cigars = locate(metric, codes, batch, rows, ends, distance)
    raw_starts, (offsets, data) = locate_packed(metric, np.frombuffer(raw, np.uint8), batch, rows, ends,
                                                distance, code_of=TEXT_CODE_ARRAY)
    assert raw_starts.tolist() == starts.tolist()
    text = data.tobytes().decode()
    assert [text[a:b] for a, b in zip(offsets[:-1], offsets[1:])] == cigars


def _matches(mask, code):
    return code < 4 and (mask >> code) & 1


def _hamming(batch, row, codes, end):
    m = int(batch.lengths[row])
    return sum(not _matches(int(batch.masks[row, j]), int(codes[end - m + j])) for j in range(m))


def _best_edit(batch, row, codes, end):
    """d(end) by the textbook DP (free start), for the test's hits."""
    m = int(batch.lengths[row])
    previous = list(range(m + 1))
    for j in range(end):
        current = [0]
        for i in range(1, m + 1):
            same = _matches(int(batch.masks[row, i - 1]), int(codes[j]))
            current.append(min(previous[i - 1] + (0 if same else 1), previous[i] + 1, current[i - 1] + 1))
        previous = current
    return previous[m]


def _cigar_cost(cigar):
    return sum(int(n) for n, op in re.findall(r"(\d+)([=XID])", cigar) if op != "=")


def test_edit_best_rows_agree_with_edlib(tmp_path):
    """Every best-mode locus: edlib's global distance of P to text[start:end] is the row's
    distance, no start further left reaches it, and the CIGAR costs it."""
    require(edlib, "edlib")
    rng = random.Random(11)
    genome = "".join(rng.choice("ACGT") for _ in range(6000))
    guides = [genome[i:i + 18] for i in (100, 2000, 4100)]
    planted = list(genome)
    for i in (700, 3300, 5200):   # mutated copies: substitutions and indels
        copy = list(guides[i % 3])
        del copy[4]
        copy[9] = "A" if copy[9] != "A" else "C"
        planted[i:i + len(copy)] = copy
    text = "".join(planted)
    reference = write_fasta(tmp_path / "ref.fa", [("r", text)])
    named = {f"g{i}": guide for i, guide in enumerate(guides)}
    rows = seqsift.search(reference, named, 3, metric="edit", strand="+", backend="cpu", workers=1,
                          chunk_size=1000)
    assert len(rows) >= 6
    for row in rows.itertuples():
        pattern = named[row.pattern]
        window = text[row.start:row.end]
        assert row.aligned == window
        assert edlib.align(pattern, window, mode="NW")["editDistance"] == row.distance
        for earlier in range(max(0, row.end - len(pattern) - 3), row.start):
            assert edlib.align(pattern, text[earlier:row.end], mode="NW")["editDistance"] > row.distance
        assert _cigar_cost(row.cigar) == row.distance


def test_writer_bytes_same_for_arrow_and_object_string_columns(tmp_path):
    """TSV, BED and Parquet from Arrow-backed aligned/cigar columns equal those from Python strings."""
    columns = ["record", "start", "end", "pattern", "distance", "strand", "aligned", "cigar"]
    aligned, cigars = [b"ACGT", b"acgN", b"TT"], [b"4=", b"3=1X", b"2="]
    frame = pd.DataFrame({"record": np.array([0, 1, 1], np.int32), "start": np.array([5, 0, 9], np.int64),
                          "end": np.array([9, 4, 11], np.int64), "pattern": np.array([1, 0, 1], np.int32),
                          "distance": np.array([0, 1, 0], np.int16), "strand": np.array([0, 1, 0], np.int8),
                          "aligned": np.array([a.decode() for a in aligned], dtype=object),
                          "cigar": np.array([c.decode() for c in cigars], dtype=object)})
    packed = frame.copy()
    for name, words in (("aligned", aligned), ("cigar", cigars)):
        offsets = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
        packed[name] = string_column(offsets, np.frombuffer(b"".join(words), np.uint8))
    assert packed["aligned"].array.__class__.__name__ == "ArrowStringArray"
    for suffix in ("tsv", "bed", "parquet"):
        outputs = []
        for label, rows in (("objects", frame), ("arrow", packed)):
            path = tmp_path / f"{label}.{suffix}"
            writer = HitWriter(str(path), columns, ["chr1", "chr2"], ["g0", "g1"])
            writer.write(rows)
            writer.close()
            outputs.append(path)
        if suffix == "parquet":
            assert pq.read_table(outputs[0]).equals(pq.read_table(outputs[1]))
        else:
            assert outputs[0].read_bytes() == outputs[1].read_bytes()
    assert (tmp_path / "arrow.tsv").read_text().splitlines()[1] == "chr1\t5\t9\tg1\t0\t+\tACGT\t4="


def _job(reference, mode="best", align=True):
    patterns = PatternSet(("g",), ("ACGTTGCA",))
    return SearchJob(reference=reference, patterns=patterns, metric="edit", k=1, mode=mode, strand="both",
                     algorithm="edit-myers", backend="cpu", align=align)


def test_window_cache_adds_raw_bytes_to_a_codes_only_window(tmp_path):
    rng = random.Random(2)
    text = _random_dna(rng, 5000)
    reference = open_reference(write_fasta(tmp_path / "ref.fa", [("r", text)]))
    chunk = plan_chunks(reference.lengths, 1000, 8, gap=1)[2].chunks[0]
    codes_only = read_chunk(reference, chunk, need_raw=False)
    assert codes_only.raw is None
    both = read_chunk(reference, chunk, need_raw=True)
    window = text[chunk.read_start:chunk.owned_end].encode()
    assert both.raw.tobytes() == window
    assert both.codes.tobytes() == encode_text(window).tobytes()
    again = read_chunk(reference, chunk, need_raw=True)
    assert again.raw is both.raw or np.shares_memory(again.raw, both.raw)  # served from the cache


def test_stage_timers_count_only_when_enabled(tmp_path):
    rng = random.Random(4)
    text = _random_dna(rng, 4000) + "ACGTTGCA" + _random_dna(rng, 100)
    reference = open_reference(write_fasta(tmp_path / "ref.fa", [("r", text)]))
    job = _job(reference)
    group = job.groups(10_000)[0]
    stages.enable(False)
    run_task(job, group, range(1))
    assert stages.take() == {}
    stages.enable()
    try:
        rows = run_task(job, group, range(1))
        taken = stages.take()
    finally:
        stages.enable(False)
    assert len(rows) > 0
    assert {"kernel", "locate"} <= set(taken) <= {*stages.STAGES, stages.KERNEL_CALLS}
    assert taken[stages.KERNEL_CALLS] == 1  # one packed text: one kernel call
    assert all(seconds >= 0 for seconds in taken.values())


def test_one_gpu_job_runs_its_worker_in_this_process(monkeypatch):
    import os

    from distributed import Client

    from seqsift import cluster

    monkeypatch.setattr(cluster, "count_gpus", lambda: 1)
    monkeypatch.delenv("SEQSIFT_GPU_WORKER_PROCESS", raising=False)
    assert cluster.gpu_worker_in_process(None)
    assert not cluster.gpu_worker_in_process([1])      # a GPU picked by number: a worker process for it
    monkeypatch.setattr(cluster, "count_gpus", lambda: 2)
    assert not cluster.gpu_worker_in_process(None)     # several GPUs: one worker process each
    with cluster.in_process_gpu_cluster() as local, Client(local) as client:
        assert client.scheduler.address.startswith("inproc://")
        assert set(client.run(os.getpid).values()) == {os.getpid()}
        assert [w["nthreads"] for w in client.scheduler_info()["workers"].values()] == [cluster.GPU_TASK_THREADS]


def test_a_gpu_search_imports_no_numba():
    """A GPU search's process (its command line, its tasks, the GPU launchers of the families ``auto``
    runs, the locating kernels, its merge and writer) runs without Numba: Numba's import and loads cost
    a command about a second of the GIL beside CuPy's, and its compiles a fresh machine several."""
    from fresh_process import cuda_launchers, loaded_after

    code = ("import seqsift.cli, seqsift.searching.task, seqsift.searching.merge, seqsift.searching.output\n"
            "import seqsift.kernels.locate.cuda\n"
            + cuda_launchers("('edit-myers', 'hamming-thread', 'hamming-block', 'hamming-packed', 'hamming-tiled')"))
    assert loaded_after(code, ["numba"]) == []


def test_two_threads_wanting_one_window_read_it_once(tmp_path, monkeypatch):
    """The second task thread waits for the first one's read instead of reading the chunk again."""
    import threading

    text = _random_dna(random.Random(6), 3000)
    reference = open_reference(write_fasta(tmp_path / "ref.fa", [("r", text)]))
    chunk = plan_chunks(reference.lengths, 1000, 8, gap=1)[1].chunks[0]
    reads, first_inside, second_asked = [], threading.Event(), threading.Event()
    real_read, real_cached = windows._read_raw, windows._cached_window

    def read(reference, chunk):
        reads.append(threading.current_thread().name)
        first_inside.set()
        assert second_asked.wait(10)   # the second thread is now after the same window
        return real_read(reference, chunk)

    def cached(key, start):
        if threading.current_thread().name == "task-1":
            second_asked.set()
        return real_cached(key, start)

    monkeypatch.setattr(windows, "_read_raw", read)
    monkeypatch.setattr(windows, "_cached_window", cached)
    results = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, windows.read_chunk(reference, chunk)),
                                name=f"task-{n}") for n in range(2)]
    threads[0].start()
    assert first_inside.wait(10)   # the first thread is reading before the second starts
    threads[1].start()
    for thread in threads:
        thread.join()
    assert len(reads) == 1
    assert results[0].raw.tobytes() == results[1].raw.tobytes() == text[chunk.read_start:chunk.owned_end].encode()
