"""Decompressing references: plain gzip as one stream, BGZF blocks in parallel.

Plain gzip (``gzip``, as UCSC ships hg38.fa.gz) cannot be split: it is
inflated as one stream by the fastest library present. Measured on
ecoli536.fa.gz x 40 (200 MB out; benchmarks/README.md, "Reading references"):
python-isal's ``igzip`` 1310 MB/s, zlib-ng's ``gzip_ng`` 880 MB/s, Python's
``gzip`` (zlib) 386 MB/s. So ``isal`` (a dependency, with wheels for x86-64
and aarch64 Linux) first, then ``zlib_ng``, then the standard library.

BGZF (``bgzip``) is a series of gzip members of at most 64 KiB each, whose
sizes are in their headers (SAM spec 4.1): one walk over the headers finds
every block (:func:`bgzf_blocks`; the same walk gives the ``.gzi``), and
:class:`BgzfFile` inflates any run of blocks from any thread (the libraries
release the GIL): fasta_scan's threads inflate and scan their own batches.
"""
from __future__ import annotations

import mmap
import os
import queue
import struct
import threading
from typing import Callable, Iterator

import numpy as np

from .genome_cache import ReadOnlyFile, read_file_into

__all__ = ["gzip_chunks", "BgzfBlocks", "BgzfFile", "bgzf_blocks", "write_gzi", "DecompressError",
           "gzip_library", "decompress_failures"]

_CHUNK = 16 << 20
_BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")


class DecompressError(Exception):
    """The compressed data is corrupt or truncated (the message says how)."""


def gzip_library() -> tuple[str, Callable, Callable]:
    """(name, open(path) -> binary stream, decompress(member bytes) -> bytes) of the fastest library present."""
    try:
        from isal import igzip, isal_zlib

        return "isal", lambda path: igzip.open(path, "rb"), lambda data: isal_zlib.decompress(data, wbits=31)
    except ImportError:
        pass
    try:
        from zlib_ng import gzip_ng, zlib_ng

        return "zlib-ng", lambda path: gzip_ng.open(path, "rb"), lambda data: zlib_ng.decompress(data, wbits=31)
    except ImportError:
        pass
    import gzip
    import zlib

    return "zlib", lambda path: gzip.open(path, "rb"), lambda data: zlib.decompress(data, wbits=31)


def decompress_failures() -> tuple[type, ...]:
    """The exceptions a corrupt or truncated stream raises, from every library present."""
    errors = [OSError, EOFError, ValueError]
    for module, name in (("zlib", "error"), ("isal.isal_zlib", "error"), ("zlib_ng.zlib_ng", "error")):
        try:
            errors.append(getattr(__import__(module, fromlist=[name]), name))
        except ImportError:
            pass
    return tuple(errors)


def gzip_chunks(path: str, ahead: int = 4) -> Iterator[bytes]:
    """The uncompressed bytes of a gzip file, in chunks of about 16 MiB, inflated ``ahead`` chunks ahead.

    The stream is inflated on a thread of its own (every library here
    releases the GIL while it inflates), so the caller's work on one chunk
    (fasta_scan's cutting and hand-out to its scanning threads) overlaps the
    inflating of the next: a single gzip stream is as fast as its inflater
    and no slower. ``ahead = 0``: inflated in the caller's thread.
    """
    _, opener, _ = gzip_library()
    failures = decompress_failures()

    def inflated() -> Iterator[bytes]:
        try:
            with opener(path) as stream:
                while True:
                    chunk = stream.read(_CHUNK)
                    if not chunk:
                        return
                    yield chunk
        except failures as err:
            raise DecompressError(f"{err}") from None

    if ahead <= 0:
        yield from inflated()
        return
    yield from _read_ahead(inflated(), ahead, "seqsift-inflate")


_END = object()


def _read_ahead(items: Iterator[bytes], ahead: int, name: str) -> Iterator[bytes]:
    """``items``, produced on a thread of their own at most ``ahead`` ahead of the consumer.

    An exception of the producer is raised here, in the consumer, after the
    items before it. A consumer that stops early (closes this generator) stops
    the producer before its next item.
    """
    handoff: queue.Queue = queue.Queue(maxsize=ahead)
    stopped = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stopped.is_set():
                    return
                handoff.put(item)
            handoff.put(_END)
        except BaseException as err:  # handed to the consumer, which raises it
            handoff.put(err)
        finally:
            items.close()

    producer = threading.Thread(target=produce, name=name, daemon=True)
    producer.start()
    try:
        while True:
            item = handoff.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stopped.set()
        while producer.is_alive():  # empty the queue so a waiting put returns and the producer sees `stopped`
            try:
                handoff.get_nowait()
            except queue.Empty:
                producer.join(timeout=0.05)


class BgzfBlocks:
    """Where every BGZF block starts, compressed and uncompressed (int64 arrays), the EOF block excluded."""

    def __init__(self, compressed: np.ndarray, uncompressed: np.ndarray, sizes: np.ndarray, total: int):
        self.compressed, self.uncompressed, self.sizes, self.total = compressed, uncompressed, sizes, total


