"""seqsift.io.fasta_scan: the one-pass reader's .fai against pyfaidx's, and its bases.

The oracle for the index is pyfaidx itself (``pyfaidx.Faidx(path)`` builds
one); the oracle for the bases is the file's own text split into lines here.
Each test runs with both ways a block's bases are gathered (``sequence_path``).
Block sizes far below the real 64 MiB put block boundaries inside headers,
inside lines and between '\\r' and '\\n', which must change nothing.
"""
from __future__ import annotations

import gzip
import random
import struct
import zlib
from pathlib import Path

import numpy as np
import pyfaidx
import pytest

from seqsift.io import fasta_scan, native
from seqsift.io.reference import open_reference

BLOCK_SIZES = [16, 61, 1000, fasta_scan.BLOCK_BYTES]


@pytest.fixture(autouse=True, params=["compiled", "numpy-by-runs", "numpy-by-mask"])
def sequence_path(request, monkeypatch):
    """Every test here three times: each block scanned by fasta_scan.c (seqsift.io.native), and by the
    NumPy scan that runs where no C compiler is found, its bases copied run by run of equal lines or
    through a mask of the bytes to keep (it picks by the number of runs); all must give the same."""
    if request.param == "compiled":
        if native.library() is None:
            pytest.skip("fasta_scan.c could not be compiled here (no C compiler?): the NumPy scan is tested")
    else:
        monkeypatch.setattr(native, "library", lambda: None)
        monkeypatch.setattr(fasta_scan, "_FEW_RUNS", 10 ** 9 if request.param == "numpy-by-runs" else -1)


@pytest.fixture(params=["whole", "parts"])
def record_parts(request, monkeypatch):
    """The records laid out (and their .fai formatted) as one part, and in parts of one record,
    on threads (``RECORDS_PER_PART``: 2^17 records or more, in a real file)."""
    if request.param == "parts":
        monkeypatch.setattr(fasta_scan, "RECORDS_PER_PART", 1)


def genome_text(seed: int, eol: str = "\n", blank_between: bool = False, final_newline: bool = True,
                leading_blank: bool = False) -> tuple[str, dict[str, str]]:
    """Records with N runs, lowercase, lines of several widths, records shorter than one line."""
    rng = random.Random(seed)
    records = {}
    text = eol * 2 if leading_blank else ""
    for r in range(rng.randint(3, 7)):
        length = rng.choice([1, 3, 59, 60, 61, 200, rng.randint(1, 2500)])
        seq = "".join(rng.choice("ACGTacgt") for _ in range(length))
        if length > 30:
            start = rng.randrange(length - 20)
            seq = seq[:start] + "N" * 20 + seq[start + 20:]
        width = rng.choice([7, 60, 61, 80])
        name = f"rec{r}"
        records[name] = seq
        text += f">{name} description {r}{eol}" + "".join(seq[i:i + width] + eol for i in range(0, length, width))
        if blank_between:
            text += eol
    if not final_newline:
        text = text[:-len(eol)]
    return text, records


CASES = {
    "lf": {}, "crlf": {"eol": "\r\n"}, "blank_lines_between_records": {"blank_between": True},
    "no_final_newline": {"final_newline": False}, "crlf_no_final_newline": {"eol": "\r\n", "final_newline": False},
    "blank_lines_before_first_header": {"leading_blank": True},
}


def pyfaidx_index(path: Path) -> str:
    index = Path(f"{path}.pyfaidx.fai")
    pyfaidx.Faidx(str(path), indexname=str(index), rebuild=True).close()
    return index.read_text()


def scan(path: Path, block_bytes: int, piece: int = 7):
    """Read by the scanning threads themselves, in ``piece``-byte units, ``block_bytes`` per block."""
    parts = []
    with fasta_scan.PlainFile(str(path), piece) as source:
        layout = fasta_scan.scan_fasta(fasta_scan.blocks_of_source(source, block_bytes), parts.append, threads=3)
    return layout, b"".join(p.tobytes() for p in parts)


def scan_stream(data: bytes, block_bytes: int, piece: int = 13):
    parts = []
    chunks = (data[i:i + piece] for i in range(0, len(data), piece))
    layout = fasta_scan.scan_fasta(fasta_scan.blocks_of_stream(chunks, block_bytes), parts.append, threads=2)
    return layout, b"".join(p.tobytes() for p in parts)


