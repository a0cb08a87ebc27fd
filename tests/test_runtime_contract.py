"""The runtime's contract, tested once for all three jobs (search, crispr, screen).

Every job runs through ``seqsift.runtime.run.JobRun``; whatever the job, a user
can count on the same things:

* an interrupted job resumes (``resume=True``) to exactly the output of an
  undisturbed run, rerunning only the tasks it had not saved, with the task
  sizes it ran with even when the resumed command names none (issue 28's
  crispr bug: the manifest held the requested sizes, None, not the resolved);
* one job at a time per output: a second one stops with one line naming the
  first, and leaves no ``.part`` file;
* a job that fails or is interrupted leaves the target as it was, and no
  ``.part`` file;
* under a small memory budget the rows of tasks that finished early wait on
  disk, and the output is the same.

The jobs run in this process on the session's CPU cluster (``client``); the
interruption is a KeyboardInterrupt raised in the client's loop after a few
tasks have come back (what Ctrl-C does there).
"""
from __future__ import annotations

import random

import pandas as pd
import pytest

import seqsift
from seqsift.errors import InputError
from seqsift.runtime import run as runtime_run
from seqsift.runtime.lock import OutputLock

from test_engine import write_fasta

JOBS = ("search", "crispr", "screen")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("contract")
    rng = random.Random(28)
    records = [(f"chr{i}", "".join(rng.choice("ACGT") for _ in range(length)))
               for i, length in enumerate((9_000, 4_000, 12_000, 700, 6_000))]
    reference = write_fasta(folder / "ref.fa", records)
    genome = "".join(sequence for _, sequence in records)
    patterns = [(f"p{i}", genome[s:s + 16]) for i, s in enumerate(range(50, len(genome) - 20, 1_500))]
    guides = []
    for i in range(6):  # 20-nt guides that sit before a GG somewhere, so every guide has sites
        at = genome.find("GG", 200 + 4_000 * i)
        guides.append((f"g{i}", genome[at - 21:at - 1]))
    reads = [(f"q{i}", "".join(rng.choice("ACGT") for _ in range(rng.randint(30, 90)))) for i in range(40)]
    targets = [(f"t{i}", genome[300 * i:300 * i + 200]) for i in range(30)]
    return {"reference": str(reference), "patterns": patterns, "guides": guides, "reads": reads, "targets": targets}


def run_job(job: str, inputs: dict, client, **options):
    """One of the three jobs, cut into many small tasks, with ``options`` (output, resume, ...)."""
    if job == "search":
        options.setdefault("chunk_size", 2_000)
        options.setdefault("pattern_batch_size", 7)
        return seqsift.search(inputs["reference"], inputs["patterns"], 2, metric="edit", backend="cpu",
                              client=client, **options)
    if job == "crispr":
        options.setdefault("chunk_size", 2_000)
        options.setdefault("guide_batch_size", 2)
        return seqsift.crispr(inputs["reference"], inputs["guides"], "NGG", 4, dna_bulge=1, backend="cpu",
                              client=client, **options)
    options.setdefault("batch_pairs", 64)
    return seqsift.screen(inputs["reads"], inputs["targets"], threshold=20, all_vs_all=True, backend="cpu",
                          client=client, strand="both", **options)


def interrupt_after(monkeypatch, tasks: int) -> None:
    """Ctrl-C in the client once ``tasks`` task results have arrived (they are saved first)."""
    real_put = runtime_run.EarlyTasks.put
    arrived = []

    def put(self, key, rows, due=False):
        real_put(self, key, rows, due)
        arrived.append(key)
        if len(arrived) == tasks:
            raise KeyboardInterrupt

    monkeypatch.setattr(runtime_run.EarlyTasks, "put", put)


def count_submitted(monkeypatch) -> list[int]:
    submitted = []
    real_submit = runtime_run.submit_tasks

    def submit(client, job, plan, saved):
        futures = real_submit(client, job, plan, saved)
        submitted.append(len(futures))
        return futures

    monkeypatch.setattr(runtime_run, "submit_tasks", submit)
    return submitted


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part") or ".part" in p.name)


