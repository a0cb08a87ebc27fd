"""Reading the user's patterns into a :class:`~seqsift.pattern_set.PatternSet`.

Where patterns come from, and what they are called:

==========================================  ===========================================
source                                      pattern names
==========================================  ===========================================
FASTA file (``>name ...`` + sequence lines)  first word of the header (as samtools)
TSV file, ``name<TAB>sequence`` per line     the first column
text file, one sequence per line             ``line_<n>``, n = the line number in the file
Python list/tuple of sequences               ``pattern_<i>``, i = 1, 2, ... (position)
Python list of ``(name, sequence)`` pairs    the given names (a list may mix both forms)
Python dict ``{name: sequence}``             the keys
command line (:func:`patterns_from_cli`)     ``cli_<i>``, i = 1, 2, ... (position)
==========================================  ===========================================

Names of one-per-line files are line numbers, not a running count, so a name
in the output (``line_17``) points straight at the line in the file, even
when comments and blank lines come before it.

A file's format is decided by its first line that is not blank and not a
``#`` comment: ``>`` means FASTA, a tab means TSV (an optional first line
``name<TAB>sequence`` is a header and skipped), anything else one sequence per
line. Files may be plain gzip or BGZF compressed. Blank lines and lines
starting with ``#`` are ignored. Sequences are stripped of surrounding
whitespace and upper-cased, and must be non-empty IUPAC codes (A C G T U R Y S
W K M B D H V N, either case); names must be unique.

With ``alphabet="bytes"`` (``--alphabet bytes``: plain byte matching of
non-DNA text) sequences keep their case and may hold any printable ASCII
character; they are still stripped of surrounding whitespace.

Every problem raises :class:`~seqsift.errors.InputError` whose one-line
message names the file and line (or list item, or command-line position).
"""
from __future__ import annotations

import os
import sys
import re
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from ..alphabet import IUPAC_MASKS, invalid_pattern_letters
from ..errors import InputError, quote
from ..pattern_set import PatternSet
from .records import decoded_bytes, file_bytes

__all__ = ["read_patterns", "patterns_from_cli", "patterns_from_arguments", "validate_patterns_for_job"]

ALPHABETS = ("dna", "bytes")

_IUPAC = re.compile("[" + "".join(IUPAC_MASKS) + "]+")      # upper-case IUPAC letters only
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]+")
_LOOKS_LIKE_SEQUENCES = re.compile(r"[A-Za-z]+(,[A-Za-z]+)*")
_LETTER_NAMES = {" ": "space", "\t": "tab"}
_PLAIN_BASES = re.compile("[ACGTUN]+")


# --------------------------------------------------------------------------
# Collecting patterns: one place for the checks every source shares
# --------------------------------------------------------------------------

class _Collector:
    """Accumulates (name, sequence) pairs, cleaning and checking each one.

    ``add`` takes ``origin``, the place to blame in a message ("guides.txt:
    line 4", "pattern list item 3", "command-line pattern 2").
    """

    def __init__(self, source: str, alphabet: str):
        if alphabet not in ALPHABETS:
            raise ValueError(f"unknown alphabet {alphabet!r} (choose {' or '.join(ALPHABETS)})")
        self.source = source
        self.alphabet = alphabet
        self.names: list[str] = []
        self.sequences: list[str] = []
        self.first_seen: dict[str, str] = {}  # name -> origin of its first use

    def clean(self, sequence: str, origin: str, name: str) -> str:
        """``sequence`` stripped (and upper-cased for DNA), checked for bad characters."""
        sequence = sequence.strip()
        if self.alphabet == "dna":
            sequence = sequence.upper()
            if sequence and not _IUPAC.fullmatch(sequence):
                letters = _list_letters(invalid_pattern_letters(sequence))
                raise InputError(f"{origin}: pattern {quote(name)} has characters that are not IUPAC "
                                 f"nucleotide codes: {letters}")
        elif sequence and not _PRINTABLE_ASCII.fullmatch(sequence):
            letters = _list_letters(list(dict.fromkeys(c for c in sequence if not _PRINTABLE_ASCII.match(c))))
            raise InputError(f"{origin}: pattern {quote(name)} has characters that are not printable "
                             f"ASCII: {letters}")
        return sequence

    def add(self, name: str, sequence: str, origin: str, cleaned: bool = False) -> None:
        name = name.strip()
        if not name:
            raise InputError(f"{origin}: pattern has an empty name")
        if not cleaned:
            sequence = self.clean(sequence, origin, name)
        if not sequence:
            raise InputError(f"{origin}: pattern {quote(name)} is empty")
        if name in self.first_seen:
            raise InputError(f"{origin}: duplicate pattern name {quote(name)} (first used at "
                             f"{self.first_seen[name]}); pattern names must be unique")
        # remember where, without the file name that every origin of this source starts with
        prefix = f"{self.source}: "
        self.first_seen[name] = origin[len(prefix):] if origin.startswith(prefix) else origin
        self.names.append(name)
        self.sequences.append(sequence)

    def result(self, empty_message: str) -> PatternSet:
        if not self.names:
            raise InputError(empty_message)
        return PatternSet(names=tuple(self.names), sequences=tuple(self.sequences), alphabet=self.alphabet)