def bgzf_bytes(data: bytes, piece: int) -> bytes:
    """``data`` as BGZF blocks of ``piece`` bytes each (written here from the SAM spec, 4.1:
    a gzip member with the extra field 'BC' = block size - 1), then the empty EOF block."""
    blocks = []
    for start in range(0, len(data), piece) or [0]:
        chunk = data[start:start + piece]
        packer = zlib.compressobj(6, zlib.DEFLATED, -15)
        deflated = packer.compress(chunk) + packer.flush()
        header_and_extra = 12 + 6
        size = header_and_extra + len(deflated) + 8
        blocks.append(b"\x1f\x8b\x08\x04" + b"\x00" * 4 + b"\x00\xff" + struct.pack("<HBBHH", 6, 66, 67, 2, size - 1)
                      + deflated + struct.pack("<II", zlib.crc32(chunk), len(chunk)))
    eof = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
    return b"".join(blocks[:-1] if not data else blocks) + eof


def scan_bgzf(path: Path, data: bytes, piece: int, block_bytes: int):
    from seqsift.io import decompress

    path.write_bytes(bgzf_bytes(data, piece))
    parts = []
    with decompress.BgzfFile(str(path), decompress.bgzf_blocks(str(path))) as bgzf:
        layout = fasta_scan.scan_fasta(fasta_scan.blocks_of_source(bgzf, block_bytes), parts.append, threads=3)
    return layout, b"".join(p.tobytes() for p in parts)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("case", sorted(CASES))
def test_fai_is_byte_identical_to_pyfaidx(tmp_path, record_parts, case, seed):
    text, records = genome_text(seed, **CASES[case])
    path = tmp_path / "genome.fa"
    path.write_bytes(text.encode())
    expected_fai = pyfaidx_index(path)
    expected_bases = "".join(records.values()).encode()
    for block_bytes in BLOCK_SIZES:
        layout, bases = scan(path, block_bytes)
        assert layout.fai_text() == expected_fai, block_bytes
        assert bases == expected_bases, block_bytes
        assert layout.total_bytes == len(text.encode())
        layout, bases = scan_stream(text.encode(), block_bytes)
        assert layout.fai_text() == expected_fai and bases == expected_bases, block_bytes
    for piece, block_bytes in ((5, 1), (7, 16), (64, 61), (997, 1000), (65280, fasta_scan.BLOCK_BYTES)):
        # batches of BGZF blocks end inside headers, inside lines and between '\r' and '\n'
        layout, bases = scan_bgzf(tmp_path / "genome.fa.bgz", text.encode(), piece, block_bytes)
        assert layout.fai_text() == expected_fai and bases == expected_bases, (piece, block_bytes)
        assert layout.total_bytes == len(text.encode())


@pytest.mark.parametrize("case", ["crlf", "blank_lines_between_records", "no_final_newline"])
def test_open_reference_writes_pyfaidx_identical_fai(tmp_path, record_parts, case):
    text, records = genome_text(11, **CASES[case])
    path = tmp_path / "genome.fa"
    path.write_bytes(text.encode())
    ref = open_reference(path)
    assert ref.fai_path == f"{path}.fai"
    written = Path(ref.fai_path).read_text()
    Path(ref.fai_path).unlink()
    assert written == pyfaidx_index(path)
    assert [ref.read(i, 0, n) for i, n in enumerate(ref.lengths)] == [s.encode() for s in records.values()]


def test_one_line_longer_than_a_block(tmp_path):
    """A one-line record (a whole chromosome on one line) spans many blocks: one line, not many."""
    rng = np.random.default_rng(3)
    long_line = rng.choice(list(b"ACGTN"), 5000).astype(np.uint8).tobytes()
    for eol in (b"\n", b"\r\n"):
        data = b">one\r\n".replace(b"\r\n", eol) + long_line + eol + b">two" + eol + b"ACGT" + eol
        path = tmp_path / "long.fa"
        path.write_bytes(data)
        expected = pyfaidx_index(path)
        for block_bytes in (16, 97, 4999, 5001):
            layout, bases = scan(path, block_bytes)
            assert layout.fai_text() == expected and bases == long_line + b"ACGT"
            layout, bases = scan_stream(data, block_bytes, piece=7)
            assert layout.fai_text() == expected and bases == long_line + b"ACGT"
            # BGZF: the batches inside the long line scan nothing; the one before reaches over them
            layout, bases = scan_bgzf(tmp_path / "long.fa.bgz", data, 97, block_bytes)
            assert layout.fai_text() == expected and bases == long_line + b"ACGT"


