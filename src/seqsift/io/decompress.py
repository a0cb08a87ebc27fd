"""Decompressing references: plain gzip as one stream, BGZF blocks in parallel.

Plain gzip (``gzip``, as UCSC ships hg38.fa.gz) cannot be split: it is
inflated as one stream by the fastest library present. Measured on
ecoli536.fa.gz x 40 (200 MB out; benchmarks/README.md, "Reading references"):
python-isal's ``igzip`` 1310 MB/s, zlib-ng's ``gzip_ng`` 880 MB/s, Python's
``gzip`` (zlib) 386 MB/s. So ``isal`` (a dependency, with wheels for x86-64
and aarch64 Linux) first, then ``zlib_ng``, then the standard library.

BGZF (``bgzip``) is a series of gzip members of at most 64 KiB each, whose
sizes are in their headers (SAM spec 4.1): one walk over the headers finds
every block, and batches of blocks are inflated on a thread pool (the
libraries release the GIL), in order. The same walk gives the ``.gzi``.
"""
from __future__ import annotations

import mmap
import os
import queue
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

import numpy as np

__all__ = ["gzip_chunks", "BgzfBlocks", "bgzf_blocks", "bgzf_chunks", "write_gzi", "DecompressError",
           "gzip_library", "decompress_failures"]

_CHUNK = 16 << 20
_BATCH_BYTES = 8 << 20  # compressed bytes per BGZF task
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


def bgzf_chunks(path: str, blocks: BgzfBlocks, threads: int) -> Iterator[bytes]:
    """The uncompressed bytes of a BGZF file, batches of blocks inflated on ``threads`` threads, in order."""
    _, _, inflate = gzip_library()
    failures = decompress_failures()
    ends = blocks.compressed + blocks.sizes
    batch_starts = [0]
    for k in range(1, len(blocks.compressed)):  # per block, cheap: ~50k blocks per GB compressed
        if ends[k] - blocks.compressed[batch_starts[-1]] > _BATCH_BYTES:
            batch_starts.append(k)
    batch_stops = batch_starts[1:] + [len(blocks.compressed)]
    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def inflate_batch(first: int, stop: int) -> bytes:
        view = memoryview(data)
        try:
            return b"".join(inflate(view[a:b]) for a, b in zip(blocks.compressed[first:stop].tolist(),
                                                               ends[first:stop].tolist()))
        except failures as err:
            raise DecompressError(f"{err} (block at byte {int(blocks.compressed[first])} or after)") from None
        finally:
            view.release()

    try:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="seqsift-bgzf") as pool:
            queue = []
            for first, stop in zip(batch_starts, batch_stops):
                if not len(blocks.compressed):
                    break
                queue.append(pool.submit(inflate_batch, first, stop))
                if len(queue) >= 2 * threads:
                    yield queue.pop(0).result()
            while queue:
                yield queue.pop(0).result()
    finally:
        try:
            data.close()
        except BufferError:
            pass  # a worker thread still holds a view; the map closes when it is collected


def write_gzi(blocks: BgzfBlocks, out) -> None:
    """The ``.gzi`` (htslib's format): uint64 count, then (compressed, uncompressed) offset
    pairs of every block after the first, little-endian."""
    pairs = np.stack([blocks.compressed[1:], blocks.uncompressed[1:]], axis=1).astype("<u8")
    out.write(np.array([len(pairs)], dtype="<u8").tobytes() + pairs.tobytes())