@pytest.mark.parametrize("job", JOBS)
def test_an_interrupted_job_resumes_to_the_same_output_running_only_the_rest(job, inputs, client, tmp_path,
                                                                            monkeypatch):
    submitted = count_submitted(monkeypatch)
    clean = tmp_path / "clean.tsv"
    run_job(job, inputs, client, output=str(clean))
    every_task = submitted[0]
    out = tmp_path / "hits.tsv"
    real_put = runtime_run.EarlyTasks.put
    interrupt_after(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        run_job(job, inputs, client, output=str(out))
    monkeypatch.setattr(runtime_run.EarlyTasks, "put", real_put)
    assert not out.exists() and leftovers(tmp_path) == []
    # Resumed with no task sizes at all: the saved layout is the one that runs.
    sizes = {"search": ("chunk_size", "pattern_batch_size"), "crispr": ("chunk_size", "guide_batch_size"),
             "screen": ("batch_pairs",)}[job]
    rows = run_job(job, inputs, client, output=str(out), resume=True, **{size: None for size in sizes})
    assert out.read_text() == clean.read_text()
    assert rows == clean.read_text().count("\n") - 1 > 0
    assert 0 < submitted[-1] <= every_task - 3  # the resumed run ran the rest only


@pytest.mark.parametrize("job", JOBS)
def test_a_second_job_on_a_locked_output_stops_with_one_line_and_leaves_nothing(job, inputs, client, tmp_path):
    out = tmp_path / "hits.tsv"
    out.write_text("the first job's\n")
    holder = OutputLock(str(out))
    try:
        with pytest.raises(InputError) as refused:
            run_job(job, inputs, client, output=str(out))
    finally:
        holder.release()
    assert "another seqsift job is writing this output" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert out.read_text() == "the first job's\n" and leftovers(tmp_path) == []


@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize("output_name", ["hits.tsv", "hits.parquet", "folder/"])
def test_an_interrupted_job_leaves_the_target_as_it_was(job, output_name, inputs, client, tmp_path, monkeypatch):
    if output_name == "folder/":
        (tmp_path / "folder").mkdir()
        out = str(tmp_path / "folder") + "/"
    else:
        (tmp_path / output_name).write_text("before\n")
        out = str(tmp_path / output_name)
    interrupt_after(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        run_job(job, inputs, client, output=out)
    if output_name == "folder/":
        assert list((tmp_path / "folder").iterdir()) == []
    else:
        assert (tmp_path / output_name).read_text() == "before\n"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("job", JOBS)
def test_rows_wait_on_disk_under_a_small_budget_and_the_output_is_the_same(job, inputs, client, monkeypatch):
    expected = run_job(job, inputs, client)
    spilled = []
    from seqsift.runtime.store import SpillFolder

    real_write = SpillFolder.write

    def write(self, name, rows):
        spilled.append(name)
        return real_write(self, name, rows)

    real_as_completed = runtime_run.as_completed

    def last_first(client, futures):
        """Every result handed over in reverse order of submission, once all are in: each task but the
        last arrives before its turn, whatever order the workers finished them in."""
        submitted = list(futures)
        for _ in real_as_completed(client, submitted):
            pass
        return iter(reversed(submitted))

    monkeypatch.setattr(SpillFolder, "write", write)
    monkeypatch.setattr(runtime_run, "SPILL_ROWS", 1)
    monkeypatch.setattr(runtime_run, "as_completed", last_first)
    got = run_job(job, inputs, client)
    if job == "screen":  # unordered: each unit goes to the collector as it completes, nothing waits
        assert spilled == []
    else:   # ordered: all but the last task's rows waited, past the budget of 1 row, on disk
        assert spilled, "tasks that finished before their turn should have waited on disk"
    pd.testing.assert_frame_equal(got, expected)
