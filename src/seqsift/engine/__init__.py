"""The engine: ``search`` checks a job, gets a cluster, runs it, writes the rows.

Flow (DESIGN.md): reference + patterns -> SearchJob -> chunk groups x pattern
batches as Dask tasks (``run.py``) -> worker task (``task.py``) -> ordered
merge (``merge.py``) -> writer (``output.py``).
"""
from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from functools import partial

from .. import kernels
from ..cluster import Connection, count_gpus, starts_in_process
from ..errors import InputError, note
from ..io.patterns import ALPHABETS, read_patterns, validate_patterns_for_job
from ..patterns import STRAND_CHOICES, PatternSet
from ..io.reference import open_reference
from .job import MODES, SearchJob
from . import stages
from .lock import OutputLock

DEFAULT_PATTERN_BATCH = {"cpu": 1024, "cuda": 8192}
"""Patterns per task: larger batches amortise each pass over the text."""


def resolve_backend(backend: str) -> str:
    """``cpu`` or ``cuda``: ``auto`` is CUDA when a GPU is visible, else CPU with a notice."""
    if backend not in ("auto", *kernels.BACKENDS):
        raise InputError(f"unknown backend {backend!r} (choose auto, cpu or cuda)")
    if backend == "cpu":
        return "cpu"
    gpus = count_gpus()
    if gpus:
        return "cuda"
    if backend == "cuda":
        raise InputError("backend cuda: no GPU is visible (use --backend cpu or auto)")
    note("no GPU visible; running on CPU workers")
    return "cpu"


