"""One pass over a FASTA file's bytes: its ``.fai`` index and its bases without line breaks.

:func:`scan_fasta` reads the (uncompressed) bytes of a FASTA file once, in
blocks of ``BLOCK_BYTES`` cut just after a newline, and hands the blocks to
a thread pool (NumPy releases the GIL, so blocks are scanned on every core).
There is no Python loop per line or per record: each block's newlines are
found with one vectorized comparison, and each line's length, carriage
return and '>' flag become arrays. When every block is in, the records'
``.fai`` columns (samtools' format, as pyfaidx writes it: name, length,
offset, bases per line, bytes per line) come from those arrays, again
vectorized. With ``sink``, the sequence bytes themselves (header lines and
line endings dropped, case kept) are passed on block by block, in order: the
genome cache (:mod:`seqsift.io.genome_cache`) is written in the same pass.

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

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Protocol

import numpy as np

__all__ = ["scan_fasta", "FastaLayout", "Destination", "RaggedRecord", "HeaderProblem", "blocks_of_file",
           "blocks_of_stream", "BLOCK_BYTES", "worker_threads"]

BLOCK_BYTES = 64 << 20
"""Bytes per scanned block: large enough that per-block overheads vanish, small
enough that a few blocks per thread fit in memory."""

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

    names: tuple[str, ...]
    lengths: np.ndarray
    offsets: np.ndarray
    line_bases: np.ndarray
    line_bytes: np.ndarray
    total_bytes: int  # the uncompressed file's size
    header_lines: np.ndarray | None = None  # 1-based line number of each record's header

    def fai_text(self) -> str:
        """The ``.fai`` file's text (samtools' and pyfaidx's format)."""
        return "".join(f"{name}\t{length}\t{offset}\t{bases}\t{width}\n" for name, length, offset, bases, width
                       in zip(self.names, self.lengths.tolist(), self.offsets.tolist(),
                              self.line_bases.tolist(), self.line_bytes.tolist()))


# --------------------------------------------------------------------------
# Blocks: cut just after a newline, so that lines rarely straddle two blocks
# --------------------------------------------------------------------------

@dataclass
class _Block:
    data: np.ndarray      # uint8 view of the bytes
    base: int             # offset of data[0] in the uncompressed file
    continues_line: bool  # data[0] is not at the start of a line (the previous block had no newline)
    last: bool            # the file ends with this block


def blocks_of_file(path: str, block_bytes: int = BLOCK_BYTES) -> Iterator[_Block]:
    """Blocks of a plain file, as views of one read-only memory map (no copies)."""
    import mmap

    size = os.path.getsize(path)
    if size == 0:
        return
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if hasattr(mapped, "madvise"):
        mapped.madvise(mmap.MADV_SEQUENTIAL)
    whole = np.frombuffer(mapped, dtype=np.uint8)
    start, continues = 0, False
    while start < size:
        stop = min(start + block_bytes, size)
        if stop < size:
            cut = mapped.rfind(b"\n", start, stop) + 1
            if cut > start:
                stop = cut
            elif not continues and whole[start] == _GT:  # a header longer than a block: take it whole
                stop = mapped.find(b"\n", stop) + 1 or size
            elif whole[stop - 1] == _CR and stop - 1 > start:
                stop -= 1  # one very long sequence line: never split a '\r\n'
        yield _Block(whole[start:stop], start, continues, stop == size)
        continues = whole[stop - 1] != _NEWLINE
        start = stop


def blocks_of_stream(chunks: Iterable[bytes], block_bytes: int = BLOCK_BYTES) -> Iterator[_Block]:
    """Blocks of a stream of byte chunks (a decompressor's output), re-cut after newlines."""
    carry = b""
    base, continues = 0, False
    pending: list[bytes] = []
    pending_size = 0

    def emit(data: bytes, last: bool) -> _Block:
        nonlocal base, continues
        block = _Block(np.frombuffer(data, dtype=np.uint8), base, continues, last)
        base += len(data)
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
        cut = data.rfind(b"\n") + 1
        if cut == 0 and not continues and data[:1] == b">":
            carry = data  # a header longer than a block: wait for its end
            continue
        if cut == 0:  # one very long sequence line: cut anywhere but inside a '\r\n'
            cut = len(data) - 1 if data[-1] == _CR and len(data) > 1 else len(data)
        carry = data[cut:]
        yield emit(data[:cut], last=False)
    data = carry + b"".join(pending)
    if data:
        yield emit(data, last=True)


