"""Tests for the input layer: seqsift.errors, seqsift.io.reference, seqsift.io.patterns.

Run: PYTHONPATH=src python -m pytest tests/test_inputs.py

Every test gets its own cache directory (SEQSIFT_CACHE -> tmp_path/cache), so
nothing is written to the real ~/.cache. Real-data tests need SEQSIFT_TEST_DATA
(the shared data directory) and are skipped without it.
"""
from __future__ import annotations

import gzip
import multiprocessing
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from seqsift.io import reference as reference_module
from seqsift.errors import InputError, quote
from seqsift.io.patterns import patterns_from_cli, read_patterns, validate_patterns_for_job
from seqsift.pattern_set import PatternSet
from seqsift.io.reference import NORMALISED_LINE_WIDTH, Reference, cache_directory, open_reference

bgzf = pytest.importorskip("Bio.bgzf", reason="biopython is needed to write BGZF test files")

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

# A small reference: records of different line widths, soft-masked (lowercase)
# bases, N runs, a one-line record, a one-base record, CRLF-free.
RECORDS = {
    "chr1": "ACGTACGTNNacgtacgtGGCCTTAAGGCC" * 7 + "ACG",          # 213 bases
    "chr2": "TTTTGGGGCCCCAAAA" * 3,                                 # 48 bases
    "chrM": "acgtnACGTN",                                           # 10 bases
    "x": "G",                                                       # 1 base
}
WIDTHS = {"chr1": 60, "chr2": 16, "chrM": 70, "x": 60}


def fasta_text(records=RECORDS, widths=WIDTHS, descriptions=True) -> str:
    out = []
    for name, seq in records.items():
        out.append(f">{name} some description {name}\n" if descriptions else f">{name}\n")
        width = widths.get(name, 60)
        out.extend(seq[i:i + width] + "\n" for i in range(0, len(seq), width))
    return "".join(out)


def write_bgzf(path: Path, data: bytes) -> Path:
    with bgzf.BgzfWriter(str(path), "wb") as out:
        out.write(data)
    return path


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEQSIFT_CACHE", str(cache))
    yield cache


@pytest.fixture
def plain(tmp_path) -> Path:
    path = tmp_path / "ref" / "genome.fa"
    path.parent.mkdir()
    path.write_text(fasta_text())
    return path


