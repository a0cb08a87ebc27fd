"""Packed records on the GPU (issue 27): every CUDA algorithm and the CRISPR kernel find in a
reference of many small, awkward records what the oracles find record by record.

The same cases as tests/test_packed_records.py (the CPU path), on a CUDA
worker: the records' bytes go to the device in one transfer and are packed
there (encode.cu's ``pack_records``), one kernel call searches them all.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import seqsift
from seqsift.kernels import ALGORITHMS, search_algorithms

from crispr_oracle import oracle_sites
from naive_search import expected_rows
from test_engine import CORE_COLUMNS, write_fasta
from test_packed_records import PATTERNS, awkward_records

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda_client():
    from distributed import Client

    from seqsift.cluster import local_cluster

    cluster = local_cluster("cuda")
    with Client(cluster) as client:
        yield client
    cluster.close()


@pytest.fixture(scope="module")
def awkward(tmp_path_factory):
    records = awkward_records(random.Random(270))
    return str(write_fasta(tmp_path_factory.mktemp("gpu_packed") / "ref.fa", records)), records


def _cuda_cases():
    cases = []
    for name in search_algorithms():
        spec = ALGORITHMS[name]
        if "cuda" not in spec.backends:
            continue
        k = 2 if spec.admits("cuda", 16, 2) else 0
        for metric, mode in (("hamming", "best"), ("edit", "best"), ("edit", "ends")):
            if spec.serves(metric):
                cases.append((name, metric, mode, k))
    return cases


@pytest.mark.parametrize("algorithm, metric, mode, k", _cuda_cases())
def test_every_cuda_algorithm_finds_in_packed_records_what_each_record_holds(awkward, cuda_client, algorithm,
                                                                            metric, mode, k):
    reference, records = awkward
    got = seqsift.search(reference, PATTERNS, k, metric=metric, mode=mode, algorithm=algorithm, backend="cuda",
                         client=cuda_client, chunk_size=500)
    expected = expected_rows(records, PATTERNS, k, metric, mode=mode)
    columns = CORE_COLUMNS if mode == "best" else ["record", "end", "pattern", "distance", "strand"]
    assert len(expected) > 15
    np.testing.assert_array_equal(got[columns].to_numpy(), expected[columns].to_numpy())
    if mode == "best":  # located on the host from the records' bytes: each alignment inside its record
        texts = dict(records)
        assert all(row.aligned == texts[row.record][row.start:row.end] for row in got.itertuples(index=False))


@pytest.mark.parametrize("bulges", [(0, 0), (1, 1)])
def test_crispr_on_the_gpu_in_packed_records_equals_the_brute_force(cuda_client, tmp_path, bulges):
    rng = random.Random(77 + sum(bulges))
    guide = "GACGCATAAAGATGAGACGC"
    records = []
    for i in range(80):
        site = list(guide)
        for _ in range(rng.randint(0, 3)):
            site[rng.randrange(20)] = rng.choice("ACGT")
        site = "".join(site) + rng.choice(["AGG", "TGG", "CGA"])
        filler = "".join(rng.choice("ACGT") for _ in range(rng.randint(0, 25)))
        rc = site[::-1].translate(str.maketrans("ACGT", "TGCA"))
        records.append((f"r{i}", (site + filler + rc) if i % 2 else (rc + filler.lower() + "NN" + site)))
    reference = write_fasta(tmp_path / "contigs.fa", records)
    dna, rna = bulges
    got = seqsift.crispr(str(reference), [("g", guide)], "NGG", 3, dna_bulge=dna, rna_bulge=rna, backend="cuda",
                         client=cuda_client, chunk_size=400)
    got_rows = sorted(tuple(r) for r in got[["guide", "record", "start", "end", "strand", "mismatches", "bulge_type",
                                             "bulge_size", "guide_aligned", "site"]].itertuples(index=False))
    expected = oracle_sites(records, [("g", guide)], "NGG", 3, dna_bulge=dna, rna_bulge=rna)
    assert len(expected) > 60 and got_rows == expected
