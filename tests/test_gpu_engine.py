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


@pytest.mark.parametrize("metric,algorithm", [("edit", "edit-myers"), ("hamming", "hamming-packed")])
def test_task_threads_search_on_streams_of_their_own(tmp_path, metric, algorithm, monkeypatch):
    """Two task threads at once, each on its own non-default stream and sharing the batch's device
    arrays (built by whichever thread came first), give the rows one thread gives on its own."""
    import threading

    import cupy

    from seqsift import kernels
    from seqsift.searching.job import SearchJob
    from seqsift.searching.task import run_task
    from seqsift.io.reference import open_reference
    from seqsift.partitioning import plan_chunks
    from seqsift.pattern_set import PatternSet

    records, patterns = adversarial_genome(9)
    reference = open_reference(write_fasta(tmp_path / "ref.fa", records))
    names, sequences = zip(*patterns)

    def job_of(pattern_set):
        return SearchJob(reference=reference, patterns=pattern_set, metric=metric, k=2, mode="best",
                         strand="both", algorithm=algorithm, backend="cuda", align=True)

    groups = job_of(PatternSet(names, sequences)).groups(200)
    alone = [run_task(job_of(PatternSet(names, sequences)), group, range(len(patterns))) for group in groups]
    assert sum(len(rows) for rows in alone) > 0

    streams = set()
    real_find_ends = kernels.find_ends

    def find_ends_noting_the_stream(*args, **kwargs):
        streams.add((threading.current_thread().name, cupy.cuda.get_current_stream().ptr))
        return real_find_ends(*args, **kwargs)

    monkeypatch.setattr(kernels, "find_ends", find_ends_noting_the_stream)
    shared_job = job_of(PatternSet(names, sequences))  # a fresh batch: its device arrays are built in the race
    together = [None] * len(groups)
    start = threading.Barrier(2)

    def work(first: int) -> None:
        start.wait()
        for index in range(first, len(groups), 2):
            together[index] = run_task(shared_job, groups[index], range(len(patterns)))

    threads = [threading.Thread(target=work, args=(first,), name=f"task-{first}") for first in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for expected, got in zip(alone, together):
        pd.testing.assert_frame_equal(expected, got)
    assert {name for name, _ in streams} == {"task-0", "task-1"}
    assert 0 not in {pointer for _, pointer in streams}  # never the legacy default stream
    assert len({pointer for _, pointer in streams}) == 2