def assert_matches_records(ref: Reference, records=RECORDS) -> None:
    assert ref.names == tuple(records)
    assert ref.lengths.dtype == np.int64
    assert ref.lengths.tolist() == [len(s) for s in records.values()]
    for i, seq in enumerate(records.values()):
        n = len(seq)
        assert ref.read(i, 0, n) == seq.encode()
        for start, end in [(0, 1), (n - 1, n), (0, 0), (n, n), (n // 3, n // 2), (1, n - 1)]:
            if 0 <= start <= end <= n:
                assert ref.read(i, start, end) == seq[start:end].encode(), (i, start, end)
    # every window of one record, across line breaks
    seq = records["chr1"]
    for start in range(0, len(seq), 7):
        for end in (start, start + 1, start + 59, start + 60, start + 61, start + 125):
            if end <= len(seq):
                assert ref.read(0, start, end) == seq[start:end].encode()


def one_line_error(excinfo, *needles: str) -> str:
    """The InputError message, checked to be one line and to contain ``needles``."""
    message = str(excinfo.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)
    return message


# --------------------------------------------------------------------------
# errors.py
# --------------------------------------------------------------------------

def test_input_error_is_one_line_and_quote_is_safe():
    assert str(InputError("a\nb")) == "a b"
    assert quote("AC\x00GT\r") == repr("AC\x00GT\r")
    assert quote("A" * 100, limit=5) == "'AAAAA...'"
    assert "\n" not in quote(b"\xff\xfe\n")


# --------------------------------------------------------------------------
# reference.py: the three layouts give the same reference
# --------------------------------------------------------------------------

def test_plain_reference(plain, capsys):
    ref = open_reference(plain)
    assert_matches_records(ref)
    assert ref.path == str(plain) and ref.display_name == str(plain)
    assert Path(ref.fai_path) == plain.with_name("genome.fa.fai")  # beside the file, as samtools
    assert ref.gzi_path is None and not ref.bgzf
    assert capsys.readouterr().err == ""  # nothing to say about a plain file


def test_bgzf_reference(plain, capsys):
    path = write_bgzf(plain.with_name("genome.fa.gz"), plain.read_bytes())
    ref = open_reference(path)
    assert ref.bgzf and ref.path == str(path)
    assert Path(ref.fai_path) == path.with_name("genome.fa.gz.fai")
    assert Path(ref.gzi_path) == path.with_name("genome.fa.gz.gzi")
    assert_matches_records(ref)
    assert capsys.readouterr().err == ""


def test_bgzf_reads_across_many_blocks(tmp_path):
    """Records much longer than a BGZF block (64 KiB): slices start and end in any block."""
    rng = np.random.default_rng(7)
    records = {f"r{i}": "".join(rng.choice(list("ACGTacgtN"), n)) for i, n in enumerate([300_000, 5, 150_001])}
    text = fasta_text(records, widths={"r0": 61, "r2": 80}, descriptions=False).encode()
    path = write_bgzf(tmp_path / "many.fa.gz", text)
    ref = open_reference(path)
    assert ref.bgzf and ref.lengths.tolist() == [300_000, 5, 150_001]
    for i, seq in enumerate(records.values()):
        assert ref.read(i, 0, len(seq)) == seq.encode()
        for start in rng.integers(0, len(seq), 40):
            end = int(rng.integers(start, len(seq) + 1))
            assert ref.read(i, start, end) == seq[start:end].encode()


def test_bgzf_detected_by_content_not_name(plain):
    """A BGZF file without .gz and a plain file with .gz: pyfaidx would guess wrong from the name."""
    bgzf_no_suffix = write_bgzf(plain.with_name("bgzf_but_named.fa"), plain.read_bytes())
    ref = open_reference(bgzf_no_suffix)
    assert ref.bgzf
    assert_matches_records(ref)
    plain_named_gz = plain.with_name("plain_but_named.fa.gz")
    plain_named_gz.write_bytes(plain.read_bytes())
    ref = open_reference(plain_named_gz)
    assert not ref.bgzf
    assert_matches_records(ref)


def test_plain_gzip_reference_is_decompressed_once_and_reused(plain, private_cache, capsys):
    path = plain.with_name("genome.fa.gz")
    path.write_bytes(gzip.compress(plain.read_bytes()))
    first = open_reference(path)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("seqsift: note: ")
    assert "plain gzip" in err and str(path) in err and first.path in err
    assert Path(first.path).is_relative_to(private_cache)
    assert not path.with_name("genome.fa.gz.fai").exists()  # nothing written beside the source
    assert_matches_records(first)

    cached_mtime = os.stat(first.path).st_mtime_ns
    second = open_reference(path)
    assert capsys.readouterr().err == ""  # reused silently
    assert second.path == first.path and os.stat(second.path).st_mtime_ns == cached_mtime
    assert_matches_records(second)

    # a changed source gets a fresh copy, and the stale copy is deleted
    records = dict(RECORDS, extra="ACGTACGT")
    path.write_bytes(gzip.compress(fasta_text(records).encode()))
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))
    third = open_reference(path)
    assert "decompressed once" in capsys.readouterr().err
    assert third.path != first.path and not Path(first.path).exists()
    assert_matches_records(third, records)


def test_all_layouts_agree(plain):
    gz = plain.with_name("g.fa.gz")
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    bg = write_bgzf(plain.with_name("b.fa.gz"), plain.read_bytes())
    refs = [open_reference(p) for p in (plain, gz, bg)]
    for ref in refs[1:]:
        assert ref.names == refs[0].names
        assert np.array_equal(ref.lengths, refs[0].lengths)
        for i, n in enumerate(ref.lengths):
            assert ref.read(i, 0, n) == refs[0].read(i, 0, n)


def test_crlf_line_endings(tmp_path):
    path = tmp_path / "dos.fa"
    path.write_bytes(fasta_text().replace("\n", "\r\n").encode())
    assert_matches_records(open_reference(path))


def test_lowercase_is_kept_and_coordinates_accept_numpy_int64(plain):
    ref = open_reference(plain)
    assert ref.read(np.int64(2), np.int64(0), np.int64(10)) == b"acgtnACGTN"
    with pytest.raises(IndexError):
        ref.read(0, 5, 4)
    with pytest.raises(IndexError):
        ref.read(0, 0, int(ref.lengths[0]) + 1)
    with pytest.raises(IndexError):
        ref.read(4, 0, 0)


