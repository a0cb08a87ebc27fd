"""Task threads in this process (cluster.TaskThreads): the one-GPU job's and the CPU crispr job's
"cluster", without Dask. Its own contract, and the three jobs run on it against their oracles."""
from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading

import pandas as pd
import pytest

import seqsift
from crispr_oracle import oracle_sites
from naive_search import expected_rows
from oracle import sw_affine_score
from seqsift.cluster import TaskThreads, as_completed, worker_count
from test_crispr import adversarial_genome as crispr_genome, as_rows
from test_engine import adversarial_genome, engine_frame, write_fasta


def test_results_come_back_as_they_finish_with_future_arguments_resolved():
    with TaskThreads(2) as pool:
        shared = pool.submit(lambda: {"offset": 100})
        futures = {pool.submit(lambda base, i: base["offset"] + i, shared, i): i for i in range(20)}
        got = {futures[f]: f.result() for f in as_completed(pool, futures)}
        assert got == {i: 100 + i for i in range(20)}
        assert pool.run(lambda: threading.current_thread().name) == {"this process": threading.current_thread().name}
        assert worker_count(pool) == 1


def test_a_failing_task_hands_its_error_to_its_future_and_the_others_run():
    def task(i):
        if i == 3:
            raise KeyError(f"task {i}")
        return i

    with TaskThreads(2) as pool:
        futures = [pool.submit(task, i) for i in range(6)]
        with pytest.raises(KeyError, match="task 3"):
            futures[3].result()
        assert [f.result() for i, f in enumerate(futures) if i != 3] == [0, 1, 2, 4, 5]


def test_a_task_whose_shared_argument_failed_fails_with_that_error():
    with TaskThreads(1) as pool:
        shared = pool.submit(lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            pool.submit(lambda value: value, shared).result()


def test_close_without_waiting_cancels_the_queue_and_leaves_the_running_task():
    """After Ctrl-C the job closes its threads without waiting: queued tasks never start, and the one
    under way (a long kernel) finishes on its own daemon thread."""
    started, release = threading.Event(), threading.Event()

    def long_task():
        started.set()
        release.wait()
        return "done"

    pool = TaskThreads(1)
    running = pool.submit(long_task)
    queued = [pool.submit(lambda: "never") for _ in range(3)]
    started.wait()
    pool.close(wait=False)
    assert all(f.cancelled() for f in queued)
    assert not running.done()
    assert all(worker.daemon for worker in pool._workers)
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(long_task)
    release.set()
    assert running.result() == "done"


@pytest.mark.parametrize("metric", ["hamming", "edit"])
def test_search_on_task_threads_matches_the_oracle(tmp_path, metric):
    records, patterns = adversarial_genome(4)
    reference = write_fasta(tmp_path / "ref.fa", records)
    with TaskThreads(2) as pool:
        got = seqsift.search(str(reference), patterns, 2, metric=metric, backend="cpu", client=pool, chunk_size=300)
    expected = expected_rows(records, patterns, 2, metric, "best")
    assert len(expected) > 10
    pd.testing.assert_frame_equal(engine_frame(got).reset_index(drop=True),
                                  engine_frame(expected).reset_index(drop=True), check_dtype=False)


def test_crispr_on_task_threads_matches_the_oracle(tmp_path):
    records, guides = crispr_genome()
    reference = write_fasta(tmp_path / "adv.fa", records, width=7)
    with TaskThreads(2) as pool:
        got = seqsift.crispr(str(reference), guides, pam="NGG", mismatches=2, dna_bulge=1, rna_bulge=1,
                             client=pool, chunk_size=9, backend="cpu")
    assert as_rows(got) == oracle_sites(records, guides, "NGG", 2, 3, 1, 1)


def test_screen_on_task_threads_matches_the_affine_oracle():
    rng = random.Random(8)
    queries = ["".join(rng.choice("ACGT") for _ in range(rng.randint(1, 40))) for _ in range(7)]
    targets = ["".join(rng.choice("ACGTN") for _ in range(rng.randint(1, 60))) for _ in range(5)]
    with TaskThreads(2) as pool:
        got = seqsift.screen(queries, targets, all_vs_all=True, gap_open=5, gap_extend=2, backend="cpu",
                             client=pool)
    expected = [[sw_affine_score(q, t, 2, 1, 5, 2) for t in targets] for q in queries]
    assert got.tolist() == expected


def _modules_after(code: str) -> list[str]:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code) +
                             "\nimport sys\nprint(sorted(m for m in ('distributed', 'dask') if m in sys.modules))"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return eval(result.stdout.strip().splitlines()[-1])


def test_a_cpu_crispr_job_in_this_process_never_imports_dask(tmp_path):
    """Its task threads are TaskThreads: distributed (0.5-1 s of imports) is not loaded at all."""
    reference = write_fasta(tmp_path / "ref.fa", [("r", "ACGTTGCAAGGCTAGGACGTACGTTGCAAGGCTCGG" * 20)])
    loaded = _modules_after(f"""
        import seqsift
        rows = seqsift.crispr({str(reference)!r}, [("g", "ACGTTGCAAGGCT")], pam="NGG", mismatches=1,
                              backend="cpu")
        assert len(rows) > 0
    """)
    assert loaded == []