RAGGED = {
    # file text: (record, 1-based line) of the first line a .fai cannot describe
    ">a\nACGT\nAC\nACGT\n": ("a", 3),                       # a short line in the middle
    ">a\nACGT\nACGT\n>b\nAC\n\nAC\n": ("b", 6),              # a blank line inside a record
    ">a\nACGT\r\nACGT\nAC\n": ("a", 3),                      # line endings mixed
    ">a\nAC\nACGT\n": ("a", 3),                              # last line longer (pyfaidx accepts it, wrongly)
}


@pytest.mark.parametrize("text", sorted(RAGGED))
def test_ragged_records_are_named(tmp_path, record_parts, text):
    path = tmp_path / "ragged.fa"
    path.write_text(text)
    for block_bytes in (4, 7, fasta_scan.BLOCK_BYTES):
        with pytest.raises(fasta_scan.RaggedRecord) as excinfo:
            scan(path, block_bytes)
        assert (excinfo.value.record, excinfo.value.line) == RAGGED[text]


def first_irregular_line(text: str):
    """samtools' rule, line by line (the oracle for the vectorized check): (record, 1-based line) of the
    first line a .fai cannot describe, or None. A record's first sequence line is the yardstick; a later
    line before the last non-blank one must have its bytes and bases; the last non-blank line may have
    fewer bases, not more; blank lines may only follow it."""
    lines = text.split("\n")
    ends_open = not text.endswith("\n")
    if not ends_open:
        lines = lines[:-1]
    records, name = [], None
    for number, line in enumerate(lines, start=1):
        if line.startswith(">"):
            name = line[1:].split()[0]
            records.append((name, []))
        elif name is not None:
            open_line = ends_open and number == len(lines)
            bases = len(line.rstrip("\r"))
            records[-1][1].append((number, len(line) + (0 if open_line else 1), bases))
    found = []
    for name, body in records:
        nonblank = [k for k, (_, _, bases) in enumerate(body) if bases]
        if not nonblank:
            continue
        last = nonblank[-1]
        _, width, per_line = body[0]
        for k, (number, length, bases) in enumerate(body[1:last + 1], start=1):
            if (k < last and (length, bases) != (width, per_line)) or (k == last and bases > per_line):
                found.append((number, name))
                break
    return min(found)[::-1] if found else None


@pytest.mark.parametrize("seed", range(60))
def test_irregular_records_are_found_as_samtools_rule_says(tmp_path, record_parts, seed):
    """Random records of a few line widths, blank lines, '\\r\\n' endings and an open last line: the
    scan raises RaggedRecord at the line the line-by-line oracle names, or describes the file."""
    rng = random.Random(seed)
    parts = []
    for r in range(rng.randint(1, 5)):
        parts.append(f">r{r} d\n")
        width = rng.choice([3, 4])
        for _ in range(rng.randint(0, 5)):
            kind = rng.random()
            if kind < 0.12:
                parts.append("\n")
            elif kind < 0.2:
                parts.append("ACGT"[:rng.choice([2, 3, 4, 5]) % 5] + "\r\n")
            else:
                parts.append("ACGTA"[:width if rng.random() < 0.8 else rng.randint(1, 5)] + "\n")
    text = "".join(parts)
    if rng.random() < 0.3:
        text = text.rstrip("\n")
    expected = first_irregular_line(text)
    path = tmp_path / "random.fa"
    path.write_text(text)
    for block_bytes in (5, 64, fasta_scan.BLOCK_BYTES):
        if expected is None:
            scan(path, block_bytes)
            continue
        with pytest.raises(fasta_scan.RaggedRecord) as excinfo:
            scan(path, block_bytes)
        assert (excinfo.value.record, excinfo.value.line) == expected, (text, block_bytes)


