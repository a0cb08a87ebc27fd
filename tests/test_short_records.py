"""Edit-distance hits in records shorter than the pattern (issue 14, item 2).

Under edit distance a hit needs only m - k reference bases (k deletions), so a
contig of 18 bases can hold a hit of a 20-nt guide at k = 3. The job must
neither skip such records when it plans chunks nor refuse a pattern that is
longer than every record while m - k still fits.
"""
from __future__ import annotations

import numpy as np
import pytest

import seqsift
from seqsift.errors import InputError
from seqsift.kernels import ALGORITHMS

from naive_search import expected_rows
from test_engine import CORE_COLUMNS, write_fasta

GUIDE = "GACGCATAAAGATGAGACGC"
K = 3


def _short_contigs():
    return [
        ("first18", GUIDE[:18]),                    # d = 2: two deletions
        ("first17", GUIDE[:17]),                    # d = 3 = k: the shortest that can hit
        ("first16", GUIDE[:16]),                    # d = 4 > k: no hit
        ("middle18_mismatch", GUIDE[1:10] + "T" + GUIDE[11:19]),
        ("reverse18", "GCGTCTCATCTTTATGCGTC"[:18]),  # the reverse complement's first 18 bases
        ("lowercase17", GUIDE[3:].lower()),
    ]


def _edit_algorithms_on_cpu() -> list[str]:
    return [name for name, a in ALGORITHMS.items()
            if a.serves("edit") and "cpu" in a.backends and (a.max_k is None or a.max_k >= K)]


@pytest.mark.parametrize("mode", ["best", "ends"])
@pytest.mark.parametrize("algorithm", _edit_algorithms_on_cpu())
def test_records_shorter_than_the_pattern_hold_edit_hits(tmp_path, client, algorithm, mode):
    records = _short_contigs()
    reference = write_fasta(tmp_path / "contigs.fa", records)
    got = seqsift.search(reference, [("guide", GUIDE)], K, metric="edit", mode=mode, algorithm=algorithm,
                         client=client, align=False)
    expected = expected_rows(records, [("guide", GUIDE)], K, "edit", mode=mode)
    assert {"first18", "first17", "reverse18"} <= set(expected["record"])
    assert "first16" not in set(expected["record"])
    columns = CORE_COLUMNS if mode == "best" else ["record", "end", "pattern", "distance", "strand"]
    np.testing.assert_array_equal(got[columns].to_numpy(), expected[columns].to_numpy())


def test_pattern_longer_than_every_record_is_searched_when_m_minus_k_fits(tmp_path, client):
    reference = write_fasta(tmp_path / "contigs.fa", _short_contigs()[:2])
    hits = seqsift.search(reference, [("guide", GUIDE)], K, metric="edit", client=client)
    assert set(hits["record"]) == {"first18", "first17"}
    with pytest.raises(InputError, match="longer than every reference record"):
        seqsift.search(reference, [("guide", GUIDE)], 1, metric="edit", client=client)
    with pytest.raises(InputError, match="longer than every reference record"):
        seqsift.search(reference, [("guide", GUIDE)], K, metric="hamming", client=client)