def test_int64_coordinates_beyond_2_gib(tmp_path):
    """A record longer than 2^31 bases, as a sparse file with a hand-written .fai."""
    path = tmp_path / "big.fa"
    header = b">big\n"
    far = 3_000_000_000  # > 2**31, the tail of a 3 Gbp single-line record
    tail = b"ACGTacgtNNNNACGT"
    with open(path, "wb") as f:
        f.write(header)
        f.truncate(len(header) + far)  # a hole: no disk space used where supported
        f.seek(len(header) + far)
        f.write(tail + b"\n")
    if os.stat(path).st_blocks * 512 > 100 << 20:
        pytest.skip("this filesystem does not make sparse files")
    length = far + len(tail)
    Path(f"{path}.fai").write_text(f"big\t{length}\t{len(header)}\t{length}\t{length + 1}\n")
    ref = open_reference(path)
    assert ref.lengths.tolist() == [length] and ref.lengths.dtype == np.int64
    assert ref.read(0, far, length) == tail
    assert ref.read(0, np.int64(far + 4), np.int64(far + 8)) == b"acgt"
    assert ref.read(0, 2**31 - 2, 2**31 + 2) == b"\x00" * 4  # the hole, read exactly


# --------------------------------------------------------------------------
# reference.py: where the index goes
# --------------------------------------------------------------------------

def test_index_goes_to_cache_when_directory_is_not_writable(plain, private_cache, monkeypatch):
    monkeypatch.setattr(reference_module, "_directory_is_writable", lambda directory: False)
    ref = open_reference(plain)
    assert not plain.with_name("genome.fa.fai").exists()
    assert Path(ref.fai_path).is_relative_to(private_cache)
    assert ref.path == str(plain)
    assert_matches_records(ref)
    again = open_reference(plain)  # the cached index is reused
    assert again.fai_path == ref.fai_path


def test_bgzf_index_goes_to_cache_when_directory_is_not_writable(plain, private_cache, monkeypatch):
    path = write_bgzf(plain.with_name("genome.fa.gz"), plain.read_bytes())
    monkeypatch.setattr(reference_module, "_directory_is_writable", lambda directory: False)
    ref = open_reference(path)
    assert Path(ref.fai_path).is_relative_to(private_cache) and Path(ref.gzi_path).is_relative_to(private_cache)
    assert not path.with_name("genome.fa.gz.fai").exists() and not path.with_name("genome.fa.gz.gzi").exists()
    assert_matches_records(ref)


@pytest.mark.skipif(IS_ROOT, reason="root can write into a chmod 0555 directory; "
                                    "the monkeypatched tests above cover the logic")
def test_really_read_only_directory(plain, private_cache):
    plain.parent.chmod(0o555)
    try:
        ref = open_reference(plain)
        assert Path(ref.fai_path).is_relative_to(private_cache)
        assert_matches_records(ref)
    finally:
        plain.parent.chmod(0o755)


def test_existing_fresh_index_beside_read_only_file_is_reused(plain, private_cache, monkeypatch):
    open_reference(plain)  # builds genome.fa.fai beside the file
    fai = plain.with_name("genome.fa.fai")
    built = os.stat(fai).st_mtime_ns
    monkeypatch.setattr(reference_module, "_directory_is_writable", lambda directory: False)
    ref = open_reference(plain)
    assert ref.fai_path == str(fai) and os.stat(fai).st_mtime_ns == built
    assert not (private_cache / "reference").exists() or not list((private_cache / "reference").glob("*.fai"))


def test_stale_or_broken_index_is_rebuilt(plain):
    open_reference(plain)
    records = dict(RECORDS, chr9="TTTT")
    plain.write_text(fasta_text(records))
    fai = plain.with_name("genome.fa.fai")
    os.utime(plain, (os.stat(fai).st_mtime + 5, os.stat(fai).st_mtime + 5))
    assert_matches_records(open_reference(plain), records)
    fai.write_text("garbage\n")  # fresh by mtime, but not a .fai
    assert_matches_records(open_reference(plain), records)


def test_reference_pickles_small_and_reads_after_unpickling(plain):
    ref = open_reference(plain)
    ref.read(0, 0, 10)  # opens a handle in this process
    blob = pickle.dumps(ref)
    assert len(blob) < 2000
    copy = pickle.loads(blob)
    assert_matches_records(copy)
    ref.close()
    assert ref.read(0, 0, 4) == b"ACGT"  # reopened after close


def _read_in_child(ref: Reference) -> bytes:
    return ref.read(0, 0, 20)


def test_reads_in_forked_processes(plain):
    ref = open_reference(plain)
    expected = ref.read(0, 0, 20)  # the parent's handle is open before the fork
    context = multiprocessing.get_context("fork")
    with context.Pool(2) as pool:
        assert pool.map(_read_in_child, [ref] * 4) == [expected] * 4