def test_trailing_blank_lines_are_regular(tmp_path):
    """samtools' rule: blank lines may follow a record's last line (pyfaidx raises on some)."""
    path = tmp_path / "blank.fa"
    path.write_text(">a\nACGT\nAC\n\n\n\n>b\nGG\n\n")
    layout, bases = scan(path, 1 << 20)
    assert layout.fai_text() == "a\t6\t3\t4\t5\nb\t2\t17\t2\t3\n"
    assert bases == b"ACGTACGG"


@pytest.mark.parametrize("members_reader", [True, False], ids=["isal-members", "block-by-block"])
def test_bgzf_batches_inflate_every_block_once(tmp_path, monkeypatch, members_reader):
    from seqsift.io import decompress

    if not members_reader:
        monkeypatch.setattr(decompress, "_members_reader", None)
    data = genome_text(7)[0].encode()
    path = tmp_path / "g.fa.bgz"
    path.write_bytes(bgzf_bytes(data, 100))
    with decompress.BgzfFile(str(path), decompress.bgzf_blocks(str(path))) as bgzf:
        count = len(bgzf.starts)
        for size in (1, 99, 100, 101, 450, 10 ** 9):
            batches = fasta_scan._batches(bgzf.starts, bgzf.total, size)
            assert [b for first, stop in batches for b in range(first, stop)] == list(range(count))
        pieces = []
        for first, stop in fasta_scan._batches(bgzf.starts, bgzf.total, 450):
            end = bgzf.total if stop == count else int(bgzf.starts[stop])
            out = np.empty(end - int(bgzf.starts[first]), dtype=np.uint8)
            bgzf.read_into(first, stop, out)
            pieces.append(out.tobytes())
        assert b"".join(pieces) == data
    plain = tmp_path / "plain.fa"
    plain.write_bytes(data)
    (layout, bases), (plain_layout, plain_bases) = scan_bgzf(tmp_path / "again.fa.bgz", data, 100, 450), scan(plain, 450)
    assert layout.fai_text() == plain_layout.fai_text() and bases == plain_bases


def test_a_corrupt_bgzf_block_fails_naming_its_byte(tmp_path):
    from seqsift.io import decompress

    data = genome_text(8)[0].encode()
    piece = len(data) // 6
    packed = bytearray(bgzf_bytes(data, piece))
    path = tmp_path / "bad.fa.bgz"
    path.write_bytes(bytes(packed))
    fourth = int(decompress.bgzf_blocks(str(path)).compressed[3])
    packed[fourth + 20] ^= 0xFF  # inside the deflated data of block 3
    path.write_bytes(bytes(packed))
    with decompress.BgzfFile(str(path), decompress.bgzf_blocks(str(path))) as bgzf:
        with pytest.raises(decompress.DecompressError, match=f"block at byte {fourth}"):
            fasta_scan.scan_fasta(fasta_scan.blocks_of_source(bgzf, piece), lambda part: None, threads=2)


def test_gzip_library_falls_back_to_zlib(tmp_path, monkeypatch):
    """Without isal and zlib-ng, plain gzip is read with the standard library, same bases."""
    from seqsift.io import decompress

    text, records = genome_text(5)
    path = tmp_path / "genome.fa.gz"
    path.write_bytes(gzip.compress(text.encode()))
    fastest = b"".join(decompress.gzip_chunks(str(path)))
    monkeypatch.setitem(__import__("sys").modules, "isal", None)
    monkeypatch.setitem(__import__("sys").modules, "zlib_ng", None)
    assert decompress.gzip_library()[0] == "zlib"
    assert b"".join(decompress.gzip_chunks(str(path))) == fastest == text.encode()


