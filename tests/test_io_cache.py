"""The genome cache (seqsift.io.genome_cache) through open_reference and the engine.

* hits are the same with and without the cache, for plain, gzip and BGZF
  references (and both match the naive oracle, tests/naive_search.py);
* a changed source (even with its size and mtime restored) is read afresh;
* a damaged cache (cut short, a flipped byte in its record table) is rebuilt;
* two jobs started together build it once (counted in its builds.log);
* an unwritable cache location costs the cache, not the job.

Each test has its own SEQSIFT_CACHE (tmp_path/cache).
"""
from __future__ import annotations

import gzip
import multiprocessing
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import seqsift
from seqsift.errors import InputError
from seqsift.io.reference import open_reference

from naive_search import expected_rows, reverse_complement

bgzf = pytest.importorskip("Bio.bgzf", reason="biopython writes the BGZF test files")

CORE = ["record", "start", "end", "pattern", "distance", "strand"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEQSIFT_CACHE", str(cache))
    return cache


def genome(seed: int = 1) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Records with N runs, lowercase and one shorter than every pattern; planted guides."""
    rng = random.Random(seed)
    guides = [("g1", "ACGTTGCAAGGCT"), ("g2", "GGATCCATG")]
    body = "".join(rng.choice("ACGT") for _ in range(600))
    records = [
        ("chr1", body[:150] + guides[0][1] + "N" * 40 + body[150:300].lower() + reverse_complement(guides[1][1])
         + body[300:]),
        ("tiny", "ACG"),
        ("chr2", "n" * 30 + guides[1][1].lower() + body[::-1][:200] + guides[0][1][:-1] + "T"),
    ]
    return records, guides


def fasta_bytes(records, width=60, eol="\n", blank_between=False) -> bytes:
    out = []
    for name, seq in records:
        out.append(f">{name} d{eol}" + "".join(seq[i:i + width] + eol for i in range(0, len(seq), width))
                   + (eol if blank_between else ""))
    return "".join(out).encode()


def write(path: Path, data: bytes, layout: str) -> Path:
    if layout == "gzip":
        path.write_bytes(gzip.compress(data))
    elif layout == "bgzf":
        with bgzf.BgzfWriter(str(path), "wb") as out:
            out.write(data)
    else:
        path.write_bytes(data)
    return path


def builds(cache: Path) -> int:
    log = cache / "reference" / "builds.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def core(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[CORE].astype({c: "int64" for c in ("start", "end", "distance")}).reset_index(drop=True)


@pytest.mark.parametrize("layout", ["plain", "gzip", "bgzf"])
@pytest.mark.parametrize("text_format", [{"width": 60}, {"width": 7, "eol": "\r\n"}, {"width": 61, "blank_between": True}])
def test_hits_identical_with_and_without_cache(tmp_path, client, private_cache, monkeypatch, layout, text_format):
    records, guides = genome()
    path = write(tmp_path / f"genome.{layout}.fa", fasta_bytes(records, **text_format), layout)
    expected = expected_rows(records, guides, 2, "edit")
    assert len(expected) >= 4

    first = seqsift.search(str(path), guides, 2, metric="edit", client=client, chunk_size=64)
    assert builds(private_cache) == 1
    cached = open_reference(path)
    assert cached.genome_path is not None
    second = seqsift.search(str(path), guides, 2, metric="edit", client=client, chunk_size=64)
    assert builds(private_cache) == 1  # the second job used the cache
    pd.testing.assert_frame_equal(core(first), core(second))
    pd.testing.assert_frame_equal(core(first), core(expected), check_dtype=False)

    if layout != "gzip":  # without any cache: read through the .fai (and .gzi)
        monkeypatch.setenv("SEQSIFT_CACHE", str(tmp_path / "not-a-directory" / "cache"))
        (tmp_path / "not-a-directory").write_text("a file where the cache directory should be")
        uncached = open_reference(path)
        assert uncached.genome_path is None
        without = seqsift.search(str(path), guides, 2, metric="edit", client=client, chunk_size=64)
        pd.testing.assert_frame_equal(core(first), core(without))


def test_read_view_is_a_zero_copy_slice(tmp_path):
    records, _ = genome()
    path = write(tmp_path / "g.fa", fasta_bytes(records, width=7), "plain")
    ref = open_reference(path)
    for i, (_, seq) in enumerate(records):
        view = ref.read_view(i, 1, len(seq))
        assert view.dtype == np.uint8 and not view.flags.owndata and not view.flags.writeable
        assert view.tobytes() == seq[1:].encode() == ref.read(i, 1, len(seq))
    with pytest.raises(IndexError):
        ref.read_view(0, 5, 4)


def test_changed_source_with_same_size_and_mtime_is_read_afresh(tmp_path, private_cache):
    records, _ = genome()
    path = write(tmp_path / "g.fa", fasta_bytes(records), "plain")
    before = os.stat(path)
    assert open_reference(path).read(0, 0, 20) == records[0][1][:20].encode()
    changed = [(name, seq.translate(str.maketrans("ACGTacgt", "TGCAtgca"))) for name, seq in records]
    path.write_bytes(fasta_bytes(changed))  # same layout, same size, other bases
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size and os.stat(path).st_mtime_ns == before.st_mtime_ns
    ref = open_reference(path)
    assert [ref.read(i, 0, len(s)) for i, (_, s) in enumerate(changed)] == [s.encode() for _, s in changed]
    assert builds(private_cache) == 2


def _cache_file(cache: Path) -> Path:
    (found,) = (cache / "reference").glob("*.genome")
    return found


@pytest.mark.parametrize("damage", ["truncate", "flip_table_byte", "flip_header_byte", "flip_payload_first_page"])
def test_damaged_cache_is_rebuilt(tmp_path, private_cache, damage):
    records, _ = genome()
    path = write(tmp_path / "g.fa", fasta_bytes(records), "gzip")
    open_reference(path)
    cache_file = _cache_file(private_cache)
    data = bytearray(cache_file.read_bytes())
    if damage == "truncate":
        data = data[:len(data) - 10]
    elif damage == "flip_table_byte":
        data[-5] ^= 0x01  # inside the record table (the last name), at the end of the file
    elif damage == "flip_header_byte":
        data[20] ^= 0x01  # the payload size
    else:
        data[4096] ^= 0x20  # the first base: A <-> a
    cache_file.write_bytes(bytes(data))
    ref = open_reference(path)
    assert [ref.read(i, 0, len(s)) for i, (_, s) in enumerate(records)] == [s.encode() for _, s in records]
    assert builds(private_cache) == 2


def _open_when_told(path: str, start, results) -> None:
    start.wait()
    ref = open_reference(path)
    results.put((ref.genome_path, ref.read(0, 0, int(ref.lengths[0]))))


def test_two_jobs_started_together_build_the_cache_once(tmp_path, private_cache):
    records, _ = genome()
    path = write(tmp_path / "g.fa.gz", fasta_bytes(records * 1, width=11), "bgzf")
    context = multiprocessing.get_context("spawn")  # fresh interpreters, as two CLI runs
    start, results = context.Event(), context.Queue()
    jobs = [context.Process(target=_open_when_told, args=(str(path), start, results)) for _ in range(2)]
    for job in jobs:
        job.start()
    start.set()
    outcomes = [results.get(timeout=120) for _ in jobs]
    for job in jobs:
        job.join(timeout=120)
        assert job.exitcode == 0
    assert builds(private_cache) == 1
    assert outcomes[0] == outcomes[1] and outcomes[0][1] == records[0][1].encode()


def test_unwritable_cache_location(tmp_path, monkeypatch, capsys):
    records, _ = genome()
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, so nothing can be created under it")
    monkeypatch.setenv("SEQSIFT_CACHE", str(blocker / "cache"))
    for layout in ("plain", "bgzf"):
        path = write(tmp_path / f"g.{layout}.fa", fasta_bytes(records), layout)
        ref = open_reference(path)
        assert ref.genome_path is None
        assert [ref.read(i, 0, len(s)) for i, (_, s) in enumerate(records)] == [s.encode() for _, s in records]
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "without the genome cache" in err
    path = write(tmp_path / "g.gz.fa", fasta_bytes(records), "gzip")
    with pytest.raises(InputError) as excinfo:
        open_reference(path)
    message = str(excinfo.value)
    assert "\n" not in message and "plain gzip" in message and "SEQSIFT_CACHE" in message


def test_bgzf_index_matches_the_blocks(tmp_path):
    """The .gzi written in the pass lists every block after the first, as Bio.bgzf sees them."""
    rng = np.random.default_rng(2)
    seq = rng.choice(list("ACGTN"), 400_000)
    text = (">r\n" + "\n".join("".join(seq[i:i + 60]) for i in range(0, len(seq), 60)) + "\n").encode()
    path = write(tmp_path / "big.fa.gz", text, "bgzf")
    ref = open_reference(path)
    table = np.fromfile(ref.gzi_path, dtype="<u8")
    with open(path, "rb") as handle:
        blocks = [(start, data_start) for start, _, data_start, data_len in bgzf.BgzfBlocks(handle) if data_len]
    assert int(table[0]) == len(blocks) - 1 > 3
    assert table[1:].reshape(-1, 2).tolist() == [list(b) for b in blocks[1:]]
    assert ref.read(0, 0, len(seq)) == "".join(seq).encode()


def test_cache_write_failure_costs_only_the_cache(tmp_path, private_cache, monkeypatch, capsys):
    """A full disk while the cache is written: a note, the job goes on, nothing half-written is left."""
    import errno

    from seqsift.io import genome_cache

    def full(self, offset, sequence):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(genome_cache.CacheWriter, "write", full)
    records, _ = genome()
    path = write(tmp_path / "g.fa", fasta_bytes(records), "plain")
    ref = open_reference(path)
    assert ref.genome_path is None
    assert [ref.read(i, 0, len(s)) for i, (_, s) in enumerate(records)] == [s.encode() for _, s in records]
    assert "No space left on device" in capsys.readouterr().err
    assert not [p for p in (private_cache / "reference").iterdir() if ".genome" in p.name and not p.name.endswith(".lock")]


def test_a_file_range_reader_fills_buffers_in_pieces_as_one_read(tmp_path, monkeypatch):
    """FileRange.reader reads a buffer in READ_PIECE pieces on several threads: every size (below one
    piece, pieces and a part, up to the range's end) equals the file's bytes; past the file's end, EOFError."""
    import numpy as np

    from seqsift.io import genome_cache

    monkeypatch.setattr(genome_cache, "READ_PIECE", 1000)
    data = np.random.default_rng(2).integers(0, 256, 25_000, dtype=np.uint8)
    path = tmp_path / "window.bin"
    path.write_bytes(b"head" + data.tobytes())
    window = genome_cache.FileRange(str(path), 4, data.size)
    with window.reader() as fill:
        for first, size in ((0, 999), (0, 1000), (17, 3500), (5_000, 20_000), (24_000, 1_000)):
            buffer = np.zeros(size, np.uint8)
            fill(buffer, first)
            assert np.array_equal(buffer, data[first:first + size]), (first, size)
        with pytest.raises(EOFError):
            fill(np.zeros(2_500, np.uint8), 23_000)


@pytest.mark.parametrize("described", [True, False], ids=["descriptions", "names-only"])
def test_the_record_table_reads_back_as_the_scan_found_it(tmp_path, private_cache, described):
    """Names (any UTF-8), whole header lines and the .fai columns: the same from the first open (the
    scan) as from the cache, and the same as the file says; the file's own .fai agrees."""
    rng = random.Random(3)
    records = [(f"rec_{i}é" if i % 3 else f"r{i}", "".join(rng.choice("ACGTN") for _ in range(rng.randint(1, 130))))
               for i in range(500)]
    lines = []
    for i, (name, seq) in enumerate(records):
        lines.append(f">{name}" + (f"\tdescribed {i}  染" if described and i % 2 else "") + "\n")
        lines.extend(seq[j:j + 50] + "\n" for j in range(0, len(seq), 50))
    path = tmp_path / "many.fa"
    path.write_text("".join(lines), encoding="utf-8")
    first = open_reference(path)
    second = open_reference(path)
    assert builds(private_cache) == 1 and second.genome_path is not None
    headers = [line[1:-1] for line in lines if line.startswith(">")]
    for ref in (first, second):
        assert ref.names == tuple(name for name, _ in records)
        assert ref.lengths.tolist() == [len(seq) for _, seq in records]
        assert ref.headers == (tuple(headers) if described else None)
        assert [ref.read(i, 0, len(seq)).decode() for i, (_, seq) in enumerate(records)] == [s for _, s in records]
    for column in ("offsets", "line_bases", "line_bytes"):
        assert getattr(first, column).tolist() == getattr(second, column).tolist()
    index = pyfaidx_index(path)
    assert [line.split("\t") for line in Path(first.fai_path).read_text(encoding="utf-8").splitlines()] == index


def pyfaidx_index(path: Path) -> list[list[str]]:
    """The .fai that pyfaidx writes for ``path``, as fields (built in a copy, so seqsift's stays)."""
    import shutil

    import pyfaidx

    copy = path.with_name("copy-" + path.name)
    shutil.copy(path, copy)
    pyfaidx.Faidx(str(copy)).close()
    return [line.split("\t") for line in Path(f"{copy}.fai").read_text(encoding="utf-8").splitlines()]


def test_a_reference_pickles_as_its_genome_cache(tmp_path, private_cache, monkeypatch):
    """A Dask worker gets the cache's path, not the records (a million records pickled whole were
    ~90 MB through the scheduler), and reads the same Reference from the cache; a cache rebuilt since
    is refused, not read as the job's."""
    import dataclasses
    import pickle

    from seqsift.io import reference as reference_module

    records, _ = genome()
    many = [(f"{name}_{i}", sequence) for i in range(40) for name, sequence in records]
    path = write(tmp_path / "ref.fa", fasta_bytes(many), "plain")
    ref = open_reference(path)
    assert ref.genome_path is not None and len(ref.names) == 120
    data = pickle.dumps(ref)
    assert len(data) < 1000 and b"chr1_7" not in data
    reference_module._genome_of_identity.cache_clear()
    copy = pickle.loads(data)
    for field in dataclasses.fields(ref):
        mine, theirs = getattr(ref, field.name), getattr(copy, field.name)
        assert (np.array_equal(mine, theirs) if isinstance(mine, np.ndarray) else mine == theirs), field.name
    assert copy.read(5, 0, 20) == ref.read(5, 0, 20)

    path.write_bytes(path.read_bytes() + b">extra\nACGT\n")   # the source changes: its cache is rebuilt
    assert len(open_reference(path).names) == 121
    reference_module._genome_of_identity.cache_clear()
    with pytest.raises(OSError, match="is not on .*'s filesystem: a cluster's workers read it by path"):
        pickle.loads(data)   # the old version was pruned
    shutil.copy(open_reference(path).genome_path, ref.genome_path)
    reference_module._genome_of_identity.cache_clear()
    with pytest.raises(OSError, match="changed during the job"):
        pickle.loads(data)   # another file in its place


def test_a_reference_without_genome_cache_pickles_whole(tmp_path, monkeypatch):
    import pickle

    records, _ = genome()
    path = write(tmp_path / "ref.fa", fasta_bytes(records), "plain")
    ref = open_reference(path)
    uncached = type(ref)(**{**ref.__dict__, "genome_path": None, "record_starts": None, "genome_identity": None})
    copy = pickle.loads(pickle.dumps(uncached))
    assert copy.names == ref.names and copy.genome_path is None
    assert copy.read(0, 0, 30) == ref.read(0, 0, 30)


@pytest.mark.parametrize("damage", [False, True], ids=["whole", "a-newline-in-a-name"])
def test_a_table_that_decodes_wrong_under_a_valid_digest_is_refused(tmp_path, damage):
    """GenomeCache.open checks and decodes the record table where the file is mapped, without a copy. A
    table whose digest holds but whose names do not add up (a name's byte made a newline, the digest
    made again: two lines for one record) is refused as a damaged cache is (None), whatever views of
    the map the error left behind; the file undamaged opens."""
    import mmap
    import zlib

    from seqsift.io import genome_cache

    fingerprint, path = b"f" * 32, tmp_path / "g.genome"
    writer = genome_cache.CacheWriter(path, fingerprint, capacity=8)
    writer.write(0, np.frombuffer(b"ACGTACGT", np.uint8))
    writer.finish({"names": ["one_two"], "kind": "plain", "lengths": [8], "offsets": [9], "line_bases": [8],
                   "line_bytes": [9]})
    if damage:
        data = bytearray(path.read_bytes())
        data[data.rindex(b"one_two") + 3] = ord("\n")
        fields = bytes(data[:genome_cache._FIELDS.size])
        payload_bytes = genome_cache._FIELDS.unpack(fields)[1]
        table_crc = zlib.crc32(data[genome_cache.HEADER_BYTES + payload_bytes:])
        with mmap.mmap(-1, len(data)) as copy:
            copy.write(bytes(data))
            sample = genome_cache._payload_sample(copy, payload_bytes)
        digest = genome_cache._digest(fields, table_crc, sample)
        data[genome_cache._FIELDS.size:genome_cache._FIELDS.size + len(digest)] = digest
        path.write_bytes(bytes(data))
    opened = genome_cache.GenomeCache.open(path, fingerprint)
    if damage:
        assert opened is None
    else:
        assert opened is not None and list(opened.table["names"]) == ["one_two"]
        assert opened.table["lengths"].tolist() == [8] and opened.record_starts.tolist() == [4096]