def test_cache_directory_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQSIFT_CACHE", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "a" and (tmp_path / "a").is_dir()
    monkeypatch.delenv("SEQSIFT_CACHE")
    assert cache_directory() == tmp_path / "xdg" / "seqsift"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_directory(create=False) == tmp_path / "home" / ".cache" / "seqsift"


# --------------------------------------------------------------------------
# reference.py: ragged files are normalised into the cache
# --------------------------------------------------------------------------

RAGGED = ">r1 first\nACGTACGTAC\nACG\nACGTACGTAC\n>r2\nAC\nGT\n\n\nGG\n>r3\nacgtN\n"
RAGGED_RECORDS = {"r1": "ACGTACGTACACGACGTACGTAC", "r2": "ACGTGG", "r3": "acgtN"}


@pytest.mark.parametrize("compress", ["plain", "gzip", "bgzf"])
def test_ragged_file_is_normalised_once(tmp_path, private_cache, capsys, compress):
    path = tmp_path / f"ragged.{compress}.fa"
    if compress == "plain":
        path.write_text(RAGGED)
    elif compress == "gzip":
        path.write_bytes(gzip.compress(RAGGED.encode()))
    else:
        write_bgzf(path, RAGGED.encode())
    ref = open_reference(path)
    notes = capsys.readouterr().err
    assert "uneven length" in notes and "record 'r1', line 3" in notes and str(path) in notes
    assert Path(ref.path).is_relative_to(private_cache) and ref.path.endswith(".normalised.fa")
    assert not ref.bgzf
    assert_matches_records_simple(ref, RAGGED_RECORDS)
    lines = Path(ref.path).read_text().splitlines()
    assert lines[0] == ">r1 first"  # headers kept whole
    assert all(len(line) <= NORMALISED_LINE_WIDTH for line in lines if not line.startswith(">"))
    if compress == "gzip":  # the intermediate decompressed copy is gone
        assert [p.name for p in (private_cache / "reference").glob("*.fa")] == [Path(ref.path).name]

    again = open_reference(path)
    assert capsys.readouterr().err == "" and again.path == ref.path


def assert_matches_records_simple(ref: Reference, records: dict) -> None:
    assert ref.names == tuple(records)
    assert [ref.read(i, 0, len(s)) for i, s in enumerate(records.values())] == [s.encode() for s in records.values()]


def test_long_ragged_record_normalises_correctly(tmp_path):
    rng = np.random.default_rng(1)
    seq = "".join(rng.choice(list("ACGTacgtN"), 200_000))
    cuts = np.sort(rng.choice(np.arange(1, len(seq)), 3000, replace=False))
    lines = [seq[a:b] for a, b in zip([0, *cuts], [*cuts, len(seq)])]
    path = tmp_path / "long.fa"
    path.write_text(">long\n" + "\n".join(lines) + "\n>short\nAC\n")
    ref = open_reference(path)
    assert ref.lengths.tolist() == [len(seq), 2]
    assert ref.read(0, 0, len(seq)) == seq.encode()
    assert ref.read(0, 12345, 123456) == seq[12345:123456].encode()


# --------------------------------------------------------------------------
# reference.py: bad references
# --------------------------------------------------------------------------

BAD_REFERENCES = {
    # name: (file bytes, words the message must contain)
    "empty": (b"", ["is empty"]),
    "blank": (b"\n\n  \n", ["only blank lines"]),
    "fastq": (b"@read1\nACGT\n+\nIIII\n", ["FASTQ"]),
    "binary": (bytes(range(256)) * 4, ["binary"]),
    "text": (b"hello world\n>chr1\nACGT\n", ["line 1", "'hello world'"]),
    "bzip2": (b"BZh91AY&SY" + b"\x00" * 20, ["bzip2"]),
    "duplicate": (b">chr1 a\nACGT\n>chr2\nAC\n>chr1 b\nGG\n", ["'chr1'", "used twice", "records 1 and 3"]),
    "nameless_header": (b">chr1\nACGT\n> \nACGT\n", ["line 3", "no record name"]),
    "non_ascii_sequence": (">chr1\nACGT\nAC\u00e9T\n".encode(), ["line 3", "non-ASCII", "'chr1'"]),
    "invalid_utf8_sequence": (b">chr1\nACGT\nAC\xffT\n", ["line 3", "non-ASCII"]),
}


