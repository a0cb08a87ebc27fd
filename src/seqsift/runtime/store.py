"""Per-task results on disk, so that an interrupted job can be resumed.

When a search writes to a file, each finished task's rows are saved in a
folder beside it (``hits.tsv`` -> ``.hits.tsv.seqsift-tasks/``) before the
merge uses them. ``resume=True`` (``--resume``) reuses the saved tasks of an
interrupted job and runs only the rest; the folder is removed once the output
file is complete. The job holds the output's lock (``lock.py``) the whole
time, so no other job reads, writes or deletes the folder meanwhile.

A folder written by a different job must never be mixed in: its
``manifest.json`` holds the job's fingerprint (runtime.job: its inputs by
path, size and mtime or by hash, its parameters, and the task layout it
resolved, e.g. chunk size and pattern batch size). A resume whose fingerprint
differs is refused. Every task file carries the fingerprint's digest too,
and is checked against it when the job opens the folder.

What is on disk must survive a crash at any instant and never be trusted
blindly:

* the manifest is written to a temporary name, fsynced, and renamed into
  place (then the folder is fsynced): it is whole or absent, and it is on
  disk before any task file is written;
* a task file is written to a temporary name and renamed into place, without
  an fsync: a process that dies (Ctrl-C, a kill, running out of memory)
  leaves the file whole, as the kernel still holds its pages, but a machine
  that loses power may keep the new name with an empty, truncated or
  zero-filled body. So the name carries a SHA-256 of the body, keyed with the
  job's fingerprint digest and the task's key (``task-G-B.<sha256>.arrow``),
  and a task file whose body does not hash to its name is damaged or not
  this job's: it is deleted and its task runs again. One fsync per job
  instead of two per task (they were most of the client's time per task);
  what a crash can cost is the rerun of the tasks it damaged;
* tasks are Arrow IPC files (data only: loading one runs no code, unlike a
  pickle planted beside someone's output), stamped in their schema metadata
  with the job's digest and their key as well;
* a manifest that cannot be read means there is nothing to resume, and the
  job starts over, saying so.

Saving need not hold up the client: :meth:`TaskStore.save_soon` hands a
task's rows to a saver thread (hashing, Arrow's IPC writer and the file
write release the GIL) while the client merges the same rows from memory; a
task whose file was not yet written when the job died simply runs again.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from .background import BackgroundWrites

if TYPE_CHECKING:  # tasks' rows are frames; pandas itself loads with the job's first rows, not before its tasks
    import pandas as pd

MANIFEST = "manifest.json"
TASK_FILE = re.compile(r"task-(\d+)-(\d+)(?:\.([0-9a-f]{64}))?\.arrow")
"""A task file's name: ``task-G-B.<sha256 of its body>.arrow`` (a name without the hash is not trusted)."""
_DIGEST_KEY = b"seqsift-job"
_TASK_KEY = b"seqsift-task"
SAVE_QUEUE = 4
"""Tasks handed to the saver thread that may wait for it; past this, ``save_soon`` waits (memory stays bounded)."""


def fingerprint_digest(fingerprint: dict) -> str:
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()


def fsync_directory(directory: Path) -> None:
    """Make a rename inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, data: bytes) -> None:
    """``path`` holds ``data`` whole, or keeps what it held: temporary file, fsync, rename."""
    temporary = path.with_name(f".{path.name}.part")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    fsync_directory(path.parent)


def arrow_bytes(rows: pd.DataFrame, metadata: dict[bytes, bytes] | None = None) -> bytes:
    """``rows`` as an Arrow IPC file (data only: reading it back runs no code), with schema ``metadata``."""
    import pyarrow as pa

    table = pa.Table.from_pandas(rows, preserve_index=False)
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as ipc:
        ipc.write_table(table)
    return sink.getvalue().to_pybytes()


def frame_of_arrow(data: bytes) -> tuple[pd.DataFrame, dict[bytes, bytes]]:
    """The rows and schema metadata of an Arrow IPC file's bytes (ValueError if it is not one, whole)."""
    import pyarrow as pa

    table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    return table.to_pandas(), dict(table.schema.metadata or {})