# --------------------------------------------------------------------------
# One block: lines as arrays, and the block's sequence bytes
# --------------------------------------------------------------------------

@dataclass
class _Lines:
    """The lines of one block (the first may continue the previous block's last)."""

    length: np.ndarray       # bytes of each line, its '\n' included
    carriage: np.ndarray     # bool: the line ends in '\r' before its '\n' (or before the end of the file)
    newline: np.ndarray      # bool: the line ends with '\n' (False only for an open last line)
    header: np.ndarray       # bool: the line starts with '>'
    header_text: list[bytes]  # each header line without '>' and line ending, in order
    sequence: np.ndarray | None  # the block's sequence bytes (no headers, no line endings)
    before_first_header: int  # sequence bytes that precede the block's first header (-1: no header)
    non_ascii: bool           # a byte >= 0x80 outside the header lines
    continues_line: bool      # the first line began in the previous block


def _scan_block(block: _Block) -> _Lines:
    data = block.data
    size = len(data)
    newlines = np.flatnonzero(data == _NEWLINE)
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
    heads = np.flatnonzero(header)  # (a header line is never cut: see blocks_of_file)
    text_ends = ends[heads] - carriage[heads]
    header_text = [data[a + 1:b].tobytes() for a, b in zip(starts[heads].tolist(), text_ends.tolist())]

    # The sequence bytes: all but the line endings and the header lines ('\n' included),
    # whose byte indices are built without a loop (there may be millions of records).
    keep = np.ones(size, dtype=bool)
    keep[newlines] = False
    keep[ends[carriage] - 1] = False
    spans = ends[heads] + newline[heads] - starts[heads]
    if len(spans) and spans.sum():
        first_of_span = np.repeat(starts[heads] - np.cumsum(np.concatenate(([0], spans[:-1]))), spans)
        keep[first_of_span + np.arange(int(spans.sum()))] = False
    before_first = int(np.count_nonzero(keep[:int(starts[heads[0]])])) if len(heads) else -1
    sequence = data[keep]
    non_ascii = bool(sequence.size and sequence.max() >= 0x80)
    return _Lines(length=length, carriage=carriage, newline=newline, header=header, header_text=header_text,
                  sequence=sequence, before_first_header=before_first, non_ascii=non_ascii,
                  continues_line=block.continues_line)


# --------------------------------------------------------------------------
# The whole file
# --------------------------------------------------------------------------

class Destination(Protocol):
    """Where scan_fasta places the bases itself, from its threads (the genome cache)."""

    def region(self, offset: int, count: int) -> np.ndarray | None:
        """A writable uint8 array for bases ``[offset, offset + count)`` of the file's
        concatenated records, or None to drop them (the destination gave up)."""


def scan_fasta(blocks: Iterable[_Block], sink: Callable[[np.ndarray], None] | None = None,
               threads: int | None = None, require_regular: bool = True, check_ascii: bool = True,
               destination: Destination | None = None) -> FastaLayout:
    """Scan ``blocks`` (from blocks_of_file / blocks_of_stream) into a FastaLayout.

    The bases of every record, in file order (record i's are the next
    ``lengths[i]``), go to ``sink`` (called in this thread with uint8 arrays)
    and/or ``destination``, into which the scanning threads copy them
    themselves, in parallel (each block learns where its bases go from the
    block before it, as soon as that block knows how many it has).
    Raises RaggedRecord (unless not ``require_regular``: then the .fai
    columns of irregular records are meaningless, the names, lengths and
    bases right) or HeaderProblem (a non-ASCII sequence byte only with
    ``check_ascii``); the caller checks what a .fai cannot say (no records,
    empty records, duplicates).
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
    return _layout(parts, require_regular)


def _in_order(pool: ThreadPoolExecutor, blocks: Iterable[_Block], ahead: int,
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


def _scan_and_place(block: _Block, destination: Destination | None, before: Future, after: Future) -> _Lines:
    try:
        lines = _scan_block(block)
        offset, seen_header = before.result()
    except BaseException as err:
        after.set_exception(err)  # the tasks after this one fail too, instead of waiting forever
        raise
    sequence = lines.sequence
    if not seen_header:  # blank lines before the first header are no record's bases
        sequence = sequence[lines.before_first_header:] if lines.before_first_header >= 0 else sequence[:0]
    after.set_result((offset + len(sequence), seen_header or bool(lines.header_text)))
    if destination is not None and len(sequence):
        region = destination.region(offset, len(sequence))
        if region is not None:
            np.copyto(region, sequence)
    lines.sequence = sequence
    return lines


def _join_lines(parts: list[_Lines]):
    """All blocks' line arrays as one set; a line cut between blocks becomes one line."""
    length = np.concatenate([p.length for p in parts]).astype(np.int64)
    carriage = np.concatenate([p.carriage for p in parts])
    newline = np.concatenate([p.newline for p in parts])
    header = np.concatenate([p.header for p in parts])
    first_line_of_part = np.cumsum([0] + [len(p.length) for p in parts[:-1]])
    continued = [i for p, i in zip(parts, first_line_of_part) if p.continues_line and len(p.length)]
    if not continued:
        return length, carriage, newline, header
    goes_on = np.zeros(len(length), dtype=bool)
    goes_on[continued] = True
    line_starts = np.flatnonzero(~goes_on)   # pieces of one line: summed, the ending from the last
    line_lasts = np.append(line_starts[1:], len(length)) - 1
    return (np.add.reduceat(length, line_starts), carriage[line_lasts], newline[line_lasts],
            header[line_starts])


