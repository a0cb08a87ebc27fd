"""Task threads of one process take turns at Numba's parallel regions (kernels.threads.PARALLEL_REGIONS).

Where neither OpenMP nor TBB is installed, Numba runs parallel regions on its ``workqueue`` threading
layer, which aborts the process (exit 134, "Concurrent access has been detected") when two threads run
regions at once. Two ways users met it: crispr on the CPU (task threads in one process) with more than
``SLICED_RECORDS`` small records per task, whose records two threads packed at once; and a search on
the CPU through the user's own Dask worker with two threads, one thread's search kernel beside the
other's locate. Each job runs here in a fresh process on that layer, against the same job run by one
thread.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

from console import seqsift_command

RECORDS, RECORD_BASES = 40_000, 100
"""Two tasks of 20,000 records at --chunk-size 1.5 Mbp: past kernels.encode.SLICED_RECORDS, so each task
packs its records in a Numba parallel region."""


def _genome_with_sites(path, guides: list[str]) -> int:
    """RECORDS random records; each guide + 'AGG' planted in 10 records with 0-3 mismatches. Returns the
    number planted."""
    rng = np.random.default_rng(27)
    letters = np.frombuffer(b"ACGT", np.uint8)
    bases = letters[rng.integers(0, 4, (RECORDS, RECORD_BASES))]
    planted = 0
    for g, guide in enumerate(guides):
        for copy in range(10):
            site = np.frombuffer((guide + "AGG").encode(), np.uint8).copy()
            for position in rng.choice(20, copy % 4, replace=False):
                site[position] = letters[(letters.tolist().index(site[position]) + 1) % 4]
            bases[(g * 10 + copy) * 397 % RECORDS, 30:53] = site
            planted += 1
    with open(path, "wb") as out:
        for i in range(RECORDS):
            out.write(b">r%d\n" % i + bases[i].tobytes() + b"\n")
    return planted


def _workqueue_environment(tmp_path) -> dict:
    return {**os.environ, "NUMBA_THREADING_LAYER": "workqueue", "SEQSIFT_CACHE": str(tmp_path / "cache")}


def test_crispr_task_threads_pack_many_records_on_the_workqueue_layer(tmp_path):
    guides = ["GACCTGATCGATTCAGGCTA", "TTGACCGATAGCCTAGGACT", "CAGTACGGATTACGACTTGA"]
    reference = tmp_path / "many.fa"
    planted = _genome_with_sites(reference, guides)
    (tmp_path / "guides.txt").write_text("\n".join(guides) + "\n")
    outputs = {}
    for workers in (2, 1):
        out = tmp_path / f"sites_{workers}.tsv"
        result = subprocess.run(seqsift_command("crispr", reference, tmp_path / "guides.txt", "-k", 3, "--backend",
                                                "cpu", "--workers", workers, "--chunk-size", 1_500_000,
                                                "--no-progress", "-o", out),
                                capture_output=True, text=True, timeout=600, env=_workqueue_environment(tmp_path))
        assert result.returncode == 0, (workers, result.returncode, result.stderr[-2000:])
        outputs[workers] = out.read_text()
    assert outputs[2] == outputs[1]
    assert len(outputs[2].splitlines()) >= planted


_THREADED_SEARCH = textwrap.dedent("""
    import sys
    if __name__ == "__main__":
        import seqsift
        from distributed import Client, LocalCluster
        reference, patterns, out = sys.argv[1:4]
        threads = int(sys.argv[4])
        with LocalCluster(n_workers=1, threads_per_worker=threads, processes=False) as cluster, \\
                Client(cluster) as client:
            hits = seqsift.search(reference, patterns, 2, metric="edit", backend="cpu", client=client,
                                  chunk_size=500_000)
        hits.sort_values(list(hits.columns)).to_csv(out, sep="\\t", index=False)
""")


def test_a_users_threaded_dask_worker_searches_on_the_workqueue_layer(tmp_path):
    reference = tmp_path / "many.fa"
    guides = ["GACCTGATCGATTCAGGCTA", "TTGACCGATAGCCTAGGACT"]
    _genome_with_sites(reference, guides)
    (tmp_path / "patterns.txt").write_text("\n".join(guides) + "\n")
    script = tmp_path / "threaded_search.py"
    script.write_text(_THREADED_SEARCH)
    outputs = {}
    for threads in (2, 1):
        out = tmp_path / f"hits_{threads}.tsv"
        result = subprocess.run([sys.executable, script, reference, tmp_path / "patterns.txt", out, str(threads)],
                                capture_output=True, text=True, timeout=600, env=_workqueue_environment(tmp_path))
        assert result.returncode == 0, (threads, result.returncode, result.stderr[-2000:])
        outputs[threads] = out.read_text()
    assert outputs[2] == outputs[1]
    # the sites planted with at most 2 mismatches (copies 0, 1, 2 of every 4): edit distance <= 2
    assert len(outputs[2].splitlines()) - 1 >= sum(1 for copy in range(10) if copy % 4 <= 2) * len(guides)
