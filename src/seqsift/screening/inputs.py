"""The screen job's inputs: FASTA/FASTQ files (plain or gzip) or lists, as one buffer of text codes.

Files are read by :func:`seqsift.io.records.read_records` (FASTA or FASTQ,
plain, gzip or BGZF), the reader pattern files share; this module adds what
screen needs on top: records without bases refused, every byte a sequence
letter, and the text codes.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np

from ..alphabet import encode_text, holds_only, mostly_not_nucleotides
from ..errors import InputError, quote
from ..io.records import read_records

_SEQUENCE_LETTER_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz*-."
_SEQUENCE_LETTERS = np.zeros(256, dtype=bool)
_SEQUENCE_LETTERS[np.frombuffer(_SEQUENCE_LETTER_BYTES, dtype=np.uint8)] = True
_LOOKS_LIKE_SEQUENCE = re.compile(r"[ACGTNacgtn]+")


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


def _read_file(path) -> SequenceSet:
    """A FASTA/FASTQ file through seqsift.io.records, the reader shared with pattern files."""
    display = os.fspath(path)
    hint = " (to screen that sequence itself, pass it in a list)" if _LOOKS_LIKE_SEQUENCE.fullmatch(display) else ""
    records = read_records(display, hint)
    empty = np.flatnonzero(records.lengths == 0)
    if empty.size:
        k = int(empty[0])
        raise InputError(f"{display}: record {quote(records.names[k])} (line {int(records.header_lines[k])}): "
                         f"empty sequence")
    sequences = SequenceSet(names=records.names, codes=encode_text(records.sequences), offsets=records.offsets,
                            source=display, lines=records.header_lines)
    _check_letters(sequences, records.sequences)
    protein = mostly_not_nucleotides(np.frombuffer(records.sequences, dtype=np.uint8), records.offsets)
    if protein is not None:
        raise InputError(f"{display}: {sequences.where(protein)} looks like protein, not DNA (most of its letters "
                         f"are not A, C, G, T, U or N); seqsift screens nucleotide sequences")
    return sequences


def _check_letters(sequences: SequenceSet, raw: bytes | np.ndarray) -> None:
    """InputError naming the record of the first byte that is no sequence letter."""
    if holds_only(raw, _SEQUENCE_LETTER_BYTES):   # every byte a letter: the usual case
        return
    values = np.frombuffer(raw, dtype=np.uint8)
    bad = np.flatnonzero(~_SEQUENCE_LETTERS[values])
    if bad.size:
        position = int(bad[0])
        record = int(np.searchsorted(sequences.offsets, position, side="right") - 1)
        raise InputError(f"{sequences.source}: {sequences.where(record)}: {quote(bytes(raw[position:position + 1]))} "
                         f"is not a sequence letter (letters, '*', '-' and '.' are; all but A, C, G, T "
                         f"score as mismatches)")
