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
import seqsift.searching
from console import run_seqsift
from seqsift.runtime.store import TaskStore
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
    """Run the job to the end but keep its task store, as an interrupted run would leave it
    (every task saved: the saver thread is let finish, as after a failure)."""
    reference, patterns = job_files
    monkeypatch.setattr(TaskStore, "remove", lambda self: self.tell_how_to_resume(lambda message: None))
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


def test_manifest_is_fsynced_before_it_is_renamed_into_place(tmp_path, monkeypatch):
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
    renames = [i for i, e in enumerate(events) if e[0] == "rename" and e[2] == str(directory / "manifest.json")]
    assert len(renames) == 1, events
    assert ("fsync", events[renames[0]][1]) in events[:renames[0]], "the manifest was renamed before it was synced"
    assert ("fsync", str(directory)) in events[renames[0]:], "the manifest's rename was not synced"
    assert [e[0] for e in events if e[0] == "rename" and "task-0-0." in e[2]] == ["rename"]
    assert TaskStore(directory, {"job": 1}, resume=True).load((0, 0))["end"].tolist() == [5]


def _saved_store(tmp_path, tasks=3):
    directory = tmp_path / ".hits.tsv.seqsift-tasks"
    store = TaskStore(directory, {"job": "one"}, resume=False)
    for batch in range(tasks):
        store.save((0, batch), pd.DataFrame({"record": [3] * 500, "end": list(range(7, 507))}))
    return directory, {int(p.name.split(".")[0].split("-")[2]): p for p in directory.glob("task-*.arrow")}


def test_task_files_a_power_loss_emptied_or_zero_filled_are_rerun(tmp_path):
    """Task files are renamed into place without an fsync: after a power loss a name may
    hold an empty or zero-filled body. Such a file is no saved task, whatever its size."""
    directory, files = _saved_store(tmp_path)
    body = files[1].read_bytes()
    middle = len(body) // 2
    zeroed = body[:middle - 64] + bytes(128) + body[middle + 64:]   # same size, part of a page zeroed
    assert zeroed != body
    files[1].write_bytes(zeroed)
    files[2].write_bytes(b"")
    notes = []
    store = TaskStore(directory, {"job": "one"}, resume=True, note=notes.append)
    assert store.saved() == {(0, 0)}
    assert store.load((0, 0))["end"].tolist() == list(range(7, 507))
    assert sorted(p.name for p in directory.glob("task-*")) == [files[0].name], "damaged files are deleted"
    assert notes == [f"2 saved task files in {directory} were damaged or not this job's: they run again"]


def test_a_task_file_renamed_to_another_task_or_stripped_of_its_hash_is_rerun(tmp_path):
    directory, files = _saved_store(tmp_path, tasks=2)
    checksum = files[0].name.split(".")[1]
    files[1].rename(directory / f"task-0-5.{checksum}.arrow")   # task 0-1's body under another key's name
    files[0].rename(directory / "task-0-0.arrow")                # no hash in the name: not trusted
    store = TaskStore(directory, {"job": "one"}, resume=True)
    assert store.saved() == set()


def test_save_soon_saves_on_the_saver_thread_and_raises_its_failure_in_the_client(tmp_path, monkeypatch):
    import errno

    import seqsift.runtime.store as store_module

    directory = tmp_path / "store"
    store = TaskStore(directory, {"job": 1}, resume=False)
    savers = []
    real_arrow_bytes = store_module.arrow_bytes

    def arrow_bytes(rows, metadata=None):
        import threading

        savers.append(threading.current_thread().name)
        if len(savers) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_arrow_bytes(rows, metadata)

    monkeypatch.setattr(store_module, "arrow_bytes", arrow_bytes)
    rows = pd.DataFrame({"record": [0, 0], "end": [5, 9]})
    store.save_soon((0, 0), rows)
    store.save_soon((1, 0), rows)
    with pytest.raises(OSError, match="No space left"):
        store.wait_saved()
    with pytest.raises(OSError, match="No space left"):
        store.save_soon((2, 0), rows)
    notes = []
    store.tell_how_to_resume(notes.append)
    assert savers == ["seqsift-task-saver"] * 2
    assert store.saved() == {(0, 0)} and notes and notes[0].startswith("1 finished tasks are saved")
    assert TaskStore(directory, {"job": 1}, resume=True).load((0, 0))["end"].tolist() == [5, 9]


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
    assert manifest["layout"]["chunk_size"] == CHUNK


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

    import seqsift.cluster

    monkeypatch.setattr(seqsift.cluster, "connect", cluster_failing_to_shut_down)  # what cluster.Connection enters
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


# -- early tasks past the spill budget come back from the store -------------------------

def test_early_tasks_past_the_budget_are_read_back_from_their_saved_files(tmp_path, monkeypatch):
    from seqsift.runtime.run import EarlyTasks
    from seqsift.runtime.store import SpillFolder

    store = TaskStore(tmp_path / "store", {"job": 1}, resume=False)
    spilled = []
    monkeypatch.setattr(SpillFolder, "write", lambda self, name, rows: spilled.append(name))
    early = EarlyTasks(spill_rows=10, store=store)
    first = pd.DataFrame({"record": [0] * 8, "end": list(range(8))})
    second = pd.DataFrame({"record": [1] * 5, "end": list(range(100, 105))})
    for key, rows in (((0, 0), first), ((1, 0), second)):
        store.save_soon(key, rows)
        early.put(key, rows)
    assert early.rows_in_memory == 8 and spilled == [], "the saved file is the copy on disk: none is written twice"
    pd.testing.assert_frame_equal(early.pop((1, 0)), second)
    pd.testing.assert_frame_equal(early.pop((0, 0)), first)
    store.remove()


def test_a_file_job_past_a_tiny_spill_budget_writes_the_same_output(job_files, client, tmp_path, monkeypatch,
                                                                     expected):
    import seqsift.runtime.run

    loads = []
    real_load = TaskStore.load
    monkeypatch.setattr(seqsift.runtime.run, "SPILL_ROWS", 5)
    monkeypatch.setattr(TaskStore, "load", lambda self, key: loads.append(key) or real_load(self, key))
    out = tmp_path / "hits.tsv"
    reference, patterns = job_files
    seqsift.search(reference, patterns, 2, metric="edit", client=client, output=str(out), chunk_size=CHUNK)
    assert loads, "no task waited on disk"
    assert out.read_text() == expected
    assert not TaskStore.directory_beside(out).exists()


@pytest.mark.parametrize("count", [0, 1, 3, 65_536, 65_537, 140_001])
def test_a_screens_names_digest_is_the_line_by_line_one(count):
    """sequences_sha256 of one column (the screen's names, joined as one text) equals the digest of one name
    per line, hashed line by line, and a second column joins each line's fields with a tab: a run saved by
    either resumes with the other."""
    import hashlib

    from seqsift.runtime.job import sequences_sha256

    names = tuple(f"read_{k}_é" if k % 7 else f"r{k}" for k in range(count))
    line_by_line = hashlib.sha256()
    for name in names:
        line_by_line.update((name + "\n").encode())
    assert sequences_sha256(names) == line_by_line.hexdigest()
    if count:
        assert sequences_sha256(names[:-1] + ("other",)) != sequences_sha256(names)
        paired = hashlib.sha256("".join(f"{name}\tACGT\n" for name in names).encode()).hexdigest()
        assert sequences_sha256(names, ["ACGT"] * count) == paired
