"""The pipeline stays multi-worker (issue 17, goal 5): a job's tasks run on every worker."""
from __future__ import annotations

import random

from distributed import get_task_stream

import seqsift

from test_engine import write_fasta


def test_search_tasks_spread_over_every_worker(tmp_path, client):
    rng = random.Random(4)
    records = [(f"chr{i}", "".join(rng.choice("ACGT") for _ in range(60_000))) for i in range(4)]
    reference = write_fasta(tmp_path / "ref.fa", records)
    guides = [records[i][1][1000 * i:1000 * i + 20] for i in range(4)]
    with get_task_stream(client) as stream:
        hits = seqsift.search(reference, guides, 1, client=client, chunk_size=20_000)
    assert len(hits) >= len(guides)
    search_tasks = [t for t in stream.data if str(t["key"]).startswith("seqsift-search-")]
    workers = set(client.scheduler_info()["workers"])
    assert len(search_tasks) >= 12
    assert {t["worker"] for t in search_tasks} == workers, "some worker ran none of the job's tasks"
