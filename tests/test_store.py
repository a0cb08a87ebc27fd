"""The resume store and the end of a job: nothing a crash, a planted file or a failing
shutdown does may lose finished work or run foreign code."""
from __future__ import annotations

import json
import os
import pickle
from contextlib import contextmanager

import pandas as pd
import pytest

import seqsift
import seqsift.engine
from console import run_seqsift
from seqsift.engine.store import TaskStore
from test_faults import CHUNK, genome  # noqa: F401 (a fixture)
RUN = ("--workers", "1", "--backend", "cpu", "--no-progress", "--chunk-size", str(CHUNK))


@pytest.fixture(scope="module")
def job_files(genome, tmp_path_factory):
    """test_faults' genome (3 records of several chunks each) and its guides as a pattern file."""
    reference, guides = genome
    patterns = tmp_path_factory.mktemp("store") / "guides.tsv"
    patterns.write_text("".join(f"{name}\t{sequence}\n" for name, sequence in guides))
    return reference, str(patterns)


def search_keeping_the_store(job_files, client, output, k=2, monkeypatch=None):
    """Run the job to the end but keep its task store, as an interrupted run would leave it."""
    reference, patterns = job_files
    monkeypatch.setattr(TaskStore, "remove", lambda self: None)
    seqsift.search(reference, patterns, k, metric="edit", client=client, output=str(output), chunk_size=CHUNK)
    monkeypatch.undo()
    output.unlink()
    store = TaskStore.directory_beside(output)
    tasks = sorted(store.glob("task-*.arrow"))
    assert len(tasks) > 3, "the job should save one file per task"
    return store, tasks


@pytest.fixture(scope="module")
def expected(job_files, tmp_path_factory):
    """The output of an undisturbed run of the job through the console script."""
    out = tmp_path_factory.mktemp("expected") / "hits.tsv"
    result = run_seqsift("search", *job_files, "-k", "2", "--metric", "edit", "-o", out, *RUN)
    assert result.returncode == 0, result.stderr
    return out.read_text()


# -- item 5: the store on disk ----------------------------------------------------------

def test_resume_reruns_damaged_and_foreign_task_files(job_files, client, tmp_path, monkeypatch, expected):
    out = tmp_path / "hits.tsv"
    store, tasks = search_keeping_the_store(job_files, client, out, monkeypatch=monkeypatch)
    # Another job (k = 1) writing beside another output: its task 0-0 is not ours.
    other, other_tasks = search_keeping_the_store(job_files, client, tmp_path / "other.tsv", k=1,
                                                  monkeypatch=monkeypatch)
    (store / other_tasks[0].name).write_bytes(other_tasks[0].read_bytes())
    truncated = tasks[-1]
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    result = run_seqsift("search", *job_files, "-k", "2", "--metric", "edit", "-o", out, "--resume", *RUN)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "2 saved task files" in result.stderr and "run again" in result.stderr
    assert out.read_text() == expected
    assert not store.exists()


