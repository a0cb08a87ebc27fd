"""runtime.order: the one stable sort of output rows, with NumPy alone.

The expected order is pandas' own stable sort by the columns, which shares no
code with the packed keys; ``relative`` columns (``end`` as ``end - start``)
must give the same order as the columns themselves.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fresh_process import loaded_after
from seqsift.runtime.order import packed_keys, sort_order, sort_rows
from seqsift.searching.merge import ENDS_ORDER_COLUMNS, ORDER_COLUMNS
from seqsift.searching.merge import sort_rows as sort_search_rows


def search_rows(rng: np.random.Generator, count: int, chunk: int) -> pd.DataFrame:
    """Rows as a search's chunk gives them: starts anywhere in a chunk, ends a pattern's length on (ties)."""
    start = rng.integers(0, chunk, count)
    return pd.DataFrame({"record": rng.integers(0, 3, count).astype(np.int32), "start": start,
                         "end": start + rng.integers(20, 26, count), "pattern": rng.integers(0, 312, count),
                         "strand": rng.integers(0, 2, count).astype(np.int8),
                         "tag": np.arange(count)})  # tells tied rows apart


def stable(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return frame.sort_values(columns, kind="stable", ignore_index=True)


@pytest.mark.parametrize("runs", [1, 2, 5, 40])
@pytest.mark.parametrize("reports_start", [True, False])
def test_search_rows_in_sorted_runs_or_shuffled_come_out_in_output_order(runs, reports_start):
    rng = np.random.default_rng(runs)
    columns = ORDER_COLUMNS if reports_start else ENDS_ORDER_COLUMNS
    rows = search_rows(rng, 4000, 1 << 28)
    bounds = np.linspace(0, len(rows), runs + 1).astype(int)
    in_runs = pd.concat([stable(rows.iloc[a:b], columns) for a, b in zip(bounds, bounds[1:])], ignore_index=True)
    pd.testing.assert_frame_equal(sort_search_rows(in_runs, reports_start), stable(in_runs, columns))
    shuffled = rows.sample(frac=1, random_state=runs, ignore_index=True)
    pd.testing.assert_frame_equal(sort_search_rows(shuffled, reports_start), stable(shuffled, columns))


def test_rows_in_order_are_left_as_they_are():
    rows = stable(search_rows(np.random.default_rng(3), 500, 10_000), ORDER_COLUMNS)
    assert sort_order([rows[c].to_numpy() for c in ORDER_COLUMNS]) is None
    pd.testing.assert_frame_equal(sort_search_rows(rows, True), rows)


def test_end_relative_to_start_packs_a_whole_chunk_into_one_key():
    """With end as end - start, a 2^28-base chunk's rows of 3 records and 312 patterns need one key;
    as it is, end's own range takes a second key (the slow np.lexsort)."""
    rows = search_rows(np.random.default_rng(4), 1000, 1 << 28)
    plain = [rows[c].to_numpy() for c in ORDER_COLUMNS]
    relative = plain[:-1] + [rows["end"].to_numpy() - rows["start"].to_numpy()]
    assert len(packed_keys(plain)) == 2
    assert len(packed_keys(relative)) == 1


def test_columns_too_wide_to_pack_sort_by_the_columns():
    rng = np.random.default_rng(6)
    rows = search_rows(rng, 600, 10)
    rows["record"] = rng.integers(0, 3, len(rows))
    rows["start"] = rng.integers(0, 1 << 61, len(rows))
    rows["end"] = rows["start"] + 20
    assert len(packed_keys([rows[c].to_numpy() for c in ORDER_COLUMNS])) > 1
    pd.testing.assert_frame_equal(sort_search_rows(rows, True), stable(rows, ORDER_COLUMNS))


def test_a_relative_column_must_follow_its_base():
    rows = search_rows(np.random.default_rng(7), 10, 100)
    with pytest.raises(ValueError):
        sort_rows(rows, ["end", "start"], relative={"end": "start"})


def test_the_sort_and_the_crispr_client_import_no_numba():
    """A GPU crispr job's client (its rows, their order, its writer) runs without Numba: its import
    and first load cost seconds of GIL on a GPU host (benchmarks/README.md)."""
    assert loaded_after("import seqsift.runtime.order, seqsift.crispr.task, seqsift.crispr.output", ["numba"]) == []


def test_a_search_crispr_or_screen_job_is_made_and_submitted_without_pandas():
    """The modules a search, crispr or screen job needs up to its tasks' submission load no pandas (nor
    pyarrow): their imports, half a second of the GIL in a fresh process, come with the writer, once the
    tasks are submitted, beside CuPy's (runtime.run)."""
    assert loaded_after("import seqsift.cli, seqsift.searching.job, seqsift.searching.task, seqsift.crispr.task, "
                        "seqsift.crispr.output, seqsift.runtime.run, seqsift.runtime.store, seqsift.screening.run, "
                        "seqsift.screening.task, seqsift.screening.cli", ["pandas", "pyarrow"]) == []
