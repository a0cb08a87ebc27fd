"""A human-size reference (3.1 Gbp, generated) end to end on CPU workers.

The genome is mostly N (which never matches, so the kernels skip it quickly)
with guides planted past 2^31 in a 2.2 Gbp record and at both ends of a
second record: the coordinates of every hit must come back exactly, as int64.
"""
from __future__ import annotations

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