def _layout(parts: list[_Lines], require_regular: bool = True) -> FastaLayout:
    if not parts:
        return FastaLayout((), *(np.zeros(0, np.int64) for _ in range(4)), total_bytes=0)
    length, carriage, newline, header = _join_lines(parts)
    total_bytes = int(length.sum())
    texts = [text for part in parts for text in part.header_text]
    names = []
    for text in texts:
        try:
            words = text.decode("utf-8").split()
        except UnicodeDecodeError:
            raise HeaderProblem("a header that is not UTF-8") from None
        if not words:
            raise HeaderProblem("a header without a name")
        names.append(words[0])

    bases = length - newline - carriage                       # the line's characters without its ending
    line_count = len(length)
    heads = np.flatnonzero(header)
    if not len(heads):
        return FastaLayout((), *(np.zeros(0, np.int64) for _ in range(4)), total_bytes=total_bytes)
    line_start = np.cumsum(length) - length
    record_of_line = np.cumsum(header) - 1                     # -1 before the first header
    first = heads + 1                                          # each record's first sequence line
    stop = np.append(heads[1:], line_count)                    # one past its last
    is_sequence = ~header & (record_of_line >= 0)
    cumulative = np.concatenate(([0], np.cumsum(np.where(is_sequence, bases, 0))))
    record_length = cumulative[stop] - cumulative[first]
    has_lines = first < stop
    safe_first = np.minimum(first, line_count - 1)
    width = np.where(has_lines, length[safe_first], 0)        # bytes per line, from the first line
    per_line = np.where(has_lines, bases[safe_first], 0)       # bases per line
    offsets = line_start[heads] + length[heads]

    # The last non-blank line of each record (-1 if none).
    nonblank = np.flatnonzero(is_sequence & (bases > 0))
    last_nonblank = np.full(len(heads), -1, dtype=np.int64)
    if len(nonblank):
        owner = record_of_line[nonblank]
        is_last = np.append(owner[1:] != owner[:-1], True)
        last_nonblank[owner[is_last]] = nonblank[is_last]
    # A line breaks the record's regularity if, not being its first line, it lies
    # before the last non-blank line and differs from the first line, or it is
    # the last non-blank line and holds more bases than the first.
    index = np.arange(line_count)
    owner = np.maximum(record_of_line, 0)
    last = last_nonblank[owner]
    bad = is_sequence & (index != first[owner]) & (
        ((index < last) & ((length != width[owner]) | (bases != per_line[owner])))
        | ((index == last) & (bases > per_line[owner])))
    bad_lines = np.flatnonzero(bad)
    if len(bad_lines) and require_regular:
        line = int(bad_lines[0])
        raise RaggedRecord(names[int(record_of_line[line])], line + 1)
    return FastaLayout(names=tuple(names), lengths=record_length.astype(np.int64),
                       offsets=offsets.astype(np.int64), line_bases=per_line.astype(np.int64),
                       line_bytes=width.astype(np.int64), total_bytes=total_bytes,
                       header_lines=(heads + 1).astype(np.int64))
