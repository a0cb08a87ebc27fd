"""The GPU worker's per-task work done once (issue 17), on the GPU (pytest -m gpu).

* a window of the genome cache is read from the file into pinned memory
  (``kernels.cuda.FileRange``) and its device codes equal the CPU encoding,
  across several staging buffers, at record boundaries and in the last record;
* windows cut from one device slab do not overlap, stay 256-byte aligned, and
  a full slab starts a new one;
* two task threads uploading together each get their own staging buffers;
* a batch reused for chunk after chunk (its rows on the device once, through
  ``PatternBatch.derived``) finds what the CPU backend finds in every chunk.
"""
from __future__ import annotations

import random
import threading

import numpy as np
import pytest

from seqsift.alphabet import encode_text
from seqsift.io.reference import open_reference
from seqsift.kernels import find_ends
from seqsift.partitioning import Chunk
from seqsift.pattern_set import PatternSet

from test_engine import mutate, write_fasta

pytestmark = pytest.mark.gpu


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQSIFT_CACHE", str(tmp_path / "cache"))


def test_file_range_upload_equals_cpu_encoding_across_staging_buffers(tmp_path):
    from seqsift.kernels.cuda import STAGE_BYTES, FileRange, upload_and_encode

    rng = np.random.default_rng(2)
    data = rng.integers(0, 256, 2 * STAGE_BYTES + 70_001, dtype=np.uint8)
    path = tmp_path / "bytes"
    path.write_bytes(data.tobytes())
    for offset, length in [(0, data.size), (4097, 2 * STAGE_BYTES + 3), (13, 5), (data.size - 1, 1), (7, 0)]:
        window = data[offset:offset + length]
        coded = upload_and_encode(FileRange(str(path), offset, length))
        assert coded.size == length and np.array_equal(coded.get(), encode_text(window.tobytes()))
        assert np.array_equal(upload_and_encode(FileRange(str(path), offset, length), encode=False).get(), window)


@pytest.mark.parametrize("need_raw", [False, True])
def test_cached_windows_reach_the_device_from_the_file(tmp_path, private_cache, monkeypatch, need_raw):
    from seqsift.runtime import windows
    from seqsift.searching import task
    from seqsift.kernels import cuda as kernels_cuda

    rng = random.Random(4)
    records = [("a", "".join(rng.choice("ACGTNacgtRY") for _ in range(5_000))), ("b", "GATTACA"),
               ("c", "".join(rng.choice("ACGTn") for _ in range(3_001)))]
    reference = open_reference(write_fasta(tmp_path / "g.fa", records))
    assert reference.genome_path is not None
    given = []
    upload = kernels_cuda.upload_and_encode
    monkeypatch.setattr(kernels_cuda, "upload_and_encode", lambda raw, **kw: given.append(raw) or upload(raw, **kw))
    for record, start, end in [(0, 0, 5_000), (0, 4_990, 5_000), (1, 0, 7), (2, 0, 3_001), (2, 3_000, 3_001)]:
        window = windows.read_chunk(reference, Chunk(record, start, start, end), need_raw=need_raw, on_device=True)
        expected = records[record][1][start:end].encode()
        assert isinstance(given[-1], kernels_cuda.FileRange)
        assert window.device.get().tobytes() == encode_text(expected).tobytes()


def test_windows_cut_from_slabs_do_not_overlap(monkeypatch):
    from seqsift.kernels import cuda as kernels_cuda

    monkeypatch.setattr(kernels_cuda, "SLAB_BYTES", 1 << 20)
    monkeypatch.setattr(kernels_cuda, "_window_slabs", kernels_cuda._WindowSlabs())
    rng = np.random.default_rng(5)
    sources = [rng.integers(0, 256, size, dtype=np.uint8) for size in (1, 300_001, 255, 700_000, 3 << 20, 17)]
    windows = [kernels_cuda.upload_and_encode(s, encode=False) for s in sources]
    for source, window in zip(sources, windows):
        assert window.data.ptr % kernels_cuda.WINDOW_ALIGN == 0
        assert np.array_equal(window.get(), source)  # nothing written over by a later window


def test_two_threads_have_their_own_staging_buffers():
    from seqsift.kernels import cuda as kernels_cuda

    rng = np.random.default_rng(6)
    sources = [rng.integers(0, 256, kernels_cuda.STAGE_BYTES + 999 * t, dtype=np.uint8) for t in range(2)]
    results, buffers = [None, None], [None, None]
    start = threading.Barrier(2)

    def task(t):
        start.wait()
        for _ in range(3):
            results[t] = kernels_cuda.upload_and_encode(sources[t]).get()
        buffers[t] = {b.ctypes.data for b in kernels_cuda._uploader.buffers}

    threads = [threading.Thread(target=task, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not buffers[0] & buffers[1]
    for source, result in zip(sources, results):
        assert np.array_equal(result, encode_text(source.tobytes()))


@pytest.mark.parametrize("count", [5, 40])  # hamming: 10 rows run hamming_direct_*, 80 rows hamming_sliced_*
@pytest.mark.parametrize("algorithm, k", [("edit-myers", 2), ("hamming-packed", 2), ("edit-nfa", 2),
                                          ("edit-rowdp", 2), ("edit-wm-scan", 2)])
def test_a_batch_reused_over_chunks_finds_what_the_cpu_finds(algorithm, k, count):
    rng = random.Random(8)
    sequences = tuple("".join(rng.choice("ACGT") for _ in range(rng.choice((18, 23, 40, 64)))) for _ in range(count))
    batch = PatternSet(tuple(map(str, range(count))), sequences).oriented(range(count), (0, 1))
    for chunk in range(3):
        parts = []
        for _ in range(30):
            parts.append("".join(rng.choice("ACGT") for _ in range(rng.randint(20, 200))))
            parts.append(mutate(rng, rng.choice(sequences), rng.randint(0, k)))
        codes = encode_text("".join(parts))
        gpu = find_ends(algorithm, "cuda", codes, batch, k, 0, len(codes))
        cpu = find_ends(algorithm, "cpu", codes, batch, k, 0, len(codes))
        assert len(cpu) > 0
        assert set(zip(gpu.row.tolist(), gpu.end.tolist(), gpu.distance.tolist())) == \
            set(zip(cpu.row.tolist(), cpu.end.tolist(), cpu.distance.tolist()))
