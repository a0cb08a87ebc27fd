"""The host side of a CRISPR job: rows in output order without a full sort, site strings without Python objects.

Workers' rows are sorted once (by a packed key) and then only checked or
merged; these tests give that path what it must still order: chunk
boundaries inside bulged sites, several guide batches per chunk group, runs
that interleave, keys too wide to pack, ties.
"""
from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

import seqsift
from seqsift.crispr.task import SORT_KEYS, _arrow_strings, sort_rows
from seqsift.kernels.crispr import SiteHits, packed_key

from crispr_oracle import oracle_sites
from test_crispr import ORACLE_COLUMNS, random_case
from test_engine import write_fasta


def in_output_order(rows: list[tuple], records, guides) -> list[tuple]:
    """Oracle rows (ORACLE_COLUMNS) in the documented output order: record, start, end, guide, strand (+ first)."""
    record_index = {name: i for i, (name, _) in enumerate(records)}
    guide_index = {name: i for i, (name, _) in enumerate(guides)}
    return sorted(rows, key=lambda r: (record_index[r[1]], r[2], r[3], guide_index[r[0]], r[4] == "-"))


@pytest.mark.parametrize("pam, side", [("NGG", 3), ("TTTV", 5)])
def test_rows_come_in_output_order_across_chunks_and_guide_batches(client, tmp_path, pam, side):
    """Tiny chunks (sites of several lengths cross every boundary) and one guide per task: a group's
    frames interleave and a chunk's first sites may start before the previous chunk's last ones."""
    rng = random.Random(f"order-{pam}")
    records, guides = random_case(rng, "ACGTacgtN", 7, guides=5, pam=pam, pam_side=side)
    reference = write_fasta(tmp_path / "ref.fa", records)
    expected = in_output_order(oracle_sites(records, guides, pam, 2, side, 2, 2), records, guides)
    assert {r[6] for r in expected} == {"none", "DNA", "RNA"} and {r[4] for r in expected} == {"+", "-"}
    for chunk_size, batch in ((4, 1), (9, 2), (1000, 3)):
        got = seqsift.crispr(str(reference), guides, pam=pam, mismatches=2, pam_side=side, dna_bulge=2, rna_bulge=2,
                             client=client, chunk_size=chunk_size, guide_batch_size=batch, backend="cpu")
        as_tuples = [tuple(int(v) if isinstance(v, np.integer) else v for v in row)
                     for row in got[ORACLE_COLUMNS].itertuples(index=False, name=None)]
        assert as_tuples == expected, (chunk_size, batch)
        assert got.index.equals(pd.RangeIndex(len(got)))


TEXT_COLUMNS = ("guide", "record", "strand", "bulge_type", "guide_aligned", "site")


def test_text_columns_are_the_str_columns_pandas_makes_of_python_strings(client, tmp_path):
    """Built from Arrow buffers, not strs, yet the columns pandas makes of strs: whatever the chunks (some
    chunks' tasks find nothing, and their empty frames must not turn the others' text into objects)."""
    rng = random.Random(3)
    records, guides = random_case(rng, "ACGT", 7, guides=2)
    reference = write_fasta(tmp_path / "ref.fa", records)
    str_dtype = pd.Series(np.array(["x"], dtype=object)).dtype
    for chunk_size in (50, 1000):
        got = seqsift.crispr(str(reference), guides, pam="NGG", mismatches=1, dna_bulge=1, rna_bulge=1,
                             client=client, chunk_size=chunk_size, backend="cpu")
        assert len(got)
        for name in TEXT_COLUMNS:
            rebuilt = pd.Series(np.array(got[name].tolist(), dtype=object))
            assert got[name].dtype == rebuilt.dtype == str_dtype, (chunk_size, name)
            assert all(type(v) is str for v in got[name].tolist()), name
            pd.testing.assert_series_equal(got[name], rebuilt, check_names=False)
    nothing = seqsift.crispr(str(reference), ["TTTTTTT"], pam="NGG", mismatches=0, client=client, backend="cpu")
    assert len(nothing) == 0 and all(nothing[name].dtype == str_dtype for name in TEXT_COLUMNS)


def random_rows(rng: np.random.Generator, count: int, start_high: int = 500) -> pd.DataFrame:
    start = rng.integers(0, start_high, count)
    return pd.DataFrame({
        "record": rng.integers(0, 3, count).astype(np.int32),
        "start": start.astype(np.int64),
        "end": (start + rng.integers(20, 26, count)).astype(np.int64),
        "guide": rng.integers(0, 6, count).astype(np.int32),
        "strand": rng.integers(0, 2, count).astype(np.int8),
        "site": np.array([f"s{i}" for i in range(count)], dtype=object),  # tells tied rows apart
    })