class _Planted:
    """A pickle that, when loaded, leaves a marker file: code run from beside the user's output."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_planted_pickle_is_never_loaded(tmp_path):
    fingerprint = {"job": "the same job"}
    directory = tmp_path / ".hits.tsv.seqsift-tasks"
    TaskStore(directory, fingerprint, resume=False)
    marker = tmp_path / "code-ran"
    for name in ("task-0-0.pkl", "task-0-0.arrow"):
        (directory / name).write_bytes(pickle.dumps(_Planted(str(marker))))
    store = TaskStore(directory, fingerprint, resume=True)
    assert store.saved() == set(), "a file that is not an Arrow task file of this job is no saved task"
    assert not marker.exists()


def test_manifest_and_tasks_are_fsynced_before_they_are_renamed_into_place(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(source, target):
        events.append(("rename", str(source), str(target)))
        return real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    directory = tmp_path / "store"
    store = TaskStore(directory, {"job": 1}, resume=False)
    store.save((0, 0), pd.DataFrame({"record": [0], "end": [5]}))
    for name in ("manifest.json", "task-0-0.arrow"):
        renames = [i for i, e in enumerate(events) if e[0] == "rename" and e[2] == str(directory / name)]
        assert len(renames) == 1, (name, events)
        temporary = events[renames[0]][1]
        assert ("fsync", temporary) in events[:renames[0]], f"{name} renamed before its data was synced"
        assert ("fsync", str(directory)) in events[renames[0]:], f"{name}'s rename was not synced"
    assert TaskStore(directory, {"job": 1}, resume=True).load((0, 0))["end"].tolist() == [5]


def test_truncated_manifest_means_start_over_with_a_note(job_files, client, tmp_path, monkeypatch, expected):
    out = tmp_path / "hits.tsv"
    store, _ = search_keeping_the_store(job_files, client, out, monkeypatch=monkeypatch)
    manifest = store / "manifest.json"
    manifest.write_text(manifest.read_text()[:20])
    result = run_seqsift("search", *job_files, "-k", "2", "--metric", "edit", "-o", out, "--resume", *RUN)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "manifest.json is damaged" in result.stderr and "running the whole job" in result.stderr
    assert out.read_text() == expected


def test_a_new_run_says_it_discards_an_interrupted_runs_tasks(job_files, client, tmp_path, monkeypatch, expected):
    out = tmp_path / "hits.tsv"
    store, tasks = search_keeping_the_store(job_files, client, out, monkeypatch=monkeypatch)
    result = run_seqsift("search", *job_files, "-k", "2", "--metric", "edit", "-o", out, *RUN)
    assert result.returncode == 0, result.stderr
    assert (f"seqsift: note: discarding {len(tasks)} saved tasks of an earlier interrupted run in {store} "
            "(run with --resume to continue that run instead)") in result.stderr
    assert out.read_text() == expected


def test_saved_tasks_carry_the_jobs_fingerprint(job_files, client, tmp_path, monkeypatch):
    import pyarrow as pa

    out = tmp_path / "hits.tsv"
    store, tasks = search_keeping_the_store(job_files, client, out, monkeypatch=monkeypatch)
    manifest = json.loads((store / "manifest.json").read_text())
    digests = {pa.ipc.open_file(pa.BufferReader(t.read_bytes())).schema.metadata[b"seqsift-job"] for t in tasks}
    assert len(digests) == 1 and len(digests.pop()) == 64
    assert manifest["chunk_size"] == CHUNK


# -- item 4: the end of a job -----------------------------------------------------------

def test_output_survives_a_failing_cluster_shutdown(job_files, client, tmp_path, monkeypatch, capsys, expected):
    """Order: output renamed into place, then the store removed, then the cluster shut down,
    whose failure is only a note once the hits are written."""
    out = tmp_path / "hits.tsv"
    store = TaskStore.directory_beside(out)
    seen_at_shutdown = {}

    @contextmanager
    def cluster_failing_to_shut_down(*args, **kwargs):
        yield client
        seen_at_shutdown.update(output=out.exists(), store=store.exists())
        raise RuntimeError("planted fault: the cluster failed to shut down")

    monkeypatch.setattr(seqsift.engine, "connect", cluster_failing_to_shut_down)
    reference, patterns = job_files
    count = seqsift.search(reference, patterns, 2, metric="edit", output=str(out), chunk_size=CHUNK)
    assert seen_at_shutdown == {"output": True, "store": False}
    assert count == len(expected.splitlines()) - 1 and out.read_text() == expected
    assert "shutting down its cluster failed" in capsys.readouterr().err


def test_store_is_removed_only_once_the_output_is_in_place(job_files, client, tmp_path, monkeypatch, expected):
    out = tmp_path / "hits.tsv"
    seen_at_removal = {}
    real_remove = TaskStore.remove

    def remove(self):
        seen_at_removal["output"] = out.read_text() if out.exists() else None
        real_remove(self)

    monkeypatch.setattr(TaskStore, "remove", remove)
    reference, patterns = job_files
    seqsift.search(reference, patterns, 2, metric="edit", output=str(out), chunk_size=CHUNK, client=client)
    assert seen_at_removal["output"] == expected