def search(reference, patterns, k: int, metric: str = "hamming", strand: str = "both",
           mode: str = "best", *, output=None, algorithm: str = "auto", backend: str = "auto",
           align: bool = True, client=None, workers: int | None = None, gpus=None,
           scheduler: str | None = None, scheduler_file: str | None = None, dashboard: bool = False,
           chunk_size: int | None = None, pattern_batch_size: int | None = None,
           progress: bool = False, resume: bool = False, verbose: bool = False, alphabet: str = "dna",
           wait_for_lock: bool = False):
    """Find every approximate occurrence of ``patterns`` in ``reference``.

    reference  path of a FASTA file (plain, BGZF or plain gzip)
    patterns   path of a FASTA / one-per-line / TSV file, a list of sequences,
               a list of (name, sequence) pairs, or a dict name -> sequence
    k          mismatches (``metric="hamming"``) or differences (``"edit"``)
    strand     ``both`` (default), ``+`` or ``-``
    mode       ``best`` (loci with start, and the alignment if ``align``) or
               ``ends`` (every qualifying end, edit distance's raw output)
    output     None: return a pandas DataFrame; a path (.tsv, .bed, .parquet):
               write there atomically and return the number of rows written
    client     a ``distributed.Client`` to run on; otherwise ``scheduler`` /
               ``scheduler_file`` to join a cluster, or a local cluster with
               ``workers`` CPU workers (or one worker per GPU) is started
    verbose    print the chosen algorithm and why on stderr
    resume     with ``output``: reuse the tasks an interrupted run of the same
               job saved beside the output file, and run only the rest
    wait_for_lock  with ``output``: if another job is writing the same file,
               wait for it to finish (default: stop with an InputError
               naming it)
    alphabet   ``dna`` (default) or ``bytes``: plain byte matching of non-DNA
               text (reference bytes as they are, patterns as literal bytes,
               + strand only; ``strand="both"`` means ``+``)

    Rows are sorted by record (reference order), start (``ends``: end),
    pattern (input order), strand.
    """
    if metric not in kernels.METRICS:
        raise InputError(f"unknown metric {metric!r} (choose {' or '.join(kernels.METRICS)})")
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r} (choose {' or '.join(MODES)})")
    if strand not in STRAND_CHOICES:
        raise InputError(f"unknown strand {strand!r} (choose both, + or -)")
    if isinstance(k, bool) or not isinstance(k, int):
        raise InputError(f"k must be a whole number, not {k!r}")
    if chunk_size is not None and chunk_size < 1:
        raise InputError(f"chunk size must be at least 1, not {chunk_size}")
    if pattern_batch_size is not None and pattern_batch_size < 1:
        raise InputError(f"pattern batch size must be at least 1, not {pattern_batch_size}")
    if alphabet not in ALPHABETS:
        raise InputError(f"unknown alphabet {alphabet!r} (choose {' or '.join(ALPHABETS)})")
    # Here, not at the top: pandas loads when a job starts, not with `import seqsift`.
    from .output import FrameCollector, HitWriter, check_output_path, refuse_overwriting_inputs

    if alphabet == "bytes":
        if strand == "-":
            raise InputError("--alphabet bytes has no reverse complement: it searches the + strand only")
        strand = "+"
    refuse_overwriting_inputs(output, {"reference": reference, "pattern file": patterns})
    check_output_path(output)
    to_file = output is not None and str(output) != "-"
    if resume and not to_file:
        raise InputError("resume needs an output file (-o): the saved tasks live beside it")
    # Beside the file the output ends up in (an -o symbolic link is written through).
    beside = os.path.realpath(str(output).rstrip("/" + os.sep)) if to_file else None
    cluster_options = dict(workers=workers, gpus=gpus, scheduler=scheduler, scheduler_file=scheduler_file,
                           dashboard=dashboard)
    backend_ahead = _backend_started_ahead(backend, cluster_options) if client is None else None
    reading = threading.Event()  # set once the reference is open and the patterns read
    prepare = partial(_prepare_worker, metric, mode, reading) if backend_ahead == "cuda" else None
    started_ahead = (Connection(backend_ahead, ahead=True, prepare=prepare, **cluster_options)
                     if backend_ahead else None)
    try:
        job = _job_from_inputs(reference, patterns, k=k, metric=metric, strand=strand, mode=mode,
                               algorithm=algorithm, backend=backend, align=align, client=client, verbose=verbose,
                               alphabet=alphabet)
    except BaseException:
        if started_ahead is not None:
            started_ahead.discard()
        raise
    finally:
        reading.set()
    connection = None
    if client is None:
        connection = (started_ahead if started_ahead is not None and started_ahead.backend == job.backend
                      else Connection(job.backend, **cluster_options))
    # Once the inputs are known good: distributed and Numba load only for a job that runs.
    from .run import run_job
    from .store import TaskStore

    names = (job.reference.names, job.patterns.names)
    lock = writer = None
    try:
        lock = OutputLock(beside, wait=wait_for_lock, note=note) if to_file else None
        writer = FrameCollector(job.columns(), *names) if output is None else HitWriter(output, job.columns(), *names)
        with _cluster(client, connection) as run_client:
            chunk_size, pattern_batch_size = _task_layout(job, run_client, beside if resume else None,
                                                          chunk_size, pattern_batch_size)
            store = (TaskStore.beside(beside, job, chunk_size, pattern_batch_size, resume, note=note)
                     if to_file else None)
            try:
                count = run_job(job, run_client, writer, chunk_size=chunk_size,
                                pattern_batch_size=pattern_batch_size, progress=progress, store=store)
                stages.collect_workers(run_client)
                if isinstance(writer, HitWriter):
                    writer.close()
            except BaseException:
                if store is not None:
                    store.tell_how_to_resume(note)
                raise
            # The end of a job, in the order that never loses work: the output is in
            # place (above), then its saved tasks go, then other jobs may take the
            # output, and only then is the cluster shut down (_cluster: a failure
            # there is a note, not an error, once the hits are written).
            if store is not None:
                store.remove()
            if lock is not None:
                lock.release()
    except BaseException:
        if isinstance(writer, HitWriter):
            writer.abort()
        raise
    finally:
        if lock is not None:
            lock.release()
        if started_ahead is not None:
            started_ahead.discard()  # started for a job that failed before it ran (or whose backend is not cuda)
    return count if isinstance(writer, HitWriter) else writer.frame()


def _backend_started_ahead(backend: str, cluster_options: dict) -> str | None:
    """"cuda" when the job's cluster will live in this process (one GPU, no scheduler), so that it can
    start while the reference is read (cluster.Connection); else None: started when the job runs."""
    if backend in ("auto", "cuda") and starts_in_process("cuda", **cluster_options):
        return "cuda"
    return None


