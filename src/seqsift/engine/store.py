"""Per-task results on disk, so that an interrupted job can be resumed.

When a search writes to a file, each finished task's rows are saved in a
folder beside it (``hits.tsv`` -> ``.hits.tsv.seqsift-tasks/``) before the
merge uses them. ``resume=True`` (``--resume``) reuses the saved tasks of an
interrupted job and runs only the rest; the folder is removed once the output
file is complete.

A folder written by a different job must never be mixed in: its
``manifest.json`` holds a fingerprint of the reference (path, size, mtime,
record names and lengths), the pattern set, the search parameters and the
task layout (chunk size, pattern batch size). A resume whose fingerprint
differs is refused.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from pathlib import Path

import pandas as pd

from ..errors import InputError

MANIFEST = "manifest.json"


def job_fingerprint(job, chunk_size: int, pattern_batch_size: int) -> dict:
    """What must be equal for saved task results to belong to this job."""
    reference = job.reference
    source = Path(getattr(reference, "path", ""))
    stat = source.stat() if source.is_file() else None
    patterns = hashlib.sha256()
    for name, sequence in zip(job.patterns.names, job.patterns.sequences):
        patterns.update(f"{name}\t{sequence}\n".encode())
    records = hashlib.sha256()
    for name, length in zip(reference.names, reference.lengths):
        records.update(f"{name}\t{int(length)}\n".encode())
    return {
        "reference": str(source.resolve()) if stat else str(source),
        "reference_size": stat.st_size if stat else None,
        "reference_mtime_ns": stat.st_mtime_ns if stat else None,
        "records_sha256": records.hexdigest(),
        "patterns_sha256": patterns.hexdigest(),
        "parameters": {"metric": job.metric, "k": job.k, "mode": job.mode, "strand": job.strand,
                       "align": job.align, "alphabet": job.alphabet},
        "chunk_size": chunk_size,
        "pattern_batch_size": pattern_batch_size,
    }


class TaskStore:
    """The saved task results of one job, keyed by (group index, batch index)."""

    def __init__(self, directory: Path, fingerprint: dict, resume: bool):
        self.directory = Path(directory)
        manifest = self.directory / MANIFEST
        if resume and manifest.is_file():
            saved = json.loads(manifest.read_text())
            if saved != fingerprint:
                differs = sorted(k for k in fingerprint if saved.get(k) != fingerprint[k])
                raise InputError(f"{self.directory}: cannot resume: the saved tasks belong to a different job "
                                 f"({', '.join(differs)} differ); run without --resume to start over")
        else:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory.mkdir(parents=True)
            manifest.write_text(json.dumps(fingerprint, indent=1))

    @classmethod
    def beside(cls, output: str | os.PathLike, job, chunk_size: int, pattern_batch_size: int,
               resume: bool) -> "TaskStore":
        return cls(cls.directory_beside(output), job_fingerprint(job, chunk_size, pattern_batch_size), resume)

    @staticmethod
    def directory_beside(output: str | os.PathLike) -> Path:
        output = Path(output)
        return output.parent / f".{output.name}.seqsift-tasks"

    @classmethod
    def saved_layout(cls, output: str | os.PathLike | None) -> dict | None:
        """The chunk and batch sizes of a saved job beside ``output``, if any."""
        manifest = cls.directory_beside(output) / MANIFEST if output else None
        if manifest is None or not manifest.is_file():
            return None
        return json.loads(manifest.read_text())

    def _path(self, key: tuple[int, int]) -> Path:
        return self.directory / f"task-{key[0]}-{key[1]}.pkl"

    def saved(self) -> set[tuple[int, int]]:
        keys = set()
        for path in self.directory.glob("task-*.pkl"):
            group, batch = path.stem.split("-")[1:]
            keys.add((int(group), int(batch)))
        return keys

    def save(self, key: tuple[int, int], rows: pd.DataFrame) -> None:
        temporary = self._path(key).with_suffix(".part")
        with open(temporary, "wb") as handle:
            pickle.dump(rows, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, self._path(key))

    def load(self, key: tuple[int, int]) -> pd.DataFrame:
        with open(self._path(key), "rb") as handle:
            return pickle.load(handle)

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
