"""Clusters: joining a running one by scheduler file, and workers that keep what they read."""
from __future__ import annotations

import subprocess
import sys

import pandas as pd
from distributed import Client

import fault_injection
import seqsift
from seqsift.cluster import local_cluster
from test_engine import adversarial_genome, engine_frame, write_fasta


def test_second_pattern_set_does_not_reread_the_reference(tmp_path):
    records, patterns = adversarial_genome(4)
    reference = write_fasta(tmp_path / "ref.fa", records)
    cluster = local_cluster("cpu", workers=1)
    try:
        with Client(cluster) as client:
            # The first pattern set has the longest pattern: its chunks read the longest halo.
            seqsift.search(reference, patterns[:2], 1, client=client, chunk_size=200)
            log = tmp_path / "reads.log"
            client.run(fault_injection.count_reads, str(log))
            again = seqsift.search(reference, patterns[2:], 1, client=client, chunk_size=200)
            assert not log.exists(), "the worker read the FASTA again"
            # The cached windows give the same hits as a cold read.
            cold = seqsift.search(reference, patterns[2:], 1, client=client, chunk_size=201)
            assert log.exists()
            pd.testing.assert_frame_equal(engine_frame(again), engine_frame(cold))
    finally:
        cluster.close()


def test_cli_joins_a_running_cluster_by_scheduler_file(tmp_path, client):
    records, patterns = adversarial_genome(5)
    reference = write_fasta(tmp_path / "ref.fa", records)
    scheduler_file = tmp_path / "scheduler.json"
    client.write_scheduler_file(str(scheduler_file))
    out = tmp_path / "hits.tsv"
    result = subprocess.run([sys.executable, "-m", "seqsift", "search", reference, "GGATCCATG", "-k", "1",
                             "--scheduler-file", str(scheduler_file), "--backend", "cpu", "-o", str(out)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    expected = seqsift.search(reference, ["GGATCCATG"], 1, client=client)
    got = pd.read_csv(out, sep="\t").rename(columns={"#record": "record"})
    assert got["start"].tolist() == expected["start"].tolist() and len(got) > 0
    assert client.scheduler_info()["workers"], "the CLI must leave a cluster it joined running"
