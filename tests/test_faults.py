"""Jobs that survive faults: a worker killed mid-job, a task failing once, an
interrupted job resumed, and bounded client memory on a job with millions of hits.

Every disturbed run must write exactly the file an undisturbed run writes.
"""
from __future__ import annotations

import os
import random
import signal
import time
import tracemalloc

import pandas as pd
import pytest
from distributed import Client

import fault_injection
import seqsift
from seqsift.cluster import local_cluster
from seqsift.searching.merge import OrderedMerger
from seqsift.errors import InputError
from seqsift.io.reference import open_reference
from test_engine import mutate, write_fasta

CHUNK = 1_000


@pytest.fixture(scope="module")
def genome(tmp_path_factory):
    rng = random.Random(5)
    guides = ["".join(rng.choice("ACGT") for _ in range(18)) for _ in range(6)]
    records = []
    for r in range(3):
        parts = []
        while sum(map(len, parts)) < 6_000 + 1_500 * r:
            parts.append("".join(rng.choice("ACGT") for _ in range(rng.randint(20, 200))))
            parts.append(mutate(rng, rng.choice(guides), rng.randint(0, 2)))
        records.append((f"chr{r + 1}", "".join(parts)))
    folder = tmp_path_factory.mktemp("faults")
    return write_fasta(folder / "ref.fa", records), [(f"g{i}", g) for i, g in enumerate(guides)]


@pytest.fixture
def fresh_client():
    """A cluster of its own: these tests kill its workers and patch their kernels."""
    cluster = local_cluster("cpu", workers=2)
    with Client(cluster) as client:
        yield client
    cluster.close()


def wait_until_idle(client, limit_s=60):
    deadline = time.monotonic() + limit_s
    while any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.05)


def undisturbed(genome, client, tmp_path):
    reference, guides = genome
    path = tmp_path / "undisturbed.tsv"
    seqsift.search(reference, guides, 2, metric="edit", client=client, output=path, chunk_size=CHUNK)
    return path.read_text()


def test_worker_killed_mid_job(genome, fresh_client, tmp_path, monkeypatch):
    expected = undisturbed(genome, fresh_client, tmp_path)
    reference, guides = genome
    fresh_client.run(fault_injection.slow_kernels, 0.2)
    killed = {}
    real_add_group = OrderedMerger.add_group

    def kill_a_busy_worker_once(self, group, rows):
        if not killed:
            busy = [address for address, keys in fresh_client.processing().items() if keys]
            assert busy, "the job should still have tasks in flight"
            pids = fresh_client.run(os.getpid, workers=[busy[0]])
            os.kill(pids[busy[0]], signal.SIGKILL)
            killed["address"] = busy[0]
        return real_add_group(self, group, rows)

    monkeypatch.setattr(OrderedMerger, "add_group", kill_a_busy_worker_once)
    out = tmp_path / "killed.tsv"
    seqsift.search(reference, guides, 2, metric="edit", client=fresh_client, output=out, chunk_size=CHUNK)
    assert killed, "no worker was killed: the test did not disturb the job"
    assert out.read_text() == expected


def test_only_worker_killed_mid_job(genome, tmp_path, monkeypatch):
    """A one-worker cluster (one GPU, say) whose worker dies: the nanny restarts it and Dask
    rebuilds what the job's tasks share, so the job still finishes with the same output."""
    cluster = local_cluster("cpu", workers=1)
    with Client(cluster) as client:
        test_worker_killed_mid_job(genome, client, tmp_path, monkeypatch)
    cluster.close()


def test_task_failing_once(genome, fresh_client, tmp_path):
    expected = undisturbed(genome, fresh_client, tmp_path)
    reference, guides = genome
    marker = tmp_path / "failed-once"
    fresh_client.run(fault_injection.fail_once, str(marker))
    out = tmp_path / "flaky.tsv"
    seqsift.search(reference, guides, 2, metric="edit", client=fresh_client, output=out, chunk_size=CHUNK)
    assert marker.exists(), "the planted fault never fired"
    assert out.read_text() == expected


def test_interrupted_job_resumes(genome, fresh_client, tmp_path):
    expected = undisturbed(genome, fresh_client, tmp_path)
    reference, guides = genome
    out = tmp_path / "resumed.tsv"
    store = tmp_path / ".resumed.tsv.seqsift-tasks"
    # First run: every window longer than one chunk core (all but each record's last, short
    # one) fails, but only once the client has begun saving a finished task (a short window's):
    # an event, not a delay, so a busy machine cannot reorder it.
    fresh_client.run(fault_injection.fail_past, CHUNK, str(tmp_path / "first.log"), str(store))
    with pytest.raises(Exception, match="planted fault"):
        seqsift.search(reference, guides, 2, metric="edit", client=fresh_client, output=out, chunk_size=CHUNK)
    assert not out.exists(), "a failed job must leave no output file"
    wait_until_idle(fresh_client)  # retries of the failed run may still be running
    saved = list(store.glob("task-*.arrow"))
    assert saved, "the first run saved no finished task"

    # A resume with other parameters is refused, and keeps the saved tasks.
    with pytest.raises(InputError, match="cannot resume"):
        seqsift.search(reference, guides, 1, metric="edit", client=fresh_client, output=out, resume=True)
    assert len(list(store.glob("task-*.arrow"))) == len(saved)

    log = tmp_path / "second.log"
    fresh_client.run(fault_injection.count_calls, str(log))
    seqsift.search(reference, guides, 2, metric="edit", client=fresh_client, output=out, resume=True)
    assert out.read_text() == expected
    assert not store.exists()
    # Every record is longer than a chunk, so each task is one chunk: one kernel call.
    total_tasks = sum(-(-int(n) // CHUNK) for n in open_reference(reference).lengths)
    calls = len(log.read_text().splitlines())
    assert calls == total_tasks - len(saved), (calls, total_tasks, len(saved))


def _client_peak_bytes(tmp_path, client, length):
    reference = tmp_path / f"polyA-{length}.fa"
    reference.write_text(">polyA\n" + "\n".join("A" * 80 for _ in range(length // 80)) + "\n")
    out = tmp_path / f"hits-{length}.tsv"
    tracemalloc.start()
    try:
        count = seqsift.search(str(reference), ["AAAAAAAAAAAA"], 0, strand="+", align=False, client=client,
                               output=out, chunk_size=40_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == length - 11
    starts = pd.read_csv(out, sep="\t", usecols=[1]).iloc[:, 0]
    assert len(starts) == count and starts.is_monotonic_increasing
    return peak


def test_client_memory_stays_bounded_with_millions_of_hits(tmp_path, client, monkeypatch):
    """Twice the hits must not take twice the client memory: rows stream through. The rows of tasks
    that finish before their turn wait in memory up to a budget (runtime.run.SPILL_ROWS), then on disk;
    a budget below both jobs' hits keeps the comparison about streaming, whatever order tasks end in."""
    from seqsift.runtime import run as runtime_run

    monkeypatch.setattr(runtime_run, "SPILL_ROWS", 50_000)
    small = _client_peak_bytes(tmp_path, client, 600_000)
    large = _client_peak_bytes(tmp_path, client, 1_200_000)
    assert large < 1.3 * small + 2e6, f"client peak grew from {small / 1e6:.1f} MB to {large / 1e6:.1f} MB"
