"""What one search job is: everything a worker needs to run any of its tasks, and its side of
the runtime's job protocol (runtime/job.py).

A :class:`SearchJob` is sent to the workers once (``runtime.shared.on_workers``)
and a task is then just ``(group, pattern_range)``: which chunks of the
reference, against which slice of the pattern set (``task.run_task``). The
client turns the tasks' rows into output rows with ``merge.OrderedMerger``
and writes them with ``output.hit_writer``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..cluster import worker_count
from ..partitioning import default_chunk_size, halo_for, plan_chunks, record_gap
from ..io.patterns import shortest_hit_lengths
from ..pattern_set import STRAND_CHOICES, PatternSet
from ..runtime.job import Plan
from ..runtime.output import INTERVAL_FORMATS
from ..runtime.job import records_sha256, reference_fingerprint, sequences_sha256

MODES = ("best", "ends")
DEFAULT_PATTERN_BATCH = {"cpu": 1024, "cuda": 8192}
"""Patterns per task: larger batches amortise each pass over the text."""


@dataclass(frozen=True)
class SearchJob:
    name = "search"
    formats = INTERVAL_FORMATS

    reference: object          # seqsift.io.reference.Reference (paths, names, lengths)
    patterns: PatternSet
    metric: str                # "hamming" | "edit"
    k: int
    mode: str                  # "best" | "ends"
    strand: str                # "both" | "+" | "-"
    algorithm: str             # a name of seqsift.kernels.ALGORITHMS (never "auto" here)
    backend: str               # "cpu" | "cuda"
    align: bool                # add the aligned text and CIGAR columns (best mode)

    @property
    def strands(self) -> tuple[int, ...]:
        return STRAND_CHOICES[self.strand]

    @property
    def alphabet(self) -> str:
        """"dna" (text codes, IUPAC patterns) or "bytes" (raw bytes, literal patterns)."""
        return self.patterns.alphabet

    @cached_property
    def m_max(self) -> int:
        return int(self.patterns.lengths.max())

    @cached_property
    def m_min(self) -> int:
        return int(self.patterns.lengths.min())

    @cached_property
    def shortest_hit(self) -> int:
        """Records shorter than this hold no hit: m_min, or m_min - k under edit distance."""
        return int(shortest_hit_lengths(self.patterns.lengths, self.k, self.metric).min())

    @property
    def halo(self) -> int:
        return halo_for(self.metric, self.m_max, self.k)

    @property
    def reports_start(self) -> bool:
        """Rows carry a start (mode best); ``ends`` rows carry only the end."""
        return self.mode == "best"

    @property
    def needs_raw_text(self) -> bool:
        """Tasks need the reference bytes as in the file: the ``aligned`` column, or byte texts."""
        return (self.reports_start and self.align) or self.alphabet == "bytes"

    @property
    def joins_runs(self) -> bool:
        """Edit-distance ``best`` loci are runs of ends that may cross chunk cores."""
        return self.mode == "best" and self.metric == "edit"

    def columns(self) -> list[str]:
        """Output columns in order (DESIGN.md, output rows)."""
        if not self.reports_start:
            return ["record", "end", "pattern", "distance", "strand"]
        extra = ["aligned", "cigar"] if self.align else []
        return ["record", "start", "end", "pattern", "distance", "strand", *extra]

    # -- the runtime's job protocol (runtime/job.py) ------------------------------------------

    def plan(self, client, layout: dict) -> Plan:
        """Chunk groups x pattern batches; default sizes from the genome and the cluster's workers."""
        chunk_size = layout.get("chunk_size") or default_chunk_size(
            self.backend, int(self.reference.lengths.sum()), worker_count(client))
        batch_size = layout.get("pattern_batch_size") or DEFAULT_PATTERN_BATCH[self.backend]
        groups = self.groups(chunk_size)
        return Plan(units=groups, batches=self.patterns.batches(batch_size), weights=[g.bases for g in groups],
                    layout={"chunk_size": int(chunk_size), "pattern_batch_size": int(batch_size)},
                    unit_name="bp", label="searching")

    def groups(self, chunk_size: int) -> list:
        """The tasks' texts (partitioning.plan_chunks) with this job's halo, shortest hit and separators."""
        return plan_chunks(self.reference.lengths, chunk_size, self.halo, min_length=self.shortest_hit,
                           gap=record_gap(self.metric, self.k))

    def fingerprint(self, plan: Plan) -> dict:
        return {
            "job": self.name,
            **reference_fingerprint(self.reference),
            "records_digest": records_sha256(self.reference.names, self.reference.lengths),
            "patterns_sha256": sequences_sha256(self.patterns.names, self.patterns.sequences),
            "parameters": {"metric": self.metric, "k": self.k, "mode": self.mode, "strand": self.strand,
                           "align": self.align, "alphabet": self.alphabet},
            "layout": plan.layout,
        }

    @staticmethod
    def task(job: "SearchJob", group, pattern_range: range):
        from .task import run_task

        return run_task(job, group, pattern_range)

    def collector(self, plan: Plan, spill_rows: int):
        from .merge import SearchRows

        return SearchRows(self, spill_rows)

    def writer(self, output):
        from .output import hit_writer

        return hit_writer(output, self.columns(), self.reference.names, self.patterns.names)