def read_manifest(directory: Path) -> dict | None:
    """The saved fingerprint; None if there is none, or it cannot be read (a crash mid-write, say)."""
    try:
        saved = json.loads((Path(directory) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


class TaskStore:
    """The saved task results of one job, keyed by (group index, batch index).

    ``note`` prints what a user should know (saved tasks discarded or rerun).
    :meth:`save` writes a task's file before it returns; :meth:`save_soon`
    leaves it to the saver thread (:meth:`wait_saved` waits for it, and
    raises what it failed with).
    """

    def __init__(self, directory: Path, fingerprint: dict, resume: bool, note=lambda message: None):
        self.directory = Path(directory)
        self.digest = fingerprint_digest(fingerprint)
        self._files: dict[tuple[int, int], Path] = {}   # saved (or found whole on resume) -> its file
        self._written: set[tuple[int, int]] = set()      # saved by this job: read back without a check
        self._lock = threading.Condition()   # guards _files and _pending; notified as each save ends
        self._saver: BackgroundWrites | None = None
        self._pending: set[tuple[int, int]] = set()     # handed to the saver, not yet on disk
        manifest_exists = (self.directory / MANIFEST).exists()
        saved = read_manifest(self.directory)
        if resume and saved is not None:
            if saved != fingerprint:
                differs = sorted(k for k in fingerprint if saved.get(k) != fingerprint[k])
                raise InputError(f"{self.directory}: cannot resume: the saved tasks belong to a different job "
                                 f"({', '.join(differs)} differ); run without --resume to start over")
            self._files = self._check_saved_files(note)
            return
        if resume and manifest_exists:
            note(f"{self.directory}/{MANIFEST} is damaged, so nothing can be resumed: running the whole job")
        elif not resume and self.directory.is_dir():
            earlier = len([p for p in self.directory.iterdir() if TASK_FILE.fullmatch(p.name)])
            if earlier:
                note(f"discarding {earlier} saved task{'s' if earlier != 1 else ''} of an earlier interrupted "
                     f"run in {self.directory} (run with --resume to continue that run instead)")
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True)
        write_durably(self.directory / MANIFEST, json.dumps(fingerprint, indent=1).encode())

    @classmethod
    def beside(cls, output: str | os.PathLike, fingerprint: dict, resume: bool,
               note=lambda message: None) -> "TaskStore":
        """The store of the job whose ``fingerprint`` (runtime.job: inputs, parameters, layout) is given."""
        return cls(cls.directory_beside(output), fingerprint, resume, note)

    @staticmethod
    def directory_beside(output: str | os.PathLike) -> Path:
        output = Path(str(output).rstrip("/" + os.sep))
        return output.parent / f".{output.name}.seqsift-tasks"

    @classmethod
    def saved_layout(cls, output: str | os.PathLike | None) -> dict:
        """The sizes the job saved beside ``output`` ran with (its manifest's ``layout``; empty if none)."""
        manifest = read_manifest(cls.directory_beside(output)) if output else None
        return (manifest or {}).get("layout") or {}

    def _checksum(self, key: tuple[int, int], body: bytes) -> str:
        """SHA-256 of a task file's body, keyed with the job's digest and the task: what its name carries."""
        sha = hashlib.sha256(f"{self.digest}:{key[0]}-{key[1]}:".encode())
        sha.update(body)
        return sha.hexdigest()

    def _check_saved_files(self, note) -> dict[tuple[int, int], Path]:
        """The whole task files that are this job's, by key; the others are deleted (their tasks rerun)."""
        good, bad = {}, 0
        for path in sorted(self.directory.iterdir()):
            match = TASK_FILE.fullmatch(path.name)
            if match is None:
                continue
            key = (int(match[1]), int(match[2]))
            try:
                if key in good:
                    raise ValueError(f"a second file for task {key}")
                self._read(key, path)
            except (OSError, ValueError, KeyError):  # pyarrow.ArrowInvalid is a ValueError
                path.unlink(missing_ok=True)
                bad += 1
            else:
                good[key] = path
        if bad:
            note(f"{bad} saved task file{'s' if bad != 1 else ''} in {self.directory} "
                 f"{'were' if bad != 1 else 'was'} damaged or not this job's: "
                 f"{'they run' if bad != 1 else 'it runs'} again")
        return good

    def saved(self) -> set[tuple[int, int]]:
        """The tasks whose files are on disk (those handed to the saver count once written)."""
        with self._lock:
            return set(self._files)

    def _stamp(self, key: tuple[int, int]) -> dict[bytes, bytes]:
        """What every task file carries: the job's fingerprint digest and the task's key."""
        return {_DIGEST_KEY: self.digest.encode(), _TASK_KEY: f"{key[0]}-{key[1]}".encode()}

    def save(self, key: tuple[int, int], rows: pd.DataFrame) -> None:
        """Write task ``key``'s file now (module docstring: renamed into place whole, named by its hash)."""
        body = arrow_bytes(rows, self._stamp(key))
        path = self.directory / f"task-{key[0]}-{key[1]}.{self._checksum(key, body)}.arrow"
        temporary = path.with_name(f".{path.name}.part")
        temporary.write_bytes(body)
        os.replace(temporary, path)
        with self._lock:
            self._files[key] = path
            self._written.add(key)

    def save_soon(self, key: tuple[int, int], rows: pd.DataFrame) -> None:
        """Hand task ``key``'s rows to the saver thread (waits while ``SAVE_QUEUE`` tasks wait for it).

        ``rows`` must not change afterwards. Raises what an earlier save failed with.
        """
        if self._saver is None:
            self._saver = BackgroundWrites(SAVE_QUEUE, "seqsift-task-saver")
        with self._lock:
            self._pending.add(key)
        try:
            self._saver.submit(self._save_pending, key, rows)
        except BaseException:
            with self._lock:
                self._pending.discard(key)
            raise

    def _save_pending(self, key: tuple[int, int], rows: pd.DataFrame) -> None:
        try:
            self.save(key, rows)
        finally:
            with self._lock:
                self._pending.discard(key)
                self._lock.notify_all()

    def _saver_failed(self) -> bool:
        return self._saver is not None and self._saver.failure is not None

    def wait_saved(self) -> None:
        """Wait until every task handed to :meth:`save_soon` is on disk; raise what a save failed with."""
        if self._saver is not None:
            self._saver.wait()

    def _stop_saver(self, cancel: bool = False) -> None:
        """End the saver thread, after the tasks still queued (or dropping them, with ``cancel``)."""
        if self._saver is not None:
            self._saver.cancel() if cancel else self._saver.stop()
            with self._lock:
                self._lock.notify_all()  # a load waiting on a dropped task sees the saver gone
            self._saver = None

    def _read(self, key: tuple[int, int], path: Path) -> pd.DataFrame:
        """The task's rows; ValueError if the file is not this job's task ``key``, whole."""
        body = path.read_bytes()
        match = TASK_FILE.fullmatch(path.name)
        if match is None or match[3] != self._checksum(key, body):
            raise ValueError(f"{path} is damaged or belongs to another job or task")
        rows, metadata = frame_of_arrow(body)
        stamp = self._stamp(key)
        if any(metadata.get(name) != value for name, value in stamp.items()):
            raise ValueError(f"{path} belongs to another job or task")
        return rows

    def load(self, key: tuple[int, int]) -> pd.DataFrame:
        """Task ``key``'s saved rows (waiting for the saver if it is still writing them).

        A file this job wrote is read back as the job's spilled rows are (no
        crash came between: the kernel's copy is whole); one found on resume
        was checked when the store opened, and is checked again.
        """
        with self._lock:  # a save skipped after another failed leaves its key pending: the failure ends the wait
            self._lock.wait_for(lambda: key not in self._pending or self._saver is None or self._saver_failed())
        if self._saver_failed():
            raise self._saver.failure
        with self._lock:
            path, ours = self._files[key], key in self._written
        return frame_of_arrow(path.read_bytes())[0] if ours else self._read(key, path)

    def remove(self) -> None:
        """Delete the folder (the output is in place): tasks still waiting to be saved are dropped."""
        self._stop_saver(cancel=True)
        shutil.rmtree(self.directory, ignore_errors=True)

    def tell_how_to_resume(self, note) -> None:
        """After a failed job: let the saver finish, then say (through ``note``) how many finished tasks
        are kept, and how to use them."""
        self._stop_saver()
        with self._lock:
            saved = len(self._files)
        if saved:
            note(f"{saved} finished tasks are saved in {self.directory}; "
                 "run the same command with --resume to continue")


class SpillFolder:
    """Rows set aside on disk while a job runs (a private temporary folder, made when first used)."""

    def __init__(self):
        self._folder: tempfile.TemporaryDirectory | None = None

    def write(self, name: str, rows: pd.DataFrame) -> Path:
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="seqsift-spill-")
        path = Path(self._folder.name) / f"{name}.arrow"
        path.write_bytes(arrow_bytes(rows))
        return path

    @staticmethod
    def take(path: Path) -> pd.DataFrame:
        """The rows written to ``path``; the file is removed."""
        rows, _ = frame_of_arrow(path.read_bytes())
        path.unlink()
        return rows

    def close(self) -> None:
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
