"""GPU encoding of reference bytes (kernels/encode/encode.cu) equals the CPU encoding, and a GPU worker keeps
its chunk's codes on the device between tasks (pytest -m gpu)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from seqsift.alphabet import TEXT_CODE_TABLE, encode_text
from seqsift.io.reference import open_reference

from test_engine import write_fasta

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("tail", [0, 1, 2, 3])
def test_every_byte_value_encodes_as_on_the_cpu(tail):
    from seqsift.kernels.cuda import upload_and_encode

    raw = np.tile(np.arange(256, dtype=np.uint8), 41)
    raw = np.concatenate([raw, np.arange(tail, dtype=np.uint8) + 97])
    device = upload_and_encode(raw)
    assert device.get().tobytes() == raw.tobytes().translate(TEXT_CODE_TABLE)


def test_more_than_one_staging_buffer():
    """Past STAGE_BYTES the bytes go through both pinned buffers in turn."""
    from seqsift.kernels.cuda import STAGE_BYTES, upload_and_encode

    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, 2 * STAGE_BYTES + 12_345, dtype=np.uint8)
    assert np.array_equal(upload_and_encode(raw).get(), encode_text(raw.tobytes()))
    assert np.array_equal(upload_and_encode(raw, encode=False).get(), raw)


def test_prepared_device_uploads_as_without_preparing():
    """prepare_device (what a job's first task would do, done ahead) allocates the staging buffers once
    however often it is called, and the uploads after it encode as on the CPU."""
    from seqsift.kernels import cuda as kernels_cuda

    kernels_cuda.prepare_device()
    allocations = kernels_cuda._staging_allocations
    kernels_cuda.prepare_device()
    assert allocations >= 1 and kernels_cuda._staging_allocations == allocations
    raw = np.random.default_rng(1).integers(0, 256, 100_003, dtype=np.uint8)
    assert np.array_equal(kernels_cuda.upload_and_encode(raw).get(), encode_text(raw.tobytes()))


def test_real_genome_encodes_as_on_the_cpu(real_data):
    from seqsift.kernels.cuda import upload_and_encode

    reference = open_reference(real_data / "ecoli536.fa.gz")
    for record, length in enumerate(reference.lengths):
        raw = reference.read(record, 0, int(length))
        assert np.array_equal(upload_and_encode(raw).get(), encode_text(raw))


def test_gpu_worker_window_stays_on_the_device(tmp_path, monkeypatch):
    import cupy

    from seqsift.runtime import windows
    from seqsift.searching import task
    from seqsift.partitioning import plan_chunks

    rng = random.Random(1)
    text = "".join(rng.choice("ACGTacgtNRY") for _ in range(20_000))
    reference = open_reference(write_fasta(tmp_path / "ref.fa", [("r", text)]))
    chunk = plan_chunks(reference.lengths, 8000, 30, gap=1)[1].chunks[0]
    first = windows.read_chunk(reference, chunk, need_raw=True, on_device=True)
    assert isinstance(first.device, cupy.ndarray)
    window = text[chunk.read_start:chunk.owned_end].encode()
    assert first.device.get().tobytes() == window.translate(TEXT_CODE_TABLE)
    assert first.raw.tobytes() == window
    monkeypatch.setattr(windows, "_read_raw", lambda *args: pytest.fail("read again"))
    again = windows.read_chunk(reference, chunk, need_raw=True, on_device=True)
    assert again.device.data.ptr == first.device.data.ptr
