"""The host side of a CUDA crispr job (``-m gpu``): the GPU kernel appends its hits in any order; the rows
(site strings, aligned guides, scores, output order, dtypes) must be the CPU backend's, row for row."""
from __future__ import annotations

import random

import pandas as pd
import pytest

import seqsift

from crispr_oracle import oracle_sites
from test_crispr import ORACLE_COLUMNS, random_case
from test_crispr_host import in_output_order
from test_engine import write_fasta


@pytest.mark.gpu
@pytest.mark.parametrize("pam, side", [("NGG", 3), ("TTTV", 5)])
def test_bulged_cuda_job_gives_the_cpu_backends_rows_in_order(tmp_path, pam, side):
    """20-nt guides (CFD and MIT defined for NGG), bulges of both kinds on both strands, a lowercase and
    N-rich genome, chunks small enough that sites cross their boundaries, two guides per task."""
    rng = random.Random(f"gpu-host-{pam}")
    records, guides = random_case(rng, "ACGTacgtN", 20, guides=6, pam=pam, pam_side=side)
    reference = write_fasta(tmp_path / "ref.fa", records)
    options = dict(pam=pam, pam_side=side, mismatches=2, dna_bulge=1, rna_bulge=1, chunk_size=64,
                   guide_batch_size=2)
    cpu = seqsift.crispr(str(reference), guides, backend="cpu", workers=1, **options)
    gpu = seqsift.crispr(str(reference), guides, backend="cuda", **options)
    expected = in_output_order(oracle_sites(records, guides, pam, 2, side, 1, 1), records, guides)
    assert {r[6] for r in expected} == {"none", "DNA", "RNA"} and {r[4] for r in expected} == {"+", "-"}
    assert list(gpu[ORACLE_COLUMNS].itertuples(index=False, name=None)) == expected
    pd.testing.assert_frame_equal(gpu, cpu)
