"""The engine end to end through a real Dask LocalCluster, against the naive contract.

Every chunk size from just above the halo upwards moves the chunk boundaries
across every position of the small records below, so hits and ``best`` runs
are cut at every possible place; the output must not change.
"""
from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

import seqsift
from seqsift.searching.job import SearchJob
from seqsift.searching.merge import OrderedMerger
from seqsift.searching.task import run_task
from seqsift.partitioning import plan_chunks
from seqsift.pattern_set import PatternSet

from naive_search import expected_rows, reverse_complement

CORE_COLUMNS = ["record", "start", "end", "pattern", "distance", "strand"]


def write_fasta(path, records, width=60):
    with open(path, "w") as handle:
        for name, seq in records:
            handle.write(f">{name} some description\n")
            for i in range(0, len(seq), width):
                handle.write(seq[i:i + width] + "\n")
    return str(path)


def mutate(rng, seq, edits, indels=True):
    seq = list(seq)
    for _ in range(edits):
        i = rng.randrange(len(seq))
        kind = rng.choice("sid" if indels and len(seq) > 2 else "s")
        if kind == "s":
            seq[i] = rng.choice("ACGT")
        elif kind == "i":
            seq.insert(i, rng.choice("ACGT"))
        else:
            del seq[i]
    return "".join(seq)


def adversarial_genome(seed):
    """Records with N runs, tandem repeats, lowercase, IUPAC bytes, planted hits at both ends."""
    rng = random.Random(seed)
    guides = ["ACGTTGCAAGGCT", "GGATCCATG", "TTTTTTTTT", "ACGCGT"]  # ACGCGT is its own reverse complement
    body = "".join(rng.choice("ACGT") for _ in range(700))
    records = [
        ("chr1", guides[0] + body[:200] + "N" * 30 + mutate(rng, guides[1], 1, False) + body[200:400].lower()
         + "ACAC" * 20 + reverse_complement(guides[0]) + "RYKM" + body[400:] + mutate(rng, guides[0], 2)),
        ("chr2", "T" * 60 + guides[3] * 3 + "A" * 40),
        ("tiny", "ACG"),  # shorter than every pattern
        ("chr3", body[::-1][:500] + guides[1]),
    ]
    patterns = [("g0", guides[0]), ("g1", guides[1]), ("g2", guides[2]), ("pal", guides[3]),
                ("iupac", "GGNTCCRTG")]
    return records, patterns


def engine_frame(result):
    return result[[c for c in CORE_COLUMNS if c in result.columns]].astype(
        {c: "int64" for c in ("start", "end", "distance") if c in result.columns})


@pytest.mark.parametrize("metric,k,mode", [("hamming", 2, "best"), ("edit", 2, "best"),
                                           ("edit", 1, "ends"), ("hamming", 0, "best")])
def test_every_chunk_size_gives_the_contract(tmp_path, client, metric, k, mode):
    records, patterns = adversarial_genome(1)
    reference = write_fasta(tmp_path / "ref.fa", records)
    expected = expected_rows(records, patterns, k, metric, mode)
    assert len(expected) > 10  # the planted hits are there
    halo = max(len(p) for _, p in patterns) - 1 + (k if metric == "edit" else 0)
    for chunk_size in [halo + 1, halo + 2, halo + 3, halo + 7, 64, 101, 257, 10_000]:
        got = seqsift.search(reference, patterns, k, metric=metric, mode=mode, client=client,
                             chunk_size=chunk_size, pattern_batch_size=2)
        pd.testing.assert_frame_equal(engine_frame(got), engine_frame(expected), check_dtype=False,
                                      obj=f"chunk_size={chunk_size}")


@pytest.mark.parametrize("seed", range(4))
def test_random_genomes_with_planted_edits(tmp_path, client, seed):
    rng = random.Random(100 + seed)
    patterns = [(f"p{i}", "".join(rng.choice("ACGT") for _ in range(rng.randint(6, 16)))) for i in range(4)]
    records = []
    for r in range(3):
        parts = []
        for _ in range(6):
            parts.append("".join(rng.choice("ACGT") for _ in range(rng.randint(0, 150))))
            planted = rng.choice(patterns)[1]
            parts.append(mutate(rng, planted if rng.random() < 0.5 else reverse_complement(planted), rng.randint(0, 2)))
        records.append((f"rec{r}", "".join(parts)))
    reference = write_fasta(tmp_path / "ref.fa", records, width=rng.randint(10, 80))
    for metric in ("hamming", "edit"):
        expected = expected_rows(records, patterns, 2, metric)
        got = seqsift.search(reference, patterns, 2, metric=metric, client=client,
                             chunk_size=rng.randint(20, 300))
        pd.testing.assert_frame_equal(engine_frame(got), engine_frame(expected), check_dtype=False)


def test_alignment_columns_are_consistent(tmp_path, client):
    records, patterns = adversarial_genome(2)
    reference = write_fasta(tmp_path / "ref.fa", records)
    got = seqsift.search(reference, patterns, 2, metric="edit", client=client, chunk_size=50)
    texts = {name.split()[0]: seq for name, seq in records}
    assert len(got) > 0
    for row in got.itertuples():
        assert row.aligned == texts[row.record][row.start:row.end]
        ops = "".join(int(n) * op for n, op in __import__("re").findall(r"(\d+)([=XID])", row.cigar))
        assert ops.count("X") + ops.count("I") + ops.count("D") == row.distance
        assert len(ops) - ops.count("D") == len(dict(patterns)[row.pattern])
        assert len(ops) - ops.count("I") == row.end - row.start


