"""Packed records on the GPU (issue 27): every CUDA algorithm and the CRISPR kernel find in a
reference of many small, awkward records what the oracles find record by record.

The same checks as tests/test_packed_records.py (the CPU path), on a CUDA
worker: the records' bytes go to the device in one transfer and are packed
there (encode.cu's ``pack_records``), one kernel call searches them all.
"""
from __future__ import annotations

import random

import pytest

from test_engine import write_fasta
from test_packed_records import algorithm_cases, awkward_records, check_packed_crispr, check_packed_search

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def awkward(tmp_path_factory):
    records = awkward_records(random.Random(270))
    return str(write_fasta(tmp_path_factory.mktemp("gpu_packed") / "ref.fa", records)), records


@pytest.mark.parametrize("algorithm, metric, mode, k", algorithm_cases("cuda"))
def test_every_cuda_algorithm_finds_in_packed_records_what_each_record_holds(awkward, cuda_client, algorithm,
                                                                            metric, mode, k):
    check_packed_search(awkward, cuda_client, "cuda", algorithm, metric, mode, k)


@pytest.mark.parametrize("bulges", [(0, 0), (1, 1)])
def test_crispr_on_the_gpu_in_packed_records_equals_the_brute_force(cuda_client, tmp_path, bulges):
    check_packed_crispr(cuda_client, "cuda", tmp_path, bulges, 77 + sum(bulges))
