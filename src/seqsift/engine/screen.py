"""``screen``: score many sequence pairs by Smith-Waterman, on GPUs or CPU cores, through Dask.

The third job of seqsift (DESIGN.md, paper 5): pairs (x, y), linear gap,
score = max over the local alignment matrix (match c1, mismatch -c2, gap -g;
defaults 2, 1, 1 as in Nishimura et al.). Pairs are the records of two inputs
taken by order, or every query against every target (``all_vs_all``).

Flow::

    FASTA/FASTQ or lists --read, encode in bulk--> one code buffer (sent
    to the workers once, shared.on_workers) --plan: pairs bucketed by padded length--> tasks
    (pair index arrays) --worker: gather padded code matrices, run the kernel
    (sw-bpbc / sw-wordwise, CUDA or Numba), keep the pairs >= threshold and
    align them on the host--> client: scores or surviving rows, in pair order
    --> array, DataFrame, or a TSV / Parquet file (temporary file + rename)

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

import gzip
import os
import re
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..alphabet import encode_text
from ..errors import InputError, quote, reading
from ..kernels import sw as sw_kernels
from ..kernels.sw import Scoring
from .output import TableWriter, check_output_path
from .shared import on_workers

__all__ = ["screen", "read_sequences", "SequenceSet", "plan_tasks", "pad_length"]

ALIGNMENT_COLUMNS = ["query_start", "query_end", "target_start", "target_end", "cigar"]
FORMATS = {".tsv": "tsv", ".txt": "tsv", ".parquet": "parquet", ".pq": "parquet"}
"""Output suffixes (a folder path: a partitioned Parquet dataset, as for search)."""

CELLS_PER_TASK = {"cpu": (1 << 24, 1 << 29), "cuda": (1 << 30, 1 << 38)}
"""Bounds of the DP cells in one task (pairs x m x n), aiming at 4 tasks per worker between them."""

CODE_BYTES_PER_TASK = {"cpu": 64 << 20, "cuda": 1 << 30}
"""At most this many bytes of padded codes (pairs x (m + n)) in one task."""

_SEQUENCE_LETTERS = np.zeros(256, dtype=bool)
for _c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz*-.":
    _SEQUENCE_LETTERS[_c] = True
_WHITESPACE = b" \t\r\v\f"
_LOOKS_LIKE_SEQUENCE = re.compile(r"[ACGTNacgtn]+")
_COMPRESSED = {b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd", b"PK\x03\x04": "zip"}


def note(message: str) -> None:
    print(f"seqsift: note: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Sequences
# --------------------------------------------------------------------------

@dataclass(eq=False)
class SequenceSet:
    """Named sequences as one buffer of text codes (A0 C1 G2 T3, 4 = anything else).

    Sequence k is codes[offsets[k]:offsets[k + 1]]. ``source`` names the input
    in messages (a path, or "queries" / "targets" for Python lists).
    """

    names: list[str]
    codes: np.ndarray
    offsets: np.ndarray
    source: str
    lines: np.ndarray | None = field(default=None, repr=False)  # header line of each record (files)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.names)

    def where(self, k: int) -> str:
        """'record NAME (line N)' for messages."""
        line = f" (line {int(self.lines[k])})" if self.lines is not None else ""
        return f"record {quote(self.names[k])}{line}"


def read_sequences(source, what: str = "sequences") -> SequenceSet:
    """Sequences from a FASTA/FASTQ file (plain or gzip) or a list/array of strings.

    source: a path; a list, tuple or NumPy array of sequence strings (named
    ``<what>_1``, ``<what>_2``, ... with ``what`` singular, e.g. query_1) or
    of (name, sequence) pairs; or a SequenceSet (returned unchanged).
    Lower case counts as upper case; every character other than A, C, G, T
    scores as a mismatch (N included, even against N).
    """
    if isinstance(source, SequenceSet):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _read_file(source)
    if isinstance(source, np.ndarray):
        source = source.tolist()
    if isinstance(source, (list, tuple)):
        return _from_list(source, what)
    raise TypeError(f"{what} must be a file path or a list of sequences, not {type(source).__name__}")


def _singular(what: str) -> str:
    return {"queries": "query", "targets": "target", "sequences": "sequence"}.get(what, what)


def _from_list(items, what: str) -> SequenceSet:
    if len(items) == 0:
        raise InputError(f"{what}: no sequences (the list is empty)")
    names, parts = [], []
    prefix = _singular(what)
    for i, item in enumerate(items, start=1):
        if isinstance(item, (tuple, list)) and len(item) == 2:
            name, sequence = item
        else:
            name, sequence = f"{prefix}_{i}", item
        if isinstance(sequence, bytes):
            sequence = sequence.decode("ascii", errors="replace")
        if not isinstance(sequence, str) or not isinstance(name, str):
            raise TypeError(f"{what} item {i}: expected a sequence string or a (name, sequence) pair of "
                            f"strings, not {item!r}")
        sequence = sequence.strip()
        if not sequence:
            raise InputError(f"{what} item {i} ({quote(name)}): empty sequence")
        names.append(name)
        parts.append(sequence)
    return _encode(names, parts, what, None)


def _encode(names: list[str], parts: list, source: str, lines) -> SequenceSet:
    lengths = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    joined = "".join(parts) if parts and isinstance(parts[0], str) else b"".join(parts)
    codes = encode_text(joined)
    return SequenceSet(names=names, codes=np.ascontiguousarray(codes, dtype=np.uint8), offsets=offsets,
                       source=source, lines=None if lines is None else np.asarray(lines, dtype=np.int64))


def _file_bytes(display: str) -> bytes:
    path = Path(os.path.expanduser(display))
    if not path.exists() and not path.is_symlink():
        hint = ""
        if _LOOKS_LIKE_SEQUENCE.fullmatch(display):
            hint = " (to screen that sequence itself, pass it in a list)"
        raise InputError(f"{display}: no such file{hint}")
    with reading(display):
        if path.is_dir():
            raise InputError(f"{display}: is a directory, not a FASTA or FASTQ file")
        data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":  # gzip or BGZF (multi-member gzip)
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise InputError(f"{display}: the gzip data is corrupt or truncated ({err})") from None
    for magic, kind in _COMPRESSED.items():
        if data.startswith(magic):
            raise InputError(f"{display}: is {kind}-compressed; seqsift reads FASTA and FASTQ plain or "
                             f"gzip-compressed (decompress it, or recompress it with gzip)")
    return data


def _read_file(path) -> SequenceSet:
    display = os.fspath(path)
    data = _file_bytes(display)
    if not data.strip():
        raise InputError(f"{display}: is empty (no sequences)")
    if b"\x00" in data[:1 << 16]:
        raise InputError(f"{display}: looks like binary data, not a FASTA or FASTQ file")
    lines = data.split(b"\n")
    first = next(k for k, line in enumerate(lines) if line.strip())
    start = lines[first].lstrip()
    if start.startswith(b">"):
        names, parts, header_lines = _parse_fasta(lines, first, display)
    elif start.startswith(b"@"):
        names, parts, header_lines = _parse_fastq(lines, first, display)
    else:
        raise InputError(f"{display}: line {first + 1}: not FASTA or FASTQ: a record starts with '>' (FASTA) "
                         f"or '@' (FASTQ), this line with {quote(start[:20])}")
    sequences = _encode(names, parts, display, header_lines)
    _check_letters(sequences, b"".join(parts))
    return sequences


def _name_of(header: bytes, line_no: int, display: str) -> str:
    words = header[1:].split()
    if not words:
        raise InputError(f"{display}: line {line_no}: header line has no name (nothing after {header[:1].decode()!r})")
    return words[0].decode("utf-8", errors="backslashreplace")


def _parse_fasta(lines: list[bytes], first: int, display: str):
    names, parts, header_lines = [], [], []
    current: list[bytes] = []
    for k in range(first, len(lines)):
        line = lines[k]
        if line.startswith(b">"):
            if names:
                parts.append(b"".join(current))
            names.append(_name_of(line.rstrip(), k + 1, display))
            header_lines.append(k + 1)
            current = []
        else:
            current.append(line.translate(None, _WHITESPACE))
    parts.append(b"".join(current))
    for k, part in enumerate(parts):
        if not part:
            raise InputError(f"{display}: record {quote(names[k])} (line {header_lines[k]}): empty sequence")
    return names, parts, header_lines


def _parse_fastq(lines: list[bytes], first: int, display: str):
    names, parts, header_lines = [], [], []
    k, total = first, len(lines)
    while k < total:
        header = lines[k].rstrip()
        if not header:
            k += 1
            continue
        if not header.startswith(b"@"):
            raise InputError(f"{display}: line {k + 1}: expected '@' at the start of a FASTQ record, found "
                             f"{quote(header[:20])}")
        name = _name_of(header, k + 1, display)
        where = f"{display}: record {quote(name)} (line {k + 1})"
        if k + 3 >= total:
            raise InputError(f"{where}: truncated (a FASTQ record has 4 lines: @name, sequence, +, quality)")
        sequence = lines[k + 1].translate(None, _WHITESPACE)
        plus = lines[k + 2].rstrip()
        quality = lines[k + 3].rstrip(b"\r")
        if not plus.startswith(b"+"):
            raise InputError(f"{where}: line {k + 3} should be the '+' line, found {quote(plus[:20])} "
                             f"(multi-line FASTQ is not supported)")
        if not sequence:
            raise InputError(f"{where}: empty sequence")
        if len(quality) != len(sequence):
            raise InputError(f"{where}: the quality line has {len(quality)} characters but the sequence "
                             f"has {len(sequence)}")
        names.append(name)
        parts.append(sequence)
        header_lines.append(k + 1)
        k += 4
    return names, parts, header_lines


def _check_letters(sequences: SequenceSet, raw: bytes) -> None:
    """InputError naming the record of the first byte that is no sequence letter."""
    values = np.frombuffer(raw, dtype=np.uint8)
    bad = np.flatnonzero(~_SEQUENCE_LETTERS[values])
    if bad.size:
        position = int(bad[0])
        record = int(np.searchsorted(sequences.offsets, position, side="right") - 1)
        raise InputError(f"{sequences.source}: {sequences.where(record)}: {quote(bytes(raw[position:position + 1]))} "
                         f"is not a sequence letter (letters, '*', '-' and '.' are; all but A, C, G, T "
                         f"score as mismatches)")


# --------------------------------------------------------------------------
# Planning: pairs bucketed by padded length, split into tasks
# --------------------------------------------------------------------------

def pad_length(lengths) -> np.ndarray:
    """Lengths rounded up to a multiple of 2^(floor(log2 L) - 3) (at least 1): <= 12.5% padding."""
    lengths = np.maximum(np.asarray(lengths, dtype=np.int64), 1)
    step = np.maximum(1, (1 << np.maximum(0, np.floor(np.log2(lengths)).astype(np.int64) - 3)))
    return -(-lengths // step) * step


@dataclass(frozen=True)
class PairTask:
    """Pairs of one (m, n) bucket: zip(queries, targets), or their product (all-vs-all tile)."""

    index: int
    queries: np.ndarray  # int64 query indices
    targets: np.ndarray  # int64 target indices
    product: bool
    m: int               # padded length of the shorter sequences
    n: int               # padded length of the longer sequences

    @property
    def pairs(self) -> int:
        return len(self.queries) * len(self.targets) if self.product else len(self.queries)

    @property
    def cells(self) -> int:
        return self.pairs * self.m * self.n

    def pair_indices(self) -> tuple[np.ndarray, np.ndarray]:
        if self.product:
            return np.repeat(self.queries, len(self.targets)), np.tile(self.targets, len(self.queries))
        return self.queries, self.targets


def _pairs_per_task(m: int, n: int, cell_budget: int, byte_budget: int, batch_pairs: int | None) -> int:
    if batch_pairs:
        return int(batch_pairs)
    pairs = min(cell_budget // (m * n), byte_budget // (m + n))
    return max(64, pairs // 64 * 64)   # whole words of 64 pairs where possible


def plan_tasks(query_lengths, target_lengths, all_vs_all: bool, cell_budget: int, byte_budget: int,
               batch_pairs: int | None = None) -> list[PairTask]:
    """Tasks covering every pair once, each of one (m, n) bucket and at most ~cell_budget cells."""
    ql = np.asarray(query_lengths, dtype=np.int64)
    tl = np.asarray(target_lengths, dtype=np.int64)
    tasks: list[PairTask] = []
    if not all_vs_all:
        pm = pad_length(np.minimum(ql, tl))
        pn = pad_length(np.maximum(ql, tl))
        order = np.lexsort((np.arange(len(ql)), pn, pm))
        keys = np.stack([pm[order], pn[order]], axis=1)
        cuts = np.flatnonzero(np.any(keys[1:] != keys[:-1], axis=1)) + 1
        for run in np.split(order, cuts):
            m, n = int(pm[run[0]]), int(pn[run[0]])
            step = _pairs_per_task(m, n, cell_budget, byte_budget, batch_pairs)
            for a in range(0, len(run), step):
                chunk = np.sort(run[a:a + step])
                tasks.append(PairTask(len(tasks), chunk, chunk, False, m, n))
        return tasks
    q_class, t_class = pad_length(ql), pad_length(tl)
    for qc in np.unique(q_class):
        queries = np.flatnonzero(q_class == qc)
        for tc in np.unique(t_class):
            targets = np.flatnonzero(t_class == tc)
            m, n = int(min(qc, tc)), int(max(qc, tc))
            step = _pairs_per_task(m, n, cell_budget, byte_budget, batch_pairs)
            t_step = min(len(targets), step)
            q_step = max(1, step // t_step)
            for a in range(0, len(queries), q_step):
                for b in range(0, len(targets), t_step):
                    tasks.append(PairTask(len(tasks), queries[a:a + q_step], targets[b:b + t_step], True, m, n))
    return tasks


# --------------------------------------------------------------------------
# The worker's side
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Sequences:
    """What the workers need of both inputs: one code buffer; queries first, then targets."""

    codes: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    queries: int


@dataclass(frozen=True)
class _Job:
    algorithm: str
    backend: str
    scoring: Scoring
    threshold: int | None
    align: bool
    word_bits: int | None


def run_screen_task(sequences: _Sequences, task: PairTask, job: _Job) -> dict:
    """Scores of a task's pairs; with a threshold, only the survivors (and their alignments)."""
    from ..kernels import sw_cpu
    from ..kernels.threads import use_worker_share

    use_worker_share()
    qi, ti = task.pair_indices()
    q_start, q_len = sequences.starts[qi], sequences.lengths[qi]
    t_start, t_len = sequences.starts[sequences.queries + ti], sequences.lengths[sequences.queries + ti]
    swap = t_len < q_len   # the shorter sequence is the kernel's x
    x_start, x_len = np.where(swap, t_start, q_start), np.where(swap, t_len, q_len)
    y_start, y_len = np.where(swap, q_start, t_start), np.where(swap, q_len, t_len)
    pairs = len(qi)
    x_codes = np.empty((pairs, task.m), dtype=np.uint8)
    y_codes = np.empty((pairs, task.n), dtype=np.uint8)
    sw_cpu.gather_rows(sequences.codes, x_start, x_len, task.m, x_codes)
    sw_cpu.gather_rows(sequences.codes, y_start, y_len, task.n, y_codes)
    options = dict(word_bits=job.word_bits, min_length=int(x_len.max()))
    if job.threshold is None:
        return {"scores": sw_kernels.pair_scores(job.algorithm, job.backend, x_codes, y_codes, job.scoring,
                                                 **options)}
    # Screening: which pairs reach the threshold (a cheaper flag kernel), then
    # the scores of those few.
    keep = np.flatnonzero(sw_kernels.pairs_reaching(job.algorithm, job.backend, x_codes, y_codes, job.scoring,
                                                    job.threshold, **options))
    scores = sw_kernels.pair_scores(job.algorithm, job.backend, x_codes[keep], y_codes[keep], job.scoring,
                                    **options) if keep.size else np.zeros(0, np.int32)
    del x_codes, y_codes
    result = {"query": qi[keep], "target": ti[keep], "score": scores}
    if job.align:
        coords, cigars = sw_kernels.align(sequences.codes, q_start[keep], q_len[keep], t_start[keep], t_len[keep],
                                          scores, job.scoring)
        result["coords"] = coords
        result["cigar"] = cigars
    return result


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

