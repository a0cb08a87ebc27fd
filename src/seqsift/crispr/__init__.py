"""``seqsift.crispr``: CRISPR off-target search (issue 16).

Flow: reference + guides + PAM -> :class:`~seqsift.crispr.task.CrisprJob` ->
chunk groups (``seqsift.partitioning``; halo = longest site - 1, a site
belongs to the chunk whose core holds its last base) x guide batches as Dask
tasks (``task.run_crispr_task``, kernels from ``seqsift.kernels.crispr``) ->
rows in reference order -> writer (``output.py``) and summary.

The cluster, chunk planning, chunk cache and table writers are the search
engine's, used through their public functions.
"""
from __future__ import annotations

import dataclasses
import os
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from ..cluster import connect, cpu_cores, in_process_cluster
from ..engine import note, resolve_backend
from ..engine.lock import OutputLock
from ..errors import InputError
from ..kernels.crispr import CUDA_MAX_GUIDE
from ..partitioning import plan_chunks
from ..io.patterns import read_patterns
from ..patterns import STRAND_CHOICES, PatternSet
from ..io.reference import open_reference
from .inputs import check_bulges, parse_pam, read_cas_offinder_input, reference_files
from .scores import scores_defined

if TYPE_CHECKING:  # for annotations only: the task module (pandas, Numba) loads where a job runs
    from .task import CrisprJob

DEFAULT_GUIDE_BATCH = {"cpu": 512, "cuda": 8192}
"""Guides per task: all candidates of a chunk are checked against a batch at once."""


