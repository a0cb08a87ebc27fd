"""Coordinates past 2^31, end to end on CPU workers (FASTA to written hits).

* ``test_coordinates_past_two_to_the_31_end_to_end`` (every run): a sparse
  single-line record of 2.2 Gbp with a hand-written ``.fai``, so that no
  gigabytes are written: the hole reads as zero bytes, which never match, and
  guides are planted past 2^31 and at the record's end.
* ``test_three_gigabase_reference_end_to_end`` (``slow``, skipped unless
  ``-m slow``): a human-size 3.1 Gbp FASTA in 60-base lines, written out in
  full (3.1 GB on disk) and indexed by pyfaidx, mostly N, with guides planted
  past 2^31 in a 2.2 Gbp record and at both ends of a second record.

The coordinates of every hit must come back exactly, as int64.
(tests/test_engine.py ``test_coordinates_beyond_two_to_the_31`` checks the
arithmetic of one task and the merge in memory, with no file.)
"""
from __future__ import annotations

import io
import os

import pandas as pd
import pytest

import seqsift

GUIDE = "GACGCATAAAGATGAGACGC"
LINE = 60
BIG = 2_200_000_000
SMALL = 900_000_000
PLANTED = {("chrBig", 2**31 + 1_234_567), ("chrBig", BIG - len(GUIDE)), ("chrSmall", 0),
           ("chrSmall", SMALL - len(GUIDE))}


def write_record(handle, name: str, length: int, planted: list[int]) -> None:
    """Write ``length`` bases of N in 60-base lines, with GUIDE at ``planted`` starts."""
    handle.write(f">{name}\n".encode())
    block_lines = 1 << 16
    block = (b"N" * LINE + b"\n") * block_lines
    position = 0
    while position < length:
        bases = min(block_lines * LINE, length - position)
        chunk = bytearray(block[: bases + bases // LINE + (1 if bases % LINE else 0)])
        if bases % LINE:
            chunk[-1:] = b"\n"
        for start in planted:
            for i, base in enumerate(GUIDE.encode()):
                p = start + i - position
                if 0 <= p < bases:
                    chunk[p + p // LINE] = base
        handle.write(chunk)
        position += bases


@pytest.mark.slow
def test_three_gigabase_reference_end_to_end(tmp_path_factory, client):
    folder = tmp_path_factory.mktemp("human_size")
    reference = folder / "human_size.fa"
    with open(reference, "wb") as handle:
        write_record(handle, "chrBig", BIG, [s for r, s in PLANTED if r == "chrBig"])
        write_record(handle, "chrSmall", SMALL, [s for r, s in PLANTED if r == "chrSmall"])
    try:
        hits = seqsift.search(str(reference), [GUIDE], 1, client=client, chunk_size=64_000_000)
    finally:
        reference.unlink()
    plus = hits[hits["strand"] == "+"]
    assert set(zip(plus["record"], plus["start"])) == PLANTED
    assert (plus["end"] - plus["start"] == len(GUIDE)).all() and (plus["distance"] == 0).all()
    assert hits["start"].dtype.kind == "i" and hits["start"].max() > 2**31


def test_coordinates_past_two_to_the_31_end_to_end(tmp_path, client):
    path = tmp_path / "sparse.fa"
    header = b">chrSparse\n"
    length = BIG
    planted = [2**31 + 1_234_567, length - len(GUIDE)]
    with open(path, "wb") as handle:
        handle.write(header)
        handle.truncate(len(header) + length)  # a hole: zero bytes, no disk space where supported
        for start in planted:
            handle.seek(len(header) + start)
            handle.write(GUIDE.encode())
        handle.seek(len(header) + length)
        handle.write(b"\n")
    if os.stat(path).st_blocks * 512 > 100 << 20:
        pytest.skip("this filesystem does not make sparse files")
    (tmp_path / "sparse.fa.fai").write_text(f"chrSparse\t{length}\t{len(header)}\t{length}\t{length + 1}\n")
    out = tmp_path / "hits.tsv"
    count = seqsift.search(str(path), [GUIDE], 1, strand="+", client=client, output=out, chunk_size=64_000_000)
    lines = [line for line in out.read_text().splitlines() if line != "#"]  # the header's own "#" line, if any
    hits = pd.read_csv(io.StringIO("\n".join(lines) + "\n"), sep="\t", comment=None)
    hits = hits.rename(columns=lambda column: column.lstrip("#"))
    assert count == len(planted)
    assert hits["start"].tolist() == planted and hits["end"].tolist() == [s + len(GUIDE) for s in planted]
    assert (hits["distance"] == 0).all() and hits["start"].dtype.kind == "i"