def stable_reference_sort(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(SORT_KEYS), kind="stable", ignore_index=True)


@pytest.mark.parametrize("runs", [1, 2, 7])
def test_sort_rows_orders_sorted_runs_shuffled_rows_and_ties(runs):
    rng = np.random.default_rng(runs)
    rows = random_rows(rng, 3000)  # few distinct keys: ties everywhere, which must keep their order
    bounds = np.linspace(0, len(rows), runs + 1).astype(int)
    parts = [rows.iloc[a:b] for a, b in zip(bounds, bounds[1:])]
    merged_runs = pd.concat([stable_reference_sort(part) for part in parts], ignore_index=True)
    expected = stable_reference_sort(merged_runs)
    pd.testing.assert_frame_equal(sort_rows(merged_runs), expected)
    pd.testing.assert_frame_equal(sort_rows(expected), expected)
    shuffled = rows.sample(frac=1, random_state=runs)
    pd.testing.assert_frame_equal(sort_rows(shuffled), stable_reference_sort(shuffled))


def test_sort_rows_without_a_packed_key_sorts_by_the_columns():
    rng = np.random.default_rng(5)
    rows = random_rows(rng, 500)
    rows["start"] = rng.integers(0, 1 << 60, len(rows))  # with 3 records, 6 guides, 2 strands: past 63 bits
    rows["end"] = rows["start"] + 23
    assert packed_key([rows[k].to_numpy() for k in SORT_KEYS]) is None
    pd.testing.assert_frame_equal(sort_rows(rows), stable_reference_sort(rows))


def test_packed_key_orders_as_its_columns():
    rng = np.random.default_rng(9)
    columns = [rng.integers(-3, 4, 5000), rng.integers(1 << 40, (1 << 40) + 1000, 5000),
               rng.integers(0, 2, 5000).astype(np.int8)]
    key = packed_key(columns)
    assert key.dtype == np.int64
    np.testing.assert_array_equal(np.argsort(key, kind="stable"), np.lexsort(columns[::-1]))
    assert packed_key([rng.integers(0, 1 << 40, 10), rng.integers(0, 1 << 30, 10)]) is None
    assert len(packed_key([np.empty(0, np.int64)])) == 0


def test_site_hits_sorted_orders_by_start_length_row_keeping_ties():
    rng = np.random.default_rng(4)
    count = 4000
    hits = SiteHits(rng.integers(0, 50, count).astype(np.int32), rng.integers(0, 300, count).astype(np.int64),
                    rng.integers(21, 26, count).astype(np.int32), rng.integers(0, 3, count).astype(np.int8),
                    rng.integers(0, 3, count).astype(np.int8), np.arange(count).astype(np.int16),
                    rng.integers(0, 5, count).astype(np.int16))
    order = np.lexsort((hits.row, hits.length, hits.start))  # stable: ties in bulge_at (input) order
    got = hits.sorted()
    for name in SiteHits.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(got, name), getattr(hits, name)[order], err_msg=name)
    assert got.sorted() is got  # in order already: nothing moves

    distinct = SiteHits(*(a[:count // 2] for a in (hits.row, hits.start, hits.length, hits.bulge_type,
                                                   hits.bulge_size, hits.bulge_at, hits.mismatches)))
    distinct = SiteHits(np.arange(count // 2, dtype=np.int32), *(getattr(distinct, f) for f in
                                                                 list(SiteHits.__dataclass_fields__)[1:]))
    order = np.lexsort((distinct.row, distinct.length, distinct.start))
    np.testing.assert_array_equal(distinct.sorted().row, distinct.row[order])


def test_arrow_strings_are_the_rows_bytes_with_non_ascii_as_replacement_characters():
    plain = np.frombuffer(b"ACGTacgt-N" * 3, dtype=np.uint8).reshape(3, 10)
    wide = np.frombuffer(b"ACGTAC\x00GTA-" * 2, dtype=np.uint8).reshape(2, 11)
    strings = _arrow_strings([plain, wide])
    assert strings.to_pylist() == ["ACGTacgt-N"] * 3 + ["ACGTAC\x00GTA-"] * 2
    odd = np.frombuffer(b"AC\xc3GT", dtype=np.uint8).reshape(1, 5)
    assert _arrow_strings([plain[:1], odd]).to_pylist() == ["ACGTacgt-N", "AC\ufffdGT"]
