"""``screen``: score many sequence pairs by Smith-Waterman, on GPUs or CPU cores, through Dask.

The third job of seqsift (DESIGN.md, paper 5): pairs (x, y), linear gap,
score = max over the local alignment matrix (match c1, mismatch -c2, gap -g;
defaults 2, 1, 1 as in Nishimura et al.). Pairs are the records of two inputs
taken by order, or every query against every target (``all_vs_all``).

Flow (this module runs it; the steps live beside it)::

    FASTA/FASTQ or lists --read, encode in bulk (inputs.py)--> one code buffer
    (sent to the workers once, engine.shared.on_workers) --plan: pairs bucketed
    by padded length (planning.py)--> tasks (pair index arrays) --worker
    (task.py): gather padded code matrices, run the kernel (sw-bpbc /
    sw-wordwise, CUDA or Numba), keep the pairs >= threshold and align them on
    the host--> client: scores or surviving rows, in pair order --> array,
    DataFrame, or a TSV / Parquet file (temporary file + rename)

Pairs are bucketed by the padded lengths (m, n) of their shorter and longer
sequence, (m, n) rounded up to 1/8 of their power of two, so a kernel launch
runs pairs of one shape and wastes at most about 12% of its cells on padding;
there is no compile-time maximum length. The shorter sequence of a pair is the
kernel's x (the paper's m <= n); alignments are reported for the query and
target as given.

Bad input raises :class:`~seqsift.errors.InputError` with a one-line message
naming the file and record: missing, empty, not FASTA/FASTQ, a compressed
format other than gzip, a FASTQ record without its '+' line or with a quality
of another length, an empty sequence, characters that are no sequence
letters, different record counts without ``all_vs_all``, negative scores. A
failed job leaves no output file.
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ..engine.output import TableWriter, check_output_path
from ..engine.shared import on_workers
from ..errors import InputError, note
from ..progress import open_progress
from ..kernels import sw as sw_kernels
from ..kernels.sw import Scoring
from .inputs import SequenceSet, concatenated, read_sequences, reverse_complements
from .planning import CELLS_PER_TASK, CODE_BYTES_PER_TASK, plan_tasks
from .task import ScreenJob, WorkerSequences, run_screen_task

STRANDS = ("+", "-", "both")
"""Which strand of each query is scored against the targets (``strand``)."""
ALIGNMENT_COLUMNS = ["query_start", "query_end", "target_start", "target_end", "cigar"]
FORMATS = {".tsv": "tsv", ".txt": "tsv", ".parquet": "parquet", ".pq": "parquet"}
"""Output suffixes (a folder path: a partitioned Parquet dataset, as for search)."""


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

_DTYPES = {"query_index": np.int64, "query": object, "target_index": np.int64, "target": object, "strand": object,
           "score": np.int64, "query_start": np.int64, "query_end": np.int64, "target_start": np.int64,
           "target_end": np.int64, "cigar": object}


def _writer(output, columns: list[str]) -> TableWriter:
    return TableWriter(output, columns, FORMATS, _DTYPES)


# --------------------------------------------------------------------------
# The API
# --------------------------------------------------------------------------

def screen(queries, targets, *, threshold: int | None = None, match: int = 2, mismatch: int = 1, gap: int = 1,
           gap_open: int | None = None, gap_extend: int | None = None, all_vs_all: bool = False,
           align: bool = True, output=None, algorithm: str = "auto",
           backend: str = "auto", word_bits: int | None = None, client=None, workers: int | None = None,
           gpus=None, scheduler: str | None = None, scheduler_file: str | None = None, dashboard: bool = False,
           batch_pairs: int | None = None, progress: bool = False, verbose: bool = False, strand: str = "+"):
    """Smith-Waterman scores of sequence pairs.

    queries, targets  FASTA or FASTQ paths (plain or gzip), or lists / arrays
                      of sequence strings (or of (name, sequence) pairs)
    all_vs_all        False: record k of queries with record k of targets (the
                      counts must agree); True: every query with every target
    threshold         None: every pair's score; a number: only the pairs
                      scoring at least that, with their local alignment
                      (``align``) computed on the host
    match, mismatch, gap   c1, c2, g: +c1 for equal bases, -c2 otherwise
                      (N and non-ACGT characters always), -g per gap position
    gap_open, gap_extend   affine gaps instead (give both): a gap of length
                      L scores -(gap_open + (L - 1) gap_extend), parasail's
                      convention; gap is then ignored (equal values: linear)
    output            None: return the result; a path (.tsv, .parquet) or "-"
                      (TSV on stdout): write rows there (atomically) and
                      return the number of rows written
    algorithm         "auto" (per length bucket, from ``seqsift bench``'s
                      measurements), "sw-bpbc" (bit-sliced, Nishimura et al.),
                      "sw-wordwise", "sw-dpx" (16-bit DPX lanes), or for
                      affine gaps too "sw-gotoh" and "sw-dpx-affine";
                      word_bits 32 or 64 pairs per word (bpbc)
    backend           "auto" (cuda when a GPU is visible), "cuda" or "cpu"
    client            a distributed.Client; otherwise one is started or joined
                      (``workers``, ``gpus``, ``scheduler``, ``scheduler_file``)
    batch_pairs       pairs per task (default: from the cell count)
    strand            "+" (default): each query as given; "-": its reverse
                      complement; "both": the better of the two, so that reads
                      from either strand of a target are found (ties: +)

    Returns, without ``output``: for threshold None a NumPy int32 array of
    scores, shape (pairs,) or (queries, targets) for all_vs_all; with a
    threshold a DataFrame of the surviving pairs (query_index, query,
    target_index, target, score, and with ``align`` query_start, query_end,
    target_start, target_end (0-based, half-open) and cigar (=, X, I, D; I =
    query base without target base)), ordered by query then target.
    Written files have the columns query, target, score (and the alignment
    columns for a threshold with align). With ``strand`` "-" or "both" a
    ``strand`` column follows the score (DataFrames and files; a score array
    holds the better strand's score); an alignment on "-" is of the query's
    reverse complement, its query_start/query_end on the query as given.
    """
    scoring = Scoring(match, mismatch, gap, gap_open, gap_extend)
    try:
        scoring.check()
    except ValueError as err:
        raise InputError(str(err)) from None
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)):
            raise InputError(f"threshold must be a whole number, not {threshold!r}")
        if threshold < 0:
            raise InputError(f"threshold {threshold}: scores are never negative; use 0 to report every pair")
        threshold = int(threshold)
    if word_bits not in (None, 32, 64):
        raise InputError(f"word bits must be 32 or 64, not {word_bits!r}")
    if batch_pairs is not None and batch_pairs < 1:
        raise InputError(f"pairs per task must be at least 1, not {batch_pairs}")
    if strand not in STRANDS:
        raise InputError(f"unknown strand {strand!r} (choose +, - or both)")
    check_output_path(output, FORMATS)
    query_set = read_sequences(queries, "queries")
    target_set = read_sequences(targets, "targets")
    if not all_vs_all and len(query_set) != len(target_set):
        raise InputError(f"{query_set.source} has {len(query_set):,} records but {target_set.source} has "
                         f"{len(target_set):,}: without all-vs-all (--all-vs-all) records are paired by order, "
                         f"so both must have the same number")
    _check_score_range(query_set, target_set, all_vs_all, scoring)

    from ..engine import _client_has_gpus, resolve_backend

    if client is not None and backend == "auto" and not _client_has_gpus(client):
        backend = "cpu"
    backend = resolve_backend(backend)
    try:
        chosen = "auto" if algorithm == "auto" else sw_kernels.choose_sw_algorithm(backend, algorithm, scoring)
    except ValueError as err:
        raise InputError(str(err)) from None
    job = ScreenJob(chosen, backend, scoring, threshold, bool(align) and threshold is not None, word_bits)
    if verbose:
        note(f"screening with {chosen} on {backend} ({scoring.describe()})")

    oriented = Orientation(query_set, target_set, all_vs_all, strand)
    if client is not None:
        collected = _run(oriented.queries, oriented.targets, all_vs_all, job, client, batch_pairs, progress, verbose)
    else:
        from ..cluster import connect

        with connect(backend, workers=workers, gpus=gpus, scheduler=scheduler, scheduler_file=scheduler_file,
                     dashboard=dashboard) as own_client:
            collected = _run(oriented.queries, oriented.targets, all_vs_all, job, own_client, batch_pairs,
                             progress, verbose)
    return _deliver(oriented.fold(collected, job), query_set, target_set, all_vs_all, job, output, strand)


class Orientation:
    """The pairs actually scored for a strand choice, and how to fold their results back.

    ``+`` scores the queries as given and ``-`` their reverse complements.
    ``both`` scores the queries followed by their reverse complements: against
    every target (all-vs-all), or paired by order against the targets listed
    twice, so that pair k and pair k + Q are one pair's two strands. ``fold``
    keeps, per pair, the better strand.
    """

    def __init__(self, queries: SequenceSet, targets: SequenceSet, all_vs_all: bool, strand: str):
        self.strand = strand
        self.query_lengths = queries.lengths
        self.query_count = len(queries)
        self.target_count = len(targets)
        self.all_vs_all = all_vs_all
        if strand == "+":
            self.queries, self.targets = queries, targets
        elif strand == "-":
            self.queries, self.targets = reverse_complements(queries), targets
        else:
            self.queries = concatenated(queries, reverse_complements(queries))
            self.targets = targets if all_vs_all else concatenated(targets, targets)

    def fold(self, collected: dict, job: ScreenJob) -> dict:
        """Results of the oriented pairs as results of the given pairs, with a strand per pair."""
        if self.strand == "+":
            return collected
        if job.threshold is None:
            scores = collected["scores"]
            if self.strand == "-":
                return {"scores": scores, "minus": np.ones(scores.shape, dtype=bool)}
            forward, reverse = scores[:self.query_count], scores[self.query_count:]
            return {"scores": np.maximum(forward, reverse), "minus": reverse > forward}
        parts = collected["parts"]
        query = _joined(parts, "query", np.int64)
        target = _joined(parts, "target", np.int64)
        score = _joined(parts, "score", np.int64)
        minus = np.full(len(query), self.strand == "-")
        if self.strand == "both":
            minus = query >= self.query_count
            query = np.where(minus, query - self.query_count, query)
            if not self.all_vs_all:
                target = np.where(minus, target - self.target_count, target)
        # Per pair the better strand: sort by pair, then score descending, + before -.
        order = np.lexsort((minus, -score, target, query))
        first = np.ones(len(order), dtype=bool)
        first[1:] = (np.diff(query[order]) != 0) | (np.diff(target[order]) != 0)
        keep = order[first]
        folded = {"query": query[keep], "target": target[keep], "score": score[keep], "minus": minus[keep]}
        if job.align:
            coords = np.concatenate([p["coords"] for p in parts]) if parts else np.empty((0, 4), np.int64)
            coords = coords[keep].astype(np.int64, copy=True)
            # Query coordinates on the reverse complement -> on the query as given.
            length = self.query_lengths[folded["query"]]
            on_minus = folded["minus"]
            start, end = coords[:, 0].copy(), coords[:, 1].copy()
            coords[on_minus, 0] = length[on_minus] - end[on_minus]
            coords[on_minus, 1] = length[on_minus] - start[on_minus]
            folded["coords"] = coords
            folded["cigar"] = np.array([c for p in parts for c in p["cigar"]], dtype=object)[keep]
        return {"parts": [folded]}


def _joined(parts: list[dict], key: str, dtype) -> np.ndarray:
    return np.concatenate([p[key] for p in parts]).astype(dtype) if parts else np.empty(0, dtype)


def _check_score_range(query_set: SequenceSet, target_set: SequenceSet, all_vs_all: bool, scoring: Scoring) -> None:
    if all_vs_all:
        shorter = min(int(query_set.lengths.max()), int(target_set.lengths.max()))
    else:
        shorter = int(np.minimum(query_set.lengths, target_set.lengths).max())
    if shorter > sw_kernels.max_min_length(scoring):
        raise InputError(f"with match score {scoring.match}, pairs whose shorter sequence has {shorter:,} bases "
                         f"could score beyond 2^31; use a smaller match score")


def _run(query_set, target_set, all_vs_all: bool, job: ScreenJob, client, batch_pairs, progress: bool,
         verbose: bool) -> dict:
    """Run every task on ``client``; gather scores (or survivors) in pair order."""
    from distributed import as_completed

    from ..cluster import worker_count

    ql, tl = query_set.lengths, target_set.lengths
    if all_vs_all:
        total_cells = float(ql.sum()) * float(tl.sum())
    else:
        total_cells = float((ql * tl).sum())
    low, high = CELLS_PER_TASK[job.backend]
    budget = int(min(high, max(low, total_cells / (4 * worker_count(client)))))
    tasks = plan_tasks(ql, tl, all_vs_all, budget, CODE_BYTES_PER_TASK[job.backend], batch_pairs)
    if verbose:
        note(f"{sum(t.pairs for t in tasks):,} pairs in {len(tasks):,} tasks")
    shared = WorkerSequences(codes=np.concatenate([query_set.codes, target_set.codes]),
                        starts=np.concatenate([query_set.offsets[:-1], target_set.offsets[:-1] + len(query_set.codes)]),
                        lengths=np.concatenate([ql, tl]), queries=len(query_set))
    sequences_on_workers = on_workers(client, shared, "seqsift-sequences")
    futures = {client.submit(run_screen_task, sequences_on_workers, task, job, pure=False, retries=2,
                             key=f"seqsift-screen-{task.index}-{os.urandom(4).hex()}"): task for task in tasks}
    if job.threshold is None:
        shape = (len(query_set), len(target_set)) if all_vs_all else (len(query_set),)
        collected = {"scores": np.zeros(shape, dtype=np.int32)}
    else:
        collected = {"parts": []}
    try:
        with open_progress(progress, sum(t.cells for t in tasks), unit="cells", label="screening") as bar:
            for future in as_completed(futures):
                result = future.result()
                task = futures.pop(future)
                if job.threshold is None:
                    qi, ti = task.pair_indices()
                    if all_vs_all:
                        collected["scores"][qi, ti] = result["scores"]
                    else:
                        collected["scores"][qi] = result["scores"]
                else:
                    collected["parts"].append(result)
                bar.advance(task.cells)
    finally:
        for future in futures:
            future.cancel()
    return collected


def _survivors(collected: dict, query_set, target_set, job: ScreenJob, strand: str) -> pd.DataFrame:
    parts = collected["parts"]
    query = _joined(parts, "query", np.int64)
    target = _joined(parts, "target", np.int64)
    score = _joined(parts, "score", np.int64)
    order = np.lexsort((target, query))
    frame = pd.DataFrame({
        "query_index": query[order],
        "query": np.asarray(query_set.names, dtype=object)[query[order]] if len(order) else np.empty(0, object),
        "target_index": target[order],
        "target": np.asarray(target_set.names, dtype=object)[target[order]] if len(order) else np.empty(0, object),
        "score": score[order],
    })
    if strand != "+":
        frame["strand"] = _strand_column(_joined(parts, "minus", bool)[order])
    if job.align:
        coords = np.concatenate([p["coords"] for p in parts]) if parts else np.empty((0, 4), np.int64)
        cigars = np.array([c for p in parts for c in p["cigar"]], dtype=object)
        for k, name in enumerate(ALIGNMENT_COLUMNS[:4]):
            frame[name] = coords[order, k] if len(order) else np.empty(0, np.int64)
        frame["cigar"] = cigars[order] if len(order) else np.empty(0, object)
    return frame


def _strand_column(minus: np.ndarray) -> np.ndarray:
    return np.where(minus, "-", "+").astype(object)


def _deliver(collected: dict, query_set, target_set, all_vs_all: bool, job: ScreenJob, output, strand: str = "+"):
    """The result as an array / DataFrame, or written to ``output`` (count of rows)."""
    strand_columns = ["strand"] if strand != "+" else []
    if job.threshold is not None:
        frame = _survivors(collected, query_set, target_set, job, strand)
        if output is None:
            return frame
        columns = ["query", "target", "score", *strand_columns] + (ALIGNMENT_COLUMNS if job.align else [])
        writer = _writer(output, columns)
        try:
            writer.write(frame)
        except BaseException:
            writer.abort()
            raise
        writer.close()
        return writer.count
    scores = collected["scores"]
    if output is None:
        return scores
    minus = collected.get("minus")
    writer = _writer(output, ["query", "target", "score", *strand_columns])
    query_names = np.asarray(query_set.names, dtype=object)
    target_names = np.asarray(target_set.names, dtype=object)
    try:
        if all_vs_all:
            rows_per_block = max(1, 1_000_000 // max(1, len(target_set)))
            for a in range(0, len(query_set), rows_per_block):
                block = scores[a:a + rows_per_block]
                rows = {"query": np.repeat(query_names[a:a + rows_per_block], len(target_set)),
                        "target": np.tile(target_names, block.shape[0]),
                        "score": block.reshape(-1)}
                if strand_columns:
                    rows["strand"] = _strand_column(minus[a:a + rows_per_block].reshape(-1))
                writer.write(pd.DataFrame(rows))
        else:
            rows = {"query": query_names, "target": target_names, "score": scores}
            if strand_columns:
                rows["strand"] = _strand_column(minus)
            writer.write(pd.DataFrame(rows))
    except BaseException:
        writer.abort()
        raise
    writer.close()
    return writer.count