def crispr(reference, guides=None, pam: str = "NGG", mismatches=4, pam_side: int = 3, dna_bulge: int = 0,
           rna_bulge: int = 0, *, client=None, output=None, output_format: str = "auto", summary=None,
           cas_offinder=None, strand: str = "both", backend: str = "auto", workers: int | None = None,
           gpus=None, scheduler: str | None = None, scheduler_file: str | None = None, dashboard: bool = False,
           chunk_size: int | None = None, guide_batch_size: int | None = None, progress: bool = False,
           resume: bool = False):
    """Every off-target site of ``guides`` in ``reference`` (see the README's ``seqsift crispr``).

    reference   FASTA file (plain, BGZF or gzip), or a folder of them (each searched in turn)
    guides      any pattern source ``search`` takes (file, list, dict); IUPAC codes, any length
    pam         IUPAC letters, e.g. ``NGG`` (Cas9) or ``TTTV`` (Cas12a, ``pam_side=5``)
    mismatches  guide mismatches allowed (the PAM must match); an int, or one per guide
    pam_side    3 (PAM after the guide, Cas9) or 5 (before it, Cas12a)
    dna_bulge, rna_bulge   largest bulge of each kind (0..2), counted apart from mismatches
    output      None: return a DataFrame; a path (.tsv, .bed, .parquet, folder/): write, return the row count
    output_format  ``auto`` (by the path) or ``cas-offinder`` (Cas-OFFinder's own lines)
    summary     a path: per-guide counts and MIT/CFD specificity (TSV)
    cas_offinder  a Cas-OFFinder input file: its genome, pattern, guides, limits and bulges replace
                  ``reference``, ``guides``, ``pam``, ``pam_side``, ``mismatches`` and the bulges
    """
    # Here, not at the top: pandas, distributed and Numba load when a job runs, not with `import seqsift`.
    from ..engine.output import check_output_path, refuse_overwriting_inputs
    from .output import (OUTPUT_FORMATS, CasOffinderWriter, FrameCollector, SiteWriter, Summary,
                         check_summary_path)
    from .task import CrisprJob

    crrna = None
    with_ids = True
    if cas_offinder is not None:
        spec = read_cas_offinder_input(cas_offinder)
        reference, guides, pam, pam_side = spec.genome, spec.guides, spec.pam, spec.pam_side
        mismatches, dna_bulge, rna_bulge = list(spec.limits), spec.dna_bulge, spec.rna_bulge
        pad = "N" * len(pam)
        crrna = [g + pad if pam_side == 3 else pad + g for g in spec.guides.sequences]
        with_ids = not all(name.startswith("line_") for name in spec.guides.names)
        origin = str(cas_offinder)
    else:
        origin = "reference"
        if guides is None:
            raise InputError("no guides: give a GUIDES file or sequences (or --cas-offinder INPUT)")
    if output_format not in OUTPUT_FORMATS:
        raise InputError(f"unknown output format {output_format!r} (choose {' or '.join(OUTPUT_FORMATS)})")
    if strand not in STRAND_CHOICES:
        raise InputError(f"unknown strand {strand!r} (choose both, + or -)")
    if pam_side not in (3, 5):
        raise InputError(f"--pam-side must be 3 or 5, not {pam_side!r}")
    parse_pam(pam)
    pam = pam.strip().upper()
    check_bulges(dna_bulge, rna_bulge)
    guide_set = guides if isinstance(guides, PatternSet) else read_patterns(guides)
    limits = _limits(mismatches, guide_set)
    if output_format == "cas-offinder" and crrna is None:
        pad = "N" * len(pam)
        crrna = [g + pad if pam_side == 3 else pad + g for g in guide_set.sequences]
    if output_format == "cas-offinder" and output is not None and str(output) != "-":
        directory = os.path.dirname(os.path.abspath(output))
        if not os.path.isdir(directory):
            raise InputError(f"{output}: output directory {directory} does not exist")
    else:
        check_output_path(output)
    check_summary_path(summary)
    inputs = {"reference": reference, "guide file": guides, "Cas-OFFinder input": cas_offinder}
    refuse_overwriting_inputs(output, inputs)
    refuse_overwriting_inputs(summary, {**inputs, "output": output})
    to_file = output is not None and str(output) != "-"
    if resume and not to_file:
        raise InputError("resume needs an output file (-o): the saved tasks live beside it")
    if rna_bulge and int(guide_set.lengths.min()) < rna_bulge + 2:
        raise InputError(f"an RNA bulge of {rna_bulge} needs guides of at least {rna_bulge + 2} bases")
    files = reference_files(str(reference), origin) if os.path.isdir(str(reference)) else [reference]
    references = [open_reference(path) for path in files]

    if client is not None:
        backend = "cpu" if backend == "auto" and not any(client.run(_gpus_here).values()) else backend
    backend = resolve_backend(backend)
    if backend == "cuda" and int(guide_set.lengths.max()) > CUDA_MAX_GUIDE:
        note(f"guides longer than {CUDA_MAX_GUIDE} bases run on the CPU kernel inside the GPU workers")
    if not all(scores_defined(int(n), pam, pam_side) for n in guide_set.lengths):
        note("cfd and mit are empty where undefined: they need 20-nt guides and a 3' NGG-family PAM (N + 2 bases)")
    elif dna_bulge or rna_bulge:
        note("cfd and mit are empty for sites with a bulge (the published tables have no bulges)")

    summary_table = Summary(guide_set.names, guide_set.sequences, max(limits), dna_bulge, rna_bulge) \
        if summary is not None else None
    record_names = [name for ref in references for name in ref.names]
    if output is None:
        writer = FrameCollector(record_names, guide_set.names)
    elif output_format == "cas-offinder":
        writer = CasOffinderWriter(output, record_names, guide_set.names, crrna, with_ids, bool(dna_bulge or rna_bulge))
    else:
        writer = SiteWriter(output, record_names, guide_set.names)
    jobs = [CrisprJob(reference=ref, guides=guide_set, limits=tuple(limits), pam=pam, pam_side=pam_side,
                      dna_bulge=dna_bulge, rna_bulge=rna_bulge, strands=STRAND_CHOICES[strand], backend=backend)
            for ref in references]
    if client is None and backend == "cpu" and not (scheduler or scheduler_file):
        # The job's own task threads in this process (_own_client): a small job is done sooner than Numba
        # would start. Worker processes of a given cluster outlive the job and pay that start once: Numba.
        jobs = [dataclasses.replace(job, small=job.small_enough()) for job in jobs]
    # Beside the file the output ends up in; one job at a time per output (engine.lock).
    beside = os.path.realpath(str(output).rstrip("/" + os.sep)) if to_file else None
    layout = dict(chunk_size=chunk_size, guide_batch_size=guide_batch_size, progress=progress,
                  store_path=beside, resume=resume)
    lock = OutputLock(beside, note=note) if to_file else None

    def run_and_finish(run_client) -> None:
        # The end of a job in the order that never loses work (as search's): the
        # output is in place, then the saved tasks go, then other jobs may take
        # the output; the cluster is shut down only after that.
        stores = _run_all(jobs, run_client, writer, summary_table, **layout)
        if not isinstance(writer, FrameCollector):
            writer.close()
        for store in stores:
            store.remove()
        if lock is not None:
            lock.release()

    try:
        if client is not None:
            run_and_finish(client)
        else:
            with _own_client(backend, workers=workers, gpus=gpus, scheduler=scheduler,
                             scheduler_file=scheduler_file, dashboard=dashboard) as own_client:
                run_and_finish(own_client)
    except BaseException:
        if hasattr(writer, "abort"):
            writer.abort()
        raise
    finally:
        if lock is not None:
            lock.release()
    if summary_table is not None:
        summary_table.write(summary)
    if isinstance(writer, FrameCollector):
        return writer.frame()
    return writer.count


