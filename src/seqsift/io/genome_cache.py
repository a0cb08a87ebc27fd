"""The binary genome cache: a reference's bases without line breaks, memory-mapped.

One file per source FASTA (named by reference.py's ``_CacheEntry``, so it
follows the same cache rules: ``$SEQSIFT_CACHE``, one version per source,
older versions pruned), laid out as::

    [header, 4096 bytes][payload: every record's bases, one byte each, as in
    the file (case kept), records back to back][record table, binary]

The record table (:func:`table_pieces`) is a fixed part, then the four
``.fai`` number columns as little-endian int64 arrays, then the names and
(where any record has a description) the whole header lines, each as one
UTF-8 text joined by newlines: a table of a million records is written and
read with a few whole-array calls, never a Python object per number or per
name (the names stay one text, :class:`~seqsift.io.text_list.TextList`).

The header holds the sizes, the fingerprint of the source it was built from
and a BLAKE2b digest over the header fields, the record table's CRC-32 and a
sample of the payload. The payload starts at a page boundary, so a record window is a
plain slice of a memory map and reaches NumPy (and the GPU's pinned copies)
without a copy.

Trust. A cache is used only if all of these hold, else it is rebuilt:
the magic and version; the file size equals header + payload + table; the
digest matches (so a flipped byte in the table or the header, or a cut
file, is caught); the table's lengths add up to the payload size; and the
source's fingerprint (size, mtime, and a BLAKE2b over its first and last MiB
and 64 pieces of 4 KiB spread over it) is the one recorded. The payload is
verified by a sample (the same 64 + 1 pages), not in full: hashing 3 GB costs
about 3 s on one core, the time of the whole second run we are trying to
save. A cache is written only through a temporary file renamed into place, so
the damage a sample misses (one flipped byte in the middle of the payload)
comes from outside seqsift (a disk error, a hand edit); the fingerprint has
the same limit for a source edited in place with its size and mtime restored.

Concurrency. Building takes an exclusive ``flock`` on a lock file beside the
cache; a second job that starts meanwhile waits for the lock, finds the
finished cache valid and uses it. Every build appends a line to
``builds.log`` in the cache's directory (tests count them).
"""
from __future__ import annotations

import errno
import hashlib
import mmap
import os
import struct
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from .text_list import TextList

__all__ = ["GenomeCache", "CacheWriter", "FileRange", "read_file_into", "source_fingerprint", "build_lock",
           "BUILD_LOG"]

MAGIC = b"SEQSIFT-GENOME\x00\x03"
"""Version 3: a binary record table (version 2's was JSON with base64 columns); a version-2 cache is rebuilt."""
HEADER_BYTES = 4096
BUILD_LOG = "builds.log"
_FIELDS = struct.Struct("<16sQQQ32s")     # magic, payload bytes, table bytes, records, source fingerprint
_SAMPLES = 64
_PAGE = 4096


