"""The job protocol: what search, crispr and screen tell the runtime, and nothing more.

A job is a picklable object (it goes to the workers once, ``shared.on_workers``)
whose class fills in:

``name``
    ``"search"``, ``"crispr"`` or ``"screen"``: task keys, progress, messages.
``formats``
    the output formats its writer can write (``output.FORMATS``'s values).
``plan(client, layout)``
    the task layout as it will run: ``layout`` holds the sizes the user asked
    for, a resumed job's saved sizes where the user asked for none, and None
    for the rest, which the job resolves (defaults may depend on the
    cluster); returns a :class:`Plan`. The resolved sizes go into the
    fingerprint, so a resume cuts the work exactly as the first run did.
``fingerprint(plan)``
    what must be equal for saved task results to belong to this job: the
    inputs (files by path, size and mtime; sequences by hash), the
    parameters, and ``plan.layout``.
``task``
    the worker function, ``task(job, unit, batch) -> pandas.DataFrame``
    (a staticmethod or module function: it is pickled by reference).
``collector(plan, spill_rows)``
    a :class:`Collector`: the client-side state that turns each unit's task
    results into output rows in output order (holding at most about
    ``spill_rows`` rows in memory where it must hold rows back).
``writer(output)``
    a writer for ``output`` (None: the Python API's in-memory result): it has
    ``write(rows)``, ``close()``, ``abort()``, ``count`` and ``result()``;
    ``close()`` also writes the files that follow from the whole output
    (crispr's ``--summary``, which ``JobRun`` checks and locks like ``-o``).
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Protocol, Sequence

if TYPE_CHECKING:  # the runtime's face imports no pandas: `seqsift --help` loads none of the job stack
    import pandas as pd


@dataclass(frozen=True)
class Plan:
    """A job's tasks: every unit x every batch, and how the client takes their results.

    units      in output order; ``units[i].index == i``; a task gets one unit and one batch
    batches    ranges of the job's patterns (guides); screen: ``[range(1)]``
    weights    per unit, what the progress bar counts (bases, cells)
    layout     the resolved sizes (saved in a resumable job's manifest)
    ordered    units are delivered to the collector in order (search, crispr); else as each completes
    unit_name  what the progress bar counts ("bp", "cells"); ``label`` its label
    """

    units: Sequence
    batches: Sequence[range]
    weights: Sequence[float]
    layout: dict
    ordered: bool = True
    unit_name: str = "bp"
    label: str = "searching"
    notes: list[str] = field(default_factory=list)


class Collector(Protocol):
    """Turns each unit's task results into output rows (client side, one per run).

    What it yields goes to the job's own writer as it is: index rows (a
    DataFrame) for search and crispr; screen's score table yields blocks of
    its matrix (screening.output.ScoreBlock), which only its writers read.
    """

    def take(self, unit, frames: list[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """The rows that are final once ``unit``'s results (one frame per batch) are in, in output order."""

    def finish(self) -> Iterator[pd.DataFrame]:
        """The rows still held, once every unit is in."""

    def close(self) -> None:
        """Drop whatever is held (a failed job)."""


class Writer(Protocol):
    count: int

    def write(self, rows: pd.DataFrame) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...

    def result(self): ...


class Job(Protocol):
    name: str
    backend: str
    formats: tuple[str, ...]

    def plan(self, client, layout: dict) -> Plan: ...

    def fingerprint(self, plan: Plan) -> dict: ...

    def collector(self, plan: Plan, spill_rows: int) -> Collector: ...

    def writer(self, output) -> Writer: ...


# -- what fingerprints are made of ---------------------------------------------------------

def reference_fingerprint(reference) -> dict:
    """The reference file as saved tasks must find it again: its path, size and mtime."""
    source = Path(getattr(reference, "path", ""))
    stat = source.stat() if source.is_file() else None
    return {
        "reference": str(source.resolve()) if stat else str(source),
        "reference_size": stat.st_size if stat else None,
        "reference_mtime_ns": stat.st_mtime_ns if stat else None,
    }


def records_sha256(names, lengths) -> str:
    """SHA-256 of a reference's record names and lengths, each as one whole text or array (a million
    records: tenths of a second less than a line per record through :func:`sequences_sha256`)."""
    import numpy as np

    from ..io.text_list import TextList

    digest = hashlib.sha256(TextList.of(names).joined())   # a reference's TextList: its text as it is
    digest.update(np.ascontiguousarray(lengths, dtype="<i8").tobytes())
    return digest.hexdigest()


def sequences_sha256(*columns) -> str:
    """SHA-256 of a job's patterns (guides, pairs) given as columns (names, sequences, ...): one line per
    record, its fields joined by tabs. Lines are hashed in blocks (a million records: one update per block,
    not per line); one column (a screen's 100,000 read names) is joined as it is, with no step per line."""
    digest = hashlib.sha256()
    lines = map(str, columns[0]) if len(columns) == 1 else ("\t".join(map(str, fields)) for fields in zip(*columns))
    while True:
        block = list(itertools.islice(lines, 65_536))
        if not block:
            return digest.hexdigest()
        digest.update(("\n".join(block) + "\n").encode())