@contextmanager
def _own_client(backend: str, *, workers, gpus, scheduler, scheduler_file, dashboard):
    """The cluster a job starts for itself.

    CPU without a scheduler: task threads in this process (one per core, or
    ``workers``), not worker processes. A CRISPR CPU task spends its time in a
    Numba kernel that releases the GIL, so threads run in parallel, and each
    worker process would first import the whole stack (seconds: most of a
    bacterial genome's job). Otherwise: ``seqsift.cluster.connect``, as search.
    """
    if backend != "cpu" or scheduler or scheduler_file:
        with connect(backend, workers=workers, gpus=gpus, scheduler=scheduler, scheduler_file=scheduler_file,
                     dashboard=dashboard) as client:
            yield client
        return
    from distributed import Client

    cluster = in_process_cluster(workers or cpu_cores(), dashboard=dashboard)
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()


def _gpus_here() -> int:
    from ..cluster import count_gpus

    return count_gpus()


def _limits(mismatches, guides: PatternSet) -> list[int]:
    values = [mismatches] * len(guides) if np.ndim(mismatches) == 0 else list(mismatches)
    if len(values) != len(guides):
        raise InputError(f"mismatches: {len(values)} limits for {len(guides)} guides")
    for name, value, length in zip(guides.names, values, guides.lengths):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InputError(f"guide {name!r}: the mismatch limit must be a whole number >= 0, not {value!r}")
        if value >= length:
            raise InputError(f"guide {name!r}: {value} mismatches allowed in {int(length)} bases would match "
                             f"everywhere; allow fewer than the guide's length")
    return [int(v) for v in values]


def _run_all(jobs, client, writer, summary_table, *, chunk_size, guide_batch_size, progress, store_path, resume):
    """Run each reference's job in turn into the one writer; record indices continue across files."""
    from ..engine.store import TaskStore

    record_offset = 0
    stores = []  # removed by the caller once the output is in place
    for number, job in enumerate(jobs):
        store = None
        if store_path is not None:
            directory = TaskStore.directory_beside(store_path)
            if len(jobs) > 1:
                directory = directory.with_name(f"{directory.name}-{number}")
            store = TaskStore(directory, _fingerprint(job, chunk_size, guide_batch_size), resume, note=note)
        try:
            run_crispr_job(job, client, writer, summary_table, chunk_size=chunk_size,
                           guide_batch_size=guide_batch_size, progress=progress, store=store,
                           record_offset=record_offset)
        except BaseException:
            if store is not None:
                store.tell_how_to_resume(note)
            raise
        if store is not None:
            stores.append(store)
        record_offset += len(job.reference.names)
    return stores


