"""The GPU's starts and CIGARs (kernels/locate/locate.cu) equal the CPU backend's, hit for hit, and pass
the oracle's checks (test_align.check_located: a valid alignment of the hit's distance, the smallest start
by brute force); a GPU search's rows equal a CPU search's (pytest -m gpu)."""
from __future__ import annotations

import random

import numpy as np
import pytest

import seqsift
from seqsift.alphabet import NEVER, encode_text
from seqsift.kernels import edit, hamming
from seqsift.kernels.locate import cuda as locate_cuda
from seqsift.pattern_set import STRAND_MINUS, STRAND_PLUS, PatternSet

from test_align import check_located
from test_engine import mutate as mutate_text
from test_engine import write_fasta
from test_kernels_cpu import letters, mutate

pytestmark = pytest.mark.gpu


def batch_of(sequences, strands=(STRAND_PLUS, STRAND_MINUS)):
    return PatternSet(tuple(str(i) for i in range(len(sequences))), tuple(sequences)).oriented(
        range(len(sequences)), strands)


def on_both(metric, text, batch, row, end, distance, lowest=None):
    """(starts, CIGARs) of the GPU, checked equal to the CPU backend's."""
    import cupy

    from seqsift.kernels import locate_packed

    gpu_starts, (gpu_offsets, gpu_data) = locate_packed(metric, cupy.asarray(text), batch, row, end, distance,
                                                        lowest=lowest)
    cpu_starts, (cpu_offsets, cpu_data) = locate_packed(metric, text, batch, row, end, distance, lowest=lowest)
    assert gpu_starts.tolist() == cpu_starts.tolist()
    assert gpu_offsets.tolist() == cpu_offsets.tolist() and gpu_data.tobytes() == cpu_data.tobytes()
    cigars = gpu_data.tobytes().decode("ascii")
    return gpu_starts, [cigars[a:b] for a, b in zip(gpu_offsets[:-1].tolist(), gpu_offsets[1:].tolist())]


def test_examples():
    batch = batch_of(["ACGT"], (STRAND_PLUS,))
    starts, cigars = on_both("edit", encode_text("TTACGGTTT"), batch, np.array([0]), np.array([7]), np.array([1]))
    assert starts.tolist() == [2] and cigars == ["3=1D1="]
    starts, cigars = on_both("edit", encode_text("GGACTGG"), batch, np.array([0]), np.array([5]), np.array([1]))
    assert starts.tolist() == [2] and cigars == ["2=1I1="]
    hamming_batch = batch_of(["ACGTAGCTACGTACGTACGT"], (STRAND_PLUS,))
    starts, cigars = on_both("hamming", encode_text("TTACGTAGGTACGTACGTACGTAA"), hamming_batch, np.array([0]),
                             np.array([22]), np.array([1]))
    assert starts.tolist() == [2] and cigars == ["6=1X13="]


def test_hamming_hits_with_iupac_and_never():
    rng = np.random.default_rng(1)
    text = rng.integers(0, 5, 20_000).astype(np.uint8)
    batch = batch_of(["ACGTNACGTRYACG", "AC", "A", "ACGT" * 16 + "AC"])
    hits = hamming.pigeonhole_cpu(text, batch, 3, 0, len(text))
    assert len(hits) > 1000
    starts, cigars = on_both("hamming", text, batch, hits.row, hits.end, hits.distance)
    check_located("hamming", text, batch, hits, starts, cigars)


@pytest.mark.parametrize("m,k", [(1, 0), (2, 1), (5, 2), (20, 3), (23, 3), (32, 4), (33, 5), (64, 6), (65, 8),
                                 (200, 10)])
def test_edit_planted(m, k):
    rng = np.random.default_rng(m)
    text = rng.integers(0, 4, 4000).astype(np.uint8)
    pattern = letters(rng.integers(0, 4, m))
    for at in (0, 900, 2000, 4000 - m - k):  # the text's first and last bases included
        copy = encode_text(mutate(rng, pattern, int(rng.integers(0, k + 1)), indels=True))
        text[at:at + len(copy)] = copy[:4000 - at]
    text[3000:3010] = NEVER
    batch = batch_of([pattern, "ACNNGTRY" if m >= 8 else pattern])
    hits = edit.myers_cpu(text, batch, k, 0, len(text)).sorted()
    assert len(hits) > 0
    starts, cigars = on_both("edit", text, batch, hits.row, hits.end, hits.distance)
    keep = np.sort(rng.choice(len(hits), min(len(hits), 40), replace=False))
    sub = type(hits)(hits.row[keep], hits.end[keep], hits.distance[keep])
    check_located("edit", text, batch, sub, starts[keep], [cigars[i] for i in keep], brute_force_start=m <= 65)