def source_fingerprint(path: str | os.PathLike) -> bytes:
    """32 bytes that change when the file's size, mtime or content (sampled) change.

    The content part reads the first and last MiB and 64 pieces of 4 KiB
    spread evenly over the file: a few ms for any size.
    """
    stat = os.stat(path)
    digest = hashlib.blake2b(f"{stat.st_size}:{stat.st_mtime_ns}".encode(), digest_size=32)
    size = stat.st_size
    with open(path, "rb") as f:
        for offset, length in [(0, 1 << 20), (max(0, size - (1 << 20)), 1 << 20)] + [
                (size * k // _SAMPLES, _PAGE) for k in range(_SAMPLES)]:
            digest.update(os.pread(f.fileno(), length, offset))
    return digest.digest()


def _payload_sample(mapped, payload_bytes: int) -> bytes:
    """The pages of the payload that the digest covers: 64 spread evenly, and the last."""
    digest = hashlib.blake2b(digest_size=32)
    for k in range(_SAMPLES):
        start = HEADER_BYTES + payload_bytes * k // _SAMPLES
        digest.update(mapped[start:start + min(_PAGE, payload_bytes)])
    end = HEADER_BYTES + payload_bytes
    digest.update(mapped[max(HEADER_BYTES, end - _PAGE):end])
    return digest.digest()


def _digest(fields: bytes, table_crc: int, sample: bytes) -> bytes:
    """BLAKE2b of the header fields, the table's CRC-32 and the payload sample. A CRC catches every
    flipped byte of the table as a hash would, at 4 GB/s instead of ~1 (a million records' table:
    80 MB, hashed on every open)."""
    return hashlib.blake2b(fields + table_crc.to_bytes(4, "little") + sample, digest_size=32).digest()


NUMBER_COLUMNS = ("lengths", "offsets", "line_bases", "line_bytes")
"""The record table's int64 columns: a record's length and its source's .fai columns 3-5."""
_TABLE_FIELDS = struct.Struct("<QQQ16s")  # records, bytes of the names' text, of the headers' text, source kind


def table_pieces(table: dict) -> list:
    """The record table as the file holds it, as the buffers it is made of, in order, none copied (a
    million records' table is about 80 MB: CacheWriter.finish writes the pieces as they are):
    ``names``, ``kind``, the NUMBER_COLUMNS and, optionally, ``headers`` (each record's whole header
    line); names and headers are sequences of str (a :class:`~seqsift.io.text_list.TextList`'s text
    is written as it is)."""
    names = memoryview(TextList.of(table["names"]).text)[:-1]
    headers = memoryview(TextList.of(table["headers"]).text)[:-1] if table.get("headers") else memoryview(b"")
    fields = _TABLE_FIELDS.pack(len(table["names"]), len(names), len(headers), table["kind"].encode("ascii"))
    columns = [memoryview(np.ascontiguousarray(table[column], dtype="<i8")).cast("B") for column in NUMBER_COLUMNS]
    return [fields, *columns, names, headers]


def decode_table(raw: bytes) -> dict:
    """:func:`table_pieces`' bytes as a dict (int64 arrays; names and headers as TextLists, the
    latter empty where the records have no descriptions); ValueError if malformed."""
    records, names_bytes, headers_bytes, kind = _TABLE_FIELDS.unpack_from(raw)
    if len(raw) != _TABLE_FIELDS.size + 8 * records * len(NUMBER_COLUMNS) + names_bytes + headers_bytes:
        raise ValueError("the record table's sizes do not add up")
    table: dict = {"kind": kind.rstrip(b"\0").decode("ascii")}
    place = _TABLE_FIELDS.size
    for column in NUMBER_COLUMNS:
        table[column] = np.frombuffer(raw, dtype="<i8", count=records, offset=place).astype(np.int64)
        place += 8 * records
    for key, size in (("names", names_bytes), ("headers", headers_bytes)):
        # (one copy of the text, its newline appended: a slice and then + b"\n" copied 53 MB twice for 10^6 records)
        lines = TextList.of_lines(b"".join((memoryview(raw)[place:place + size], b"\n"))) if size else TextList.of(())
        if size and len(lines) != records:
            raise ValueError(f"the record table holds {len(lines)} {key} for {records} records")
        table[key] = lines
        place += size
    if records and not table["names"]:
        raise ValueError("the record table has no names")
    return table


@dataclass
class GenomeCache:
    """A verified cache file: the record table, and where each record's bases start."""

    path: str
    table: dict            # decode_table's: names, headers, kind, lengths and the source's .fai columns
    record_starts: np.ndarray  # int64: byte offset of each record's first base in the file
    identity: tuple        # (device, inode, mtime_ns, size): tells a rebuilt file from the one mapped before

    @staticmethod
    def open(path: Path, fingerprint: bytes | None) -> "GenomeCache | None":
        """The cache at ``path`` if it exists, is whole and belongs to ``fingerprint``; else None.

        ``fingerprint`` None: of any source (a worker handed the cache by a job that checked its
        source compares the file's identity instead)."""
        try:
            with open(path, "rb") as f:
                stat = os.fstat(f.fileno())
                size = stat.st_size
                if size < HEADER_BYTES:
                    return None
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        try:
            fields = mapped[:_FIELDS.size]
            magic, payload_bytes, table_bytes, records, recorded = _FIELDS.unpack(fields)
            whole = size == HEADER_BYTES + payload_bytes + table_bytes
            if magic != MAGIC or fingerprint not in (None, recorded) or not whole:
                return None
            stored = mapped[_FIELDS.size:_FIELDS.size + 32]
            # The table is checked and decoded where it is mapped (decode_table copies what it keeps): a
            # copy of it first (10^6 records: 80 MB) was a fifth of the open.
            table_raw = memoryview(mapped)[HEADER_BYTES + payload_bytes:size]
            if _digest(fields, zlib.crc32(table_raw), _payload_sample(mapped, payload_bytes)) != stored:
                return None
            table = decode_table(table_raw)
            lengths = table["lengths"]
            if len(lengths) != records or int(lengths.sum()) != payload_bytes or (lengths < 0).any():
                return None
        except (ValueError, KeyError, TypeError, struct.error):
            return None
        finally:
            table_raw = None
            try:
                mapped.close()
            except BufferError:   # (a view of the map in an error's traceback: the map closes with it)
                pass
        return GenomeCache._of(path, table, stat)

    @staticmethod
    def _of(path: Path, table: dict, stat: os.stat_result) -> "GenomeCache":
        lengths = table["lengths"]
        starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        return GenomeCache(path=str(path), table=table, record_starts=starts + HEADER_BYTES,
                           identity=(stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size))


def _write_all(fd: int, data, place: int) -> None:
    """Write the buffer ``data`` whole at byte ``place`` of ``fd`` (``os.pwrite`` may write part of it)."""
    view = memoryview(data).cast("B")
    while len(view):
        written = os.pwrite(fd, view, place)
        view, place = view[written:], place + written


TABLE_WRITE_BYTES = 4 << 20
"""The record table (80 MB for 10^6 records with descriptions) is written in stretches of this many
bytes on up to 8 threads: the pages a file gains are allocated and filled on each at once."""


class CacheWriter:
    """Writes a cache file during the scan, then ``finish`` renames it into place.

    The scanning threads write their blocks' bases themselves, in parallel,
    with ``os.pwrite`` (``write``). Through a shared writable memory map,
    as before, every 4 KiB page cost a write fault: on the H100 host's
    16 threads, scanning 1 GB into the map took 0.64-0.76 s and 6-7 s of
    CPU, with pwrite 0.40-0.43 s and 3.5 s, as much as scanning to nowhere.
    Space for ``capacity`` bytes (a guess of the payload size: the file's
    size for plain FASTA) is reserved with ``posix_fallocate`` first, so that
    a full disk usually fails at once; a write that finds it full later
    raises OSError (the caller gives the cache up).
    """

    def __init__(self, path: Path, fingerprint: bytes, capacity: int = 0):
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.temporary = self.path.with_name(f".tmp-{os.getpid()}-{threading.get_ident()}-{self.path.name}")
        self.fd = os.open(self.temporary, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.posix_fallocate(self.fd, 0, HEADER_BYTES + max(int(capacity), 1 << 20))
        except OSError as err:
            if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):  # else: no fallocate here
                self.abandon()
                raise  # ENOSPC and the like: no cache

    def write(self, offset: int, sequence: np.ndarray) -> None:
        """Payload bytes ``[offset, offset + len(sequence))`` (a fasta_scan.Destination), from any thread."""
        _write_all(self.fd, sequence, HEADER_BYTES + offset)

    def finish(self, table: dict) -> GenomeCache:
        """Append the table, write the header, rename into place; returns the cache (its table
        of the types :func:`decode_table` gives, not read back)."""
        pieces = table_pieces(table)
        table = {**table, **{column: np.asarray(table[column], dtype=np.int64) for column in NUMBER_COLUMNS},
                 "names": TextList.of(table["names"]), "headers": TextList.of(table.get("headers") or ())}
        payload_bytes = int(table["lengths"].sum())
        os.ftruncate(self.fd, HEADER_BYTES + payload_bytes)
        place, table_crc = HEADER_BYTES + payload_bytes, 0
        writes = []   # (place, bytes): the table in stretches of TABLE_WRITE_BYTES, written on threads
        for piece in pieces:
            view = memoryview(piece).cast("B")
            writes += [(place + at, view[at:at + TABLE_WRITE_BYTES]) for at in range(0, len(view), TABLE_WRITE_BYTES)]
            place = place + len(view)
        with ThreadPoolExecutor(max_workers=max(1, min(8, len(writes))), thread_name_prefix="seqsift-table") as pool:
            written = [pool.submit(_write_all, self.fd, stretch, at) for at, stretch in writes]
            for piece in pieces:   # the CRC meanwhile (zlib releases the GIL)
                table_crc = zlib.crc32(piece, table_crc)
            for write in written:
                write.result()
        table_bytes = place - HEADER_BYTES - payload_bytes
        fields = _FIELDS.pack(MAGIC, payload_bytes, table_bytes, len(table["names"]), self.fingerprint)
        mapped = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ)
        try:
            sample = _payload_sample(mapped, payload_bytes)
        finally:
            mapped.close()
        os.pwrite(self.fd, fields + _digest(fields, table_crc, sample), 0)
        stat = os.fstat(self.fd)
        os.close(self.fd)
        self.fd = None
        os.chmod(self.temporary, 0o644)
        os.replace(self.temporary, self.path)
        with open(self.path.parent / BUILD_LOG, "a") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\t{os.getpid()}\t{self.path.name}\n")
        return GenomeCache._of(self.path, table, stat)

    def abandon(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        try:
            os.unlink(self.temporary)
        except OSError:
            pass


@contextmanager
def build_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (created if needed) for the block's duration.

    ``flock`` is released by the kernel when the process dies, so a crashed
    build never blocks the next job.
    """
    import fcntl

    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


class FileRange:
    """``length`` bytes at ``offset`` of the file at ``path``: a window stored as it is (in the genome cache).

    The GPU upload (kernels/cuda.py) reads one straight into its pinned
    staging buffers with :meth:`reader`, instead of copying from a fresh
    memory map of the file, which page-faults on first touch (about 1.7 GB/s
    a task thread in the H100 host's profile). A buffer is read in pieces of
    ``READ_PIECE`` bytes by ``READ_THREADS`` threads at once: one thread's
    copy out of the page cache kept a task thread's upload to 1.4 GB/s on
    the H100 host (3.1 Gbp: 2.2 s of the edit job's two task threads).
    """

    __slots__ = ("path", "offset", "length")

    def __init__(self, path: str, offset: int, length: int):
        self.path, self.offset, self.length = path, int(offset), int(length)

    @contextmanager
    def reader(self) -> Iterator:
        """``fill(buffer, first)``: the range's bytes ``[first, first + len(buffer))`` into ``buffer``."""
        fd = os.open(self.path, os.O_RDONLY)

        def read_piece(buffer: np.ndarray, offset: int) -> None:
            read_file_into(fd, buffer, offset)

        def fill(buffer: np.ndarray, first: int) -> None:
            starts = range(0, buffer.size, READ_PIECE)
            pieces = [(buffer[at:at + READ_PIECE], self.offset + first + at) for at in starts]
            if len(pieces) == 1:
                read_piece(*pieces[0])
                return
            for done in [_readers().submit(read_piece, *piece) for piece in pieces]:
                done.result()

        try:
            yield fill
        finally:
            os.close(fd)


READ_PIECE = 4 << 20
"""Bytes of a :meth:`FileRange.reader` fill read by one thread."""
READ_THREADS = 8
"""Threads reading the pieces of the fills (shared by a process's task threads)."""
_readers_lock = threading.Lock()
_reader_pool = None


def _readers():
    """The process's pool of READ_THREADS reading threads, started on first use."""
    global _reader_pool
    with _readers_lock:
        if _reader_pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _reader_pool = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="seqsift-read")
        return _reader_pool


class ReadOnlyFile:
    """A file opened for positioned reads (:func:`read_file_into`) from any thread; ``with`` closes it."""

    def __init__(self, path: str):
        self.fd = os.open(path, os.O_RDONLY)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_file_into(fd: int, buffer: np.ndarray, offset: int) -> None:
    """Fill ``buffer`` (a writable uint8 array) with the file's bytes from ``offset``; EOFError if the file ends first.

    ``os.preadv`` writes into the buffer directly (no temporary bytes) and
    releases the GIL while the kernel copies from the page cache.
    """
    view = memoryview(buffer).cast("B")
    done = 0
    while done < len(view):
        got = os.preadv(fd, [view[done:]], offset + done)
        if got == 0:
            raise EOFError(f"file ends {len(view) - done} bytes short of a window read at offset {offset}")
        done += got