def _fingerprint(job: CrisprJob, chunk_size, guide_batch_size) -> dict:
    """What must be equal for saved tasks to belong to this job (engine.store.TaskStore)."""
    import hashlib

    from ..engine.store import reference_fingerprint

    guides = hashlib.sha256("\n".join(f"{n}\t{s}\t{k}" for n, s, k in zip(
        job.guides.names, job.guides.sequences, job.limits)).encode()).hexdigest()
    return {"job": "crispr", **reference_fingerprint(job.reference), "guides_sha256": guides,
            "parameters": {"pam": job.pam, "pam_side": job.pam_side, "dna_bulge": job.dna_bulge,
                           "rna_bulge": job.rna_bulge, "strands": list(job.strands)},
            "chunk_size": chunk_size, "guide_batch_size": guide_batch_size}


def run_crispr_job(job: CrisprJob, client, writer, summary_table=None, *, chunk_size=None, guide_batch_size=None,
                   progress: bool = False, store=None, record_offset: int = 0) -> None:
    """Submit every (chunk group, guide batch) task; write rows in reference order as groups complete.

    A group's rows are final up to the next group's first core start minus the
    halo (a later chunk's sites end in its core, so start at or after that);
    the rest waits for the next group. Tasks a resumed ``store`` holds are not run.
    """
    import pandas as pd
    from distributed import as_completed

    from ..engine.run import default_chunk_size, submit_tasks
    from .task import run_crispr_task, sort_rows

    halo = job.halo
    if chunk_size is None:
        chunk_size = default_chunk_size(job.backend, job.reference.lengths, client)
    batch = guide_batch_size or DEFAULT_GUIDE_BATCH[job.backend]
    groups = plan_chunks(job.reference.lengths, chunk_size, halo, min_length=job.shortest_site)
    guide_ranges = job.guides.batches(batch)
    saved = store.saved() if store is not None else set()
    parts: dict[int, list[pd.DataFrame]] = {g.index: [] for g in groups}
    remaining = {g.index: len(guide_ranges) for g in groups}
    for group_index, batch_index in saved:
        parts[group_index].append(store.load((group_index, batch_index)))
        remaining[group_index] -= 1
    futures = submit_tasks(client, run_crispr_task, job, groups, guide_ranges, saved, "seqsift-crispr")
    from ..progress import open_progress

    # Progress in bases: each task covers its group's bases over the guide batches.
    bar = open_progress(progress, total=sum(g.bases for g in groups), unit="bp", label="crispr",
                        already_done=sum(groups[g].bases for g, _ in saved) / len(guide_ranges))
    pending = None
    next_group = 0

    def emit(rows: pd.DataFrame) -> None:
        if len(rows) == 0:
            return
        rows = rows.assign(record=rows["record"] + record_offset) if record_offset else rows
        writer.write(rows)
        if summary_table is not None:
            summary_table.add(rows)

    def drain() -> None:
        nonlocal pending, next_group
        while next_group < len(groups) and remaining[groups[next_group].index] == 0:
            group = groups[next_group]
            frames = ([pending] if pending is not None else []) + parts.pop(group.index)
            # Each frame is in order; sort_rows merges them only where they interleave.
            rows = sort_rows(frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)) \
                if frames else None
            next_group += 1
            if rows is None:
                continue
            if next_group < len(groups):
                first = groups[next_group].chunks[0]
                # Final: the rows before (first.record_index, first.core_start - halo), a prefix of the sorted rows.
                record, start = rows["record"].to_numpy(), rows["start"].to_numpy()
                low, high = np.searchsorted(record, first.record_index, side="left"), \
                    np.searchsorted(record, first.record_index, side="right")
                final = int(low + np.searchsorted(start[low:high], first.core_start - halo, side="left"))
                emit(rows.iloc[:final])
                pending = rows.iloc[final:].reset_index(drop=True)
            else:
                emit(rows)
                pending = None

    try:
        drain()
        for future in as_completed(futures):
            rows = future.result()
            group, batch_index = futures.pop(future)
            group_index = group.index
            if store is not None:
                store.save_soon((group_index, batch_index), rows)  # on the store's thread; rows stay here
            parts[group_index].append(rows)
            remaining[group_index] -= 1
            bar.advance(groups[group_index].bases / len(guide_ranges))
            drain()
        if pending is not None:
            emit(pending)
    except BaseException:
        bar.close(ok=False)
        raise
    finally:
        for future in futures:
            future.cancel()
    bar.close()


__all__ = ["crispr", "run_crispr_job"]