def _list_letters(letters: list[str]) -> str:
    """``['X', ' ']`` -> ``'X', ' ' (space)``."""
    shown = [repr(c) + (f" ({_LETTER_NAMES[c]})" if c in _LETTER_NAMES else "") for c in letters[:10]]
    return ", ".join(shown) + (f" and {len(letters) - 10} more" if len(letters) > 10 else "")


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------

def read_patterns(source, *, alphabet: str = "dna") -> PatternSet:
    """Patterns from a file path, a list/tuple, or a dict (see the module docstring).

    source: ``str`` / ``os.PathLike`` (a FASTA, TSV or one-per-line file,
    optionally gzip-compressed); a list or tuple whose items are sequences
    (named ``pattern_1``, ...) or ``(name, sequence)`` pairs; a dict name ->
    sequence; or a PatternSet (returned unchanged).
    """
    if isinstance(source, PatternSet):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _read_pattern_file(source, alphabet)
    if isinstance(source, Mapping):
        return _from_pairs(((name, seq) for name, seq in source.items()), "pattern dict", alphabet,
                           origin=lambda i, name: f"pattern dict key {quote(str(name))}")
    if isinstance(source, (list, tuple)):
        return _from_list(source, alphabet)
    raise TypeError(f"patterns must be a file path, a list or tuple, or a dict, not {type(source).__name__}")


def patterns_from_cli(values: list[str], *, alphabet: str = "dna") -> PatternSet:
    """Patterns typed on the command line, named ``cli_1``, ``cli_2``, ... in order."""
    collector = _Collector("command line", alphabet)
    for i, value in enumerate(values, start=1):
        collector.add(f"cli_{i}", value, f"command-line pattern {i} ({quote(value)})")
    return collector.result("no patterns given on the command line")


def patterns_from_arguments(argument: str | None, sequences: list[str], *, alphabet: str = "dna",
                            note=lambda message: None):
    """The command line's PATTERNS argument and ``-p`` sequences -> a pattern file path or a PatternSet.

    ``argument`` is a file if one by that name exists. Otherwise it is
    comma-separated sequences when every item is one (IUPAC codes for DNA;
    letters for bytes), else it names a file that does not exist. A
    sequence that might have been meant as a file name (DNA with letters other
    than A, C, G, T, U, N: ``cards``) is searched, and ``note`` says so.
    """
    if argument is None and not sequences:
        raise InputError("no patterns: give a PATTERNS file or sequences, or --pattern SEQ")
    on_command_line = list(sequences)
    if argument is not None:
        if argument == STANDARD_INPUT or _names_a_file(argument):
            if on_command_line:
                raise InputError("give patterns either as a file or on the command line, not both")
            return argument
        items = argument.split(",")
        if alphabet == "dna":
            is_sequences = all(_IUPAC.fullmatch(item.upper()) for item in items)
        else:
            is_sequences = bool(_LOOKS_LIKE_SEQUENCES.fullmatch(argument))
        if not is_sequences:
            raise InputError(f"{argument}: no such file (and not "
                             f"{'a sequence of IUPAC nucleotide codes' if alphabet == 'dna' else 'a sequence'})")
        if alphabet == "dna" and not all(_PLAIN_BASES.fullmatch(item.upper()) for item in items):
            note(f"{argument}: no file by that name, so it is searched as a sequence "
                 f"({','.join(item.upper() for item in items)})")
        on_command_line += items
    return patterns_from_cli(on_command_line, alphabet=alphabet)