@pytest.mark.parametrize("case", sorted(BAD_REFERENCES))
def test_bad_reference(tmp_path, case):
    data, needles = BAD_REFERENCES[case]
    path = tmp_path / f"{case}.fa"
    path.write_bytes(data)
    with pytest.raises(InputError) as excinfo:
        open_reference(path)
    one_line_error(excinfo, str(path), *needles)


@pytest.mark.parametrize("data, expected", [
    (b">chr1\nACGT\n>chr2 nothing here\n>chr3\nAC\n", ("chr2", "(record 2) has no sequence")),
    (b">chr1\nACGT\n>chr2\n>chr3\n", ("chr2", "(record 2) and 1 more record have no sequence")),
])
@pytest.mark.parametrize("compress", [False, True])
def test_records_without_bases_are_kept_with_one_note(tmp_path, capsys, data, expected, compress):
    path = tmp_path / ("empty_records.fa.gz" if compress else "empty_records.fa")
    path.write_bytes(gzip.compress(data) if compress else data)
    reference = open_reference(path)
    assert 0 in set(int(n) for n in reference.lengths) and len(reference.names) == 3
    notes = [line for line in capsys.readouterr().err.splitlines() if "no sequence" in line]
    assert len(notes) == 1 and notes[0].startswith("seqsift: note: ") and all(part in notes[0] for part in expected)


@pytest.mark.parametrize("case", ["fastq", "empty", "duplicate"])
def test_bad_reference_inside_gzip(tmp_path, case):
    data, needles = BAD_REFERENCES[case]
    path = tmp_path / f"{case}.fa.gz"
    path.write_bytes(gzip.compress(data))
    with pytest.raises(InputError) as excinfo:
        open_reference(path)
    one_line_error(excinfo, str(path), *needles)


def test_non_ascii_header_is_fine(tmp_path):
    path = tmp_path / "accent.fa"
    path.write_text(">chr1 Escherichia coli, M\u00fcller strain\nACGT\n", encoding="utf-8")
    ref = open_reference(path)
    assert ref.names == ("chr1",) and ref.read(0, 0, 4) == b"ACGT"


def test_missing_directory_and_broken_link(tmp_path):
    with pytest.raises(InputError) as excinfo:
        open_reference(tmp_path / "nope.fa")
    one_line_error(excinfo, "nope.fa", "no such file")
    with pytest.raises(InputError) as excinfo:
        open_reference(tmp_path)
    one_line_error(excinfo, str(tmp_path), "directory")
    (tmp_path / "link.fa").symlink_to(tmp_path / "gone.fa")
    with pytest.raises(InputError) as excinfo:
        open_reference(tmp_path / "link.fa")
    one_line_error(excinfo, "link.fa", "broken symbolic link")