_DTYPES = {"query_index": np.int64, "query": object, "target_index": np.int64, "target": object,
           "score": np.int64, "query_start": np.int64, "query_end": np.int64, "target_start": np.int64,
           "target_end": np.int64, "cigar": object}


def _writer(output, columns: list[str]) -> TableWriter:
    return TableWriter(output, columns, FORMATS, _DTYPES)


# --------------------------------------------------------------------------
# The API
# --------------------------------------------------------------------------

def screen(queries, targets, *, threshold: int | None = None, match: int = 2, mismatch: int = 1, gap: int = 1,
           all_vs_all: bool = False, align: bool = True, output=None, algorithm: str = "auto",
           backend: str = "auto", word_bits: int | None = None, client=None, workers: int | None = None,
           gpus=None, scheduler: str | None = None, scheduler_file: str | None = None, dashboard: bool = False,
           batch_pairs: int | None = None, progress: bool = False, verbose: bool = False):
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
    output            None: return the result; a path (.tsv, .parquet) or "-"
                      (TSV on stdout): write rows there (atomically) and
                      return the number of rows written
    algorithm         "auto", "sw-bpbc" (bit-sliced, Nishimura et al.) or
                      "sw-wordwise"; word_bits 32 or 64 pairs per word (bpbc)
    backend           "auto" (cuda when a GPU is visible), "cuda" or "cpu"
    client            a distributed.Client; otherwise one is started or joined
                      (``workers``, ``gpus``, ``scheduler``, ``scheduler_file``)
    batch_pairs       pairs per task (default: from the cell count)

    Returns, without ``output``: for threshold None a NumPy int32 array of
    scores, shape (pairs,) or (queries, targets) for all_vs_all; with a
    threshold a DataFrame of the surviving pairs (query_index, query,
    target_index, target, score, and with ``align`` query_start, query_end,
    target_start, target_end (0-based, half-open) and cigar (=, X, I, D; I =
    query base without target base)), ordered by query then target.
    Written files have the columns query, target, score (and the alignment
    columns for a threshold with align).
    """
    scoring = Scoring(match, mismatch, gap)
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
    check_output_path(output, FORMATS)
    query_set = read_sequences(queries, "queries")
    target_set = read_sequences(targets, "targets")
    if not all_vs_all and len(query_set) != len(target_set):
        raise InputError(f"{query_set.source} has {len(query_set):,} records but {target_set.source} has "
                         f"{len(target_set):,}: without all-vs-all (--all-vs-all) records are paired by order, "
                         f"so both must have the same number")
    _check_score_range(query_set, target_set, all_vs_all, scoring)

    from . import _client_has_gpus, resolve_backend

    if client is not None and backend == "auto" and not _client_has_gpus(client):
        backend = "cpu"
    backend = resolve_backend(backend)
    try:
        chosen = sw_kernels.choose_sw_algorithm(backend, algorithm)
    except ValueError as err:
        raise InputError(str(err)) from None
    job = _Job(chosen, backend, scoring, threshold, bool(align) and threshold is not None, word_bits)
    if verbose:
        note(f"screening with {chosen} on {backend} (match {match}, mismatch {mismatch}, gap {gap})")

    if client is not None:
        collected = _run(query_set, target_set, all_vs_all, job, client, batch_pairs, progress, verbose)
    else:
        from ..cluster import connect

        with connect(backend, workers=workers, gpus=gpus, scheduler=scheduler, scheduler_file=scheduler_file,
                     dashboard=dashboard) as own_client:
            collected = _run(query_set, target_set, all_vs_all, job, own_client, batch_pairs, progress, verbose)
    return _deliver(collected, query_set, target_set, all_vs_all, job, output)


def _check_score_range(query_set: SequenceSet, target_set: SequenceSet, all_vs_all: bool, scoring: Scoring) -> None:
    if all_vs_all:
        shorter = min(int(query_set.lengths.max()), int(target_set.lengths.max()))
    else:
        shorter = int(np.minimum(query_set.lengths, target_set.lengths).max())
    if shorter > sw_kernels.max_min_length(scoring):
        raise InputError(f"with match score {scoring.match}, pairs whose shorter sequence has {shorter:,} bases "
                         f"could score beyond 2^31; use a smaller match score")


def _run(query_set, target_set, all_vs_all: bool, job: _Job, client, batch_pairs, progress: bool,
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
    shared = _Sequences(codes=np.concatenate([query_set.codes, target_set.codes]),
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
    bar = _progress_bar(sum(t.cells for t in tasks), progress)
    try:
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
            if bar is not None:
                bar.update(task.cells)
    finally:
        for future in futures:
            future.cancel()
        if bar is not None:
            bar.close()
    return collected


def _progress_bar(cells: int, enabled: bool):
    if not enabled or cells == 0:
        return None
    from tqdm import tqdm

    interactive = sys.stderr.isatty()
    return tqdm(total=cells, unit="cells", unit_scale=True, desc="screening", file=sys.stderr, delay=2.0,
                dynamic_ncols=True, leave=False, mininterval=0.5 if interactive else 30.0)


def _survivors(collected: dict, query_set, target_set, job: _Job) -> pd.DataFrame:
    parts = collected["parts"]
    query = np.concatenate([p["query"] for p in parts]).astype(np.int64) if parts else np.empty(0, np.int64)
    target = np.concatenate([p["target"] for p in parts]).astype(np.int64) if parts else np.empty(0, np.int64)
    score = np.concatenate([p["score"] for p in parts]).astype(np.int64) if parts else np.empty(0, np.int64)
    order = np.lexsort((target, query))
    frame = pd.DataFrame({
        "query_index": query[order],
        "query": np.asarray(query_set.names, dtype=object)[query[order]] if len(order) else np.empty(0, object),
        "target_index": target[order],
        "target": np.asarray(target_set.names, dtype=object)[target[order]] if len(order) else np.empty(0, object),
        "score": score[order],
    })
    if job.align:
        coords = np.concatenate([p["coords"] for p in parts]) if parts else np.empty((0, 4), np.int64)
        cigars = np.array([c for p in parts for c in p["cigar"]], dtype=object)
        for k, name in enumerate(ALIGNMENT_COLUMNS[:4]):
            frame[name] = coords[order, k] if len(order) else np.empty(0, np.int64)
        frame["cigar"] = cigars[order] if len(order) else np.empty(0, object)
    return frame


def _deliver(collected: dict, query_set, target_set, all_vs_all: bool, job: _Job, output):
    """The result as an array / DataFrame, or written to ``output`` (count of rows)."""
    if job.threshold is not None:
        frame = _survivors(collected, query_set, target_set, job)
        if output is None:
            return frame
        columns = ["query", "target", "score"] + (ALIGNMENT_COLUMNS if job.align else [])
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
    writer = _writer(output, ["query", "target", "score"])
    query_names = np.asarray(query_set.names, dtype=object)
    target_names = np.asarray(target_set.names, dtype=object)
    try:
        if all_vs_all:
            rows_per_block = max(1, 1_000_000 // max(1, len(target_set)))
            for a in range(0, len(query_set), rows_per_block):
                block = scores[a:a + rows_per_block]
                writer.write(pd.DataFrame({
                    "query": np.repeat(query_names[a:a + rows_per_block], len(target_set)),
                    "target": np.tile(target_names, block.shape[0]),
                    "score": block.reshape(-1)}))
        else:
            writer.write(pd.DataFrame({"query": query_names, "target": target_names, "score": scores}))
    except BaseException:
        writer.abort()
        raise
    writer.close()
    return writer.count
