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


CONTEXT_CUPY_USES = """
import ctypes, json
from seqsift.kernels.cuda import open_context

opened = open_context()
libcuda = ctypes.CDLL("libcuda.so.1")
device, primary, current = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
libcuda.cuDeviceGet(ctypes.byref(device), 0)
libcuda.cuDevicePrimaryCtxRetain(ctypes.byref(primary), device)
import cupy
cupy.arange(5).sum().get()
libcuda.cuCtxGetCurrent(ctypes.byref(current))
print(json.dumps({"opened": opened, "same": current.value == primary.value, "primary": bool(primary.value)}))
"""


def test_the_context_opened_beside_cupys_import_is_the_one_cupy_runs_in():
    """open_context (prepare_device's thread) makes device 0's primary context through libcuda; CuPy's
    first device call then runs in that very context, so the driver's work done ahead is not redone."""
    import json
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", CONTEXT_CUPY_USES], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"opened": True, "same": True, "primary": True}


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


def test_a_one_gpu_command_runs_on_task_threads_without_dask(tmp_path):
    """The ``seqsift`` command on one GPU (this machine's, when it has one alone): search and crispr run
    on task threads in the process (cluster.TaskThreads), with hits, and never import Dask."""
    import os
    import subprocess
    import sys

    from seqsift.cluster import count_gpus

    if count_gpus() != 1 and "CUDA_VISIBLE_DEVICES" not in os.environ:
        pytest.skip("one GPU visible is the in-process case")
    rng = random.Random(3)
    genome = "".join(rng.choice("ACGT") for _ in range(30_000))
    reference = write_fasta(tmp_path / "ref.fa", [("r1", genome[:20_000]), ("r2", genome[20_000:])])
    guide = genome[1_000:1_020]
    (tmp_path / "guides.txt").write_text(guide + "\n")
    checks = []
    for argv in (["search", str(reference), str(tmp_path / "guides.txt"), "-k", "2", "--metric", "edit",
                  "-o", str(tmp_path / "hits.tsv")],
                 ["crispr", str(reference), str(tmp_path / "guides.txt"), "--pam", "NNN", "-k", "2",
                  "-o", str(tmp_path / "sites.tsv")]):
        code = ("import sys\nfrom seqsift import cli\ncode = cli.main(sys.argv[1:])\n"
                "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))\nsys.exit(code)")
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=os.environ.get("CUDA_VISIBLE_DEVICES", "0"))
        result = subprocess.run([sys.executable, "-c", code, *argv, "--backend", "cuda", "--no-progress"],
                                capture_output=True, text=True, env=env, timeout=600)
        assert result.returncode == 0, result.stderr
        checks.append(result.stdout.strip().splitlines()[-1])
    assert checks == ["[]", "[]"]
    header, *hits = (tmp_path / "hits.tsv").read_text().splitlines()
    start = header.split("\t").index("start")
    assert any(line.split("\t")[start] == "1000" for line in hits), hits[:3]  # the guide's own place, 0-based
    assert len((tmp_path / "sites.tsv").read_text().splitlines()) > 1