def test_unreadable_reference_simulated(plain, monkeypatch):
    def refuse(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(reference_module, "_open_binary", refuse)
    with pytest.raises(InputError) as excinfo:
        open_reference(plain)
    one_line_error(excinfo, str(plain), "permission denied")


@pytest.mark.skipif(IS_ROOT, reason="root can read a chmod 000 file; see the simulated test")
def test_unreadable_reference_real(plain):
    plain.chmod(0)
    try:
        with pytest.raises(InputError) as excinfo:
            open_reference(plain)
        one_line_error(excinfo, str(plain), "permission denied")
    finally:
        plain.chmod(0o644)


def test_corrupt_gzip_and_truncated_bgzf(plain):
    truncated = plain.with_name("truncated.fa.gz")
    truncated.write_bytes(gzip.compress(plain.read_bytes())[:-30])
    with pytest.raises(InputError) as excinfo:
        open_reference(truncated)
    one_line_error(excinfo, str(truncated), "corrupt or truncated")

    whole = write_bgzf(plain.with_name("whole.fa.gz"), plain.read_bytes()).read_bytes()
    no_eof = plain.with_name("no_eof.fa.gz")
    no_eof.write_bytes(whole[:-28])  # drop the 28-byte BGZF end-of-file block
    with pytest.raises(InputError) as excinfo:
        open_reference(no_eof)
    one_line_error(excinfo, str(no_eof))


# --------------------------------------------------------------------------
# reference.py: real data
# --------------------------------------------------------------------------

def shared_data(name: str) -> Path:
    directory = os.environ.get("SEQSIFT_TEST_DATA")
    if not directory or not (Path(directory) / name).is_file():
        pytest.skip("set SEQSIFT_TEST_DATA to the shared data directory to run real-data tests")
    return Path(directory) / name


def parse_fasta_gz(path: Path) -> dict[str, str]:
    records, name = {}, None
    with gzip.open(path, "rt") as lines:
        for line in lines:
            if line.startswith(">"):
                name = line[1:].split()[0]
                records[name] = []
            elif line.strip():
                records[name].append(line.strip())
    return {n: "".join(parts) for n, parts in records.items()}


@pytest.mark.parametrize("name, length, record", [
    ("ecoli536.fa.gz", 4_938_920, "gi|110640213|ref|NC_008253.1|"),
    ("lambda_phage.fa.gz", 48_502, "gi|9626243|ref|NC_001416.1|"),
])
def test_real_references(name, length, record, capsys):
    path = shared_data(name)
    expected = parse_fasta_gz(path)
    ref = open_reference(path)
    assert "plain gzip" in capsys.readouterr().err
    assert ref.names == (record,) and ref.lengths.tolist() == [length]
    seq = expected[record]
    assert len(seq) == length
    assert ref.read(0, 0, length) == seq.encode()
    assert ref.read(0, 0, 20) == seq[:20].encode()
    a, b = length // 3, min(length, length // 3 + 1_000_001)
    assert ref.read(0, a, b) == seq[a:b].encode()
    assert ref.read(0, length - 5, length) == seq[-5:].encode()
    open_reference(path)
    assert capsys.readouterr().err == ""  # second time: the cached copy, silently


def test_real_reference_as_bgzf(tmp_path):
    path = shared_data("lambda_phage.fa.gz")
    bg = write_bgzf(tmp_path / "lambda.fa.gz", gzip.decompress(path.read_bytes()))
    ref = open_reference(bg)
    seq = next(iter(parse_fasta_gz(path).values()))
    assert ref.bgzf and ref.read(0, 0, len(seq)) == seq.encode()
    assert ref.read(0, 40_000, 48_502) == seq[40_000:].encode()


def test_real_fastq_is_rejected():
    path = shared_data("lambda_reads_1.fq.gz")
    with pytest.raises(InputError) as excinfo:
        open_reference(path)
    one_line_error(excinfo, str(path), "FASTQ")


# --------------------------------------------------------------------------
# io/patterns.py: good inputs
# --------------------------------------------------------------------------

def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_patterns_from_fasta(tmp_path):
    path = write(tmp_path, "p.fa", "# guides\n>g1 first guide\nacgt\nNNRY\n\n>g2\n  ACGTU  \n")
    ps = read_patterns(path)
    assert isinstance(ps, PatternSet)
    assert ps.names == ("g1", "g2") and ps.sequences == ("ACGTNNRY", "ACGTU")


def test_patterns_one_per_line(tmp_path):
    path = write(tmp_path, "p.txt", "# comment\n\nacgtn\r\n  GGCC \nTTTT\n")
    ps = read_patterns(str(path))
    assert ps.names == ("line_3", "line_4", "line_5")
    assert ps.sequences == ("ACGTN", "GGCC", "TTTT")


@pytest.mark.parametrize("header", ["", "name\tsequence\n", "Name\tSeq\n"])
def test_patterns_tsv(tmp_path, header):
    path = write(tmp_path, "p.tsv", f"{header}# c\nguide A\tacgt\n\nb\t GGCC \n")
    ps = read_patterns(path)
    assert ps.names == ("guide A", "b") and ps.sequences == ("ACGT", "GGCC")


def test_patterns_gzip_and_bgzf(tmp_path):
    text = ">a\nACGT\n>b\nGG\n"
    gz = tmp_path / "p.fa.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    bg = write_bgzf(tmp_path / "p.bgz.fa.gz", text.encode())
    for path in (gz, bg):
        ps = read_patterns(path)
        assert ps.names == ("a", "b") and ps.sequences == ("ACGT", "GG")


def test_patterns_python_objects():
    assert read_patterns(["acgt", "GG"]) == PatternSet(("pattern_1", "pattern_2"), ("ACGT", "GG"))
    assert read_patterns(("acgt",)).names == ("pattern_1",)
    assert read_patterns([("x", "ac"), ("y", "gt")]) == PatternSet(("x", "y"), ("AC", "GT"))
    assert read_patterns(["AC", ("y", "GT")]).names == ("pattern_1", "y")
    assert read_patterns({"x": "ac", "y": "gt"}) == PatternSet(("x", "y"), ("AC", "GT"))
    same = PatternSet(("a",), ("ACGT",))
    assert read_patterns(same) is same
    with pytest.raises(TypeError):
        read_patterns([1, 2])
    with pytest.raises(TypeError):
        read_patterns(42)


def test_patterns_from_cli():
    ps = patterns_from_cli(["acgt", " GGNN "])
    assert ps.names == ("cli_1", "cli_2") and ps.sequences == ("ACGT", "GGNN")


def test_bytes_alphabet_keeps_case():
    ps = read_patterns(["Hello", ("w", "wOrld!")], alphabet="bytes")
    assert ps.sequences == ("Hello", "wOrld!")
    assert patterns_from_cli(["a.b"], alphabet="bytes").sequences == ("a.b",)


# --------------------------------------------------------------------------
# io/patterns.py: bad inputs
# --------------------------------------------------------------------------

BAD_PATTERN_FILES = {
    "empty.txt": ("", ["is empty"]),
    "comments.txt": ("# only\n\n# comments\n", ["no patterns"]),
    "invalid.txt": ("ACGT\nAC-GXX\n", ["line 2", "'line_2'", "'-'", "'X'", "IUPAC"]),
    "space.txt": ("AC GT\n", ["line 1", "' ' (space)"]),
    "tab_later.txt": ("ACGT\nname\tACGT\n", ["line 2", "tab"]),
    "columns.tsv": ("a\tACGT\nb\tAC\tGT\n", ["line 2", "2 tab-separated columns", "found 3"]),
    "one_column.tsv": ("a\tACGT\nGGCC\n", ["line 2", "found 1"]),
    "empty_seq.tsv": ("a\tACGT\nb\t \n", ["line 2", "'b'", "empty"]),
    "empty_name.tsv": ("a\tACGT\n\tGG\n", ["line 2", "empty name"]),
    "dup.tsv": ("a\tACGT\nb\tGG\na\tTT\n", ["line 3", "duplicate", "'a'", "line 1"]),
    "dup.fa": (">a\nACGT\n>a x\nGG\n", ["line 3", "duplicate", "'a'"]),
    "empty_record.fa": (">a\nACGT\n>b\n>c\nGG\n", ["line 3", "'b'", "empty"]),
    "nameless.fa": (">a\nACGT\n>\nGG\n", ["line 3", "no pattern name"]),
    "invalid.fa": (">a\nACGT\nACGJ\n", ["line 3", "'J'"]),
    "reads.fq": ("@r1\nACGT\n+\nIIII\n", ["FASTQ"]),
}


@pytest.mark.parametrize("name", sorted(BAD_PATTERN_FILES))
def test_bad_pattern_file(tmp_path, name):
    text, needles = BAD_PATTERN_FILES[name]
    path = write(tmp_path, name, text)
    with pytest.raises(InputError) as excinfo:
        read_patterns(path)
    one_line_error(excinfo, str(path), *needles)


def test_bad_pattern_file_access(tmp_path, monkeypatch):
    with pytest.raises(InputError) as excinfo:
        read_patterns(tmp_path / "missing.txt")
    one_line_error(excinfo, "missing.txt", "no such file")
    with pytest.raises(InputError) as excinfo:
        read_patterns("ACGTAC")  # a sequence passed where a path belongs
    one_line_error(excinfo, "ACGTAC", "no such file", "in a list")
    with pytest.raises(InputError) as excinfo:
        read_patterns(tmp_path)
    one_line_error(excinfo, str(tmp_path), "directory")
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\x00\x01\x02ACGT")
    with pytest.raises(InputError) as excinfo:
        read_patterns(binary)
    one_line_error(excinfo, str(binary), "binary")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b"ACGT\nAC\xe9\n")
    with pytest.raises(InputError) as excinfo:
        read_patterns(latin1)
    one_line_error(excinfo, str(latin1), "line 2", "UTF-8")
    corrupt = tmp_path / "corrupt.txt.gz"
    corrupt.write_bytes(gzip.compress(b"ACGT\n" * 100)[:-10])
    with pytest.raises(InputError) as excinfo:
        read_patterns(corrupt)
    one_line_error(excinfo, str(corrupt), "corrupt or truncated")

    denied = write(tmp_path, "denied.txt", "ACGT\n")
    original = Path.read_bytes

    def refuse(self):
        if self == denied:
            raise PermissionError(13, "Permission denied", str(self))
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(InputError) as excinfo:
        read_patterns(denied)
    one_line_error(excinfo, str(denied), "permission denied")


