"""The search's writer thread (engine/output.py): rows are named and encoded off the client's
thread, in order, and a failed write still ends the job with one line and no output file.

Oracle: the expected named rows are built with plain Python lists, not the writer's Arrow path.
"""
from __future__ import annotations

import errno
import random
import threading

import numpy as np
import pandas as pd
import pytest

from seqsift.cli import main
from seqsift.runtime.output import TableWriter
from seqsift.searching.output import HitWriter

from test_engine import write_fasta

COLUMNS = ["record", "start", "end", "pattern", "distance", "strand"]
RECORDS, PATTERNS, STRANDS = ["chr1", "chr2"], ["g0", "g1", "g2"], ["+", "-"]


def index_rows(seed: int, count: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    start = np.sort(rng.integers(0, 10_000, count))
    return pd.DataFrame({"record": rng.integers(0, 2, count).astype(np.int32), "start": start,
                         "end": start + 20, "pattern": rng.integers(0, 3, count).astype(np.int32),
                         "distance": rng.integers(0, 4, count).astype(np.int16),
                         "strand": rng.integers(0, 2, count).astype(np.int8)})


def named_by_hand(rows: pd.DataFrame) -> list[tuple]:
    return [(RECORDS[r], int(s), int(e), PATTERNS[p], int(d), STRANDS[t]) for r, s, e, p, d, t in
            zip(*(rows[c].tolist() for c in COLUMNS))]


def test_rows_are_written_in_order_on_the_writer_thread(tmp_path, monkeypatch):
    threads = []
    real_append = TableWriter._append

    def append(self, table):
        threads.append(threading.current_thread().name)
        real_append(self, table)

    monkeypatch.setattr(TableWriter, "_append", append)
    parts = [index_rows(seed, 1000 + seed) for seed in range(6)]
    out = tmp_path / "hits.parquet"
    writer = HitWriter(str(out), COLUMNS, RECORDS, PATTERNS)
    for part in parts:
        writer.write(part)
    assert writer.count == sum(len(p) for p in parts)
    writer.close()
    assert threads == ["seqsift-writer"] * len(parts)
    back = pd.read_parquet(out)
    assert list(back.columns) == COLUMNS
    assert list(back.itertuples(index=False, name=None)) == [row for p in parts for row in named_by_hand(p)]


@pytest.mark.parametrize("suffix", ["parquet", "tsv"])
def test_a_failed_write_is_raised_at_close_and_abort_leaves_no_file(tmp_path, monkeypatch, suffix):
    def full_disk(self, table):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(TableWriter, "_append", full_disk)
    out = tmp_path / f"hits.{suffix}"
    out.write_text("the user's earlier file\n")
    writer = HitWriter(str(out), COLUMNS, RECORDS, PATTERNS)
    writer.write(index_rows(1, 100))
    with pytest.raises(OSError, match="No space left"):
        writer.close()
    writer.abort()
    assert out.read_text() == "the user's earlier file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name], "a temporary file was left behind"


def test_a_failed_write_ends_the_search_with_one_line_and_no_output(tmp_path, monkeypatch, capsys):
    rng = random.Random(5)
    text = "".join(rng.choice("ACGT") for _ in range(20_000))
    reference = write_fasta(tmp_path / "ref.fa", [("r1", text), ("r2", text[::-1])])
    patterns = tmp_path / "guides.txt"
    patterns.write_text("".join(f"{text[i:i + 12]}\n" for i in (100, 5000, 9000)))
    written = []

    def full_disk_after_one_write(self, table):
        if written:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(table.num_rows)

    monkeypatch.setattr(TableWriter, "_append", full_disk_after_one_write)
    out = tmp_path / "hits.parquet"
    code = main(["search", str(reference), str(patterns), "-k", "2", "-o", str(out), "--backend", "cpu",
                 "--workers", "1", "--chunk-size", "2000", "--no-progress"])
    err = capsys.readouterr().err
    assert code != 0 and written, err
    errors = [line for line in err.splitlines() if line.startswith("seqsift: error:")]
    assert len(errors) == 1 and "No space left on device" in errors[0], err
    assert "Traceback" not in err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".hits.parquet.") and p.name.endswith(".part")]


def test_the_record_column_is_dictionary_encoded_in_parquet(tmp_path):
    """Issue 27, goal 5: a reference of many records writes each hit's record name through a dictionary
    page (one copy of each name), the integer columns plainly."""
    import pyarrow.parquet as pq

    rng = random.Random(11)
    guide = "".join(rng.choice("ACGT") for _ in range(20))
    planted = {}
    records = []
    for i in range(500):
        seq = "".join(rng.choice("ACGT") for _ in range(200))
        at = (7 * i) % 150
        planted[f"contig_{i:04d}"] = at
        records.append((f"contig_{i:04d}", seq[:at] + guide + seq[at + 20:]))
    reference = write_fasta(tmp_path / "ref.fa", records)
    patterns = tmp_path / "guides.txt"
    patterns.write_text(guide + "\n")
    out = tmp_path / "hits.parquet"
    assert main(["search", reference, str(patterns), "-k", "0", "-o", str(out), "--backend", "cpu",
                 "--no-progress"]) == 0

    hits = pd.read_parquet(out)
    forward = hits[hits.strand == "+"]
    assert dict(zip(forward.record, forward.start)) == planted and len(forward) == len(planted)
    metadata = pq.ParquetFile(out).metadata
    names = metadata.schema.names
    for group in range(metadata.num_row_groups):
        record = metadata.row_group(group).column(names.index("record"))
        assert record.has_dictionary_page
        assert any("DICTIONARY" in encoding for encoding in record.encodings), record.encodings
        start = metadata.row_group(group).column(names.index("start"))
        assert not start.has_dictionary_page
