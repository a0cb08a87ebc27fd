"""The whole engine on dask-cuda workers gives the CPU backend's rows, and survives a killed
worker, a failing task and an interruption as on CPU workers (pytest -m gpu)."""
from __future__ import annotations

import pandas as pd
import pytest

import seqsift
import test_faults
from test_engine import adversarial_genome, engine_frame, write_fasta
from test_faults import genome  # noqa: F401 (a fixture)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda_client():
    from distributed import Client

    from seqsift.cluster import local_cluster

    cluster = local_cluster("cuda")
    with Client(cluster) as client:
        yield client
    cluster.close()


@pytest.mark.parametrize("metric,k", [("hamming", 2), ("edit", 2)])
def test_cuda_cluster_equals_cpu(tmp_path, cuda_client, client, metric, k):
    records, patterns = adversarial_genome(7)
    reference = write_fasta(tmp_path / "ref.fa", records)
    gpu = seqsift.search(reference, patterns, k, metric=metric, client=cuda_client, backend="cuda", chunk_size=300)
    cpu = seqsift.search(reference, patterns, k, metric=metric, client=client, backend="cpu", chunk_size=300)
    assert len(gpu) > 0
    pd.testing.assert_frame_equal(engine_frame(gpu), engine_frame(cpu))
    assert gpu["cigar"].tolist() == cpu["cigar"].tolist()


def test_auto_backend_uses_the_gpu_cluster(tmp_path):
    records, patterns = adversarial_genome(8)
    reference = write_fasta(tmp_path / "ref.fa", records)
    out = tmp_path / "hits.tsv"
    count = seqsift.search(reference, patterns, 1, output=out, verbose=True)  # starts a LocalCUDACluster
    assert count == len(pd.read_csv(out, sep="\t"))


# The fault tests of test_faults.py, with dask-cuda workers (one per GPU) running the kernels.

@pytest.fixture
def fresh_cuda_client():
    """A CUDA cluster of its own: these tests kill its workers and patch their kernels."""
    from distributed import Client

    from seqsift.cluster import local_cluster

    cluster = local_cluster("cuda")
    with Client(cluster) as client:
        yield client
    cluster.close()


def test_gpu_worker_killed_mid_job(genome, fresh_cuda_client, tmp_path, monkeypatch):
    test_faults.test_worker_killed_mid_job(genome, fresh_cuda_client, tmp_path, monkeypatch)


def test_gpu_task_failing_once(genome, fresh_cuda_client, tmp_path):
    test_faults.test_task_failing_once(genome, fresh_cuda_client, tmp_path)


def test_gpu_interrupted_job_resumes(genome, fresh_cuda_client, tmp_path):
    test_faults.test_interrupted_job_resumes(genome, fresh_cuda_client, tmp_path)