def test_bad_python_and_cli_patterns():
    with pytest.raises(InputError) as excinfo:
        read_patterns(["ACGT", "ACGZ"])
    one_line_error(excinfo, "pattern list item 2", "'pattern_2'", "'Z'")
    with pytest.raises(InputError) as excinfo:
        read_patterns([("a", "ACGT"), ("a", "GG")])
    one_line_error(excinfo, "item 2", "duplicate", "'a'")
    with pytest.raises(InputError) as excinfo:
        read_patterns({"a": ""})
    one_line_error(excinfo, "'a'", "empty")
    with pytest.raises(InputError) as excinfo:
        read_patterns([])
    one_line_error(excinfo, "no patterns")
    with pytest.raises(InputError) as excinfo:
        patterns_from_cli(["ACGT", "AC!T"])
    one_line_error(excinfo, "command-line pattern 2", "'!'")
    with pytest.raises(InputError) as excinfo:
        patterns_from_cli([])
    one_line_error(excinfo, "no patterns")
    with pytest.raises(InputError) as excinfo:
        read_patterns(["caf\u00e9"], alphabet="bytes")
    one_line_error(excinfo, "printable ASCII")


# --------------------------------------------------------------------------
# io/patterns.py: validate_patterns_for_job
# --------------------------------------------------------------------------