def _names_a_file(argument: str) -> bool:
    """Whether a file by that name exists (a name too long for the filesystem does not)."""
    try:
        return Path(os.path.expanduser(argument)).exists()
    except OSError:  # ENAMETOOLONG: a long list of sequences, not a file
        return False


def validate_patterns_for_job(patterns: PatternSet, k: int, reference_lengths, source_name: str,
                              metric: str = "hamming") -> None:
    """InputError unless every pattern can take part in a search with ``k``.

    k must be >= 0 and smaller than every pattern's length (a pattern of length
    m <= k matches everywhere), and every pattern must fit in the longest
    reference record: m bases under Hamming distance, m - k under edit
    distance (k deletions). ``source_name`` (the pattern file, or a word like
    "patterns") starts the message.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise InputError(f"k must be a whole number, not {k!r}")
    if k < 0:
        raise InputError(f"k = {k}: the number of mismatches or differences allowed cannot be negative")
    lengths = patterns.lengths

    too_short = np.flatnonzero(lengths <= k)
    if too_short.size:
        i = int(too_short[0])
        raise InputError(f"{source_name}: pattern {quote(patterns.names[i])} has length {int(lengths[i])}, "
                         f"so with k = {k} it would match everywhere; k must be less than every "
                         f"pattern's length{_and_more(too_short.size)}")

    reference_lengths = np.asarray(reference_lengths, dtype=np.int64)
    longest = int(reference_lengths.max()) if reference_lengths.size else 0
    too_long = np.flatnonzero(shortest_hit_lengths(lengths, k, metric) > longest)
    if too_long.size:
        i = int(too_long[0])
        needs = "" if metric == "hamming" else f", and at least {int(lengths[i]) - k:,} with k = {k} differences"
        raise InputError(f"{source_name}: pattern {quote(patterns.names[i])} ({int(lengths[i]):,} bases{needs}) is "
                         f"longer than every reference record (the longest has {longest:,} bases)"
                         f"{_and_more(too_long.size)}")


def shortest_hit_lengths(pattern_lengths, k: int, metric: str) -> np.ndarray:
    """The shortest stretch of reference that can hold a hit of each pattern.

    Hamming: the whole pattern, m bases. Edit distance: m - k bases, since
    d(e) <= k allows k of the pattern's bases to be deleted (DESIGN.md).
    """
    lengths = np.asarray(pattern_lengths, dtype=np.int64)
    return lengths - k if metric == "edit" else lengths


def _and_more(count: int) -> str:
    return f" ({count - 1} more pattern{'s' if count > 2 else ''} with the same problem)" if count > 1 else ""


# --------------------------------------------------------------------------
# Python objects
# --------------------------------------------------------------------------

def _from_list(items, alphabet: str) -> PatternSet:
    """A list of sequences and/or (name, sequence) pairs."""
    pairs = []
    for i, item in enumerate(items, start=1):
        if isinstance(item, str):
            pairs.append((f"pattern_{i}", item))
        elif isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(x, str) for x in item):
            pairs.append((item[0], item[1]))
        else:
            raise TypeError(f"pattern list item {i}: expected a sequence string or a (name, sequence) "
                            f"pair of strings, not {item!r}")
    return _from_pairs(pairs, "pattern list", alphabet,
                       origin=lambda i, name: f"pattern list item {i} ({quote(name)})")


def _from_pairs(pairs: Iterable, what: str, alphabet: str, origin) -> PatternSet:
    collector = _Collector(what, alphabet)
    for i, (name, sequence) in enumerate(pairs, start=1):
        if not isinstance(name, str) or not isinstance(sequence, str):
            raise TypeError(f"{what}: names and sequences must be strings, not {name!r}: {sequence!r}")
        collector.add(name, sequence, origin(i, name))
    return collector.result(f"{what}: no patterns (it is empty)")


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------

STANDARD_INPUT = "-"
"""PATTERNS (and GUIDES) ``-``: read the patterns from standard input, in any format a file may have."""


def _read_pattern_file(path, alphabet: str) -> PatternSet:
    display = os.fspath(path)
    if display == STANDARD_INPUT:
        return _patterns_of_lines(_text_lines(_standard_input_bytes(), "standard input"), "standard input",
                                  alphabet)
    return _patterns_of_lines(_file_lines(Path(os.path.expanduser(display)), display), display, alphabet)


def _standard_input_bytes() -> bytes:
    """Everything on standard input (decompressed as a file would be)."""
    return decoded_bytes(sys.stdin.buffer.read(), "standard input")


def _patterns_of_lines(lines: list[str], display: str, alphabet: str) -> PatternSet:
    # Numbered lines that carry content: not blank, not a '#' comment.
    content = [(n, line) for n, line in enumerate(lines, start=1)
               if line.strip() and not line.lstrip().startswith("#")]
    if not content:
        raise InputError(f"{display}: contains no patterns (only blank or '#' comment lines)"
                         if any(line.strip() for line in lines) else f"{display}: is empty (no patterns)")

    first_line = content[0][1].lstrip()
    collector = _Collector(display, alphabet)
    if first_line.startswith(">"):
        _parse_fasta(content, display, collector)
    elif first_line.startswith("@"):
        raise InputError(f"{display}: line {content[0][0]}: looks like FASTQ (starts with '@'); give "
                         f"patterns as FASTA, as name<TAB>sequence lines, or one sequence per line")
    elif "\t" in first_line:
        _parse_tsv(content, display, collector)
    else:
        _parse_one_per_line(content, display, collector)
    return collector.result(f"{display}: contains no patterns")


def _file_lines(path: Path, display: str) -> list[str]:
    """The file's text lines (gzip/BGZF decompressed), or an InputError saying why not."""
    hint = ""
    if _LOOKS_LIKE_SEQUENCES.fullmatch(display):
        hint = (" (to search for that sequence itself, pass it in a list, e.g. "
                f"read_patterns([{display!r}]), or on the command line)")
    return _text_lines(file_bytes(path, "a pattern file", hint), display)