def test_gzip_is_inflated_ahead_on_its_own_thread_in_order(tmp_path, monkeypatch):
    """The chunks inflated on the read-ahead thread are the stream's bytes, in order, as inflated in the
    caller's thread; chunks smaller than the scanner's block make many hand-overs."""
    import threading

    from seqsift.io import decompress

    monkeypatch.setattr(decompress, "_CHUNK", 4096)
    text = "".join(genome_text(seed)[0] for seed in range(40)).encode()
    path = tmp_path / "genome.fa.gz"
    path.write_bytes(gzip.compress(text))
    inflating_threads = set()
    real_library = decompress.gzip_library

    def watched_library():
        name, opener, inflate = real_library()

        def watched_open(p):
            inflating_threads.add(threading.current_thread().name)
            return opener(p)

        return name, watched_open, inflate

    monkeypatch.setattr(decompress, "gzip_library", watched_library)
    chunks = list(decompress.gzip_chunks(str(path), ahead=2))
    assert len(chunks) > 10 and b"".join(chunks) == text
    assert inflating_threads == {"seqsift-inflate"}
    assert b"".join(decompress.gzip_chunks(str(path), ahead=0)) == text
    assert inflating_threads == {"seqsift-inflate", threading.current_thread().name}


def test_a_corrupt_gzip_stream_fails_in_the_reader_after_its_good_bytes(tmp_path, monkeypatch):
    from seqsift.io import decompress

    monkeypatch.setattr(decompress, "_CHUNK", 4096)
    text = "".join(genome_text(seed)[0] for seed in range(40)).encode()
    packed = gzip.compress(text)
    path = tmp_path / "cut.fa.gz"
    path.write_bytes(packed[: len(packed) // 2])  # truncated mid-stream
    got = []
    with pytest.raises(decompress.DecompressError):
        for chunk in decompress.gzip_chunks(str(path), ahead=2):
            got.append(chunk)
    assert got and text.startswith(b"".join(got))


def test_a_reader_that_stops_early_stops_the_inflating_thread(tmp_path, monkeypatch):
    import threading

    from seqsift.io import decompress

    monkeypatch.setattr(decompress, "_CHUNK", 1024)
    text = "".join(genome_text(seed)[0] for seed in range(40)).encode()
    path = tmp_path / "genome.fa.gz"
    path.write_bytes(gzip.compress(text))
    chunks = decompress.gzip_chunks(str(path), ahead=2)
    first = next(chunks)
    assert text.startswith(first)
    chunks.close()  # the consumer goes away with the queue full and the stream half read
    assert not [t for t in threading.enumerate() if t.name == "seqsift-inflate"]


def _names_line_by_line(texts: list[bytes], errors: str):
    """The headers decoded and split one line at a time, as a reader that knows nothing of the scan would."""
    names, headers = [], []
    for text in texts:
        line = text.decode("utf-8", errors=errors)
        if not line.split():
            raise fasta_scan.HeaderProblem("a header without a name")
        names.append(line.split()[0])
        headers.append(line)
    return names, headers


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("errors", ["strict", "backslashreplace"])
def test_names_and_headers_decode_as_line_by_line(seed, errors):
    """Names and header lines of many records, decoded and split in one piece, equal the line-by-line
    reading: Unicode blanks (NBSP, U+1680, U+3000, \\x1c, \\x85), tabs, a blank or bad UTF-8 header."""
    rng = random.Random(seed)
    words = [b"chr", b"1", b"_alt", "d\u00e9crit".encode(), "\U0001f9ec".encode(), b"x\x0by"]
    blanks = [b" ", b"\t", "\u00a0".encode(), "\u1680".encode(), "\u3000".encode(), b"\x1c", "\u0085".encode()]
    bad = [b"\xff", b"\xe2\x82"]

    def header() -> bytes:
        if rng.random() < 0.01:
            return b"".join(rng.choice(blanks) for _ in range(rng.randint(0, 2)))  # no name
        pieces = [rng.choice(blanks) for _ in range(rng.randint(0, 1))] + [rng.choice(words)]
        for _ in range(rng.randint(0, 5)):
            pieces.append(rng.choice(bad) if rng.random() < 0.01 else rng.choice(words + blanks))
        return b"".join(pieces)

    texts = [header() for _ in range(rng.randint(1, 30))]
    try:
        expected = _names_line_by_line(texts, errors)
    except (UnicodeDecodeError, fasta_scan.HeaderProblem):
        with pytest.raises(fasta_scan.HeaderProblem):
            fasta_scan.names_and_headers(texts, errors)
        return
    assert fasta_scan.names_and_headers(texts, errors) == expected


@pytest.mark.parametrize("seed", range(5))
def test_fai_text_is_each_record_formatted_in_turn(seed):
    """The .fai against a line-by-line f-string: names of any UTF-8 and any length, numbers from 0 to
    19 digits, one record or many."""
    rng = np.random.default_rng(seed)
    records = int(rng.choice([1, 7, 1000]))
    alphabet = ["a", "Z", "_", "|", ".", "9", "é", "染", "-"]
    names = tuple("".join(rng.choice(alphabet, size=rng.integers(1, 40))) + f"#{i}" for i in range(records))
    columns = [rng.integers(0, 10 ** rng.integers(1, 19, size=records), dtype=np.int64) for _ in range(4)]
    columns[0][0] = 0
    columns[1][-1] = np.iinfo(np.int64).max
    layout = fasta_scan.FastaLayout(names, *columns, total_bytes=0)
    expected = "".join(f"{name}\t{a}\t{b}\t{c}\t{d}\n" for name, a, b, c, d in zip(names, *columns))
    assert layout.fai_text() == expected


def test_fai_text_of_no_records_is_empty():
    assert fasta_scan.FastaLayout((), *(np.zeros(0, np.int64) for _ in range(4)), total_bytes=0).fai_text() == ""


@pytest.mark.parametrize("seed", range(6))
def test_table_bytes_writes_each_line_as_str_formatting_does(seed):
    """The .fai's lines, written by NumPy (fasta_scan.table_bytes), equal Python's own formatting of
    each field: names of any UTF-8 letters and widths, numbers of every width from 0 to 2^62."""
    rng = random.Random(seed)
    count = rng.choice([1, 2, 17, 500])
    letters = "ACGTacgt_.|:é漢0123456789"
    names = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 30))) for _ in range(count)]
    columns = [np.array([rng.choice([0, rng.randint(0, 9), rng.randint(0, 10 ** rng.randint(1, 18)),
                                      rng.randint(0, 1 << 62)]) for _ in range(count)], dtype=np.int64)
               for _ in range(rng.randint(1, 5))]
    expected = "".join("\t".join([name, *(str(int(column[i])) for column in columns)]) + "\n"
                       for i, name in enumerate(names))
    assert fasta_scan.table_bytes(names, columns) == expected.encode("utf-8")


