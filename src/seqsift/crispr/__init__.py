"""``seqsift.crispr``: CRISPR off-target search (issue 16).

Flow: reference(s) + guides + PAM -> :class:`~seqsift.crispr.task.CrisprJob`
-> chunk groups of every reference file (``seqsift.partitioning``; halo =
longest site - 1, a site belongs to the chunk whose core holds its last
base) x guide batches as Dask tasks (``task.run_crispr_task``, kernels from
``seqsift.kernels.crispr``) -> rows in reference order (``task.SiteRows``)
-> writer and summary (``output.py``). The runtime (``seqsift.runtime``) runs
it as it runs every job: checks, lock, resume, cluster, ordered output.
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from ..errors import InputError, note
from ..io.patterns import read_patterns
from ..io.reference import open_reference, refuse_protein
from ..kernels.crispr import CUDA_MAX_GUIDE
from ..kernels.cuda import prepare_device
from ..pattern_set import STRAND_CHOICES, PatternSet
from ..runtime.clients import JobClient, backend_for
from ..runtime.output import INTERVAL_FORMATS
from ..runtime.run import JobRun
from .inputs import check_bulges, parse_pam, read_cas_offinder_input, reference_files
from .scores import scores_defined

OUTPUT_FORMATS = ("auto", "cas-offinder")


def crispr(reference, guides=None, pam: str = "NGG", mismatches=4, pam_side: int = 3, dna_bulge: int = 0,
           rna_bulge: int = 0, *, client=None, output=None, output_format: str = "auto", summary=None,
           cas_offinder=None, strand: str = "both", backend: str = "auto", workers: int | None = None,
           gpus=None, scheduler: str | None = None, scheduler_file: str | None = None, dashboard: bool = False,
           chunk_size: int | None = None, guide_batch_size: int | None = None, progress: bool = False,
           resume: bool = False, wait_for_lock: bool = False, merge: int | None = None, verbose: bool = False):
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
    resume      with ``output``: reuse the tasks an interrupted run saved beside it, run only the rest
    wait_for_lock  with ``output``: wait for another job writing the same file (default: an InputError)
    merge       W: keep one site per guide and strand among sites whose starts lie within W bases of each
                other (chained), the one with the fewest mismatches + bulge bases, then the highest CFD
                (CRISPRme's convention; crispr/merge.py); None (default): every site
    verbose     say how the work is cut into tasks (a note on stderr)
    """
    with_ids = True
    if cas_offinder is not None:
        spec = read_cas_offinder_input(cas_offinder)
        reference, guides, pam, pam_side = spec.genome, spec.guides, spec.pam, spec.pam_side
        mismatches, dna_bulge, rna_bulge = list(spec.limits), spec.dna_bulge, spec.rna_bulge
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
    if merge is not None and (isinstance(merge, bool) or not isinstance(merge, (int, np.integer)) or merge < 0):
        raise InputError(f"--merge: the window must be a whole number of bases >= 0, not {merge!r}")
    _warn_if_guides_carry_their_pam(guide_set, pam, pam_side)
    if rna_bulge and int(guide_set.lengths.min()) < rna_bulge + 2:
        raise InputError(f"an RNA bulge of {rna_bulge} needs guides of at least {rna_bulge + 2} bases")
    inputs = {"reference": reference, "guide file": guides, "Cas-OFFinder input": cas_offinder}
    # CPU without a scheduler: task threads in this process. A CRISPR CPU task spends its time in a Numba
    # kernel that releases the GIL, so threads run in parallel, and each worker process would first import
    # the whole stack (seconds: most of a bacterial genome's job).
    job_client = JobClient(client, threads_in_process=True, workers=workers, gpus=gpus, scheduler=scheduler,
                           scheduler_file=scheduler_file, dashboard=dashboard)
    formats = None if output_format == "cas-offinder" else INTERVAL_FORMATS
    with JobRun(output, formats=formats, inputs=inputs, client=job_client, resume=resume,
                wait_for_lock=wait_for_lock, side_outputs={"summary": summary}) as run:
        job_client.start_ahead(backend, prepare=prepare_device)  # one GPU: readied while the inputs are read
        # Here, not at the top: the job's modules load once the device is being readied (pandas itself
        # only with the writer, once the tasks are submitted).
        from .output import SiteOutput
        from .task import CrisprJob

        files = reference_files(str(reference), origin) if os.path.isdir(str(reference)) else [reference]
        references = tuple(open_reference(path) for path in files)
        for opened in references:
            refuse_protein(opened)
        backend = backend_for(backend, client)
        if backend == "cuda" and int(guide_set.lengths.max()) > CUDA_MAX_GUIDE:
            note(f"guides longer than {CUDA_MAX_GUIDE} bases run on the CPU kernel inside the GPU workers")
        if output_format != "cas-offinder":  # Cas-OFFinder's lines have no score columns
            if not all(scores_defined(int(n), pam, pam_side) for n in guide_set.lengths):
                note("cfd and mit are empty where undefined: they need 20-nt guides and a 3' NGG-family PAM "
                     "(N + 2 bases)")
            elif dna_bulge or rna_bulge:
                note("cfd and mit are empty for sites with a bulge (the published tables have no bulges)")
        settings = SiteOutput(format=output_format, with_ids=with_ids,
                              summary=None if summary is None else str(summary))
        job = CrisprJob(references=references, guides=guide_set, limits=tuple(limits), pam=pam, pam_side=pam_side,
                        dna_bulge=dna_bulge, rna_bulge=rna_bulge, strands=STRAND_CHOICES[strand], backend=backend,
                        output=settings, merge_window=None if merge is None else int(merge))
        if job_client.threads_here(backend):
            # The job's own task threads in this process: a small job is done sooner than Numba would
            # start. Worker processes of a given cluster outlive the job and pay that start once: Numba.
            job = dataclasses.replace(job, small=job.small_enough())
        return run.run(job, layout={"chunk_size": chunk_size, "guide_batch_size": guide_batch_size},
                       progress=progress, verbose=verbose)


SPACER_LENGTHS = range(17, 25)
"""Guide (spacer) lengths in use: SpCas9 17-20 (truncated guides included), Cas12a 20-24."""


def _warn_if_guides_carry_their_pam(guides: PatternSet, pam: str, pam_side: int) -> None:
    """One note when every guide ends (at the PAM's side) in a match of the PAM and would be a usual
    spacer without it: guides are given without their PAM, and such a job finds almost nothing."""
    from ..alphabet import pattern_masks

    pam_masks = pattern_masks(pam)
    for sequence in guides.sequences:
        end = sequence[-len(pam):] if pam_side == 3 else sequence[:len(pam)]
        if len(sequence) - len(pam) not in SPACER_LENGTHS or any(
                (pattern_masks(letter)[0] & ~mask) for letter, mask in zip(end.upper(), pam_masks)):
            return
    note(f"every guide ends in a match of the PAM {pam} on its {pam_side}' side and is {len(pam)} bases longer "
         f"than a usual spacer: give guides without their PAM (seqsift adds --pam to each)")


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


__all__ = ["crispr"]