def test_validate_patterns_for_job():
    ps = PatternSet(("short", "mid", "long"), ("ACG", "ACGTACGT", "ACGTACGTACGTACGT"))
    lengths = np.array([10, 20], dtype=np.int64)
    validate_patterns_for_job(ps, 0, lengths, "p.txt")
    validate_patterns_for_job(ps, 2, lengths, "p.txt")
    with pytest.raises(InputError) as excinfo:
        validate_patterns_for_job(ps, -1, lengths, "p.txt")
    one_line_error(excinfo, "k = -1", "negative")
    with pytest.raises(InputError) as excinfo:
        validate_patterns_for_job(ps, 3, lengths, "p.txt")
    one_line_error(excinfo, "p.txt", "'short'", "length 3", "k = 3")
    with pytest.raises(InputError) as excinfo:
        validate_patterns_for_job(ps, 8, lengths, "p.txt")
    one_line_error(excinfo, "p.txt", "'short'", "1 more pattern")
    with pytest.raises(InputError) as excinfo:
        validate_patterns_for_job(ps, 1, np.array([5, 12]), "p.txt")
    one_line_error(excinfo, "p.txt", "'long'", "longer than every reference record", "12 bases")
    with pytest.raises(InputError):
        validate_patterns_for_job(ps, 1.5, lengths, "p.txt")
    validate_patterns_for_job(ps, np.int64(1), lengths, "p.txt")


def test_an_empty_pattern_never_reaches_a_kernel():
    """The kernels have no rule for empty patterns: reading refuses one, and so does the job's check
    of a PatternSet built directly (length 0 <= every k)."""
    with pytest.raises(InputError, match="is empty"):
        read_patterns(["ACGT", ""])
    with pytest.raises(InputError, match="has length 0"):
        validate_patterns_for_job(PatternSet(("a", "b"), ("ACGT", "")), 0, [1000], "patterns")


def test_validate_patterns_for_edit_distance_needs_only_m_minus_k_bases():
    ps = PatternSet(("guide",), ("GACGCATAAAGATGAGACGC",))
    validate_patterns_for_job(ps, 3, np.array([17]), "p.txt", metric="edit")
    with pytest.raises(InputError) as excinfo:
        validate_patterns_for_job(ps, 3, np.array([16]), "p.txt", metric="edit")
    one_line_error(excinfo, "'guide'", "at least 17 with k = 3", "longer than every reference record")
    with pytest.raises(InputError):
        validate_patterns_for_job(ps, 3, np.array([17]), "p.txt", metric="hamming")


def test_a_long_list_of_sequences_is_no_file_name(tmp_path):
    """A comma-separated list longer than a file name may be (255 bytes) is read as sequences."""
    import subprocess
    import sys

    reference = tmp_path / "ref.fa"
    reference.write_text(">chr1\n" + "ACGTTGCAAGGCTAGCTAGG" * 10 + "\n")
    guides = ",".join(["ACGTTGCAAGGCTAGCTAGG"] * 40)
    result = subprocess.run([sys.executable, "-m", "seqsift", "search", str(reference), guides, "-k", "0",
                             "--backend", "cpu", "--workers", "1", "--no-progress"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.strip().splitlines()) == 1 + 40 * 10