def _prepare_worker(metric: str, mode: str, reading: threading.Event) -> None:
    """On the thread that starts a job's in-process GPU cluster, once it is up, if the job is still
    reading its reference (a first run indexes and caches it; gzip is inflated): what the job's first
    task would do before its first kernel (kernels.cuda.prepare_device) and the loading of the Numba
    kernels that locate its hits (task.warm_up_locate), done while the reading goes on.

    A job whose reference was open at once (a second run) leaves both to its tasks: done here, they
    only moved from the tasks' threads to this one (no faster on the H100 host, benchmarks/README.md).
    """
    if reading.is_set():
        return
    from ..kernels.cuda import prepare_device

    prepare_device()
    if mode == "best":
        from .task import warm_up_locate

        warm_up_locate(metric)


def _job_from_inputs(reference, patterns, *, k, metric, strand, mode, algorithm, backend, align, client, verbose,
                     alphabet) -> SearchJob:
    """The SearchJob of checked arguments: the reference opened (read and indexed on a first run),
    the patterns read and checked against it, the algorithm chosen."""
    with stages.timed("open"):
        ref = open_reference(reference)
    pattern_set = patterns if isinstance(patterns, PatternSet) else read_patterns(patterns, alphabet=alphabet)
    if pattern_set.alphabet != alphabet:
        raise InputError(f"the patterns were read for alphabet {pattern_set.alphabet}, not {alphabet}")
    source = patterns if isinstance(patterns, (str, os.PathLike)) else "patterns"
    validate_patterns_for_job(pattern_set, k, ref.lengths, str(source), metric)

    if client is not None:
        backend = "cpu" if backend == "auto" and not _client_has_gpus(client) else backend
    backend = resolve_backend(backend)
    try:
        chosen, reason = kernels.choose_algorithm(metric, backend, algorithm, m_max=int(pattern_set.lengths.max()),
                                                  k=k, patterns=len(pattern_set), alphabet=alphabet)
    except ValueError as err:
        raise InputError(str(err)) from None
    if verbose:
        note(f"algorithm {reason}")
    if backend not in kernels.ALGORITHMS[chosen].backends:
        note(f"{chosen} has no {backend} kernel yet: the workers run its CPU path")
    return SearchJob(reference=ref, patterns=pattern_set, metric=metric, k=k, mode=mode,
                     strand=strand, algorithm=chosen, backend=backend, align=align)


@contextmanager
def _cluster(client, connection):
    """``client`` itself, or the job's own cluster (a cluster.Connection) for the ``with`` block.

    Once the block has finished, the job's work is done: an error while the
    cluster shuts down (or Ctrl-C then) is reported as a note and not raised.
    """
    if client is not None:
        yield client
        return
    own_client = connection.__enter__()
    try:
        yield own_client
    except BaseException:
        if not connection.__exit__(*sys.exc_info()):
            raise
        return
    try:
        connection.__exit__(None, None, None)
    except (Exception, KeyboardInterrupt) as err:
        note(f"the search finished, but shutting down its cluster failed: {type(err).__name__}: {err}")


def _task_layout(job, client, saved_beside, chunk_size, pattern_batch_size) -> tuple[int, int]:
    """Chunk size and pattern batch size: given, else a resumed job's, else from the genome and cluster."""
    from .run import default_chunk_size
    from .store import TaskStore

    saved_layout = TaskStore.saved_layout(saved_beside) if saved_beside else None
    if chunk_size is None:
        if saved_layout:
            chunk_size = saved_layout["chunk_size"]
        else:
            chunk_size = default_chunk_size(job.backend, job.reference.lengths, client)
    if pattern_batch_size is None:
        pattern_batch_size = (saved_layout["pattern_batch_size"] if saved_layout
                              else DEFAULT_PATTERN_BATCH[job.backend])
    return chunk_size, pattern_batch_size


def _client_has_gpus(client) -> bool:
    """Whether the workers of a given client see a GPU."""
    return any(client.run(count_gpus).values())


__all__ = ["search"]