def bgzf_blocks(path: str) -> BgzfBlocks:
    """Walk the block headers of a BGZF file. DecompressError if a header is broken or the EOF block missing."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        starts, lengths, isizes = [], [], []
        position = 0
        while position < size:
            if data[position:position + 4] != b"\x1f\x8b\x08\x04" or position + 18 > size:
                raise DecompressError(f"no BGZF block header at byte {position}")
            (xlen,) = struct.unpack_from("<H", data, position + 10)
            extra, block_size = position + 12, None
            while extra + 4 <= position + 12 + xlen:
                (slen,) = struct.unpack_from("<H", data, extra + 2)
                if data[extra:extra + 2] == b"BC" and slen == 2:
                    block_size = struct.unpack_from("<H", data, extra + 4)[0] + 1
                extra += 4 + slen
            if block_size is None or position + block_size > size:
                raise DecompressError(f"BGZF block at byte {position} is truncated")
            (isize,) = struct.unpack_from("<I", data, position + block_size - 4)
            starts.append(position)
            lengths.append(block_size)
            isizes.append(isize)
            position += block_size
        if not starts or data[starts[-1]:size] != _BGZF_EOF:
            raise DecompressError("the BGZF file is truncated (no end-of-file block)")
    finally:
        data.close()
    compressed = np.array(starts[:-1], dtype=np.int64)
    sizes = np.array(lengths[:-1], dtype=np.int64)
    produced = np.array(isizes[:-1], dtype=np.int64)
    uncompressed = np.zeros(len(produced), dtype=np.int64)
    np.cumsum(produced[:-1], out=uncompressed[1:])
    return BgzfBlocks(compressed, uncompressed, sizes, int(produced.sum()))


try:  # python-isal's C reader of concatenated gzip members (what its igzip.decompress uses)
    from isal.isal_zlib import _GzipReader as _members_reader
except ImportError:
    _members_reader = None


class BgzfFile(ReadOnlyFile):
    """A BGZF file whose blocks any thread inflates on request, into an array it is given
    (a fasta_scan.BlockSource whose units are the blocks).

    Compressed bytes are read with ``os.pread`` into a buffer per thread,
    reused (no memory map: faulting in the pages of a map from many threads
    at once costs more than the copy); each block is inflated by the fastest
    library present (which releases the GIL) and copied to its place.
    """

    def __init__(self, path: str, blocks: BgzfBlocks):
        self.blocks = blocks
        self.starts, self.total = blocks.uncompressed, blocks.total  # (a fasta_scan.BlockSource)
        self._inflate = gzip_library()[2]
        self._failures = decompress_failures()
        super().__init__(path)
        self._local = threading.local()

    def read_into(self, first: int, stop: int, out: np.ndarray) -> None:
        """Inflate blocks [first, stop) into ``out`` (uint8, exactly their uncompressed size)."""
        if first >= stop:
            return
        begin = int(self.blocks.compressed[first])
        end = int(self.blocks.compressed[stop - 1] + self.blocks.sizes[stop - 1])
        raw = self._compressed_buffer(end - begin)
        try:
            read_file_into(self.fd, raw, begin)
        except EOFError:
            raise DecompressError(f"the file ended inside the BGZF block at byte {begin} or after") from None
        if _members_reader is not None:
            try:
                self._inflate_members(raw, out)
                return
            except self._failures:
                pass  # the block-by-block loop below names the bad block
        self._inflate_each_block(first, stop, raw, out)

    @staticmethod
    def _inflate_members(raw: memoryview, out: np.ndarray) -> None:
        """All gzip members in ``raw`` into ``out`` through python-isal's reader of concatenated
        members: one call per batch, the GIL released throughout. (A call per 64 KiB block took the
        GIL back 16 times per MB: on 16 threads of the H100 host it inflated 1 GB in 0.78 s, this
        in 0.20 s; one thread takes 2.8 s.)"""
        reader, target, place = _members_reader(raw), memoryview(out), 0
        while place < len(out):
            got = reader.readinto(target[place:])
            if not got:
                break
            place += got
        if place != len(out) or reader.read(1):
            raise ValueError("the blocks' sizes differ from their headers'")

    def _inflate_each_block(self, first: int, stop: int, raw: memoryview, out: np.ndarray) -> None:
        begin = int(self.blocks.compressed[first])
        starts = (self.blocks.compressed[first:stop] - begin).tolist()
        ends = (self.blocks.compressed[first:stop] + self.blocks.sizes[first:stop] - begin).tolist()
        place = 0
        for a, b in zip(starts, ends):
            try:
                piece = self._inflate(raw[a:b])
            except self._failures as err:
                raise DecompressError(f"{err} (block at byte {begin + a})") from None
            if place + len(piece) > len(out):
                break
            out[place:place + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
            place += len(piece)
        if place != len(out):
            raise DecompressError(f"the BGZF blocks from byte {begin} hold other sizes than their headers say")

    def _compressed_buffer(self, size: int) -> memoryview:
        """This thread's buffer for ``size`` compressed bytes (reused: no fresh pages per batch)."""
        raw = getattr(self._local, "raw", None)
        if raw is None or len(raw) < size:
            raw = self._local.raw = bytearray(max(size, 1 << 20))
        return memoryview(raw)[:size]


def write_gzi(blocks: BgzfBlocks, out) -> None:
    """The ``.gzi`` (htslib's format): uint64 count, then (compressed, uncompressed) offset
    pairs of every block after the first, little-endian."""
    pairs = np.stack([blocks.compressed[1:], blocks.uncompressed[1:]], axis=1).astype("<u8")
    out.write(np.array([len(pairs)], dtype="<u8").tobytes() + pairs.tobytes())
