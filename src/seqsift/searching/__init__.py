"""The ``search`` job: patterns against a reference, k mismatches or k differences.

Flow (DESIGN.md): reference + patterns -> :class:`SearchJob` (``job.py``) ->
chunk groups x pattern batches as Dask tasks, run by the runtime
(``runtime/run.py``, as every job is) -> worker task (``task.py``) -> ordered
merge (``merge.py``) -> writer (``output.py``).
"""
from __future__ import annotations

import os
import threading
from functools import partial

from .. import kernels
from ..errors import InputError, note
from ..io.patterns import ALPHABETS, read_patterns, validate_patterns_for_job
from ..pattern_set import STRAND_CHOICES, PatternSet
from ..io.reference import open_reference, refuse_protein
from ..runtime import stages
from ..runtime.clients import JobClient, backend_for, resolve_backend  # noqa: F401  (the package's face)
from ..runtime.run import JobRun
from .job import MODES, SearchJob


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
    if alphabet not in ALPHABETS:
        raise InputError(f"unknown alphabet {alphabet!r} (choose {' or '.join(ALPHABETS)})")
    if alphabet == "bytes":
        if strand == "-":
            raise InputError("--alphabet bytes has no reverse complement: it searches the + strand only")
        strand = "+"
    job_client = JobClient(client, workers=workers, gpus=gpus, scheduler=scheduler, scheduler_file=scheduler_file,
                           dashboard=dashboard)
    with JobRun(output, formats=SearchJob.formats, inputs={"reference": reference, "pattern file": patterns},
                client=job_client, resume=resume, wait_for_lock=wait_for_lock) as run:
        # One GPU: the task threads start, and the device is readied, while the reference is read.
        reading = threading.Event()  # set once the reference is open and the patterns read
        job_client.start_ahead(backend, prepare=partial(_prepare_worker, mode, reading))
        try:
            job = _job_from_inputs(reference, patterns, k=k, metric=metric, strand=strand, mode=mode,
                                   algorithm=algorithm, backend=backend, align=align, client=client,
                                   verbose=verbose, alphabet=alphabet)
        finally:
            reading.set()
        return run.run(job, layout={"chunk_size": chunk_size, "pattern_batch_size": pattern_batch_size},
                       progress=progress)


def _prepare_worker(mode: str, reading: threading.Event) -> None:
    """On the thread that starts a one-GPU job's task threads (at once: they need no Dask), while the
    job still reads its inputs: what the job's first task would do before its first kernel
    (kernels.cuda.prepare_device: CuPy, the CUDA context, the staging buffers, the encoding kernel),
    then, for ``best`` rows, the kernels that locate its hits (on a fresh machine their compile then
    overlaps the job's reading and first searches).
    """
    if reading.is_set():
        return
    from ..kernels.cuda import prepare_device

    prepare_device()
    if mode == "best":
        from ..kernels.locate import cuda as locate_cuda

        locate_cuda.load()


def _job_from_inputs(reference, patterns, *, k, metric, strand, mode, algorithm, backend, align, client, verbose,
                     alphabet) -> SearchJob:
    """The SearchJob of checked arguments: the reference opened (read and indexed on a first run),
    the patterns read and checked against it, the algorithm chosen."""
    with stages.timed("open"):
        ref = open_reference(reference)
    if alphabet == "dna":
        refuse_protein(ref)
    pattern_set = patterns if isinstance(patterns, PatternSet) else read_patterns(patterns, alphabet=alphabet)
    if pattern_set.alphabet != alphabet:
        raise InputError(f"the patterns were read for alphabet {pattern_set.alphabet}, not {alphabet}")
    source = patterns if isinstance(patterns, (str, os.PathLike)) else "patterns"
    validate_patterns_for_job(pattern_set, k, ref.lengths, str(source), metric)

    backend = backend_for(backend, client)
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


__all__ = ["search"]