def test_edit_starts_never_before_their_record():
    """``lowest``: in records back to back, a hit at the start of its record starts inside it, even where
    the bases before it (the record before) would give a smaller distance."""
    rng = np.random.default_rng(7)
    text = rng.integers(0, 4, 3000).astype(np.uint8)
    batch = batch_of([letters(text[1000:1020])], (STRAND_PLUS,))
    record_start = 1003  # the pattern's copy begins 3 bases before this record
    hits = edit.myers_cpu(text[record_start:], batch, 4, 0, 100).sorted()  # distances of the record alone
    assert len(hits) > 0
    starts, cigars = on_both("edit", text, batch, hits.row, hits.end + record_start, hits.distance,
                             lowest=np.full(len(hits), record_start, np.int64))
    assert (starts >= record_start).all()
    check_located("edit", text[record_start:], batch, hits, starts - record_start, cigars)


def test_many_hits_in_several_launches(monkeypatch):
    """More hits than one launch's DP scratch holds: the launches split them, the answers stay the same."""
    text = np.zeros(20_000, np.uint8)
    text[::37] = 1
    batch = batch_of(["A" * 20, "AAAAAAAAAACAAAAAAAAA"])
    hits = edit.myers_cpu(text, batch, 2, 0, len(text)).sorted()
    assert len(hits) > 30_000
    monkeypatch.setattr(locate_cuda, "BAND_BYTES", 4 * 21 * 5 * 1000)  # 1,000 hits a launch
    starts, cigars = on_both("edit", text, batch, hits.row, hits.end, hits.distance)
    sample = type(hits)(hits.row[::101], hits.end[::101], hits.distance[::101])
    check_located("edit", text, batch, sample, starts[::101], cigars[::101], brute_force_start=False)


def test_bad_hits_raise_as_on_the_cpu():
    import cupy

    from seqsift.kernels import locate_packed

    text = encode_text("ACGTACGT")
    batch = batch_of(["ACGT"], (STRAND_PLUS,))
    for metric, end, distance in (("edit", 3, 0), ("hamming", 2, 0), ("edit", 99, 0)):
        with pytest.raises(ValueError, match="cannot locate hit"):
            locate_packed(metric, cupy.asarray(text), batch, np.array([0]), np.array([end]), np.array([distance]))
    starts, cigars = on_both("edit", text, batch, np.array([], np.int32), np.array([], np.int64),
                             np.array([], np.int16))
    assert starts.size == 0 and cigars == []


@pytest.mark.parametrize("metric,k", [("edit", 3), ("hamming", 2)])
def test_a_gpu_search_writes_the_cpu_searchs_rows(tmp_path, metric, k):
    """Through the whole job: records packed together and chunked ones, soft-masking and N runs; the
    rows (starts, CIGARs, aligned text) of the GPU search equal the CPU search's."""
    rng = random.Random(5)
    records = []
    for r in range(60):
        size = rng.choice([30, 200, 1500, 40_000])
        bases = [rng.choice("ACGTacgt") for _ in range(size)]
        if size > 1000:
            bases[100:160] = "N" * 60
        records.append((f"r{r} described", "".join(bases)))
    reference = write_fasta(tmp_path / "ref.fa", records)
    sources = [seq for _, seq in records if len(seq) > 1000]
    patterns = [mutate_text(random.Random(i), sources[i % len(sources)][300 + 7 * i:323 + 7 * i].upper(), 1,
                       indels=metric == "edit") for i in range(24)]
    patterns += [records[0][1][:20].upper(), records[1][1][-20:].upper()]  # hits at both ends of records
    rows = {backend: seqsift.search(reference, patterns, k, metric=metric, backend=backend, chunk_size=10_000)
            for backend in ("cpu", "cuda")}
    assert len(rows["cpu"]) >= len(patterns)  # every pattern's source found, the ends of records' included
    assert list(rows["cuda"].columns) == list(rows["cpu"].columns)
    for column in rows["cpu"].columns:  # values, not dtypes: the CPU's rows came through worker processes
        assert rows["cuda"][column].tolist() == rows["cpu"][column].tolist(), column


def test_locating_runs_on_a_stream_ahead_of_the_searches():
    """The locate kernels' stream outranks the task stream the searches run on (stream priorities)."""
    from seqsift.kernels.cuda import priority_stream, task_stream

    assert priority_stream().priority < task_stream().priority