@pytest.mark.parametrize("seed", range(60))
def test_spans_mask_and_joined_lines_against_slices(seed):
    """The masks of runs that gather header lines equal plain slicing, empty spans, spans at both ends
    and touching spans included."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(0, 60))
    data = rng.integers(32, 127, size).astype(np.uint8)
    cuts = np.sort(rng.integers(0, size + 1, 2 * int(rng.integers(0, 8))))
    first, stop = cuts[0::2].astype(np.int64), cuts[1::2].astype(np.int64)
    for inside in (True, False):
        expected = np.full(size, not inside)
        for a, b in zip(first.tolist(), stop.tolist()):
            expected[a:b] = inside
        assert np.array_equal(fasta_scan.spans_mask(size, first, stop, inside), expected)
    assert fasta_scan.joined_lines(data, first, stop) == b"\n".join(data[a:b].tobytes() for a, b in zip(first, stop))
    data[stop[stop < size]] = ord("\n")   # spans followed by newlines, as header lines are (touching ones too)
    assert fasta_scan.joined_lines(data, first, stop) == b"\n".join(data[a:b].tobytes() for a, b in zip(first, stop))


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("seed", range(12))
def test_names_found_by_each_block_equal_the_headers_split_line_by_line(tmp_path, seed, eol):
    """The scanning threads find their blocks' names (ASCII headers); a block with a header outside
    ASCII leaves the whole file's names to the one decode. Either way, at every block size, the names
    are each header's first word and the header lines are kept exactly where one has a description
    (without the line ending, '\\r\\n' as '\\n')."""
    rng = random.Random(seed)
    described = seed % 3 != 0
    headers = []
    for r in range(rng.randint(1, 40)):
        name = rng.choice(["chr", "NZ_", "contig_", "d\u00e9crit_" if seed % 4 == 1 else "x"]) + str(r)
        rest = rng.choice(["", " desc", "\tmore words", " \u00a0accent\u00e9" if seed % 4 == 2 else " ascii"])
        headers.append(rng.choice(["", " "]) + name + (rest if described else ""))
    text = "".join(f">{h}{eol}ACGT{'A' * rng.randint(0, 90)}{eol}" for h in headers)
    path = tmp_path / "headers.fa"
    path.write_bytes(text.encode("utf-8"))
    expected_names = [h.split()[0] for h in headers]
    for block_bytes in BLOCK_SIZES:
        layout, _ = scan(path, block_bytes)
        assert list(layout.names) == expected_names, block_bytes
        if any(h != n for h, n in zip(headers, expected_names)):
            assert list(layout.headers) == headers, block_bytes
        else:
            assert layout.headers is None, block_bytes


@pytest.mark.parametrize("repeat", [False, True])
def test_names_hashed_by_the_blocks_find_a_name_repeated_in_another_block(tmp_path, repeat):
    """Each block hashes its own names (names of 1 to 20 bytes, so blocks differ in their widest);
    the hashes joined are the whole list's, and a name repeated blocks apart is found."""
    from seqsift.errors import InputError
    from seqsift.io.reference import _check_records
    from seqsift.io.text_list import TextList

    rng = random.Random(5)
    names = list(dict.fromkeys("".join(rng.choice("ACGTxyz_") for _ in range(rng.randint(1, 20))) for _ in range(300)))
    if repeat:
        names[-3] = names[4]
    path = tmp_path / "names.fa"
    path.write_text("".join(f">{name} d\nACGT\n" for name in names))
    for block_bytes in (16, 61, 1000):
        layout, _ = scan(path, block_bytes)
        assert list(layout.names) == names
        assert np.array_equal(layout.name_hashes, TextList.of(names).hashes())
        assert layout.names_distinct is (not repeat)   # (found beside the layout)
        for distinct in (None, layout.names_distinct):   # the check's own sort, or the scan's answer
            if repeat:
                with pytest.raises(InputError, match=f"'{names[4]}' is used twice"):
                    _check_records(layout.names, layout.lengths, "names.fa", distinct)
            else:
                _check_records(layout.names, layout.lengths, "names.fa", distinct)


