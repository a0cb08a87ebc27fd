"""One pass over a FASTA file's bytes: its ``.fai`` index and its bases without line breaks.

:func:`scan_fasta` reads the (uncompressed) bytes of a FASTA file once, in
blocks (of about ``BLOCK_BYTES`` at most; a plain or BGZF file in as many
blocks as threads, or a multiple: :func:`block_bytes_for`) that start at a
line's start, on a thread pool (NumPy, ``os.preadv`` and the inflaters release the GIL, so blocks are
read and scanned on every core). A plain file and a BGZF file are read by
the scanning threads themselves (:func:`blocks_of_source`: each reads or
inflates its own stretch of the file, then extends it to the next newline);
a gzip stream, which only one thread can inflate, is cut into blocks as it
comes (:func:`blocks_of_stream`). There is no Python loop per line or per
record: each block is scanned in one pass of compiled code (``fasta_scan.c``,
built on first use and called without the GIL: :mod:`seqsift.io.native`), or,
where no C compiler is found, with vectorized NumPy calls that give the same
results. Its lines become runs of identical lines (length, carriage return,
'>' flag). When every block is in, the records' ``.fai`` columns (samtools'
format, as pyfaidx writes it: name, length, offset, bases per line, bytes
per line) come from those runs, in parts on threads, and so does the
``.fai``'s text. The sequence bytes
themselves (header lines and line endings dropped, case kept) go to a
``sink`` in order, or are written by the scanning threads straight to a
``destination``: the genome cache (:mod:`seqsift.io.genome_cache`) is
written in the same pass.

A record is *regular* (describable by a ``.fai``) when all its sequence lines
have the length of its first one, except the last non-blank line, which may
be shorter, and blank lines, which may only follow the last non-blank line.
That is samtools' rule. pyfaidx accepts the same files except that it also
takes a last line *longer* than the others (and then reads wrong bases) and
refuses some runs of trailing blank lines; on every file both accept, the
index here is byte for byte pyfaidx's (tests/test_io_scan.py checks it).
A file with an irregular record raises :class:`RaggedRecord`; the caller
rewrites it with even lines (reference.py) and scans the copy.
"""
from __future__ import annotations

import ctypes
import errno
import functools
import os
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, NamedTuple, Protocol, Sequence

import numpy as np

from . import native
from .genome_cache import ReadOnlyFile, read_file_into
from .text_list import _HASHED_BYTES, TextList

__all__ = ["scan_fasta", "FastaLayout", "Destination", "RaggedRecord", "HeaderProblem", "BlockSource",
           "PlainFile", "blocks_of_source", "blocks_of_stream", "BLOCK_BYTES", "worker_threads", "joined_lines",
           "names_and_headers"]

BLOCK_BYTES = 8 << 20
"""Bytes per scanned block, at most. Small enough that each thread's temporaries are
reused from the heap instead of freshly faulted in (cold opens of a 1 GB
genome here: 2.1 s of kernel time with 64 MiB blocks, 0.7 s with 16 MiB,
0.6 s with 4 MiB), large enough that the ~30 NumPy calls per block vanish.
"""

MIN_BLOCK_BYTES = 1 << 20
"""Bytes per scanned block, at least (:func:`block_bytes_for`): below it a block's fixed cost (its
NumPy calls, its thread's turn at the GIL between them) outweighs its bytes."""


