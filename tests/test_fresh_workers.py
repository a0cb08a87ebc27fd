"""The installed console script on a fresh install: an empty Numba cache, default workers.

A kernel compiled for the first time inside a worker process once crashed the
job (issue 14, item 1): the local cluster passed ``NUMBA_NUM_THREADS`` to
workers that had already started Numba's thread pool. ``python -m seqsift``
and in-process tests did not show it; only the console script, in a fresh
process with nothing compiled yet, did. So these tests run exactly that, once
per distinct CPU kernel, and check the hits against the naive oracle.
"""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from seqsift.kernels import ALGORITHMS, search_algorithms

from naive_search import expected_rows
from test_engine import CORE_COLUMNS, adversarial_genome, write_fasta


def _one_algorithm_per_cpu_kernel() -> list[str]:
    """The first search algorithm name for each distinct CPU kernel (several share the plain scan)."""
    seen, names = set(), []
    for name, algorithm in ALGORITHMS.items():
        if name not in search_algorithms():
            continue
        kernel = algorithm.backends.get("cpu")
        if kernel is not None and kernel not in seen and "dna" in algorithm.alphabets:
            seen.add(kernel)
            names.append(name)
    return names


def _console_script() -> str:
    path = shutil.which("seqsift")
    if path is None:
        pytest.skip("the seqsift console script is not installed (pip install .)")
    return path


def _fresh_environment(tmp_path, monkeypatch) -> None:
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache))
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    monkeypatch.delenv("SEQSIFT_NUMBA_THREADS", raising=False)


@pytest.mark.parametrize("algorithm", _one_algorithm_per_cpu_kernel())
def test_console_script_with_an_empty_numba_cache(tmp_path, monkeypatch, algorithm):
    _fresh_environment(tmp_path, monkeypatch)
    records, patterns = adversarial_genome(3)
    reference = write_fasta(tmp_path / "ref.fa", records)
    spec = ALGORITHMS[algorithm]
    metric = "edit" if spec.serves("edit") and not spec.serves("hamming") else "hamming"
    k = 0 if spec.max_k == 0 else 1
    pattern = patterns[1][1]
    out = tmp_path / "hits.tsv"
    result = subprocess.run([_console_script(), "search", reference, pattern, "-k", str(k), "--metric", metric,
                             "--algorithm", algorithm, "--backend", "cpu", "--no-align", "-o", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    got = pd.read_csv(out, sep="\t", comment=None).rename(columns={"#record": "record"})
    expected = expected_rows(records, [("cli_1", pattern)], k, metric)
    assert len(expected) > 0
    np.testing.assert_array_equal(got[CORE_COLUMNS].to_numpy(), expected[CORE_COLUMNS].to_numpy())


def test_console_script_screen_with_an_empty_numba_cache(tmp_path, monkeypatch):
    _fresh_environment(tmp_path, monkeypatch)
    queries = tmp_path / "q.fa"
    targets = tmp_path / "t.fa"
    queries.write_text(">q1\nACGTTGCAAGGCTAC\n>q2\nGGATCCATGGGATCC\n")
    targets.write_text(">t1\nTTACGTTGCTAGGCTACTT\n>t2\nCCCCCCCCCC\n")
    result = subprocess.run([_console_script(), "screen", str(queries), str(targets), "--backend", "cpu"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    scores = pd.read_csv(pd.io.common.StringIO(result.stdout), sep="\t", comment=None)["score"].tolist()
    pairs = [("ACGTTGCAAGGCTAC", "TTACGTTGCTAGGCTACTT"), ("GGATCCATGGGATCC", "CCCCCCCCCC")]
    assert scores == [_local_alignment_score(x, y) for x, y in pairs]


def _local_alignment_score(x: str, y: str, match=2, mismatch=1, gap=1) -> int:
    """Smith-Waterman with linear gaps, the screen's default scores, by the textbook recurrence."""
    best, previous = 0, [0] * (len(y) + 1)
    for a in x:
        current = [0]
        for j, b in enumerate(y, 1):
            diagonal = previous[j - 1] + (match if a == b else -mismatch)
            current.append(max(0, diagonal, previous[j] - gap, current[j - 1] - gap))
        best, previous = max(best, *current), current
    return best


def test_worker_threads_take_their_share_of_the_cores():
    """Each local CPU worker's tasks run Numba on cores // workers threads."""
    import numba
    from distributed import Client

    from seqsift.cluster import NUMBA_THREADS_VARIABLE, cpu_cores, local_cluster
    from seqsift.kernels.threads import SHARE_VARIABLE, use_worker_share

    assert NUMBA_THREADS_VARIABLE == SHARE_VARIABLE

    def threads_in_a_task():
        use_worker_share()
        return numba.get_num_threads()

    cluster = local_cluster("cpu", workers=2)
    try:
        with Client(cluster) as client:
            counts = [client.submit(threads_in_a_task, pure=False).result() for _ in range(4)]
    finally:
        cluster.close()
    assert set(counts) == {max(1, min(cpu_cores() // 2, numba.config.NUMBA_NUM_THREADS))}