@pytest.mark.parametrize("threads", [1, 2, 3, 16, 64])
@pytest.mark.parametrize("total", [0, 1, 5 << 20, 14_000_000, 141_888_890, 3_100_000_000])
def test_blocks_are_a_multiple_of_the_threads_within_the_bounds(total, threads):
    """A file is cut into as many blocks as threads, or twice, three times... as many, none over
    BLOCK_BYTES and none under MIN_BLOCK_BYTES (a file under threads x MIN_BLOCK_BYTES: fewer blocks)."""
    block_bytes = fasta_scan.block_bytes_for(total, threads)
    assert fasta_scan.MIN_BLOCK_BYTES <= block_bytes <= max(fasta_scan.BLOCK_BYTES, fasta_scan.MIN_BLOCK_BYTES)
    blocks = -(-total // block_bytes)
    if total >= threads * fasta_scan.MIN_BLOCK_BYTES:
        rounds = -(-total // (threads * fasta_scan.BLOCK_BYTES))
        assert blocks == threads * rounds
    else:
        assert blocks <= threads


@pytest.mark.parametrize("threads", [1, 2, 7, 16])
@pytest.mark.parametrize("records", [0, 1, 5_000, 40_000, 300_000, 1_000_000, 3_000_000])
def test_record_parts_tile_the_records_one_a_thread_where_they_are_many(records, threads):
    """The parts tile the records in order; there are at least as many as threads where each can still
    hold MIN_RECORDS_PER_PART records, and none is smaller than that unless there is one part."""
    parts = fasta_scan.record_parts(records, threads)
    assert [first for first, _ in parts] == [0] + [stop for _, stop in parts[:-1]]
    assert parts[-1][1] == records
    if records >= threads * fasta_scan.MIN_RECORDS_PER_PART:
        assert len(parts) >= threads
    if len(parts) > 1:
        assert min(stop - first for first, stop in parts) >= fasta_scan.MIN_RECORDS_PER_PART
    assert len(parts) >= records // fasta_scan.RECORDS_PER_PART

