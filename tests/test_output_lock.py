"""Two jobs on one output file: the second stops with one line naming the first, or waits for it."""
from __future__ import annotations

import os
import socket
import subprocess

import pandas as pd
import pytest

from console import one_line_error, run_seqsift, seqsift_command, write_job_inputs
from naive_search import expected_rows
from seqsift.runtime.lock import OutputLock, lock_path_for
from seqsift.errors import InputError

GENOME = "ACGTTGCAAGGCTAGCTAGGATCCATGCAAATTTGGGCCCATATATCGCGATTACAGGATCCATGAAACCC"
PATTERNS = [("site1", "GGATCCATG"), ("site2", "TTTGGGCCC")]
RUN = ("--workers", "1", "--backend", "cpu", "--no-progress")


@pytest.fixture
def inputs(tmp_path):
    return write_job_inputs(tmp_path, GENOME, PATTERNS)


def test_second_job_on_a_busy_output_stops_with_one_line_naming_the_first(inputs, tmp_path):
    reference, patterns = inputs
    out = tmp_path / "hits.tsv"
    out.write_text("the running job's earlier result\n")
    store = tmp_path / ".hits.tsv.seqsift-tasks"
    store.mkdir()
    (store / "task-0-0.arrow").write_bytes(b"the running job's saved task")
    with OutputLock(out):   # this test process is "the running job"
        result = run_seqsift("search", reference, patterns, "-k", "1", "-o", out, *RUN)
        one_line_error(result, str(out), "another seqsift job", f"pid {os.getpid()} on {socket.gethostname()}",
                       "--wait-for-lock")
        # Nothing of the running job's was touched: its output, its saved tasks, its lock.
        assert out.read_text() == "the running job's earlier result\n"
        assert (store / "task-0-0.arrow").read_bytes() == b"the running job's saved task"
        assert lock_path_for(out).exists()
    assert not lock_path_for(out).exists(), "the lock file goes with its holder"


def test_wait_for_lock_runs_once_the_first_job_is_done(inputs, tmp_path):
    reference, patterns = inputs
    out = tmp_path / "hits.tsv"
    holder = OutputLock(out)
    waiting = subprocess.Popen(seqsift_command("search", reference, patterns, "-k", "1", "-o", out,
                                               "--wait-for-lock", *RUN),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in waiting.stderr:   # the event: the second job says it waits
            seen.append(line)
            if "waiting for another seqsift job" in line:
                break
        assert seen and f"pid {os.getpid()}" in seen[-1], seen
        assert waiting.poll() is None and not out.exists()
    finally:
        holder.release()
    _, rest = waiting.communicate(timeout=300)
    assert waiting.returncode == 0, "".join(seen) + rest
    got = pd.read_csv(out, sep="\t")[["record", "start", "end", "pattern", "distance", "strand"]]
    assert got.values.tolist() == expected_rows([("chrA", GENOME)], PATTERNS, 1, "hamming").values.tolist()
    assert not lock_path_for(out).exists()


def test_lock_separates_two_jobs_in_one_process(tmp_path):
    out = tmp_path / "hits.parquet"
    with OutputLock(out):
        with pytest.raises(InputError, match="another seqsift job is writing this output"):
            OutputLock(out)
    with OutputLock(out):   # released: free again
        pass


def test_python_api_refuses_a_busy_output(tmp_path, client):
    import seqsift

    reference = tmp_path / "ref.fa"
    reference.write_text(">chrA\n" + GENOME + "\n")
    out = f"{tmp_path}/hits_dataset/"
    with OutputLock(out):
        with pytest.raises(InputError, match="another seqsift job"):
            seqsift.search(str(reference), ["GGATCCATG"], 1, output=out, client=client)
    assert not (tmp_path / "hits_dataset").exists()
