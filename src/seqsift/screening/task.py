"""The screen job: what it is (:class:`ScreenJob`, its side of the runtime's job protocol) and its worker
task, one bucket of pairs scored (and, above a threshold, aligned).

Task results are rows of pair indices into the *oriented* inputs (for
``strand="both"`` the queries followed by their reverse complements, see
run.py's ``Orientation``): ``query``, ``target``, ``score``, and with a
threshold and ``align`` the alignment's coordinates and CIGAR. The client's
collector (output.py) folds the two strands of a pair into the better one
and puts rows in pair order.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..kernels import sw as sw_kernels
from ..kernels.cuda import device_turn
from ..kernels.sw import Scoring
from ..kernels.threads import use_worker_share
from ..memo import Memo
from ..runtime import stages
from ..runtime.job import Plan, sequences_sha256
from .planning import CELLS_PER_TASK, CODE_BYTES_PER_TASK, PairTask, plan_tasks

if TYPE_CHECKING:   # pandas loads where a task makes its rows: a job's client imports it after submitting
    import pandas as pd

ALIGNMENT_COLUMNS = ["query_start", "query_end", "target_start", "target_end", "cigar"]


@dataclass(frozen=True)
class WorkerSequences:
    """What the workers need of both inputs: one code buffer; queries first, then targets."""

    codes: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    queries: int
    derived: Memo = field(default_factory=Memo, compare=False, repr=False)   # the codes on this worker's GPU

    def on_device(self):
        """The codes on the current GPU, uploaded once per worker process (a Memo pickles empty)."""
        import cupy

        from ..kernels.cuda import uploaded_once

        return uploaded_once(self.derived.get, ("codes", cupy.cuda.runtime.getDevice()),
                             lambda: cupy.asarray(self.codes))

    def base_counts(self, codes) -> np.ndarray:
        """(sequences, 4): how many A, C, G, T every sequence holds, the threshold's composition bound's
        input; counted once per worker in ``codes``, the buffer the kernels read (on the device for CUDA:
        one launch, where a count per task had waited behind the other task thread's tile)."""
        return self.derived.get(("base counts",), lambda: sw_kernels.base_counts(codes, self.starts, self.lengths))

    def digest(self) -> str:
        """SHA-256 of the codes and where each sequence lies: what a resumed job's saved tasks were of."""
        import hashlib

        sha = hashlib.sha256(self.codes.tobytes())
        for array in (self.starts, self.lengths):
            sha.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
        sha.update(str(self.queries).encode())
        return sha.hexdigest()


@dataclass(frozen=True)
class ScreenJob:
    """Everything a task needs (sent to the workers once), and how the client collects and writes."""

    name = "screen"
    formats = ("tsv", "parquet")

    sequences: WorkerSequences     # the oriented queries, then the targets
    algorithm: str
    backend: str
    scoring: Scoring
    threshold: int | None
    align: bool
    word_bits: int | None
    all_vs_all: bool
    strand: str                    # "+", "-" or "both" (output.py folds the strands)
    query_names: tuple[str, ...]   # the queries and targets as given (output)
    target_names: tuple[str, ...]

    @property
    def query_lengths(self) -> np.ndarray:
        """Lengths of the queries as given (the oriented ones start with them)."""
        return self.sequences.lengths[:len(self.query_names)]

    def oriented_lengths(self) -> tuple[np.ndarray, np.ndarray]:
        q = self.sequences.queries
        return self.sequences.lengths[:q], self.sequences.lengths[q:]

    # -- the runtime's job protocol (runtime/job.py) ------------------------------------------

    def plan(self, client, layout: dict) -> Plan:
        """Pairs bucketed by padded length (planning.py), about 4 tasks per worker within CELLS_PER_TASK."""
        from ..cluster import worker_count

        ql, tl = self.oriented_lengths()
        budget = layout.get("cells_per_task")
        if budget is None:
            total = float(ql.sum()) * float(tl.sum()) if self.all_vs_all else float((ql * tl).sum())
            low, high = CELLS_PER_TASK[self.backend]
            budget = int(min(high, max(low, total / (4 * worker_count(client)))))
        batch_pairs = layout.get("batch_pairs")
        tasks = plan_tasks(ql, tl, self.all_vs_all, int(budget), CODE_BYTES_PER_TASK[self.backend], batch_pairs)
        return Plan(units=tasks, batches=[range(1)], weights=[t.cells for t in tasks],
                    layout={"cells_per_task": int(budget), "batch_pairs": batch_pairs}, ordered=False,
                    unit_name="cells", label="screening",
                    notes=[f"{sum(t.pairs for t in tasks):,} pairs in {len(tasks):,} tasks"])

    def fingerprint(self, plan: Plan) -> dict:
        scoring = {name: getattr(self.scoring, name) for name in self.scoring.__dataclass_fields__}
        return {"job": self.name, "sequences_sha256": self.sequences.digest(),
                "names_sha256": sequences_sha256(self.query_names + self.target_names),
                "parameters": {"scoring": scoring, "threshold": self.threshold, "align": self.align,
                               "all_vs_all": self.all_vs_all, "strand": self.strand},
                "layout": plan.layout}

    @staticmethod
    def task(job: "ScreenJob", pairs: PairTask, batch: range) -> pd.DataFrame:
        return run_screen_task(job, pairs)

    def collector(self, plan: Plan, spill_rows: int):
        from .output import ScoreTable, Survivors

        return ScoreTable(self) if self.threshold is None else Survivors(self)

    def writer(self, output):
        from .output import screen_writer

        return screen_writer(self, output)


def run_screen_task(job: ScreenJob, task: PairTask) -> pd.DataFrame:
    """Scores of a task's pairs; with a threshold, only the survivors (and their alignments).

    The kernels read the sequences where they lie in the job's one code buffer (on the GPU: uploaded
    once per worker), by start and length: an all-vs-all tile as every x against every y, other tasks
    as a list of pairs; no code matrix is padded per pair on the host.
    """
    use_worker_share()
    on_device = job.backend == "cuda"
    if on_device:
        from ..kernels.cuda import task_stream
    with (task_stream() if on_device else nullcontext()):
        if on_device:
            with stages.timed("transfer", device=True):
                codes = job.sequences.on_device()
        else:
            codes = job.sequences.codes
        return _screen_task(job, task, codes, on_device)


def _screen_task(job: ScreenJob, task: PairTask, codes, on_device: bool) -> pd.DataFrame:
    # pandas is imported where the rows are made, after the kernels: a job's first task starts while
    # the client imports pandas beside it, and an import here would hold its kernels until that ends
    # (0.3 s of the issue-26 screen on the H100 host).
    sequences = job.sequences
    starts, lengths = sequences.starts, sequences.lengths
    # auto: the measured-fastest algorithm for this task's length bucket (kernels/planner.py)
    algorithm = sw_kernels.choose_sw_algorithm(job.backend, job.algorithm, job.scoring, task.m, task.n)
    options = dict(word_bits=job.word_bits)
    turn = device_turn if on_device else nullcontext
    if job.threshold is None:
        with stages.timed("kernel", device=on_device):
            sides = _kernel_sides(task, job, codes, None)
            with turn():
                scores = _in_pair_order(task, job, codes, algorithm, None, options, sides)
        import pandas as pd
        qi, ti = task.pair_indices()   # the task's pairs in their order: query-major for a tile
        return pd.DataFrame({"query": qi, "target": ti, "score": scores.astype(np.int64)})
    # Screening: pairs whose base counts, or too few q-grams shared near one diagonal, bound their score
    # below the threshold are out without any DP (exact; buffer_scores); which of the others reach it
    # (flag kernels that stop once a pair is decided, on the q-gram filter's windows where it ran), then
    # the scores of those few (on their windows likewise: sw_kernels.scores_of_passing). On a GPU both in
    # one turn of the device (kernels.cuda.device_turn), so that this task's alignments and rows overlap
    # the other task thread's kernels.
    with stages.timed("kernel", device=on_device):
        sides = _kernel_sides(task, job, codes, job.threshold)
        with turn():
            keep = np.flatnonzero(_in_pair_order(task, job, codes, algorithm, job.threshold, options, sides))
            q_kept, t_kept = task.pairs_at(keep)
            t_in_buffer = sequences.queries + t_kept   # targets follow the queries in the code buffer
            x, y = _shorter_first(lengths, q_kept, t_in_buffer)
            scores = (sw_kernels.scores_of_passing(algorithm, job.backend, codes, starts[x], lengths[x], starts[y],
                                                   lengths[y], job.scoring, job.threshold, **options)
                      if keep.size else np.zeros(0, np.int32))
    rows = {"query": q_kept, "target": t_kept, "score": scores.astype(np.int64)}
    if job.align:
        with stages.timed("locate"):
            coords, cigars = sw_kernels.align(sequences.codes, starts[q_kept], lengths[q_kept], starts[t_in_buffer],
                                              lengths[t_in_buffer], scores, job.scoring)
        for k, name in enumerate(ALIGNMENT_COLUMNS[:4]):
            rows[name] = coords[:, k].astype(np.int64)
        rows["cigar"] = np.asarray(cigars, dtype=object)
    import pandas as pd
    return pd.DataFrame(rows)


def _kernel_sides(task: PairTask, job: ScreenJob, codes, threshold) -> tuple:
    """How the task's pairs go to the kernel: (x, y, x_is_query, bound). The shorter sequences are x (the
    score is symmetric): for a tile (``task.product``) the side with the shorter ones, every x against
    every y; otherwise per pair. ``bound``: the composition bound with a threshold, else None."""
    sequences = job.sequences
    lengths = sequences.lengths
    queries, targets = task.queries, sequences.queries + task.targets
    if task.product:
        x_is_query = bool(lengths[queries].max() <= lengths[targets].max())
        x, y = (queries, targets) if x_is_query else (targets, queries)
    else:
        x_is_query = None
        x, y = _shorter_first(lengths, queries, targets)
    bound = _bound(sequences, codes, x, y, task.product, job.scoring, threshold) if threshold else None
    return x, y, x_is_query, bound


def _shorter_first(lengths: np.ndarray, queries: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the pairs (queries[p], targets[p]): per pair the shorter sequence as the kernel's x."""
    swap = lengths[targets] < lengths[queries]
    return np.where(swap, targets, queries), np.where(swap, queries, targets)


def _in_pair_order(task: PairTask, job: ScreenJob, codes, algorithm: str, threshold, options, sides) -> np.ndarray:
    """buffer_scores of every pair of the task, as ``sides`` (:func:`_kernel_sides`) gives them to the
    kernel (scores, or with a threshold whether each reaches it, the composition bound applied), in
    pair_indices order."""
    starts, lengths = job.sequences.starts, job.sequences.lengths
    x, y, x_is_query, bound = sides
    result = sw_kernels.buffer_scores(algorithm, job.backend, codes, starts[x], lengths[x], starts[y], lengths[y],
                                      job.scoring, product=task.product, threshold=threshold, bound=bound, **options)
    if task.product:
        return (result if x_is_query else result.T).reshape(-1)
    return result


def _bound(sequences: WorkerSequences, codes, x: np.ndarray, y: np.ndarray, product: bool, scoring: Scoring,
           threshold: int) -> np.ndarray | None:
    """sw_kernels.composition_bound of the pairs (x[p], y[p]), or of every x with every y (product:
    (len x, len y)), from base counts taken once per worker in ``codes`` (WorkerSequences.base_counts);
    None for a tile it would keep whole (:func:`keeps_every_pair`), told without the tile's (len x,
    len y) array."""
    counts = sequences.base_counts(codes)
    x_counts, y_counts = counts[x], counts[y]
    if product:
        if keeps_every_pair(x_counts, y_counts, scoring, threshold):
            return None
        x_counts, y_counts = x_counts[:, None, :], y_counts[None, :, :]
    return sw_kernels.composition_bound(x_counts, y_counts, scoring)


def keeps_every_pair(x_counts: np.ndarray, y_counts: np.ndarray, scoring: Scoring, threshold: int) -> bool:
    """Whether the composition bound of every x with every y of a tile reaches ``threshold``.

    A pair's bound is c1 x sum over bases of min(x's count, y's count); with
    y's counts lowered to the fewest of each base among the ys, each minimum
    can only fall, so an x whose bound against that floor reaches the
    threshold reaches it against every y (and the same with x and y
    exchanged). Reads against targets many times longer pass this at once:
    on the H100 host the (reads x targets x 4) bound of the issue's
    100,000 x 1,000 screen took 2.2 s of each task thread, while the GPU
    waited, and kept every pair.
    """
    if len(x_counts) == 0 or len(y_counts) == 0:
        return False
    fewest_x, fewest_y = x_counts.min(axis=0), y_counts.min(axis=0)
    return bool((sw_kernels.composition_bound(x_counts, fewest_y, scoring) >= threshold).all()
                or (sw_kernels.composition_bound(fewest_x, y_counts, scoring) >= threshold).all())
