"""The screen job's inputs: FASTA/FASTQ files (plain or gzip) or lists, as one buffer of text codes.

The search job's readers do not fit here: ``reference.py`` indexes one
FASTA genome for random access, ``pattern_input.py`` reads IUPAC patterns;
screen reads FASTQ too and any sequence letters. (The unified reader of
issue 17 is to replace this one.)
"""
from __future__ import annotations

import gzip
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..alphabet import encode_text
from ..errors import InputError, quote, reading

_SEQUENCE_LETTERS = np.zeros(256, dtype=bool)
for _c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz*-.":
    _SEQUENCE_LETTERS[_c] = True
_WHITESPACE = b" \t\r\v\f"
_LOOKS_LIKE_SEQUENCE = re.compile(r"[ACGTNacgtn]+")
_COMPRESSED = {b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd", b"PK\x03\x04": "zip"}


@dataclass(eq=False)
class SequenceSet:
    """Named sequences as one buffer of text codes (A0 C1 G2 T3, 4 = anything else).

    Sequence k is codes[offsets[k]:offsets[k + 1]]. ``source`` names the input
    in messages (a path, or "queries" / "targets" for Python lists).
    """

    names: list[str]
    codes: np.ndarray
    offsets: np.ndarray
    source: str
    lines: np.ndarray | None = field(default=None, repr=False)  # header line of each record (files)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.names)

    def where(self, k: int) -> str:
        """'record NAME (line N)' for messages."""
        line = f" (line {int(self.lines[k])})" if self.lines is not None else ""
        return f"record {quote(self.names[k])}{line}"


_COMPLEMENT_CODE = np.array([3, 2, 1, 0] + [4] * 252, dtype=np.uint8)
"""Text code of each code's complement base: A<->T, C<->G; anything else stays a non-base."""


def reverse_complements(sequences: SequenceSet) -> SequenceSet:
    """The same records, each replaced by its reverse complement (names and lines kept)."""
    lengths = sequences.lengths
    offsets = sequences.offsets
    # Position p of record k, [o_k, o_k+1), takes the complement of position o_k + o_k+1 - 1 - p.
    mirror = np.repeat(offsets[:-1] + offsets[1:] - 1, lengths) - np.arange(len(sequences.codes), dtype=np.int64)
    return SequenceSet(names=sequences.names, codes=_COMPLEMENT_CODE[sequences.codes[mirror]],
                       offsets=offsets.copy(), source=sequences.source, lines=sequences.lines)


def concatenated(first: SequenceSet, second: SequenceSet) -> SequenceSet:
    """The records of ``first`` followed by those of ``second``, in one buffer."""
    offsets = np.concatenate([first.offsets, second.offsets[1:] + first.offsets[-1]])
    lines = None if first.lines is None or second.lines is None else np.concatenate([first.lines, second.lines])
    return SequenceSet(names=list(first.names) + list(second.names),
                       codes=np.concatenate([first.codes, second.codes]), offsets=offsets,
                       source=first.source, lines=lines)


def read_sequences(source, what: str = "sequences") -> SequenceSet:
    """Sequences from a FASTA/FASTQ file (plain or gzip) or a list/array of strings.

    source: a path; a list, tuple or NumPy array of sequence strings (named
    ``<what>_1``, ``<what>_2``, ... with ``what`` singular, e.g. query_1) or
    of (name, sequence) pairs; or a SequenceSet (returned unchanged).
    Lower case counts as upper case; every character other than A, C, G, T
    scores as a mismatch (N included, even against N).
    """
    if isinstance(source, SequenceSet):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _read_file(source)
    if isinstance(source, np.ndarray):
        source = source.tolist()
    if isinstance(source, (list, tuple)):
        return _from_list(source, what)
    raise TypeError(f"{what} must be a file path or a list of sequences, not {type(source).__name__}")


def _singular(what: str) -> str:
    return {"queries": "query", "targets": "target", "sequences": "sequence"}.get(what, what)


def _from_list(items, what: str) -> SequenceSet:
    if len(items) == 0:
        raise InputError(f"{what}: no sequences (the list is empty)")
    names, parts = [], []
    prefix = _singular(what)
    for i, item in enumerate(items, start=1):
        if isinstance(item, (tuple, list)) and len(item) == 2:
            name, sequence = item
        else:
            name, sequence = f"{prefix}_{i}", item
        if isinstance(sequence, bytes):
            sequence = sequence.decode("ascii", errors="replace")
        if not isinstance(sequence, str) or not isinstance(name, str):
            raise TypeError(f"{what} item {i}: expected a sequence string or a (name, sequence) pair of "
                            f"strings, not {item!r}")
        sequence = sequence.strip()
        if not sequence:
            raise InputError(f"{what} item {i} ({quote(name)}): empty sequence")
        names.append(name)
        parts.append(sequence)
    return _encode(names, parts, what, None)


def _encode(names: list[str], parts: list, source: str, lines) -> SequenceSet:
    lengths = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    joined = "".join(parts) if parts and isinstance(parts[0], str) else b"".join(parts)
    codes = encode_text(joined)
    return SequenceSet(names=names, codes=np.ascontiguousarray(codes, dtype=np.uint8), offsets=offsets,
                       source=source, lines=None if lines is None else np.asarray(lines, dtype=np.int64))


def _file_bytes(display: str) -> bytes:
    path = Path(os.path.expanduser(display))
    if not path.exists() and not path.is_symlink():
        hint = ""
        if _LOOKS_LIKE_SEQUENCE.fullmatch(display):
            hint = " (to screen that sequence itself, pass it in a list)"
        raise InputError(f"{display}: no such file{hint}")
    with reading(display):
        if path.is_dir():
            raise InputError(f"{display}: is a directory, not a FASTA or FASTQ file")
        data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":  # gzip or BGZF (multi-member gzip)
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise InputError(f"{display}: the gzip data is corrupt or truncated ({err})") from None
    for magic, kind in _COMPRESSED.items():
        if data.startswith(magic):
            raise InputError(f"{display}: is {kind}-compressed; seqsift reads FASTA and FASTQ plain or "
                             f"gzip-compressed (decompress it, or recompress it with gzip)")
    return data


def _read_file(path) -> SequenceSet:
    display = os.fspath(path)
    data = _file_bytes(display)
    if not data.strip():
        raise InputError(f"{display}: is empty (no sequences)")
    if b"\x00" in data[:1 << 16]:
        raise InputError(f"{display}: looks like binary data, not a FASTA or FASTQ file")
    lines = data.split(b"\n")
    first = next(k for k, line in enumerate(lines) if line.strip())
    start = lines[first].lstrip()
    if start.startswith(b">"):
        names, parts, header_lines = _parse_fasta(lines, first, display)
    elif start.startswith(b"@"):
        names, parts, header_lines = _parse_fastq(lines, first, display)
    else:
        raise InputError(f"{display}: line {first + 1}: not FASTA or FASTQ: a record starts with '>' (FASTA) "
                         f"or '@' (FASTQ), this line with {quote(start[:20])}")
    sequences = _encode(names, parts, display, header_lines)
    _check_letters(sequences, b"".join(parts))
    return sequences


def _name_of(header: bytes, line_no: int, display: str) -> str:
    words = header[1:].split()
    if not words:
        raise InputError(f"{display}: line {line_no}: header line has no name (nothing after {header[:1].decode()!r})")
    return words[0].decode("utf-8", errors="backslashreplace")


def _parse_fasta(lines: list[bytes], first: int, display: str):
    names, parts, header_lines = [], [], []
    current: list[bytes] = []
    for k in range(first, len(lines)):
        line = lines[k]
        if line.startswith(b">"):
            if names:
                parts.append(b"".join(current))
            names.append(_name_of(line.rstrip(), k + 1, display))
            header_lines.append(k + 1)
            current = []
        else:
            current.append(line.translate(None, _WHITESPACE))
    parts.append(b"".join(current))
    for k, part in enumerate(parts):
        if not part:
            raise InputError(f"{display}: record {quote(names[k])} (line {header_lines[k]}): empty sequence")
    return names, parts, header_lines


def _parse_fastq(lines: list[bytes], first: int, display: str):
    names, parts, header_lines = [], [], []
    k, total = first, len(lines)
    while k < total:
        header = lines[k].rstrip()
        if not header:
            k += 1
            continue
        if not header.startswith(b"@"):
            raise InputError(f"{display}: line {k + 1}: expected '@' at the start of a FASTQ record, found "
                             f"{quote(header[:20])}")
        name = _name_of(header, k + 1, display)
        where = f"{display}: record {quote(name)} (line {k + 1})"
        if k + 3 >= total:
            raise InputError(f"{where}: truncated (a FASTQ record has 4 lines: @name, sequence, +, quality)")
        sequence = lines[k + 1].translate(None, _WHITESPACE)
        plus = lines[k + 2].rstrip()
        quality = lines[k + 3].rstrip(b"\r")
        if not plus.startswith(b"+"):
            raise InputError(f"{where}: line {k + 3} should be the '+' line, found {quote(plus[:20])} "
                             f"(multi-line FASTQ is not supported)")
        if not sequence:
            raise InputError(f"{where}: empty sequence")
        if len(quality) != len(sequence):
            raise InputError(f"{where}: the quality line has {len(quality)} characters but the sequence "
                             f"has {len(sequence)}")
        names.append(name)
        parts.append(sequence)
        header_lines.append(k + 1)
        k += 4
    return names, parts, header_lines


def _check_letters(sequences: SequenceSet, raw: bytes) -> None:
    """InputError naming the record of the first byte that is no sequence letter."""
    values = np.frombuffer(raw, dtype=np.uint8)
    bad = np.flatnonzero(~_SEQUENCE_LETTERS[values])
    if bad.size:
        position = int(bad[0])
        record = int(np.searchsorted(sequences.offsets, position, side="right") - 1)
        raise InputError(f"{sequences.source}: {sequences.where(record)}: {quote(bytes(raw[position:position + 1]))} "
                         f"is not a sequence letter (letters, '*', '-' and '.' are; all but A, C, G, T "
                         f"score as mismatches)")