def test_strand_choice_and_output_files_agree(tmp_path, client):
    records, patterns = adversarial_genome(3)
    reference = write_fasta(tmp_path / "ref.fa", records)
    both = seqsift.search(reference, patterns, 1, client=client)
    plus = seqsift.search(reference, patterns, 1, strand="+", client=client)
    assert set(both["strand"]) == {"+", "-"}
    pd.testing.assert_frame_equal(plus, both[both["strand"] == "+"].reset_index(drop=True))
    for suffix in ("tsv", "bed", "parquet"):
        path = tmp_path / f"hits.{suffix}"
        count = seqsift.search(reference, patterns, 1, client=client, output=str(path))
        assert count == len(both)
        if suffix == "tsv":
            back = pd.read_csv(path, sep="\t")
            assert list(back.columns)[0] == "record"
            assert back["start"].tolist() == both["start"].tolist()
        elif suffix == "bed":
            back = pd.read_csv(path, sep="\t", header=None)
            assert back[1].tolist() == both["start"].tolist() and back[4].tolist() == both["distance"].tolist()
        else:
            back = pd.read_parquet(path)
            pd.testing.assert_frame_equal(back, both, check_dtype=False)
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []
    # A folder path: a partitioned Parquet dataset, read back as one table.
    dataset = tmp_path / "hits_dataset"
    assert seqsift.search(reference, patterns, 1, client=client, output=f"{dataset}/") == len(both)
    assert sorted(p.name for p in dataset.iterdir()) == ["part-00000.parquet"]
    pd.testing.assert_frame_equal(pd.read_parquet(dataset), both, check_dtype=False)


def test_no_hit_gives_valid_empty_outputs(tmp_path, client):
    records, _ = adversarial_genome(3)
    reference = write_fasta(tmp_path / "ref.fa", records)
    frame = seqsift.search(reference, ["GGGGGGGGGGGGGGGGGGGG"], 0, client=client)
    assert len(frame) == 0 and list(frame.columns) == CORE_COLUMNS + ["aligned", "cigar"]
    for name in ("empty.parquet", "empty.tsv"):
        assert seqsift.search(reference, ["GGGGGGGGGGGGGGGGGGGG"], 0, client=client, output=tmp_path / name) == 0
    assert list(pd.read_parquet(tmp_path / "empty.parquet").columns) == list(frame.columns)
    assert (tmp_path / "empty.tsv").read_text().startswith("record\tstart")


class _VirtualReference:
    """A 3.1 Gbp record described by its length; reads return generated text."""

    names = ("chrBig",)
    lengths = np.array([3_100_000_000], dtype=np.int64)
    planted_at = 2**31 + 12_345
    guide = "ACGTACGGTCAGTTGCAAGT"

    def read(self, record_index, start, end):
        text = bytearray(b"T" * (end - start))
        offset = self.planted_at - start
        if 0 <= offset and offset + len(self.guide) <= len(text):
            text[offset:offset + len(self.guide)] = self.guide.encode()
        return bytes(text)


@pytest.mark.parametrize("metric", ["hamming", "edit"])
def test_coordinates_beyond_two_to_the_31(metric):
    reference = _VirtualReference()
    job = SearchJob(reference=reference, patterns=PatternSet(("g",), (reference.guide,)), metric=metric,
                    k=1, mode="best", strand="both", algorithm="edit-myers" if metric == "edit" else "hamming-scan",
                    backend="cpu", align=True)
    groups = job.groups(1_000_000)
    # Only the group whose core holds the planted hit's last character (and its neighbours) matter.
    last_char = reference.planted_at + len(reference.guide) - 1
    index = next(g.index for g in groups if g.chunks[0].core_start <= last_char < g.chunks[0].owned_end)
    rows = run_task(job, groups[index], range(1))
    merger = OrderedMerger(job)
    out = list(merger.add_group(groups[index], rows)) + list(merger.finish())
    hits = pd.concat(out)
    assert hits["start"].tolist() == [reference.planted_at]
    assert hits["end"].tolist() == [reference.planted_at + len(reference.guide)]
    assert hits["start"].dtype == np.int64


@pytest.mark.parametrize("reports_start", [True, False])
@pytest.mark.parametrize("runs", [1, 2, 5, 200])
def test_sort_rows_merges_sorted_runs_into_the_output_order(reports_start, runs):
    """merge.sort_rows: a few sorted runs (workers' results) merged, many sorted, huge indices
    sorted by the columns; always exactly pandas' stable sort by the output columns."""
    from seqsift.searching.merge import ENDS_ORDER_COLUMNS, ORDER_COLUMNS, sort_rows

    rng = np.random.default_rng(runs)
    columns = ORDER_COLUMNS if reports_start else ENDS_ORDER_COLUMNS
    for pattern_limit in (50, 1 << 31):   # the second does not fit the packed keys
        parts = []
        for _ in range(runs):
            n = int(rng.integers(0, 400))
            start = rng.integers(0, 3_000, n)
            part = pd.DataFrame({"record": rng.integers(0, 3, n).astype(np.int32), "start": start,
                                 "end": start + rng.integers(1, 30, n),
                                 "pattern": rng.integers(0, pattern_limit, n, dtype=np.int64),
                                 "strand": rng.integers(0, 2, n).astype(np.int8),
                                 "distance": rng.integers(0, 4, n).astype(np.int16)})
            parts.append(part.sort_values(columns, kind="stable"))
        rows = pd.concat(parts, ignore_index=True)
        expected = rows.sort_values(columns, kind="stable", ignore_index=True)
        pd.testing.assert_frame_equal(sort_rows(rows, reports_start), expected)
