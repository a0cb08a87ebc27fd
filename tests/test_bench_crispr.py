"""``seqsift bench`` times the crispr job's kernels too (seqsift/bench.py, ``crispr_records``).

Every registry entry of metric ``crispr`` with a kernel for the backend gets a
record of its own quantity (guide-positions per second), the workload holds
sites the kernels find, and bench.md reports those records in their own table,
apart from the search kernels' pattern-positions. No timed assertions: only
that each measurement took some time and gave a rate.
"""
from __future__ import annotations

import numpy as np

from seqsift import kernels
from seqsift.bench import CRISPR_MISMATCHES, crispr_records, crispr_workload, markdown
from seqsift.kernels.crispr import find_sites


def sites(hits, rows) -> set[tuple[int, int, int, int]]:
    """(guide, strand, start, mismatches) of every site."""
    return set(zip(rows.guide_index[hits.row].tolist(), rows.strand[hits.row].tolist(), hits.start.tolist(),
                   hits.mismatches.tolist()))


def test_every_crispr_kernel_of_the_backend_gets_a_record():
    records = crispr_records("cpu", np.random.default_rng(1), (8,), work=2e5, repeats=1, log=lambda line: None)
    expected = {name for name, algorithm in kernels.ALGORITHMS.items()
                if algorithm.serves("crispr") and "cpu" in algorithm.backends}
    assert expected == {"crispr-pam-first", "crispr-vectorized"}
    assert [r["algorithm"] for r in records] == [name for name in kernels.ALGORITHMS if name in expected]
    for r in records:
        assert r["quantity"] == "guide_positions_per_s"
        assert r["value"] > 0 and r["time_s"] > 0
        assert r["workload"].startswith("8 guides x 20 nt + NGG, k=4, both strands")


def test_the_workload_holds_every_guide_once_and_both_kernels_find_the_same_sites():
    guides = 8
    rows, text = crispr_workload(np.random.default_rng(2), guides, 2e5)
    assert rows.rows == 2 * guides and set(rows.limit.tolist()) == {CRISPR_MISMATCHES}
    pam_first = sites(find_sites("cpu", text, rows, 0, 0, 0, len(text)), rows)
    vectorized = sites(find_sites("cpu", text, rows, 0, 0, 0, len(text), small=True), rows)
    assert pam_first == vectorized
    planted = {guide for guide, strand, start, mismatches in pam_first if strand == 0 and mismatches == 0}
    assert planted == set(range(guides))


def test_bench_md_reports_the_crispr_records_in_their_own_table():
    def record(algorithm, quantity, value):
        return {"algorithm": algorithm, "workload": f"{algorithm} workload", "quantity": quantity, "value": value,
                "roof_fraction": None, "paper_value": None, "time_s": 0.5}

    result = {"date": "2026-01-01", "device": "test CPU", "backend": "cpu", "memory_copy_bytes_per_s": 1e10,
              "records": [record("edit-myers", "pattern_positions_per_s", 1e9),
                          record("crispr-pam-first", "guide_positions_per_s", 2e8)]}
    search_part, crispr_part = markdown(result).split("## The crispr job's kernels")
    assert "| `edit-myers` | edit-myers workload | 1e+09 |" in search_part
    assert "crispr-pam-first" not in search_part
    assert "| `crispr-pam-first` | crispr-pam-first workload | 2e+08 |" in crispr_part
    assert "guide-positions/s" in crispr_part
    assert "## The crispr job's kernels" not in markdown({**result, "records": result["records"][:1]})