def block_bytes_for(total: int, threads: int) -> int:
    """Bytes per block for a file of ``total`` bytes scanned on ``threads`` threads: as many blocks as
    threads, or a multiple of it, each at most BLOCK_BYTES and at least MIN_BLOCK_BYTES.

    A file of a few blocks is otherwise scanned by a few threads while the others idle (10^5 records
    of 100 bp, 14 MB: two blocks of 8 MiB for 16 cores), and one of a few blocks more than there are
    threads waits for its last ones alone (10^6 records, 142 MB: 17 blocks, a second round of one)."""
    rounds = -(-total // (threads * BLOCK_BYTES))       # blocks per thread
    return max(MIN_BLOCK_BYTES, -(-total // max(1, threads * rounds)))

_NEWLINE, _CR, _GT = 10, 13, ord(">")


def worker_threads() -> int:
    """Threads for reading: the CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class RaggedRecord(Exception):
    """A record whose lines a ``.fai`` cannot describe (line ``line`` is the first bad one)."""

    def __init__(self, record: str, line: int):
        super().__init__(f"record '{record}', line {line}")
        self.record, self.line = record, line
        self.where = f" (record '{record}', line {line})"


class HeaderProblem(Exception):
    """Something a byte-level scan cannot explain well (a header without a name or not
    UTF-8, a non-ASCII byte in a sequence); the caller
    re-reads the file line by line to name the line in its error message."""


@dataclass
class FastaLayout:
    """What a scan learnt: the records' names and ``.fai`` columns (int64 arrays)."""

    names: TextList   # a Sequence[str]
    lengths: np.ndarray
    offsets: np.ndarray
    line_bases: np.ndarray
    line_bytes: np.ndarray
    total_bytes: int  # the uncompressed file's size
    header_lines: np.ndarray | None = None  # 1-based line number of each record's header
    headers: TextList | None = None  # each header line after '>', where any has more than the name
    name_hashes: np.ndarray | None = None  # TextList.hashes of the names, found by the scanning threads
    names_distinct: bool | None = None  # TextList.all_distinct of the names, found beside the layout (None: not)

    def fai_text(self) -> str:
        """The ``.fai`` file's text (samtools' and pyfaidx's format): :meth:`fai_bytes`, decoded."""
        return self.fai_bytes().decode("utf-8")

    def fai_bytes(self, threads: int | None = None) -> bytes:
        """The ``.fai`` file's bytes, as written: ``name<TAB>length<TAB>offset<TAB>line bases<TAB>line bytes``
        per record.

        Written by fasta_scan.c's ``format_fai`` (through :mod:`seqsift.io.native`), or where that cannot
        be built by NumPy (:func:`table_bytes`), not joined from a Python string per field (for 10^6
        records 0.1 s instead of 0.5 s); many records in parts, on up to ``threads`` threads
        (:func:`record_parts`)."""
        if not self.names:
            return b""
        names = TextList.of(self.names)
        columns = [np.ascontiguousarray(column, dtype=np.int64) for column in
                   (self.lengths, self.offsets, self.line_bases, self.line_bytes)]
        name_ends = np.ascontiguousarray(names.ends)
        functions = native.library()

        def lines_of(first: int, stop: int) -> bytes | memoryview:
            if functions is None:
                return table_bytes(names.part(first, stop), [column[first:stop] for column in columns])
            name_bytes = int(name_ends[stop - 1]) + 1 - (int(name_ends[first - 1]) + 1 if first else 0)
            out = np.empty(name_bytes + 81 * (stop - first), np.uint8)   # (4 tabs, 4 x 19 digits, a newline)
            written = functions.format_fai(names.text, name_ends.ctypes.data, first, stop,
                                           *(column.ctypes.data for column in columns), out.ctypes.data)
            return memoryview(out)[:written]

        threads = threads or worker_threads()
        return b"".join(_on_threads(lines_of, record_parts(len(names), threads), None, threads))


def table_bytes(names: Sequence[str], columns: list[np.ndarray]) -> bytes:
    """Lines of ``name<TAB>column 0<TAB>...<TAB>column c-1``, UTF-8, each ending in a newline; ``names``
    hold no tab or line break, the columns non-negative integers.

    Each line's part after its name is written as a column of a matrix with one row per character
    place (a tab, then each number right-aligned in as many places as its column's widest, one NumPy
    divmod per decimal place; the newline), whose rows are written whole; the matrix turned to one line
    per row, a mask drops the padding, and one more mask merges the names' bytes in front of each part.
    """
    names = TextList.of(names)
    count = len(names)
    values = [np.asarray(column, dtype=np.int64) for column in columns]
    widths = [_decimal_digits(value) for value in values]
    widest = [int(width.max(initial=1)) for width in widths]
    places = sum(widest) + len(values) + 1
    chars = np.empty((places, count), np.uint8)
    kept = np.empty((places, count), bool)
    place = 0
    for value, width, wide in zip(values, widths, widest):
        chars[place], kept[place] = ord("\t"), True
        for digit_place in range(place + wide, place, -1):     # the last digit first
            value, digit = np.divmod(value, 10)
            np.add(digit, ord("0"), out=chars[digit_place], casting="unsafe")
            np.greater_equal(width, place + wide + 1 - digit_place, out=kept[digit_place])
        place += wide + 1
    chars[place], kept[place] = ord("\n"), True
    line_kept = np.ascontiguousarray(kept.T)
    numbers = np.ascontiguousarray(chars.T)[line_kept]   # each line's part after its name, in line order
    number_widths = line_kept.sum(axis=1)
    name_widths = np.diff(names.ends, prepend=-1) - 1
    # name, numbers, name, numbers, ...: True for a name's bytes, False for the numbers'
    is_name = np.repeat(np.tile(np.array([True, False]), count), np.column_stack((name_widths, number_widths)).ravel())
    out = np.empty(len(is_name), np.uint8)
    out[is_name] = names.packed()[1]
    out[~is_name] = numbers
    return out.tobytes()


def _decimal_digits(values: np.ndarray) -> np.ndarray:
    """How many decimal digits each non-negative int64 has (0 has one)."""
    return np.maximum(np.searchsorted(_POWERS_OF_TEN, values, side="right"), 1)


_POWERS_OF_TEN = 10 ** np.arange(19, dtype=np.int64)


# --------------------------------------------------------------------------
# Blocks: each starts at a line's start (a stream's may start inside a long line)
# --------------------------------------------------------------------------

@dataclass
class _Block:
    data: np.ndarray      # uint8 view of the bytes
    continues_line: bool  # data[0] is not at the start of a line (the previous block had no newline)


class BlockSource(Protocol):
    """A file whose (uncompressed) bytes any thread can read, by units: the 64 KiB
    pieces of a plain file (:class:`PlainFile`) or the blocks of a BGZF file
    (:class:`seqsift.io.decompress.BgzfFile`)."""

    starts: np.ndarray  # int64, ascending: where each unit starts in the file
    total: int          # the file's size

    def read_into(self, first: int, stop: int, out: np.ndarray) -> None:
        """Units [first, stop) into ``out`` (uint8, exactly their size)."""


class PlainFile(ReadOnlyFile):
    """A plain file, read with ``os.preadv`` from any thread in units of ``piece`` bytes.

    Each scanning thread reads its own block into a buffer it reuses: from
    the page cache that costs a memory copy (about 0.07 s of CPU per GB), on
    every core at once. (One thread reading for all of them ran at 3 GB/s on
    the H100 host, the whole open's speed; touching a memory map of the file
    instead cost 0.6 to 0.9 s per GB in page faults.)
    """

    def __init__(self, path: str, piece: int = 1 << 16):
        super().__init__(path)
        self.total = os.fstat(self.fd).st_size
        self.starts = np.arange(0, self.total, piece, dtype=np.int64)

    def read_into(self, first: int, stop: int, out: np.ndarray) -> None:
        try:
            read_file_into(self.fd, out, int(self.starts[first]))
        except EOFError:
            raise OSError(errno.EIO, "the file got shorter while it was read") from None


def _cut(data: np.ndarray, continues: bool) -> int:
    """Where to end a block of ``data``: after its last newline; 0 to wait for more (a header
    line longer than the block); else (one very long sequence line) anywhere but inside a '\r\n'."""
    newlines = np.flatnonzero(data[-(1 << 20):] == _NEWLINE)  # the last MiB: lines are shorter, mostly
    if not len(newlines):
        newlines = np.flatnonzero(data == _NEWLINE)
    if len(newlines):
        return len(data) - min(len(data), 1 << 20) + int(newlines[-1]) + 1
    if not continues and data[0] == _GT:
        return 0
    return len(data) - 1 if data[-1] == _CR and len(data) > 1 else len(data)


def blocks_of_stream(chunks: Iterable[bytes], block_bytes: int = BLOCK_BYTES) -> Iterator[_Block]:
    """Blocks of a stream of byte chunks (a decompressor's output), re-cut after newlines
    (a gzip stream, which only one thread can inflate)."""
    carry = b""
    continues = False
    pending: list[bytes] = []
    pending_size = 0

    def emit(data: bytes | memoryview) -> _Block:
        nonlocal continues
        block = _Block(np.frombuffer(data, dtype=np.uint8), continues)
        continues = bool(data) and data[-1] != _NEWLINE
        return block

    for chunk in chunks:
        if not chunk:
            continue
        pending.append(chunk)
        pending_size += len(chunk)
        if pending_size < block_bytes:
            continue
        data = carry + b"".join(pending)
        pending, pending_size = [], 0
        cut = _cut(np.frombuffer(data, dtype=np.uint8), continues)
        if cut == 0:
            carry = data  # a header longer than a block: wait for its end
            continue
        carry = data[cut:]
        yield emit(memoryview(data)[:cut])
    data = carry + b"".join(pending)
    if data:
        yield emit(data)


def blocks_of_source(source: BlockSource, block_bytes: int = BLOCK_BYTES) -> Iterator[Callable[[], _Block]]:
    """Blocks of ``source``, each read (inflated) by the scanning thread that scans it.

    The source's units go in batches of about ``block_bytes``. The scanned
    block of batch k runs from just after the first newline in its batch
    (the file's start for the first) to just after the first newline at or
    after the next batch's start: the task reads its batch and then the next
    batch's units one by one until that newline. Every block so starts at a
    line's start (a header is never cut), and the blocks tile the file. A
    batch with no newline (inside a line longer than the batch) scans
    nothing; the block before it reaches over it.
    """
    for k, (first, stop) in enumerate(_batches(source.starts, source.total, block_bytes)):
        yield functools.partial(_read_block, source, first, stop, k == 0)


def _batches(starts: np.ndarray, total: int, batch_bytes: int) -> list[tuple[int, int]]:
    """Consecutive (first, stop) unit ranges of about ``batch_bytes`` each, covering every unit."""
    if not len(starts):
        return []
    wanted = np.arange(0, total, max(1, batch_bytes))
    firsts = np.searchsorted(starts, wanted, side="right") - 1
    firsts = firsts[np.append(True, firsts[1:] != firsts[:-1])]   # (ascending: np.unique, without its imports)
    return list(zip(firsts.tolist(), np.append(firsts[1:], len(starts)).tolist()))


_buffers = threading.local()


def _read_block(source: BlockSource, first: int, stop: int, at_file_start: bool) -> _Block:
    units = len(source.starts)

    def start_of(unit: int) -> int:
        return source.total if unit >= units else int(source.starts[unit])

    begin = start_of(first)
    own = start_of(stop) - begin
    buffer = _block_buffer(own + (1 << 16))
    source.read_into(first, stop, buffer[:own])
    start = 0
    if not at_file_start:
        newline = _first_newline(buffer[:own])
        if newline < 0:
            return _Block(buffer[:0], False)
        start = newline + 1
    end, unit = own, stop
    while unit < units:  # on to the first newline at or after the next batch's start
        size = start_of(unit + 1) - start_of(unit)
        if len(buffer) < end + size:
            buffer = _block_buffer(2 * (end + size), keep=end)
        source.read_into(unit, unit + 1, buffer[end:end + size])
        newline = _first_newline(buffer[end:end + size])
        unit += 1
        if newline >= 0:
            end += newline + 1
            break
        end += size
    return _Block(buffer[start:end], False)


def _block_buffer(size: int, keep: int = 0) -> np.ndarray:
    """This thread's reusable buffer of at least ``size`` bytes, its first ``keep`` kept when it grows."""
    buffer = getattr(_buffers, "buffer", None)
    if buffer is None or len(buffer) < size:
        grown = np.empty(size, dtype=np.uint8)
        if keep:
            grown[:keep] = buffer[:keep]
        buffer = _buffers.buffer = grown
    return buffer


def _first_newline(data: np.ndarray) -> int:
    """Index of the first '\\n' in ``data``, or -1 (looked for in the first 64 KiB first: lines are short)."""
    for window in (data[:1 << 16], data):
        found = np.flatnonzero(window == _NEWLINE)
        if len(found):
            return int(found[0])
    return -1


# --------------------------------------------------------------------------
# One block: lines as arrays, and the block's sequence bytes
# --------------------------------------------------------------------------

@dataclass
class _Lines:
    """The lines of one block as runs of identical consecutive lines.

    A FASTA file is mostly runs of equal lines (a 3 Gbp genome: 52 M lines,
    a few runs per record), so the blocks hand over runs and the analysis
    of the whole file (``_layout``) costs next to nothing. Header lines, the
    block's first line and its last line are runs of their own (the first
    may continue the previous block's last line: ``continues_line``).
    """

    length: np.ndarray       # bytes of each line of the run, its '\n' included
    carriage: np.ndarray     # bool: the lines end in '\r' before their '\n' (or before the end of the file)
    newline: np.ndarray      # bool: the lines end with '\n' (False only for an open last line)
    header: np.ndarray       # bool: the line starts with '>' (a run of one)
    count: np.ndarray        # lines in the run
    header_text: bytes        # the header lines without '>' and line ending, joined by '\n' (b"": none)
    names: tuple[TextList, TextList] | None  # first_words(header_text), found on the scanning thread (None:
                                             # no header, or left to names_and_headers' slow path)
    name_hashes: np.ndarray | None  # names[0].hashes(), likewise (None: no names, or too long to hash)
    sequence: np.ndarray | None  # the block's sequence bytes (no headers, no line endings)
    before_first_header: int  # sequence bytes that precede the block's first header (-1: no header)
    non_ascii: bool           # a byte >= 0x80 outside the header lines
    continues_line: bool      # the first line began in the previous block


_scratch = threading.local()


def _scratch_mask(size: int) -> np.ndarray:
    """This thread's reusable bool array of ``size`` (fresh 64 MiB arrays per block cost
    more in page faults, and in the kernel's hugepage compaction, than the scan itself)."""
    mask = getattr(_scratch, "mask", None)
    if mask is None or len(mask) < size:
        mask = _scratch.mask = np.empty(size, dtype=bool)
    return mask[:size]


def _scratch_array(name: str, size: int, dtype) -> np.ndarray:
    """This thread's reusable array ``name`` of at least ``size`` entries of ``dtype`` (its first ``size``)."""
    array = getattr(_scratch, name, None)
    if array is None or len(array) < size:
        array = np.empty(max(size, 1), dtype)
        setattr(_scratch, name, array)
    return array[:size]


def _scan_block(block: _Block) -> _Lines:
    """The block's lines as runs, its header text, names and bases: in one compiled pass
    (fasta_scan.c, through :mod:`seqsift.io.native`), or where that cannot be built, through NumPy."""
    functions = native.library()
    if functions is None:
        return _scan_block_numpy(block)
    return _scan_block_compiled(block, functions)


def _scan_block_compiled(block: _Block, functions) -> _Lines:
    data = np.ascontiguousarray(block.data, dtype=np.uint8)   # (a block's bytes are: no copy)
    size = len(data)
    lines = functions.count_newlines(data.ctypes.data, size) + 1   # (the block's lines, at most)
    # What is copied out below goes into this thread's scratch arrays (fresh ones cost page faults).
    length, count, header_ends, name_ends, name_hashes = (_scratch_array(name, lines, type) for name, type in (
        ("length", np.int64), ("count", np.int64), ("header_ends", np.int64), ("name_ends", np.int64),
        ("name_hashes", np.uint64)))
    carriage, newline, header = (_scratch_array(name, lines, bool) for name in ("carriage", "newline", "header"))
    header_text, name_text = _scratch_array("header_text", size, np.uint8), _scratch_array("name_text", size, np.uint8)
    sequence = np.empty(size, np.uint8)   # (handed on)
    counts = native.BlockCounts()
    runs = functions.scan_block(data.ctypes.data, size, int(block.continues_line), _HASHED_BYTES,
                                *(array.ctypes.data for array in (length, carriage, newline, header, count, header_text,
                                                                  header_ends, name_text, name_ends, name_hashes,
                                                                  sequence)), ctypes.byref(counts))
    headers = counts.headers
    header_lines = header_text[:counts.header_bytes].tobytes()   # each followed by '\n'
    names = hashes = None
    if headers and not counts.names_unknown:   # (else _names_of decodes the header text, as first_words says)
        header_list = TextList(header_lines, header_ends[:headers].copy())
        name_list = TextList(name_text[:counts.name_bytes].tobytes(), name_ends[:headers].copy()) if counts.described \
            else header_list
        names = (name_list, header_list)
        hashes = None if counts.name_too_long else name_hashes[:headers].copy()
    return _Lines(length=length[:runs].copy(), carriage=carriage[:runs].copy(), newline=newline[:runs].copy(),
                  header=header[:runs].copy(), count=count[:runs].copy(), header_text=header_lines[:-1], names=names,
                  name_hashes=hashes,
                  sequence=sequence[:counts.sequence_bytes], before_first_header=counts.before_first_header,
                  non_ascii=bool(counts.sequence_non_ascii), continues_line=block.continues_line)


def _scan_block_numpy(block: _Block) -> _Lines:
    data = block.data
    size = len(data)
    is_newline = np.equal(data, _NEWLINE, out=_scratch_mask(size))
    newlines = np.flatnonzero(is_newline)
    open_tail = size - (int(newlines[-1]) + 1 if len(newlines) else 0)  # bytes after the last '\n'
    ends = newlines if not open_tail else np.append(newlines, size)    # one past each line's last byte
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    length = ends - starts + 1
    newline = np.ones(len(ends), dtype=bool)
    if open_tail:
        length[-1] -= 1
        newline[-1] = False
    nonempty = ends > starts
    carriage = nonempty & (data[np.maximum(ends - 1, 0)] == _CR)
    header = nonempty & (data[np.minimum(starts, size - 1)] == _GT)
    if block.continues_line and len(header):
        header[0] = False  # the line began in the previous block, as a sequence line
    heads = np.flatnonzero(header)  # (a header line is never cut: see _cut)

    lines = len(length)
    change = np.ones(lines, dtype=bool)  # where a run starts
    change[1:] = ((length[1:] != length[:-1]) | (carriage[1:] != carriage[:-1]) | (newline[1:] != newline[:-1])
                  | header[1:] | header[:-1])
    change[1:2] = True   # the first line alone (it may continue the previous block's last)
    change[-1:] = True   # the last line alone (it may go on in the next block)
    runs = np.flatnonzero(change)
    run_lines = np.diff(np.append(runs, lines))
    if len(runs) <= _FEW_RUNS:
        header_text = joined_lines(data, starts[heads] + 1, ends[heads] - carriage[heads])
        ending = newline[runs].astype(np.int64) + carriage[runs]  # bytes of each run's line ending
        sequence, before_first = _sequence_by_runs(data, starts[runs], length[runs], ending, header[runs], run_lines)
    else:
        header_text, sequence, before_first = _split_by_mask(data, is_newline, starts, ends, newline, carriage, heads)
    names = first_words(header_text) if len(heads) else None   # here, in parallel, not after the scan
    name_hashes = names[0].hashes() if names is not None else None   # (for the duplicate check)
    non_ascii = bool(sequence.size and sequence.max() >= 0x80)
    return _Lines(length=length[runs], carriage=carriage[runs], newline=newline[runs], header=header[runs],
                  count=run_lines, header_text=header_text, names=names, name_hashes=name_hashes, sequence=sequence,
                  before_first_header=before_first, non_ascii=non_ascii, continues_line=block.continues_line)


def joined_lines(data: np.ndarray, first: np.ndarray, end: np.ndarray) -> bytes:
    """The bytes ``data[first[i]:end[i]]`` of every i (ascending, not overlapping), joined by '\\n',
    gathered at once (a block of short records holds thousands of header lines): through a mask of
    runs (:func:`spans_mask`), not an index per byte."""
    if not len(first):
        return b""
    if int(end[-1]) < len(data) and (first[1:] > end[:-1]).all() and (data[end] == _NEWLINE).all():
        # each span followed by its own newline (lines that end in '\n' alone): those are the separators
        return data[spans_mask(len(data), first, end + 1)][:-1].tobytes()
    widths = end - first
    text = np.empty(int(widths.sum()) + len(first) - 1, dtype=np.uint8)
    is_separator = np.zeros(len(text), dtype=bool)
    is_separator[np.cumsum(widths[:-1] + 1) - 1] = True   # after each line but the last
    text[is_separator] = _NEWLINE
    text[~is_separator] = data[spans_mask(len(data), first, end)]
    return text.tobytes()


def spans_mask(size: int, first: np.ndarray, stop: np.ndarray, inside: bool = True) -> np.ndarray:
    """A bool array of ``size``: ``inside`` on every span [first[k], stop[k]) (ascending, not
    overlapping, within ``size``), the opposite elsewhere. One ``np.repeat`` of alternating runs: a
    byte apiece, where an index of the spans' bytes took eight (and most of a block's scan, with
    10^6 records of 100 bp: their headers are a quarter of the file)."""
    runs = np.empty(2 * len(first) + 1, dtype=np.int64)
    runs[0:-1:2] = first - np.concatenate(([0], stop[:-1]))   # before span k
    runs[1::2] = stop - first                                 # span k
    runs[-1] = size - (int(stop[-1]) if len(stop) else 0)     # after the last
    values = np.full(len(runs), not inside)
    values[1::2] = inside
    return np.repeat(values, runs)


_FEW_RUNS = 64
"""Up to this many runs of equal lines in a block (a genome: a handful), its bases are copied run by
run (_sequence_by_runs) and its header lines gathered by joined_lines; past it (short records: reads,
amplicons) both through masks (_split_by_mask: a few NumPy calls whatever the number of records).
Both give the same bytes; by runs is about twice as
fast (a strided copy instead of a masked one)."""


def _sequence_by_runs(data: np.ndarray, run_start: np.ndarray, run_width: np.ndarray, run_ending: np.ndarray,
                      run_header: np.ndarray, run_lines: np.ndarray) -> tuple[np.ndarray, int]:
    """(the block's sequence bytes, how many precede its first header or -1), run by run: a run's
    ``run_lines`` lines of ``run_width`` bytes are a 2-D view whose first columns are the bases
    (``run_ending``: the line ending's bytes, '\\r\\n', '\\n' or none)."""
    bases = np.where(run_header, 0, run_width - run_ending)
    placed_per_run = bases * run_lines
    sequence = np.empty(int(placed_per_run.sum()), dtype=np.uint8)
    placed = 0
    for start, lines, width, kept in zip(run_start.tolist(), run_lines.tolist(), run_width.tolist(), bases.tolist()):
        if kept:
            rows = data[start:start + lines * width].reshape(lines, width)
            sequence[placed:placed + lines * kept].reshape(lines, kept)[:] = rows[:, :kept]
            placed += lines * kept
    heads = np.flatnonzero(run_header)
    return sequence, int(placed_per_run[:heads[0]].sum()) if len(heads) else -1


def _split_by_mask(data: np.ndarray, is_newline: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                   newline: np.ndarray, carriage: np.ndarray, heads: np.ndarray) -> tuple[bytes, np.ndarray, int]:
    """(the header text as joined_lines gives it, the sequence bytes, how many precede the first header
    or -1), as _sequence_by_runs and joined_lines give them, through one mask of the header lines
    (:func:`spans_mask`, '>' and line ending included). The header lines are copied whole and their '>'
    and line endings dropped from that copy; the sequence is every byte but the line endings and the
    header lines. One mask of the block where there had been two: ``np.repeat``, which builds it, holds
    the GIL, and on 16 threads the scanning threads of a file of short records waited on it."""
    keep = np.logical_not(is_newline, out=is_newline)  # the same memory, from here on
    keep[ends[carriage] - 1] = False
    if not len(heads):
        return b"", data[keep], -1
    line_stop = ends[heads] + newline[heads]
    in_header = spans_mask(len(data), starts[heads], line_stop)
    header_lines = data[in_header]                      # each header line whole
    line_width = line_stop - starts[heads]
    line_start = np.cumsum(line_width) - line_width     # where each begins in header_lines
    drop = np.zeros(len(header_lines), dtype=bool)
    drop[line_start] = True                             # its '>'
    drop[(line_start + line_width - newline[heads] - 1)[carriage[heads]]] = True   # its '\r'
    text = header_lines[~drop]
    if newline[heads[-1]]:
        text = text[:-1]                                # the last header line's '\n': joined, not ended
    np.greater(keep, in_header, out=keep)               # keep, and not a header line
    before_first = int(np.count_nonzero(keep[:int(starts[heads[0]])]))
    return text.tobytes(), data[keep], before_first


# --------------------------------------------------------------------------
# The whole file
# --------------------------------------------------------------------------

class Destination(Protocol):
    """Where scan_fasta's threads put the bases themselves (the genome cache)."""

    def write(self, offset: int, sequence: np.ndarray) -> None:
        """Bases ``[offset, offset + len(sequence))`` of the file's concatenated records (from any thread)."""


def scan_fasta(blocks: Iterable[_Block | Callable[[], _Block]], sink: Callable[[np.ndarray], None] | None = None,
               threads: int | None = None, require_regular: bool = True, check_ascii: bool = True,
               destination: Destination | None = None, header_errors: str = "strict",
               find_duplicates: bool = True) -> FastaLayout:
    """Scan ``blocks`` (from blocks_of_stream, or functions that make a block on the scanning
    thread, from blocks_of_source) into a FastaLayout.

    The bases of every record, in file order (record i's are the next
    ``lengths[i]``), go to ``sink`` (called in this thread with uint8 arrays)
    and/or ``destination``, into which the scanning threads copy them
    themselves, in parallel (each block learns where its bases go from the
    block before it, as soon as that block knows how many it has).
    Raises RaggedRecord (unless not ``require_regular``: then the .fai
    columns of irregular records are meaningless, the names, lengths and
    bases right) or HeaderProblem (a non-ASCII sequence byte only with
    ``check_ascii``); the caller checks what a .fai cannot say (no records,
    empty records, duplicates). ``header_errors``: how headers that are not
    UTF-8 are decoded (``str.decode``'s errors; "strict" raises HeaderProblem). ``find_duplicates``:
    whether to tell if the names are distinct (``FastaLayout.names_distinct``, else None), beside the layout.
    """
    threads = threads or worker_threads()
    parts: list[_Lines] = []
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="seqsift-scan") as pool:
        for lines in _in_order(pool, blocks, 2 * threads, destination):
            if lines.non_ascii and check_ascii:
                raise HeaderProblem("a non-ASCII byte")
            if sink is not None and len(lines.sequence):
                sink(lines.sequence)
            lines.sequence = None
            parts.append(lines)
        return _layout(parts, require_regular, header_errors, pool, threads, find_duplicates)


def _in_order(pool: ThreadPoolExecutor, blocks: Iterable[_Block | Callable[[], _Block]], ahead: int,
              destination: Destination | None) -> Iterator[_Lines]:
    """Scan blocks on the pool, at most ``ahead`` at once, yielding results in order.

    Each task hands the next one (through a Future) where its bases end and
    whether a header has been seen; tasks start in order, so the one a task
    waits for is always running or done.
    """
    queue = []
    before: Future = Future()
    before.set_result((0, False))
    for block in blocks:
        after: Future = Future()
        queue.append(pool.submit(_scan_and_place, block, destination, before, after))
        before = after
        if len(queue) >= ahead:
            yield queue.pop(0).result()
    while queue:
        yield queue.pop(0).result()


def _scan_and_place(block: _Block | Callable[[], _Block], destination: Destination | None, before: Future,
                    after: Future) -> _Lines:
    try:
        lines = _scan_block(block() if callable(block) else block)
        offset, seen_header = before.result()
    except BaseException as err:
        after.set_exception(err)  # the tasks after this one fail too, instead of waiting forever
        raise
    sequence = lines.sequence
    if not seen_header:  # blank lines before the first header are no record's bases
        sequence = sequence[lines.before_first_header:] if lines.before_first_header >= 0 else sequence[:0]
    after.set_result((offset + len(sequence), seen_header or bool(lines.header.any())))
    if destination is not None and len(sequence):
        destination.write(offset, sequence)
    lines.sequence = sequence
    return lines


def _join_lines(parts: list[_Lines], pool: ThreadPoolExecutor | None = None, threads: int = 1) -> "_Runs":
    """All blocks' runs as one set; a line cut between blocks (a run of one on
    each side) becomes one line. Each block's runs are copied into the joined
    columns by a thread of ``pool`` (10^6 records are 2-3 million runs: the
    columns' 100 MB were 0.03 s of one thread on the H100 host)."""
    run_stops = np.cumsum([len(part.length) for part in parts], dtype=np.int64)
    run_firsts = [int(stop) - len(part.length) for part, stop in zip(parts, run_stops)]
    total = int(run_stops[-1]) if len(parts) else 0
    runs = _Runs(*(np.empty(total, dtype) for dtype in (np.int64, bool, bool, bool, np.int64, np.int64)))

    def copy_part(index: int, first: int, stop: int) -> None:
        part = parts[index]
        for joined, own in ((runs.length, part.length), (runs.carriage, part.carriage), (runs.newline, part.newline),
                            (runs.header, part.header), (runs.count, part.count)):
            joined[first:stop] = own
        np.multiply(runs.length[first:stop], runs.count[first:stop], out=runs.bytes[first:stop])

    _on_threads(copy_part, [(index, first, int(stop)) for index, (first, stop)
                            in enumerate(zip(run_firsts, run_stops))], pool, threads)
    continued = [first for part, first in zip(parts, run_firsts) if part.continues_line and len(part.length)]
    if not continued:
        return runs
    goes_on = np.zeros(total, dtype=bool)
    goes_on[continued] = True
    starts = np.flatnonzero(~goes_on)   # pieces of one line: summed, the ending from the last piece
    lasts = np.append(starts[1:], total) - 1
    length = np.add.reduceat(runs.length, starts)
    count = runs.count[starts]
    return _Runs(length, runs.carriage[lasts], runs.newline[lasts], runs.header[starts], count, length * count)


_SPACE = np.zeros(256, dtype=bool)
_SPACE[[ord(c) for c in " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"]] = True
"""The ASCII bytes that ``str.split()`` and a regular expression's ``\\s`` take for whitespace."""


def first_words(lines: bytes) -> tuple[TextList, TextList] | None:
    """(each line's first word, the lines), for ASCII ``lines`` joined by newlines, found with NumPy:
    what ``[line.split()[0] for line in lines.split("\\n")]`` gives, without a str per line.

    None where the text is not ASCII (Unicode has whitespace of its own: the caller decodes it)
    or a line has no word (the caller says which).
    """
    if not lines.isascii():
        return None
    text = lines + b"\n"
    data = np.frombuffer(text, dtype=np.uint8)
    low = np.flatnonzero(data <= 32)                    # the few bytes that may be whitespace
    blanks = low[_SPACE[data[low]]]                     # the whitespace, every line's newline among it
    line_end = blanks[data[blanks] == _NEWLINE]
    headers = TextList(text, line_end)
    line_start = np.empty_like(line_end)
    line_start[:1] = 0
    line_start[1:] = line_end[:-1] + 1
    name_start = line_start.copy()
    leading = np.flatnonzero(_SPACE[data[line_start]] & (line_start < line_end))  # lines that start with blanks
    while len(leading):                                 # (rare): step each over one blank a round
        name_start[leading] += 1
        leading = leading[_SPACE[data[name_start[leading]]] & (name_start[leading] < line_end[leading])]
    if (name_start >= line_end).any():
        return None
    name_end = blanks[np.searchsorted(blanks, name_start)]
    if (name_end == line_end).all() and (name_start == line_start).all():   # every line is its name
        return headers, headers
    # Kept: each name, and its line's newline (right after the name where the line has nothing more).
    width = name_end - name_start
    kept_first = np.column_stack((name_start, line_end)).ravel()
    kept_stop = np.column_stack((name_end, line_end + 1)).ravel()
    return TextList(data[spans_mask(len(data), kept_first, kept_stop)].tobytes(), np.cumsum(width + 1) - 1), headers


_FIRST_WORD = re.compile(r"^[^\S\n]*(\S+)", re.MULTILINE)
"""Each line's first word, as ``line.split()[0]`` finds it (a line of blanks has none)."""


def names_and_headers(texts: list[bytes], header_errors: str) -> tuple[TextList, TextList]:
    """Each record's name (the header's first word) and its whole header line, as TextLists.

    ASCII headers (all of a usual reference's) are never decoded: the names are found on the bytes
    (:func:`first_words`), a reference of 10^6 records holds two texts, not
    2 x 10^6 strs. Other headers are decoded as UTF-8 and split as one text (a line break is never
    part of a multi-byte sequence), as ``line.split()[0]`` would split each.
    """
    if not texts:
        return TextList.of(()), TextList.of(())
    joined = b"\n".join(texts)
    found = first_words(joined)
    if found is not None:
        return found
    try:
        text = joined.decode("utf-8", errors=header_errors)
    except UnicodeDecodeError:
        raise HeaderProblem("a header that is not UTF-8") from None
    headers = text.split("\n")
    names = _FIRST_WORD.findall(text)
    if len(names) != len(headers):
        raise HeaderProblem("a header without a name")
    return TextList.of(names), TextList.of(headers)


def _blocks_named(with_headers: list[_Lines]) -> bool:
    """Whether the blocks that hold headers found their records' names (ASCII headers, each with a name)."""
    return bool(with_headers) and all(part.names is not None for part in with_headers)


def _headers_apart(with_headers: list[_Lines]) -> bool:
    """Whether the whole header lines are joined apart from the names (:func:`_block_headers`): where the
    blocks found the names and some header has a description (a header line that is not its name)."""
    return _blocks_named(with_headers) and not all(part.names[0] is part.names[1] for part in with_headers)


def _names_of(with_headers: list[_Lines], header_errors: str) -> tuple[TextList, TextList | None, np.ndarray | None]:
    """The records' names, header lines and names' hashes (or None) of the blocks that hold headers: the
    blocks' own joined, else :func:`names_and_headers` over all the header lines at once. The header
    lines are None where :func:`_headers_apart`: :func:`_block_headers` joins them (on another thread,
    beside these)."""
    if not _blocks_named(with_headers):
        return *names_and_headers([part.header_text for part in with_headers], header_errors), None
    names = TextList.concatenate(part.names[0] for part in with_headers)
    hashes = [part.name_hashes for part in with_headers]
    hashes = np.concatenate(hashes) if all(h is not None for h in hashes) else None
    return names, None if _headers_apart(with_headers) else names, hashes


def _block_headers(with_headers: list[_Lines]) -> TextList:
    """The whole header lines, joined from the blocks' (where :func:`_headers_apart`; 10^6 headers with
    descriptions are 40 MB: 0.02-0.04 s to join)."""
    return TextList.concatenate(part.names[1] for part in with_headers)


def _names_checked(with_headers: list[_Lines], header_errors: str,
                   find_duplicates: bool) -> tuple[TextList, TextList | None, np.ndarray | None, bool | None]:
    """:func:`_names_of`, and (``find_duplicates``; else None) whether the names are distinct
    (:meth:`TextList.all_distinct`: the blocks' hashes sorted), on a thread of its own beside the layout
    (for 10^6 records the sort is 0.01-0.05 s that the duplicate check no longer takes after it)."""
    names, headers, hashes = _names_of(with_headers, header_errors)
    return names, headers, hashes, names.all_distinct(hashes) if find_duplicates else None


RECORDS_PER_PART = 1 << 17
"""Past twice this many records, the records' ``.fai`` columns (:func:`_layout`) and the ``.fai``'s text
(:meth:`FastaLayout.fai_bytes`) are worked out in parts of this many records or a little more, on
threads. NumPy releases the GIL for most of it, and a part's temporaries (a few MB) are reused from
the heap, where one part of 10^6 records faults fresh pages in: on the 2-core machine the layout took
0.22 s in one part, 0.14 s in two, 0.09 s in seven (2^17 records each; 2^15: 0.10 s, 2^18: 0.12 s).
More cores take smaller parts, one a thread (:func:`record_parts`)."""

MIN_RECORDS_PER_PART = 1 << 14
"""Parts of fewer records than this are not worth a thread of their own."""


def record_parts(records: int, threads: int = 1) -> list[tuple[int, int]]:
    """Consecutive (first, stop) ranges of about equal size covering ``range(records)``: one per
    RECORDS_PER_PART records, or, where that leaves ``threads`` threads idle, one per thread, down to
    MIN_RECORDS_PER_PART records a part (on the H100 host's 16 cores 10^6 records were 7 parts)."""
    count = max(1, records // RECORDS_PER_PART, min(threads, records // MIN_RECORDS_PER_PART))
    bounds = np.linspace(0, records, count + 1).astype(np.int64).tolist()
    return list(zip(bounds[:-1], bounds[1:]))


def _on_threads(work: Callable, arguments: list, pool: ThreadPoolExecutor | None, threads: int) -> list:
    """``[work(*a) for a in arguments]``, on ``pool`` (or a pool of its own of up to ``threads``) where
    there are several."""
    if len(arguments) == 1 or threads == 1:
        return [work(*a) for a in arguments]
    if pool is not None:
        return list(pool.map(lambda a: work(*a), arguments))
    with ThreadPoolExecutor(max_workers=min(threads, len(arguments)), thread_name_prefix="seqsift-layout") as own:
        return list(own.map(lambda a: work(*a), arguments))


@dataclass
class _Runs:
    """Every line of the file as runs of identical lines (the blocks' runs joined, :func:`_join_lines`)."""

    length: np.ndarray    # int64: bytes of each line of the run, its ending included
    carriage: np.ndarray  # bool
    newline: np.ndarray   # bool
    header: np.ndarray    # bool
    count: np.ndarray     # int64: lines in the run
    bytes: np.ndarray     # int64: the run's bytes (length x count)


class _PartLayout(NamedTuple):
    """The .fai columns of one part's records (integers), and its first bad line (None: every line regular)."""

    lengths: np.ndarray
    offsets: np.ndarray
    line_bases: np.ndarray
    line_bytes: np.ndarray
    header_lines: np.ndarray          # 1-based
    first_bad: tuple[int, int] | None  # (0-based line, record in the part)


def _layout(parts: list[_Lines], require_regular: bool = True, header_errors: str = "strict",
            pool: ThreadPoolExecutor | None = None, threads: int = 1, find_duplicates: bool = True) -> FastaLayout:
    """The records' .fai columns from the runs of lines; RaggedRecord names the first bad line.

    Many records are laid out in parts (:func:`record_parts`) on ``pool``: part k's runs go from its
    first record's header to the next part's, the lines and bytes before them counted up front, and
    each writes its records' rows of the columns (no concatenation after: 10^6 records' five columns
    are 40 MB)."""
    empty = FastaLayout(TextList.of(()), *(np.zeros(0, np.int64) for _ in range(4)), total_bytes=0)
    if not parts:
        return empty
    # The names, and apart the header lines, are joined on the pool while this thread joins the runs
    # and the parts are laid out.
    with_headers = [part for part in parts if part.header.any()]
    headers_apart = _headers_apart(with_headers)
    names_found = headers_found = None
    if pool is not None:
        names_found = pool.submit(_names_checked, with_headers, header_errors, find_duplicates)
        if headers_apart:
            headers_found = pool.submit(_block_headers, with_headers)
    runs = _join_lines(parts, pool, threads)
    total_bytes = int(runs.bytes.sum())
    heads = np.flatnonzero(runs.header)
    if not len(heads):
        for found in (names_found, headers_found):
            if found is not None:
                found.result()   # (no header: no names, nothing to wait for but their ends)
        empty.total_bytes = total_bytes
        return empty

    record_ranges = record_parts(len(heads), threads)
    first_runs = heads[[first for first, _ in record_ranges]]
    first_runs[0] = 0                                   # the first part also holds what precedes a header
    lines_per_part, bytes_per_part = np.add.reduceat(runs.count, first_runs), np.add.reduceat(runs.bytes, first_runs)
    lines_before = np.cumsum(lines_per_part) - lines_per_part
    bytes_before = np.cumsum(bytes_per_part) - bytes_per_part
    run_stops = np.append(first_runs[1:], len(runs.length))
    columns = {column: np.empty(len(heads), np.int64) for column in _PartLayout._fields[:-1]}

    functions = native.library()
    run_columns = (runs.length, runs.carriage, runs.newline, runs.header, runs.count)   # (contiguous: for the C)

    def lay_out(first_run: int, stop_run: int, lines: int, byte: int, first_record: int, stop_record: int):
        """The part's columns, written into ``columns`` (by its own thread); its first bad line."""
        if functions is not None:   # fasta_scan.c's loop over the runs, writing the columns itself
            first_bad = np.full(2, -1, np.int64)
            functions.lay_out_records(*(column.ctypes.data for column in run_columns), first_run, stop_run, lines, byte,
                                      *(values[first_record:].ctypes.data for values in columns.values()),
                                      first_bad.ctypes.data)
            return None if first_bad[0] < 0 else (int(first_bad[0]), first_record + int(first_bad[1]))
        part = _records_of_runs(runs, first_run, stop_run, lines, byte)
        for column, values in columns.items():
            values[first_record:stop_record] = getattr(part, column)
        return None if part.first_bad is None else (part.first_bad[0], first_record + part.first_bad[1])

    arguments = [(int(a), int(b), int(lines), int(byte), first, stop) for a, b, lines, byte, (first, stop)
                 in zip(first_runs, run_stops, lines_before, bytes_before, record_ranges)]
    bad = [found for found in _on_threads(lay_out, arguments, pool, threads) if found is not None]
    names, headers, name_hashes, distinct = (names_found.result() if names_found is not None
                                             else _names_checked(with_headers, header_errors, find_duplicates))
    if headers_apart:
        headers = headers_found.result() if headers_found is not None else _block_headers(with_headers)
    described = headers != names
    if bad and require_regular:
        line, record = min(bad)
        raise RaggedRecord(names[record], line + 1)
    return FastaLayout(names=names, total_bytes=total_bytes, headers=headers if described else None,
                       name_hashes=name_hashes, names_distinct=distinct, **columns)


def _records_of_runs(runs: _Runs, first_run: int, stop_run: int, lines_before: int, bytes_before: int) -> _PartLayout:
    """The .fai columns of the records whose headers are among runs [first_run, stop_run) (which end
    where a record does), vectorized: fasta_scan.c's ``lay_out_records`` loops over the runs instead where
    it could be built (tests/test_io_native.py compares the two)."""
    length, carriage, newline, header, count, run_bytes = (
        column[first_run:stop_run] for column in (runs.length, runs.carriage, runs.newline, runs.header, runs.count,
                                                  runs.bytes))
    heads = np.flatnonzero(header)
    bases = length - newline - carriage                 # each line's characters without its ending
    run_count = len(length)
    first_line = np.cumsum(count) - count + lines_before   # line index of each run's first line
    byte_start = np.cumsum(run_bytes) - run_bytes + bytes_before
    record_of_run = np.cumsum(header) - 1                # -1 before the first header
    first = heads + 1                                    # each record's first sequence run
    stop = np.append(heads[1:], run_count)               # one past its last
    is_sequence = ~header & (record_of_run >= 0)
    cumulative = np.concatenate(([0], np.cumsum(np.where(is_sequence, bases * count, 0))))
    record_length = cumulative[stop] - cumulative[first]
    has_lines = first < stop
    safe_first = np.minimum(first, run_count - 1)
    width = np.where(has_lines, length[safe_first], 0)  # bytes per line, from the first line
    per_line = np.where(has_lines, bases[safe_first], 0)  # bases per line
    offsets = byte_start[heads] + length[heads]

    # The run holding each record's last non-blank line (-1 if none).
    nonblank = np.flatnonzero(is_sequence & (bases > 0))
    last_run = np.full(len(heads), -1, dtype=np.int64)
    if len(nonblank):
        owner = record_of_run[nonblank]
        is_last = np.append(owner[1:] != owner[:-1], True)
        last_run[owner[is_last]] = nonblank[is_last]
    # A line breaks the record's regularity if, not being its first line, it lies
    # before the last non-blank line and differs from the first line, or it is
    # the last non-blank line and holds more bases than the first. (The record's
    # first run is the yardstick and never differs from it: no exception for it.)
    index = np.arange(run_count)
    owner = np.maximum(record_of_run, 0)
    last = last_run[owner]
    at_last = index == last
    before_last = (index < last) | (at_last & (count > 1))   # the run has a line before the last one
    differs = (length != width[owner]) | (bases != per_line[owner])
    bad_early = is_sequence & before_last & differs
    bad_last = is_sequence & at_last & (bases > per_line[owner])
    bad_line = np.concatenate((first_line[bad_early], first_line[bad_last] + count[bad_last] - 1))
    first_bad = None
    if len(bad_line):
        line = int(bad_line.min())
        run = int(np.searchsorted(first_line, line, side="right") - 1)
        first_bad = (line, int(record_of_run[run]))
    return _PartLayout(record_length, offsets, per_line, width, first_line[heads] + 1, first_bad)
