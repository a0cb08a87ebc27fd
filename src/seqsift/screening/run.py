"""``screen``: score many sequence pairs by Smith-Waterman, on GPUs or CPU cores, through Dask.

The third job of seqsift (DESIGN.md, paper 5): pairs (x, y), linear gap,
score = max over the local alignment matrix (match c1, mismatch -c2, gap -g;
defaults 2, 1, 1 as in Nishimura et al.). Pairs are the records of two inputs
taken by order, or every query against every target (``all_vs_all``).

Flow (this module runs it; the steps live beside it)::

    FASTA/FASTQ or lists --read, encode in bulk (inputs.py)--> one code buffer
    (the ScreenJob, sent to the workers once; on a GPU uploaded once per
    worker) --plan: pairs bucketed by padded length (planning.py)--> tasks
    (pair index arrays, all-vs-all tiles) --worker (task.py): the kernel reads
    the pairs from the buffer (sw-dpx; the others on code matrices gathered
    from it, on the device for CUDA), keep the pairs >= threshold and align
    them on the host-->
    client (output.py): scores or surviving rows, strands folded, in pair
    order --> array, DataFrame, or a TSV / Parquet file (whole or not at all)

The runtime (``seqsift.runtime``) runs it as it runs every job: checks,
output lock, resume from saved tasks, cluster, abort. On one GPU the task
threads start, and CuPy and the CUDA context load (and, where survivors are
aligned, the host's alignment lanes), while the inputs are read
(``JobClient.start_ahead``), as for search and crispr.

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

from functools import partial

import numpy as np

from ..errors import InputError, note
from ..kernels import sw as sw_kernels
from ..kernels.cuda import ready_device
from ..kernels.sw import Scoring
from ..runtime import stages
from ..runtime.clients import JobClient, backend_for
from ..runtime.run import JobRun
from .inputs import SequenceSet, concatenated, read_sequences, reverse_complements
from .task import ScreenJob, WorkerSequences

STRANDS = ("+", "-", "both")
"""Which strand of each query is scored against the targets (``strand``)."""


def screen(queries, targets, *, threshold: int | None = None, match: int = 2, mismatch: int = 1, gap: int = 1,
           gap_open: int | None = None, gap_extend: int | None = None, all_vs_all: bool = False,
           align: bool = True, output=None, algorithm: str = "auto",
           backend: str = "auto", word_bits: int | None = None, client=None, workers: int | None = None,
           gpus=None, scheduler: str | None = None, scheduler_file: str | None = None, dashboard: bool = False,
           batch_pairs: int | None = None, progress: bool = False, verbose: bool = False, strand: str = "+",
           resume: bool = False, wait_for_lock: bool = False):
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
                      affine gaps too "sw-gotoh", "sw-dpx-affine" and
                      "sw-lanes" (CPU cores only, 32 pairs in SIMD lanes: the
                      CPU's default); word_bits 32 or 64 pairs per word (bpbc)
    backend           "auto" (cuda when a GPU is visible), "cuda" or "cpu"
    client            a distributed.Client; otherwise one is started or joined
                      (``workers``, ``gpus``, ``scheduler``, ``scheduler_file``)
    batch_pairs       pairs per task (default: from the cell count)
    strand            "+" (default): each query as given; "-": its reverse
                      complement; "both": the better of the two, so that reads
                      from either strand of a target are found (ties: +)

    resume            with ``output``: reuse the tasks an interrupted run saved beside it
    wait_for_lock     with ``output``: wait for another job writing the same file (default: an
                      InputError naming it)

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
    if strand not in STRANDS:
        raise InputError(f"unknown strand {strand!r} (choose +, - or both)")
    job_client = JobClient(client, workers=workers, gpus=gpus, scheduler=scheduler, scheduler_file=scheduler_file,
                           dashboard=dashboard)
    with JobRun(output, formats=ScreenJob.formats, inputs={"queries": queries, "targets": targets},
                client=job_client, resume=resume, wait_for_lock=wait_for_lock) as run:
        # One GPU: CuPy, the context and (where survivors are aligned) the host's alignment lanes while the
        # inputs are read.
        aligning = bool(align) and threshold is not None
        job_client.start_ahead(backend, prepare=partial(_prepare_device, scoring if aligning else None))
        with stages.timed("read"):   # read and encode (inputs.py)
            query_set = read_sequences(queries, "queries")
            target_set = read_sequences(targets, "targets")
        if not all_vs_all and len(query_set) != len(target_set):
            raise InputError(f"{query_set.source} has {len(query_set):,} records but {target_set.source} has "
                             f"{len(target_set):,}: without all-vs-all (--all-vs-all) records are paired by order, "
                             f"so both must have the same number")
        _check_score_range(query_set, target_set, all_vs_all, scoring)
        backend = backend_for(backend, client)
        try:
            chosen = "auto" if algorithm == "auto" else sw_kernels.choose_sw_algorithm(backend, algorithm, scoring)
        except ValueError as err:
            raise InputError(str(err)) from None
        if verbose:
            note(f"screening with {chosen} on {backend} ({scoring.describe()})")
        oriented_queries, oriented_targets = orient(query_set, target_set, all_vs_all, strand)
        job = ScreenJob(sequences=_on_workers(oriented_queries, oriented_targets), algorithm=chosen, backend=backend,
                        scoring=scoring, threshold=threshold, align=aligning,
                        word_bits=word_bits, all_vs_all=all_vs_all, strand=strand,
                        query_names=tuple(query_set.names), target_names=tuple(target_set.names))
        return run.run(job, layout={"batch_pairs": batch_pairs, "cells_per_task": None}, progress=progress,
                       verbose=verbose)


def _prepare_device(aligning: Scoring | None) -> None:
    """What a one-GPU screen's cluster thread does ahead: CuPy and the CUDA context
    (kernels.cuda.ready_device); for a job that aligns its survivors (with ``aligning``'s gaps), then
    the alignment lanes' loads (kernels.sw.align_soon)."""
    ready_device()
    if aligning is not None:
        sw_kernels.align_soon(aligning)


def orient(queries: SequenceSet, targets: SequenceSet, all_vs_all: bool, strand: str):
    """The (queries, targets) actually scored for a strand choice.

    ``+`` scores the queries as given and ``-`` their reverse complements.
    ``both`` scores the queries followed by their reverse complements: against
    every target (all-vs-all), or paired by order against the targets listed
    twice, so that pair k and pair k + Q are one pair's two strands (the
    collectors in output.py keep, per pair, the better strand).
    """
    if strand == "+":
        return queries, targets
    if strand == "-":
        return reverse_complements(queries), targets
    return concatenated(queries, reverse_complements(queries)), targets if all_vs_all else concatenated(targets, targets)


def _on_workers(queries: SequenceSet, targets: SequenceSet) -> WorkerSequences:
    """Both inputs in one code buffer, queries first: what the workers get."""
    return WorkerSequences(codes=np.concatenate([queries.codes, targets.codes]),
                           starts=np.concatenate([queries.offsets[:-1], targets.offsets[:-1] + len(queries.codes)]),
                           lengths=np.concatenate([queries.lengths, targets.lengths]), queries=len(queries))


def _check_score_range(query_set: SequenceSet, target_set: SequenceSet, all_vs_all: bool, scoring: Scoring) -> None:
    if all_vs_all:
        shorter = min(int(query_set.lengths.max()), int(target_set.lengths.max()))
    else:
        shorter = int(np.minimum(query_set.lengths, target_set.lengths).max())
    if shorter > sw_kernels.max_min_length(scoring):
        raise InputError(f"with match score {scoring.match}, pairs whose shorter sequence has {shorter:,} bases "
                         f"could score beyond 2^31; use a smaller match score")
