"""seqsift.io.records: FASTA/FASTQ files read whole (screen's inputs, pattern files).

The oracle is a line-by-line parser written here; the records must also
agree with what screen reads today (engine.screen.read_sequences: names,
lengths, header lines), since screen is to call this reader.
"""
from __future__ import annotations

import gzip
import random

import numpy as np
import pytest

from seqsift.errors import InputError
from seqsift.io.records import file_bytes, parse_records, read_records


def oracle(text: str):
    """(names, sequences, header lines) by reading lines one at a time."""
    lines = text.replace("\r\n", "\n").split("\n")
    names, sequences, header_lines = [], [], []
    if text.lstrip().startswith(">"):
        for number, line in enumerate(lines, start=1):
            if line.startswith(">"):
                names.append(line[1:].split()[0])
                sequences.append("")
                header_lines.append(number)
            elif names:
                sequences[-1] += "".join(line.split())
        return names, sequences, header_lines
    content = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    for k in range(0, len(content), 4):
        number, header = content[k]
        names.append(header[1:].split()[0])
        sequences.append("".join(content[k + 1][1].split()))
        header_lines.append(number)
    return names, sequences, header_lines


def random_fasta(rng: random.Random, eol: str) -> str:
    out = []
    for r in range(rng.randint(1, 8)):
        seq = "".join(rng.choice("ACGTNacgt") for _ in range(rng.randint(1, 300)))
        width = rng.randint(1, 80)
        out.append(f">r{r} some words{eol}" + "".join(seq[i:i + width] + eol for i in range(0, len(seq), width)))
        if rng.random() < 0.3:
            out.append(eol)
    return "".join(out)


def random_fastq(rng: random.Random, eol: str) -> str:
    out = [rng.choice(["", eol, " " + eol])]  # blank lines before the first record
    for r in range(rng.randint(1, 8)):
        seq = "".join(rng.choice("ACGTN") for _ in range(rng.randint(1, 150)))
        # a name alone, after blanks, before a tab or words; any bytes but blanks
        name = rng.choice(["", " ", "\t"]) + f"read{r}" + rng.choice(["", "/1", "_\u00e9", ":x:y"])
        header = name + rng.choice(["", " x", "\tlen=5 some words", " \u00e9 "])
        out.append(f"@{header}{eol}{seq}{eol}+{eol}{'@' * len(seq)}{eol}")  # qualities may start with '@'
        if rng.random() < 0.3:
            out.append(eol)
    return "".join(out)


def check(records, text: str) -> None:
    names, sequences, header_lines = oracle(text)
    assert records.names == names
    assert [records.sequence(k).decode() for k in range(len(names))] == sequences
    assert records.header_lines.tolist() == header_lines
    assert records.lengths.tolist() == [len(s) for s in sequences]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize("make", [random_fasta, random_fastq])
def test_records_match_the_line_by_line_oracle(seed, eol, make):
    text = make(random.Random(seed), eol)
    records = parse_records(text.encode(), "x")
    assert records.format == ("fasta" if make is random_fasta else "fastq")
    check(records, text)


def test_spaces_inside_sequence_lines_are_dropped():
    text = ">a\nAC GT\n\tAC\n>b x\nG G\n"
    check(parse_records(text.encode(), "x"), text)
    text = "@a\nAC GT\n+\nIIIII\n"
    records = parse_records(text.encode(), "x")
    assert records.sequence(0) == b"ACGT"


@pytest.mark.parametrize("compress", [False, True])
def test_read_records_from_files_agrees_with_screen(tmp_path, compress):
    from seqsift.screening.inputs import read_sequences

    for make, suffix in ((random_fasta, "fa"), (random_fastq, "fq")):
        text = make(random.Random(9), "\n")
        path = tmp_path / f"in.{suffix}{'.gz' if compress else ''}"
        path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
        records = read_records(path)
        check(records, text)
        today = read_sequences(str(path))
        assert records.names == today.names
        assert np.array_equal(records.lengths, today.lengths)
        assert np.array_equal(records.header_lines, today.lines)


BAD = {
    # text: words the one-line message must hold
    "hello\n>a\nAC\n": ["line 1", "not FASTA or FASTQ"],
    "@r1\nACGT\n+\nIIII\n@r2\nACGT\n+\n": ["record 'r2' (line 5): truncated"],
    "@r1\n\n+\n\n": ["record 'r1' (line 1): empty sequence"],
    "@r1\nACGT\nIIII\n@r2\n": ["record 'r1' (line 1): line 3 should be the '+' line"],
    "@r1\nACGT\n-\nIIII\n": ["'r1'", "line 3", "'+' line"],
    "@r1\nACGT\n+\nIII\n": ["'r1'", "quality line has 3 characters", "sequence has 4"],
    "@r1\nACGT\n+\nIIII\nr2\nAC\n+\nII\n": ["line 5", "expected '@'"],
    ">a\nAC\n> \nGG\n": ["line 3", "no name"],
    "@r1\nACGT\n+\nIIII\n@\t\nACGT\n+\nIIII\n": ["line 5", "no name"],
    "\n\n  \nhello\n@r1\n": ["line 4", "not FASTA or FASTQ", "'hello'"],
    "": ["is empty"],
}


@pytest.mark.parametrize("text", sorted(BAD))
def test_bad_records_name_the_line(text):
    with pytest.raises(InputError) as excinfo:
        parse_records(text.encode(), "in.txt")
    message = str(excinfo.value)
    assert "\n" not in message and message.startswith("in.txt: ")
    for needle in BAD[text]:
        assert needle in message, (needle, message)


def test_file_bytes_errors(tmp_path):
    with pytest.raises(InputError, match="no such file .hint"):
        file_bytes(tmp_path / "missing", "a thing", " (hint)")
    with pytest.raises(InputError, match="is a directory, not a thing"):
        file_bytes(tmp_path, "a thing")
    (tmp_path / "x.bz2").write_bytes(b"BZh91AY&SY" + bytes(20))
    with pytest.raises(InputError, match="bzip2-compressed"):
        file_bytes(tmp_path / "x.bz2", "a thing")
    (tmp_path / "cut.gz").write_bytes(gzip.compress(b">a\nACGT\n" * 100)[:-12])
    with pytest.raises(InputError, match="corrupt or truncated"):
        file_bytes(tmp_path / "cut.gz", "a thing")


def test_headers_that_are_not_utf8_are_kept_escaped():
    """As screen always did: a Latin-1 header names its record with backslash escapes."""
    records = parse_records(b">caf\xe9 x\nACGT\n>b\nGG\n", "x")
    assert records.names == ["caf\\xe9", "b"] and records.sequence(0) == b"ACGT"