def _text_lines(data: bytes, display: str) -> list[str]:
    """The text lines of a pattern file's bytes, or an InputError saying why they are not text."""
    if b"\x00" in data:
        raise InputError(f"{display}: looks like binary data, not a text file of patterns")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_no = data[: err.start].count(b"\n") + 1
        raise InputError(f"{display}: line {line_no}: not UTF-8 text (byte 0x{data[err.start]:02X})") from None
    # split on '\n' only (str.splitlines also splits on form feeds and the like,
    # which would make our line numbers differ from an editor's)
    return [line.rstrip("\r") for line in text.split("\n")]


def _parse_fasta(content: list[tuple[int, str]], display: str, collector: _Collector) -> None:
    """``>name description`` lines, each followed by one or more sequence lines."""
    name, header_line, parts = None, 0, []

    def finish() -> None:
        if name is not None:
            collector.add(name, "".join(parts), f"{display}: line {header_line}", cleaned=True)

    for line_no, line in content:
        if line.lstrip().startswith(">"):
            finish()
            words = line.lstrip()[1:].split()
            if not words:
                raise InputError(f"{display}: line {line_no}: header line has no pattern name (nothing after '>')")
            name, header_line, parts = words[0], line_no, []
        else:  # content[0] is a header, so name is set; check each line to blame the right one
            parts.append(collector.clean(line, f"{display}: line {line_no}", name))
    finish()


def _parse_tsv(content: list[tuple[int, str]], display: str, collector: _Collector) -> None:
    """``name<TAB>sequence`` lines; a first line ``name<TAB>sequence`` is a header."""
    for position, (line_no, line) in enumerate(content):
        fields = line.split("\t")
        if len(fields) != 2:
            raise InputError(f"{display}: line {line_no}: expected 2 tab-separated columns (name, sequence), "
                             f"found {len(fields)}")
        if position == 0 and [f.strip().lower() for f in fields] in (["name", "sequence"], ["name", "seq"]):
            continue
        collector.add(fields[0], fields[1], f"{display}: line {line_no}")


def _parse_one_per_line(content: list[tuple[int, str]], display: str, collector: _Collector) -> None:
    """One sequence per line, named ``line_<n>``."""
    first = content[0][0]
    for line_no, line in content:
        if "\t" in line:
            raise InputError(f"{display}: line {line_no}: has a tab, but line {first} (the first pattern) "
                             f"has none; write either one sequence per line, or name<TAB>sequence on "
                             f"every line")
        collector.add(f"line_{line_no}", line, f"{display}: line {line_no}")
