"""Small sequence files read whole: pattern files and ``screen``'s FASTA/FASTQ inputs.

:func:`file_bytes` is the one place such a file is opened: missing,
directory, unreadable, gzip/BGZF (inflated with the fastest library present,
:mod:`seqsift.io.decompress`), other compressions refused, all as one-line
InputErrors. :func:`read_records` turns FASTA or FASTQ bytes into names and
one buffer of sequence bytes, with each record's header line for messages.
FASTA goes through the reference's vectorized scanner (fasta_scan, any line
lengths); FASTQ is parsed as arrays of lines, four per record, with no Python
loop per line.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError, quote, reading
from . import decompress, fasta_scan

__all__ = ["file_bytes", "read_records", "parse_records", "SequenceRecords"]

_OTHER_COMPRESSIONS = {b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd", b"PK\x03\x04": "zip"}
_INNER_WHITESPACE = np.zeros(256, dtype=bool)
_INNER_WHITESPACE[list(b" \t\r\v\f")] = True
_NOT_BLANK = re.compile(rb"\S")


def file_bytes(path: str | os.PathLike, kind: str, missing_hint: str = "") -> bytes:
    """The whole file, decompressed if gzip or BGZF; InputError (naming the file) if that fails.

    ``kind`` completes "is a directory, not ..." (e.g. "a pattern file");
    ``missing_hint`` is added to "no such file" (e.g. how to pass a sequence itself).
    """
    display = os.fspath(path)
    source = Path(os.path.expanduser(display))
    if not source.exists() and not source.is_symlink():
        raise InputError(f"{display}: no such file{missing_hint}")
    with reading(display):
        if source.is_dir():
            raise InputError(f"{display}: is a directory, not {kind}")
        data = source.read_bytes()
    return decoded_bytes(data, display)


def decoded_bytes(data: bytes, display: str) -> bytes:
    """A whole input's bytes, decompressed if gzip or BGZF; InputError naming ``display`` if that fails
    or another compression is recognised."""
    if data[:2] == b"\x1f\x8b":  # gzip or BGZF (BGZF is valid multi-member gzip)
        _, _, inflate = decompress.gzip_library()
        try:
            data = inflate(data)
        except decompress.decompress_failures() as err:
            raise InputError(f"{display}: the gzip data is corrupt or truncated ({err})") from None
    for magic, name in _OTHER_COMPRESSIONS.items():
        if data.startswith(magic):
            raise InputError(f"{display}: is {name}-compressed; seqsift reads these files plain or "
                             f"gzip-compressed (decompress it, or recompress it with gzip)")
    return data


@dataclass
class SequenceRecords:
    """Records of a FASTA/FASTQ file: record k is ``sequences[offsets[k]:offsets[k + 1]]``.

    sequences: uint8, the bases as in the file (case kept; whitespace and line
    endings dropped); header_lines: the 1-based line of each record's header.
    """

    names: list[str]
    sequences: np.ndarray
    offsets: np.ndarray
    header_lines: np.ndarray
    format: str  # "fasta" or "fastq"

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def sequence(self, k: int) -> bytes:
        return self.sequences[self.offsets[k]:self.offsets[k + 1]].tobytes()


def read_records(path: str | os.PathLike, missing_hint: str = "") -> SequenceRecords:
    """The records of a FASTA or FASTQ file (plain, gzip or BGZF); see ``parse_records``."""
    return parse_records(file_bytes(path, "a FASTA or FASTQ file", missing_hint), os.fspath(path))


def parse_records(data: bytes, display: str) -> SequenceRecords:
    """FASTA or FASTQ ``data`` (told by its first non-blank byte) as SequenceRecords.

    InputError, naming the line, for: no records, text that is neither, a
    header without a name, a FASTQ record without its '+' line or with a
    quality of another length (multi-line FASTQ is not supported).
    Records with no bases are returned as they are (the caller decides).
    """
    first = _NOT_BLANK.search(data)   # (strip() would copy the whole input twice)
    if first is None:
        raise InputError(f"{display}: is empty (no sequences)")
    if b"\x00" in data[:1 << 16]:
        raise InputError(f"{display}: looks like binary data, not a FASTA or FASTQ file")
    begin = first.start()
    if data[begin] == ord(">"):
        return _fasta(data, display)
    if data[begin] == ord("@"):
        return _fastq(data, display)
    first_line = data.count(b"\n", 0, begin) + 1
    found = data[begin:begin + 20].split(b"\n", 1)[0]
    raise InputError(f"{display}: line {first_line}: not FASTA or FASTQ: a record starts with '>' (FASTA) "
                     f"or '@' (FASTQ), this line with {quote(found)}")


def _name(header: bytes, line: int, display: str) -> str:
    words = header[1:].split()
    if not words:
        raise InputError(f"{display}: line {line}: header line has no name (nothing after {header[:1].decode()!r})")
    return words[0].decode("utf-8", errors="backslashreplace")


def _fastq_names(buffer: np.ndarray, first: np.ndarray, end: np.ndarray) -> list[str] | None:
    """The first word of each header line ``buffer[first[k]:end[k]]`` (after its '@'), as FASTA's
    names are found: the lines gathered and decoded as one text, no Python step per record. None
    if a header has no name."""
    try:
        names, _ = fasta_scan.names_and_headers([fasta_scan.joined_lines(buffer, first, end)],
                                                "backslashreplace")
    except fasta_scan.HeaderProblem:
        return None
    return list(names)


def _fasta(data: bytes, display: str) -> SequenceRecords:
    parts: list[np.ndarray] = []
    try:
        layout = fasta_scan.scan_fasta(fasta_scan.blocks_of_stream([data]), parts.append, threads=1,
                                       require_regular=False, check_ascii=False, header_errors="backslashreplace",
                                       find_duplicates=False)
    except fasta_scan.HeaderProblem:  # a header without a name: find its line for the message
        for number, line in enumerate(data.split(b"\n"), start=1):
            if line.startswith(b">"):
                _name(line.rstrip(), number, display)
        raise
    sequences = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    lengths = layout.lengths
    inner = _INNER_WHITESPACE[sequences]
    if inner.any():  # spaces or tabs inside sequence lines are no bases
        record_of_byte = np.repeat(np.arange(len(lengths)), lengths)
        lengths = np.bincount(record_of_byte[~inner], minlength=len(lengths)).astype(np.int64)
        sequences = sequences[~inner]
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return SequenceRecords(list(layout.names), sequences, offsets, layout.header_lines, "fasta")


def _fastq(data: bytes, display: str) -> SequenceRecords:
    """Four lines per record: @name, sequence, +, quality; blank lines (empty, or blanks only) only between records.

    Without blank lines (the usual file) record k is simply lines 4k..4k+3,
    found with no loop at all; with some, a loop over records finds where
    each starts (a quality line may itself start with '@').
    """
    buffer = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buffer == 10)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.append(newlines, len(buffer))
    if starts[-1] == len(buffer):          # no empty line after a final '\n'
        starts, ends = starts[:-1], ends[:-1]
    ends = ends - ((ends > starts) & (buffer[np.maximum(ends - 1, 0)] == 13))  # '\r\n'
    blank = ends == starts
    for k in np.flatnonzero(~blank & _INNER_WHITESPACE[buffer[np.minimum(starts, len(buffer) - 1)]]).tolist():
        blank[k] = not data[starts[k]:ends[k]].strip()  # a line of blanks (rare: looked at one by one)
    line_count = len(starts)
    if blank.any():
        heads, truncated = [], None
        k = 0
        while k < line_count:  # one step per record (or per blank line between records)
            if blank[k]:
                k += 1
                continue
            if k + 3 >= line_count:
                truncated = k
                break
            heads.append(k)
            k += 4
        heads = np.array(heads, dtype=np.int64)
    else:
        heads = np.arange(0, line_count - line_count % 4, 4)
        truncated = line_count - line_count % 4 if line_count % 4 else None

    def text(k: int) -> bytes:
        return data[int(starts[k]):int(ends[k])]

    checked = np.append(heads, truncated) if truncated is not None else heads
    bad_head = np.flatnonzero(buffer[starts[checked]] != ord("@"))
    if bad_head.size:
        k = int(checked[bad_head[0]])
        raise InputError(f"{display}: line {k + 1}: expected '@' at the start of a FASTQ record, "
                         f"found {quote(text(k)[:20])}")
    names = _fastq_names(buffer, starts[checked] + 1, ends[checked])
    if names is None:  # a header without a name: one at a time, to name its line
        names = [_name(text(k), k + 1, display) for k in checked.tolist()]
    if truncated is not None:
        raise InputError(f"{display}: record {quote(names[-1])} (line {truncated + 1}): truncated (a FASTQ "
                         f"record has 4 lines: @name, sequence, +, quality)")
    seqs, pluses, quals = heads + 1, heads + 2, heads + 3
    bad_plus = np.flatnonzero(buffer[np.minimum(starts[pluses], len(buffer) - 1)] != ord("+") | blank[pluses])
    if bad_plus.size:
        k = int(bad_plus[0])
        raise InputError(f"{display}: record {quote(names[k])} (line {int(heads[k]) + 1}): line "
                         f"{int(pluses[k]) + 1} should be the '+' line, found {quote(text(int(pluses[k]))[:20])} "
                         f"(multi-line FASTQ is not supported)")
    sequence_lengths = ends[seqs] - starts[seqs]
    empty = np.flatnonzero(sequence_lengths == 0)
    if empty.size:
        k = int(empty[0])
        raise InputError(f"{display}: record {quote(names[k])} (line {int(heads[k]) + 1}): empty sequence")
    quality_lengths = ends[quals] - starts[quals]
    bad_quality = np.flatnonzero(sequence_lengths != quality_lengths)
    if bad_quality.size:
        k = int(bad_quality[0])
        raise InputError(f"{display}: record {quote(names[k])} (line {int(heads[k]) + 1}): the quality "
                         f"line has {int(quality_lengths[k])} characters but the sequence has "
                         f"{int(sequence_lengths[k])}")
    # the sequence lines' bytes, gathered without a loop by a mask made of runs: the bytes up to a
    # sequence line's start dropped, the line's kept, and so on
    line_starts, line_ends = starts[seqs], ends[seqs]
    runs = np.column_stack((line_starts - np.concatenate(([0], line_ends[:-1])), line_ends - line_starts))
    keep = np.repeat(np.tile(np.array([False, True]), len(seqs)), runs.ravel())
    sequences = buffer[:len(keep)][keep]
    lengths = sequence_lengths
    inner = _INNER_WHITESPACE[sequences]
    if inner.any():
        record_of_byte = np.repeat(np.arange(len(heads)), sequence_lengths)
        lengths = np.bincount(record_of_byte[~inner], minlength=len(heads)).astype(np.int64)
        sequences = sequences[~inner]
    offsets = np.zeros(len(heads) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return SequenceRecords(names, sequences, offsets, heads + 1, "fastq")
