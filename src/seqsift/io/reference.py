"""Opening a FASTA reference: validate it, index it, read slices of it fast.

``open_reference(path)`` accepts what users actually have: plain FASTA, BGZF
FASTA (``bgzip``) and plain gzip FASTA (``gzip``, as UCSC ships hg38.fa.gz).
Compression is told by the file's bytes, never by its name: a BGZF file is a
gzip file whose header carries a ``BC`` extra subfield (the SAM spec, 4.1).

The first time a file is opened it is read ONCE (:mod:`seqsift.io.fasta_scan`:
large blocks, every core, no Python loop per line), and that one pass

* writes the samtools-style ``.fai`` index (byte for byte what pyfaidx and
  ``samtools faidx`` write), and for BGZF the ``.gzi``;
* writes the genome cache (:mod:`seqsift.io.genome_cache`): the bases without
  line breaks, memory-mapped by every later job, so a window of the genome is
  a slice of a map (``Reference.read_view``, no copy).

gzip and BGZF are inflated straight into that pass (:mod:`seqsift.io.decompress`;
BGZF blocks in parallel); no decompressed FASTA is written. Later jobs find
the cache valid (same source size, mtime and content fingerprint; digest
intact) and read nothing but the cache's header. A file that already has a
fresh ``.fai`` (and ``.gzi``) but no cache, e.g. one indexed by samtools,
gets its cache in one pass too; only where the cache cannot be written is it
read through its index as it is.

Indexes go beside the FASTA (``x.fa.fai``, ``x.fa.gz.gzi``) when that directory
is writable, as samtools does, and otherwise into the cache directory, so a
reference in a read-only directory (a shared genome folder) works. An existing
up-to-date index beside the file is reused, wherever it is. When the cache
directory cannot be written, plain and BGZF references are read from the file
through the index (a notice says so); a plain gzip file then cannot be read.

Files whose line lengths vary inside a record ("ragged" FASTA, e.g. a file
pasted together by hand) cannot be described by a ``.fai``. Rather than
refusing them, seqsift rewrites such a file once into the cache with lines of
``NORMALISED_LINE_WIDTH`` bases (a notice says so) and reads the copy. The
copy has the same headers and bases (blank lines and whitespace inside
sequence lines dropped), so hits are the same.

Every problem with the file itself raises :class:`~seqsift.errors.InputError`
with a one-line message naming the file (and the line or record): missing,
unreadable, a directory, empty, not FASTA (FASTQ, binary, bzip2...), a header
without a name, a record without sequence, duplicate record names.

The cache directory is ``$SEQSIFT_CACHE``, else ``$XDG_CACHE_HOME/seqsift``,
else ``~/.cache/seqsift``. Cached files are named after the source file, a
hash of its absolute path and a hash of its size + mtime; they are written
atomically (temporary file + rename), and older copies of the same source are
deleted when a new one is written. On a cluster, workers read the reference
(or its cache) by path, so the cache must be on a filesystem they share
(a home directory on HPC usually is), or set ``SEQSIFT_CACHE`` to one.

A :class:`Reference` holds only paths, record names and the index numbers;
each process opens the file lazily on its first ``read`` and keeps it open.
One with a genome cache pickles as the cache's path and identity, and a Dask
worker reads the record table from the cache (a reference of a million records
pickled whole is about 90 MB, sent through the scheduler).
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import os
import re
import socket
import struct
import tempfile
import threading
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, Sequence

import numpy as np

from ..alphabet import mostly_not_nucleotides
from ..cache import REFERENCE_FOLDER, cache_directory
from ..errors import InputError, note, quote, reading
from . import decompress, fasta_scan
from .genome_cache import CacheWriter, GenomeCache, build_lock, source_fingerprint
from .text_list import TextList

__all__ = ["Reference", "open_reference", "refuse_protein", "cache_directory", "NORMALISED_LINE_WIDTH"]

NORMALISED_LINE_WIDTH = 60
"""Bases per line in the copies seqsift writes of ragged FASTA files."""

# The three layouts seqsift can read, told apart by _compression().
_PLAIN, _BGZF, _GZIP = "plain", "bgzf", "gzip"

_READ_BLOCK = 16 << 20        # bytes per read() when streaming a whole file
_SNIFF_BYTES = 64 << 10       # bytes looked at to decide "is this FASTA?"
_WHITESPACE = b" \t\r\n\v\f"


# --------------------------------------------------------------------------
# The Reference object handed to the jobs and to Dask workers
# --------------------------------------------------------------------------

@dataclass(eq=False)
class Reference:
    """An indexed FASTA reference, cheap to pickle (paths and numbers only).

    path:         the file actually read (the user's file, or its cached copy)
    display_name: the file as the user named it, for messages
    names:        record names, in file order (first word of each header): a
                  sequence of str (a TextList: one text, not a str per record)
    lengths:      record lengths in bases, int64
    fai_path:     its .fai index, or None (none could be written; the columns
                  below are all a read needs)
    gzi_path:     its .gzi (BGZF only, else None)
    bgzf:         whether ``path`` is BGZF-compressed
    offsets, line_bases, line_bytes: the .fai columns 3-5 (int64), i.e. where
                  each record's sequence starts in the file, bases per line,
                  bytes per line including the line ending.
    genome_path:  the genome cache (seqsift.io.genome_cache) reads come from, or None
    record_starts: where each record's first base lies in ``genome_path`` (int64)
    genome_identity: the cache file's (device, inode, mtime, size), so that a
                  process maps a rebuilt cache afresh
    headers:      each record's whole header line after '>' (name and
                  description), where any record has a description and the
                  genome cache knows them (Cas-OFFinder's output shows them); else None
    """

    path: str
    display_name: str
    names: Sequence[str]       # a TextList (seqsift.io.text_list) from a scan or the genome cache
    lengths: np.ndarray
    fai_path: str
    gzi_path: str | None
    bgzf: bool
    offsets: np.ndarray
    line_bases: np.ndarray
    line_bytes: np.ndarray
    genome_path: str | None = None
    record_starts: np.ndarray | None = None
    genome_identity: tuple | None = None
    headers: Sequence[str] | None = None

    def __reduce_ex__(self, protocol):
        """With a genome cache, the cache's path and identity: the unpickling process reads the records
        from the cache, once (:func:`_from_genome_file`); without one, every field."""
        if self.genome_path is None:
            return super().__reduce_ex__(protocol)
        return (_from_genome_file, (self.path, self.display_name, self.fai_path, self.gzi_path, self.bgzf,
                                    self.genome_path, self.genome_identity))

    def read(self, record_index: int, start: int, end: int, table: bytes | None = None) -> bytes:
        """Raw bytes of bases ``[start, end)`` (0-based) of record ``record_index``.

        Case is kept as in the file (soft-masked bases stay lowercase: the
        encoding in ``seqsift.alphabet`` treats them as uppercase). With a
        ``bytes.translate`` ``table`` (``alphabet.TEXT_CODE_TABLE``) the bases
        come back mapped through it, in the same pass that drops line breaks.
        Coordinates may be Python or NumPy integers of any size (int64-safe).
        Asking for anything outside ``0 <= start <= end <= length`` raises IndexError.
        """
        i, start, end = self._checked(record_index, start, end)
        if start == end:
            return b""
        if self.genome_path is not None:
            data = self.read_view(i, start, end).tobytes()
            return data if table is None else data.translate(table)
        # Where the bases lie in the (uncompressed) file, by the .fai arithmetic
        # (as htslib): base p of a record is at byte offset + (p // line_bases)
        # * line_bytes + p % line_bases. Between the first base and one past the
        # last lie the bases and the line endings, which are deleted.
        offset, bases, width = int(self.offsets[i]), int(self.line_bases[i]), int(self.line_bytes[i])
        first = offset + (start // bases) * width + start % bases
        stop = offset + (end // bases) * width + end % bases
        handle = _open_handle(self)
        if self.bgzf:
            data = _read_bgzf(self.path, handle, first, stop)
        else:
            data = _read_plain(self.path, handle, first, stop)
        data = data.translate(table, b"\r\n")
        if len(data) != end - start:
            raise OSError(f"{self.display_name}: got {len(data)} bases instead of {end - start} reading "
                          f"[{start}, {end}) of record {self.names[i]!r}; has the file changed since "
                          f"it was indexed?")
        return data

    def read_view(self, record_index: int, start: int, end: int) -> np.ndarray:
        """Bases ``[start, end)`` of record ``record_index`` as a uint8 array, case as in the file.

        With the genome cache (``genome_path``) this is a view of its memory
        map: no copy, no read until the pages are touched (a GPU path can copy
        it to pinned memory directly). Without it, a new array of ``read``'s bytes.
        The view stays valid after ``close``. Same IndexError rules as ``read``.
        """
        i, start, end = self._checked(record_index, start, end)
        if self.genome_path is None:
            return np.frombuffer(self.read(i, start, end), dtype=np.uint8)
        first = int(self.record_starts[i]) + start
        return _open_handle(self)[first:first + end - start]

    def cached_range(self, record_index: int, start: int, end: int) -> tuple[str, int] | None:
        """(file, byte offset) where bases ``[start, end)`` of the record lie as they are, or None.

        With the genome cache, the window is ``end - start`` consecutive bytes
        of the cache file, so a reader can ``pread`` them straight into its
        own buffer (the GPU upload's pinned memory) instead of touching a
        memory map page by page. Without the cache (bases split by line
        breaks in the FASTA) None. Same IndexError rules as ``read``.
        """
        i, start, end = self._checked(record_index, start, end)
        if self.genome_path is None:
            return None
        return self.genome_path, int(self.record_starts[i]) + start

    def read_records(self, first: int, stop: int) -> np.ndarray:
        """The bases of records ``first .. stop - 1`` back to back (no separator), case as in the file.

        With the genome cache, whose records lie back to back, this is one view
        of its map (no copy, one read however many records); without it, the
        records' reads joined.
        """
        first, stop = int(first), int(stop)
        if not 0 <= first <= stop <= len(self.names):
            raise IndexError(f"{self.display_name}: no records {first}..{stop - 1} (it has {len(self.names)})")
        if first == stop:
            return np.empty(0, dtype=np.uint8)
        where = self.cached_records_range(first, stop)
        if where is None:
            return np.concatenate([self.read_view(i, 0, int(self.lengths[i])) for i in range(first, stop)])
        _, begin, length = where
        return _open_handle(self)[begin:begin + length]

    def cached_records_range(self, first: int, stop: int) -> tuple[str, int, int] | None:
        """(file, byte offset, length) where records ``first .. stop - 1`` lie back to back in the genome
        cache (a reader can ``pread`` them at once), or None without the cache."""
        if self.genome_path is None or first >= stop:
            return None
        return self.genome_path, int(self.record_starts[first]), int(self.lengths[first:stop].sum())

    def _checked(self, record_index, start, end) -> tuple[int, int, int]:
        i = int(record_index)
        if not 0 <= i < len(self.names):
            raise IndexError(f"{self.display_name}: no record number {i} (it has {len(self.names)})")
        start, end, length = int(start), int(end), int(self.lengths[i])
        if not 0 <= start <= end <= length:
            raise IndexError(f"{self.display_name}: cannot read [{start}, {end}) of record "
                             f"{self.names[i]!r}, which has {length} bases")
        return i, start, end

    def close(self) -> None:
        """Close this process's open handle on the file (the next read reopens it)."""
        with _HANDLES_LOCK:
            handle = _HANDLES.pop(_handle_key(self), None)
        if isinstance(handle, int):
            os.close(handle)
        # a genome cache's map is left to the garbage collector: views handed
        # out by read_view may still use it


def _from_genome_file(path: str, display_name: str, fai_path: str | None, gzi_path: str | None, bgzf: bool,
                      genome_path: str, identity: tuple) -> Reference:
    """A pickled Reference (``Reference.__reduce_ex__``), its records read from its genome cache."""
    genome = _genome_of_identity(genome_path, tuple(identity))
    table = genome.table
    return Reference(path=path, display_name=display_name, names=table["names"], lengths=table["lengths"],
                     fai_path=fai_path, gzi_path=gzi_path, bgzf=bgzf, offsets=table["offsets"],
                     line_bases=table["line_bases"], line_bytes=table["line_bytes"], genome_path=genome_path,
                     record_starts=genome.record_starts, genome_identity=genome.identity,
                     headers=table["headers"] or None)


@functools.lru_cache(maxsize=4)
def _genome_of_identity(genome_path: str, identity: tuple) -> GenomeCache:
    """The genome cache file that the sending process had open (the same identity); OSError if it
    has since been rebuilt or removed. Read once per process: a worker unpickles the job again
    for every task on some paths."""
    if not os.path.exists(genome_path):
        raise OSError(f"the genome cache {genome_path} is not on {socket.gethostname()}'s filesystem: a "
                      f"cluster's workers read it by path, so set SEQSIFT_CACHE to a folder they all share")
    genome = GenomeCache.open(Path(genome_path), fingerprint=None)
    if genome is None or genome.identity != identity:
        raise OSError(f"the genome cache {genome_path} changed during the job; run the job again")
    return genome


# What each process keeps open, per reference: a Reference is unpickled afresh
# for every Dask task, so the handle lives here, keyed by the process id (a
# forked child must not share its parent's file offset) and the paths. For a
# genome cache it is a uint8 array over a memory map of the file; for a plain
# file an OS file descriptor; for BGZF, the block table of the .gzi.

_HANDLES: dict[tuple, object] = {}
_HANDLES_LOCK = threading.Lock()


def _handle_key(ref: Reference) -> tuple:
    return (os.getpid(), ref.path, ref.fai_path, ref.gzi_path, ref.genome_path, ref.genome_identity)


def _open_handle(ref: Reference):
    key = _handle_key(ref)
    handle = _HANDLES.get(key)
    if handle is None:
        with _HANDLES_LOCK:
            handle = _HANDLES.get(key)
            if handle is None:
                if ref.genome_path is not None:
                    import mmap

                    with open(ref.genome_path, "rb") as f:
                        handle = np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), dtype=np.uint8)
                elif ref.bgzf:
                    handle = _load_gzi(ref.gzi_path)
                else:
                    handle = os.open(ref.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
                _HANDLES[key] = handle
    return handle


def _read_plain(path: str, fd: int, first: int, stop: int) -> bytes:
    """Bytes [first, stop) of a plain file. ``os.pread`` needs no shared file
    position, so threads need no lock."""
    if not hasattr(os, "pread"):  # Windows
        with open(path, "rb") as f:
            f.seek(first)
            return f.read(stop - first)
    parts = []
    while first < stop:  # pread returns at most ~2 GiB at a time on Linux
        part = os.pread(fd, min(stop - first, 1 << 30), first)
        if not part:
            break  # file shorter than its index says: the length check in read() reports it
        parts.append(part)
        first += len(part)
    return b"".join(parts)


def _load_gzi(gzi_path: str) -> tuple[np.ndarray, np.ndarray]:
    """The BGZF block table of a .gzi: (compressed, uncompressed) start of every block.

    The .gzi format (htslib, also written by pyfaidx): a little-endian uint64
    count, then that many (compressed offset, uncompressed offset) uint64
    pairs, one per block after the first; the first block starts at (0, 0).
    """
    table = np.fromfile(gzi_path, dtype="<u8")
    pairs = table[1:1 + 2 * int(table[0])].reshape(-1, 2).astype(np.int64)
    return (np.concatenate([[0], pairs[:, 0]]), np.concatenate([[0], pairs[:, 1]]))


def _read_bgzf(path: str, blocks: tuple[np.ndarray, np.ndarray], first: int, stop: int) -> bytes:
    """Uncompressed bytes [first, stop) of a BGZF file.

    Seek to the block holding byte ``first`` and decompress from there: BGZF
    blocks are gzip members, so the gzip module (zlib, in C) reads on across
    blocks. (pyfaidx's BGZF reads go through Bio.bgzf, whose ``read`` grows
    its result by concatenation and takes seconds for a few Mbp.)
    """
    compressed_starts, uncompressed_starts = blocks
    block = int(np.searchsorted(uncompressed_starts, first, side="right")) - 1
    with open(path, "rb") as raw:
        raw.seek(int(compressed_starts[block]))
        with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
            skip = first - int(uncompressed_starts[block])  # < 64 KiB, the size of a block
            if skip and len(unzipped.read(skip)) != skip:
                return b""
            return unzipped.read(stop - first)


# --------------------------------------------------------------------------
# open_reference: the steps, in order
# --------------------------------------------------------------------------

def open_reference(path: str | os.PathLike) -> Reference:
    """Validate and index the FASTA file at ``path``; see the module docstring.

    Raises InputError (one line, naming the file) for anything wrong with it.
    """
    display = os.fspath(path)
    source = Path(os.path.expanduser(display))
    _check_regular_file(source, display)
    kind = _compression(source, display)
    _check_looks_like_fasta(source, kind, display)
    cache = _CacheEntry(source)
    with reading(display):
        fingerprint = source_fingerprint(source)

    genome = GenomeCache.open(cache.path(".genome"), fingerprint)
    if genome is None and kind != _GZIP and not _cache_writable(cache):
        # Indexed by someone else (samtools, an older seqsift) and no genome cache can be written:
        # read through the index, without a pass over the file. Where the cache can be written, the
        # one pass builds it: reads through an index are a read per record, which a reference of a
        # million records (or a pack of its small records) cannot afford.
        target, target_kind = _target(source, kind, cache)
        existing = _fresh_index(target, target_kind, cache, check=True)
        if existing is not None:
            names, columns = _read_fai(existing[0], display)
            reference = Reference(path=str(target), display_name=display, names=names, lengths=columns[0],
                                  fai_path=str(existing[0]), gzi_path=_optional_str(existing[1]),
                                  bgzf=target_kind == _BGZF, offsets=columns[1], line_bases=columns[2],
                                  line_bytes=columns[3])
            return reference
    if genome is None:
        return _read_once(source, kind, display, cache, fingerprint)
    return _from_cache(genome, source, kind, display, cache)


SAMPLED_RECORDS = 256
SAMPLED_BASES = 4096


def refuse_protein(reference: Reference) -> None:
    """InputError naming the file and record if a record looks like protein, not DNA.

    Checked on up to ``SAMPLED_RECORDS`` records spread over the file, the
    first ``SAMPLED_BASES`` bases of each (alphabet.mostly_not_nucleotides):
    a protein FASTA fails on its first record, at the cost of a few reads.
    """
    count = len(reference.names)
    chosen = np.unique(np.linspace(0, count - 1, min(count, SAMPLED_RECORDS)).astype(np.int64))
    pieces = [reference.read_view(int(i), 0, min(int(reference.lengths[i]), SAMPLED_BASES)) for i in chosen]
    offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in pieces], out=offsets[1:])
    bad = mostly_not_nucleotides(np.concatenate(pieces) if pieces else np.empty(0, np.uint8), offsets)
    if bad is not None:
        name = reference.names[int(chosen[bad])]
        raise InputError(f"{reference.display_name}: record {quote(name)} looks like protein, not DNA (most of "
                         f"its letters are not A, C, G, T, U or N); seqsift searches nucleotide sequences")


def _cache_writable(cache: "_CacheEntry") -> bool:
    """Whether the genome cache's folder can be made and written."""
    try:
        cache.make_directory()
    except (OSError, InputError):
        return False
    return os.access(cache.path("").parent, os.W_OK)


def _optional_str(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _target(source: Path, kind: str, cache: "_CacheEntry") -> tuple[Path, str]:
    """The file the index describes: the normalised copy of a ragged source, else the source."""
    normalised = cache.path(".normalised.fa")
    return (normalised, _PLAIN) if normalised.exists() else (source, kind)


def _from_cache(genome: GenomeCache, source: Path, kind: str, display: str, cache: "_CacheEntry") -> Reference:
    """The Reference of a valid genome cache; the source is not read."""
    table = genome.table
    target, target_kind = _target(source, kind, cache)
    if target_kind != table["kind"]:  # the normalised copy was deleted: the cache has every base
        target, target_kind = Path(genome.path), _PLAIN
    indexes = _fresh_index(target, target_kind, cache, check=False) if target_kind != _GZIP else None
    columns = [np.asarray(table[c], dtype=np.int64) for c in ("lengths", "offsets", "line_bases", "line_bytes")]
    return Reference(path=genome.path if target_kind == _GZIP else str(target), display_name=display,
                     names=table["names"], lengths=columns[0],
                     fai_path=_optional_str(indexes and indexes[0]), gzi_path=_optional_str(indexes and indexes[1]),
                     bgzf=target_kind == _BGZF, offsets=columns[1], line_bases=columns[2], line_bytes=columns[3],
                     genome_path=genome.path, record_starts=genome.record_starts,
                     genome_identity=genome.identity,
                     headers=table["headers"] or None)


def _read_once(source: Path, kind: str, display: str, cache: "_CacheEntry", fingerprint: bytes) -> Reference:
    """Read the file once: its index, and its genome cache when the cache directory takes one.

    Holds the cache entry's lock meanwhile, so that of two jobs started together
    one reads and the other waits, then finds the cache built.
    """
    with ExitStack() as held:
        genome_file: Path | None = cache.path(".genome")
        try:
            cache.make_directory()
            held.enter_context(build_lock(cache.path(".genome.lock")))
        except (OSError, InputError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            if kind == _GZIP:
                raise InputError(f"{display}: is plain gzip, which seqsift decompresses into its cache, but "
                                 f"the cache directory {cache.path('').parent} cannot be written ({reason}); "
                                 f"set SEQSIFT_CACHE to a writable directory, or bgzip the file") from None
            note(f"cannot write seqsift's cache {cache.path('').parent} ({reason}); reading {display} "
                    f"without the genome cache")
            genome_file = None
        if genome_file is not None:
            genome = GenomeCache.open(genome_file, fingerprint)  # built by another job while we waited
            if genome is not None:
                return _from_cache(genome, source, kind, display, cache)

        target, target_kind = _target(source, kind, cache)
        try:
            result = _scan(target, target_kind, display, cache, genome_file, fingerprint)
        except fasta_scan.RaggedRecord as ragged:
            normalised = cache.path(".normalised.fa")
            cache.make_directory()
            _normalise(source, kind, normalised, display)
            note(f"{display} has lines of uneven length{ragged.where}, which a FASTA index cannot "
                    f"describe; rewrote it once with even lines to {normalised}")
            target, target_kind = normalised, _PLAIN
            result = _scan(target, target_kind, display, cache, genome_file, fingerprint)
        layout, genome, fai, gzi = result
        if genome_file is not None:
            cache.prune()
        if kind == _GZIP and genome is not None and target_kind == _GZIP:
            note(f"{display} is plain gzip; decompressed once into the genome cache {genome.path} "
                    f"(bgzip it to read it without the cache)")
    if genome is not None:
        return _from_cache(genome, source, kind, display, cache)
    return Reference(path=str(target), display_name=display, names=layout.names, lengths=layout.lengths,
                     fai_path=_optional_str(fai), gzi_path=_optional_str(gzi), bgzf=target_kind == _BGZF,
                     offsets=layout.offsets, line_bases=layout.line_bases, line_bytes=layout.line_bytes,
                     headers=layout.headers)


def _scan(target: Path, kind: str, display: str, cache: "_CacheEntry", genome_file: Path | None,
          fingerprint: bytes):
    """One pass over ``target``: (layout, genome cache or None, .fai path, .gzi path).

    Raises fasta_scan.RaggedRecord, or InputError for anything wrong with the file.
    """
    threads = fasta_scan.worker_threads()
    writer = None
    bgzf_blocks = None
    fai_text: Future | None = None
    # The .fai's text is formatted on a thread of its own (and its threads) while this one checks the
    # names and finishes the genome cache: for 10^6 records each is a tenth of a second of NumPy.
    formatter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seqsift-fai")
    try:
        with reading(display), ExitStack() as stack:
            size = os.path.getsize(target)
            if kind == _GZIP:
                blocks, capacity = fasta_scan.blocks_of_stream(decompress.gzip_chunks(str(target))), 4 * size
            else:
                if kind == _PLAIN:
                    source = stack.enter_context(fasta_scan.PlainFile(str(target)))
                else:
                    bgzf_blocks = decompress.bgzf_blocks(str(target))
                    source = stack.enter_context(decompress.BgzfFile(str(target), bgzf_blocks))
                capacity = source.total
                blocks = fasta_scan.blocks_of_source(source, fasta_scan.block_bytes_for(capacity, threads))
            if genome_file is not None:
                writer = _SafeWriter(genome_file, fingerprint, display, capacity)
            layout = fasta_scan.scan_fasta(blocks, threads=threads, destination=writer)
        if kind != _GZIP:
            fai_text = formatter.submit(layout.fai_bytes, threads)
        _check_records(layout.names, layout.lengths, display, layout.names_distinct)
    except decompress.DecompressError as err:
        if writer:
            writer.abandon()
        if "end-of-file block" in str(err):
            raise InputError(f"{display}: {err}") from None
        raise _read_error(display, kind, err) from None
    except fasta_scan.HeaderProblem as problem:
        if writer:
            writer.abandon()
        _scan_whole_file(target, kind, display)  # raises the InputError that names the line
        raise InputError(f"{display}: cannot be indexed ({problem})") from None
    except BaseException:
        if writer:
            writer.abandon()
        raise
    finally:
        formatter.shutdown(wait=False)   # (a text being formatted is waited for below, or dropped)
    table = {"names": layout.names, "kind": kind, "headers": layout.headers,
             **{c: getattr(layout, c) for c in ("lengths", "offsets", "line_bases", "line_bytes")}}
    genome = writer.finish(table) if writer else None
    # The index after the cache: a job started meanwhile that finds the index but no cache reads
    # through the index (open_reference), so it must never see the one without the other.
    fai, gzi = _write_index(target, kind, cache, fai_text, bgzf_blocks)
    return layout, genome, fai, gzi


class _SafeWriter:
    """A CacheWriter whose failures (disk full, say) cost the cache, never the job
    (a fasta_scan.Destination, written from the scanning threads).

    A write that fails only marks the cache lost (later writes go nowhere);
    the file is closed and removed by ``finish`` or ``abandon``, which the
    caller calls once the scanning threads are done, never under a thread
    that may still be writing to it.
    """

    def __init__(self, path: Path, fingerprint: bytes, display: str, capacity: int):
        self.display = display
        self.writer: CacheWriter | None = None
        self.lost = False   # a write failed: the cache is given up
        self._losing = threading.Lock()
        try:
            self.writer = CacheWriter(path, fingerprint, capacity)
        except OSError as err:
            self._lose(err)

    def _lose(self, err: OSError) -> None:
        with self._losing:
            first, self.lost = not self.lost, True
        if first:
            note(f"cannot write the genome cache of {self.display} ({err.strerror or err}); going on without it")

    def write(self, offset: int, sequence: np.ndarray) -> None:
        if self.writer is None or self.lost:
            return
        try:
            self.writer.write(offset, sequence)
        except OSError as err:
            self._lose(err)

    def finish(self, table: dict) -> GenomeCache | None:
        if self.writer is None or self.lost:
            self.abandon()
            return None
        try:
            return self.writer.finish(table)
        except OSError as err:
            self._lose(err)
            self.abandon()
            return None

    def abandon(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.abandon()


# --- step 1: is it a readable regular file? --------------------------------

def _open_binary(path: Path) -> IO[bytes]:
    """``open(path, 'rb')``: one place to open user files (tests patch it to simulate EACCES)."""
    return open(path, "rb")


def _check_regular_file(source: Path, display: str) -> None:
    with reading(display):
        if not source.exists():
            if source.is_symlink():
                raise InputError(f"{display}: broken symbolic link (it points to {os.readlink(source)})")
            raise InputError(f"{display}: no such file")
        if source.is_dir():
            raise InputError(f"{display}: is a directory, not a FASTA file")
        if not source.is_file():
            raise InputError(f"{display}: is not a regular file (a pipe or device?); seqsift needs a "
                             f"file it can index, so save the FASTA to disk first")
        if source.stat().st_size == 0:
            raise InputError(f"{display}: is empty (0 bytes)")
        with _open_binary(source):
            pass


# --- step 2: which compression? ---------------------------------------------

_OTHER_COMPRESSIONS = {  # magic bytes -> (format, command that turns it into bgzip)
    b"BZh": ("bzip2", "bzcat"),
    b"\xfd7zXZ\x00": ("xz", "xzcat"),
    b"\x28\xb5\x2f\xfd": ("zstd", "zstdcat"),
    b"PK\x03\x04": ("zip", "unzip -p"),
}


def _compression(source: Path, display: str) -> str:
    """``plain``, ``bgzf`` or ``gzip`` from the first bytes; InputError for other compressions."""
    with _open_binary(source) as f:
        head = f.read(512)
    if head[:2] == b"\x1f\x8b":
        return _BGZF if _has_bgzf_extra_field(head) else _GZIP
    for magic, (name, command) in _OTHER_COMPRESSIONS.items():
        if head.startswith(magic):
            raise InputError(f"{display}: is {name}-compressed; seqsift reads plain, gzip or bgzip "
                             f"FASTA (e.g. {command} {display} | bgzip > ref.fa.gz)")
    return _PLAIN


def _has_bgzf_extra_field(head: bytes) -> bool:
    """Whether a gzip header carries the BGZF ``BC`` subfield (SAM spec 4.1).

    Header: ID1 ID2 CM FLG MTIME(4) XFL OS, then, when FLG has FEXTRA (bit 2),
    XLEN (2 bytes, little endian) and XLEN bytes of subfields, each
    SI1 SI2 SLEN(2) and SLEN bytes of data. BGZF's is SI1='B' SI2='C' SLEN=2.
    """
    if len(head) < 12 or head[2] != 8 or not head[3] & 0x04:
        return False
    (xlen,) = struct.unpack_from("<H", head, 10)
    extra = head[12:12 + xlen]
    i = 0
    while i + 4 <= len(extra):
        si1, si2, slen = extra[i], extra[i + 1], struct.unpack_from("<H", extra, i + 2)[0]
        if si1 == ord("B") and si2 == ord("C") and slen == 2:
            return True
        i += 4 + slen
    return False


# --- step 3: does it look like FASTA? ------------------------------------------

@contextmanager
def _decompressed(source: Path, kind: str) -> Iterator[IO[bytes]]:
    """The file's uncompressed bytes as a binary stream (gzip reads BGZF too)."""
    with _open_binary(source) as raw:
        if kind == _PLAIN:
            yield raw
        else:
            with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
                yield unzipped


def _read_error(display: str, kind: str, err: BaseException) -> InputError:
    if kind == _PLAIN:
        return InputError(f"{display}: cannot read: {getattr(err, 'strerror', None) or err}")
    return InputError(f"{display}: the {'BGZF' if kind == _BGZF else 'gzip'} data is corrupt or "
                      f"truncated ({err})")


def _read_chunks(stream: IO[bytes], display: str, kind: str, size: int = _READ_BLOCK) -> Iterator[bytes]:
    """Blocks of ``stream``; a decompression error becomes an InputError."""
    while True:
        try:
            chunk = stream.read(size)
        except (OSError, EOFError, zlib.error) as err:
            raise _read_error(display, kind, err) from None
        if not chunk:
            return
        yield chunk


def _read_lines(stream: IO[bytes], display: str, kind: str) -> Iterator[bytes]:
    """Lines of ``stream``; a decompression error becomes an InputError."""
    lines = iter(stream)
    while True:
        try:
            line = next(lines)
        except StopIteration:
            return
        except (OSError, EOFError, zlib.error) as err:
            raise _read_error(display, kind, err) from None
        yield line


def _check_looks_like_fasta(source: Path, kind: str, display: str) -> None:
    """InputError unless the first non-blank byte (after decompression) is '>'."""
    with _decompressed(source, kind) as stream:
        head = b""
        for chunk in _read_chunks(stream, display, kind, _SNIFF_BYTES):
            head += chunk
            if head.strip(_WHITESPACE) or len(head) > _READ_BLOCK:
                break
    text = head.lstrip(_WHITESPACE)
    if text[:1] == b">":
        return
    inside = "" if kind == _PLAIN else " after decompression"
    if not text:
        raise InputError(f"{display}: is empty{inside} (no '>' header, no sequence)"
                         if not head else f"{display}: holds only blank lines{inside} (no FASTA records)")
    raise InputError(f"{display}: is not FASTA: {_what_it_looks_like(text, head)}")


def _what_it_looks_like(text: bytes, head: bytes) -> str:
    """A short description of a file that does not start with '>'."""
    line_no = head[: len(head) - len(text)].count(b"\n") + 1
    first_line = text.split(b"\n", 1)[0].rstrip(b"\r")
    if text.startswith(b"@"):
        return ("it looks like FASTQ (it starts with '@'); seqsift needs a FASTA reference "
                "(convert with e.g. seqtk seq -a)")
    if text.startswith(b"\x1f\x8b"):
        return "it is compressed twice (gzip inside gzip)"
    if text.startswith(b"BAM\x01"):
        return "it is a BAM file"
    if text.startswith(b"CRAM"):
        return "it is a CRAM file"
    if text.startswith(b"\x43\x27\x41\x1a"):
        return "it is a UCSC .2bit file (convert with twoBitToFa)"
    sample = text[:4096]
    printable = sum(32 <= b < 127 or b in b"\t\r\n" for b in sample)
    if b"\x00" in sample or printable < 0.9 * len(sample):
        return "it looks like binary data, not text"
    if text.startswith(b"LOCUS"):
        return "it looks like GenBank; convert it to FASTA first"
    return f"a FASTA file starts with a '>' header line, but line {line_no} is {quote(first_line)}"


# --- step 4: the cache directory and its entries ---------------------------------

class _CacheEntry:
    """Names of the cache files derived from one source file.

    ``<stem>.<path hash>.<state hash><suffix>`` in ``<cache>/reference/``: the
    path hash identifies the source (absolute path), the state hash its
    version (size and mtime), so a changed file gets fresh copies and
    ``prune()`` deletes the copies of its older versions.
    """

    def __init__(self, source: Path):
        stat = source.stat()
        absolute = os.path.abspath(source)
        self.key = hashlib.sha1(absolute.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        self.state = hashlib.sha1(f"{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:8]
        stem = re.sub(r"\.(gz|bgz|bgzf)$", "", source.name, flags=re.IGNORECASE)
        stem = re.sub(r"\.(fa|fasta|fna|fas|mfa|ffn|frn|seq)$", "", stem, flags=re.IGNORECASE)
        self.stem = re.sub(r"[^A-Za-z0-9._-]", "_", stem)[:60] or "reference"

    def path(self, suffix: str) -> Path:
        """Path of this entry's ``suffix`` file (nothing is created: see ``make_directory``)."""
        return cache_directory(create=False) / REFERENCE_FOLDER / f"{self.stem}.{self.key}.{self.state}{suffix}"

    def make_directory(self) -> None:
        """Create the cache directory; call before writing an entry."""
        cache_directory()
        self.path("").parent.mkdir(exist_ok=True)

    def prune(self) -> None:
        """Delete cache files of older versions of the same source file."""
        current = f".{self.key}.{self.state}"
        for old in self.path("").parent.glob(f"*.{self.key}.*"):
            if current not in old.name:
                _remove_quietly(old)


def _remove_quietly(*paths: Path) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


@contextmanager
def _atomic_write(target: Path) -> Iterator[IO[bytes]]:
    """A binary file that appears at ``target`` only once completely written."""
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix="-" + target.name)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        _remove_quietly(Path(temporary))
        raise


# --- step 5: the index ---------------------------------------------------------

def _directory_is_writable(directory: Path) -> bool:
    """Whether we may create index files in ``directory`` (tests patch this)."""
    return os.access(directory, os.W_OK | os.X_OK)


def _index_is_fresh(target: Path, fai: Path, gzi: Path | None) -> bool:
    """Whether ``fai`` (and ``gzi``) exist and are no older than ``target``."""
    try:
        made = os.stat(target).st_mtime
        return all(os.stat(index).st_mtime >= made for index in (fai, gzi) if index is not None)
    except OSError:
        return False


def _index_places(target: Path, kind: str, cache: "_CacheEntry") -> list[tuple[Path, Path | None]]:
    """Where the (.fai, .gzi) of ``target`` may be: beside it, then in the cache."""
    return [(Path(f"{target}.fai"), Path(f"{target}.gzi") if kind == _BGZF else None),
            (cache.path(".fai"), cache.path(".gzi") if kind == _BGZF else None)]


def _fresh_index(target: Path, kind: str, cache: "_CacheEntry", check: bool) -> tuple[Path, Path | None] | None:
    """An up-to-date (.fai, .gzi) of ``target`` (``check``: that also parses and fits), or None."""
    for fai, gzi in _index_places(target, kind, cache):
        if _index_is_fresh(target, fai, gzi) and (not check or _index_is_usable(fai, gzi, target, kind)):
            return fai, gzi
    return None


def _write_index(target: Path, kind: str, cache: "_CacheEntry", fai_text: Future | None,
                 bgzf_blocks: decompress.BgzfBlocks | None) -> tuple[Path | None, Path | None]:
    """Write the .fai (and .gzi) of a scanned ``target``: beside it if that directory is
    writable, else into the cache; (None, None) where neither takes it (reads need no file).
    ``fai_text``: the .fai's bytes, being formatted (None for plain gzip, which has no index)."""
    if kind == _GZIP:
        return None, None
    places = _index_places(target, kind, cache)
    if not _directory_is_writable(target.parent):
        places = places[1:]
    for fai, gzi in places:
        try:
            if fai.parent == cache.path("").parent:
                cache.make_directory()
            with _atomic_write(fai) as out:
                out.write(fai_text.result())
            if gzi is not None:
                with _atomic_write(gzi) as out:
                    decompress.write_gzi(bgzf_blocks, out)
            return fai, gzi
        except (OSError, InputError):
            continue  # e.g. a read-only filesystem that os.access did not see: try the cache
    return None, None


def _index_is_usable(fai: Path, gzi: Path | None, target: Path, kind: str) -> bool:
    """Whether an existing index parses and (plain files) fits inside ``target``."""
    try:
        _, (lengths, offsets, line_bases, line_bytes) = _parse_fai(fai)
        if gzi is not None:
            _load_gzi(str(gzi))
    except (OSError, ValueError, IndexError):
        return False
    if kind != _PLAIN or not len(lengths):
        return True
    safe_bases = np.maximum(line_bases, 1)
    last_byte = offsets + (lengths // safe_bases) * line_bytes + lengths % safe_bases
    return bool(last_byte.max() <= os.stat(target).st_size)


def _parse_fai(fai: Path) -> tuple[tuple[str, ...], tuple[np.ndarray, ...]]:
    """Names and (lengths, offsets, line_bases, line_bytes) of a .fai; ValueError if malformed."""
    names, numbers = [], []
    with open(fai, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) < 5:
                raise ValueError(f"bad .fai line {line!r}")
            values = [int(v) for v in fields[1:5]]
            length, _, bases, width = values
            if min(values) < 0 or (length and (bases < 1 or width < bases)):
                raise ValueError(f"bad .fai line {line!r}")
            names.append(fields[0])
            numbers.append(values)
    table = np.array(numbers, dtype=np.int64).reshape(-1, 4)
    return tuple(names), tuple(np.ascontiguousarray(table[:, c]) for c in range(4))


def _read_fai(fai: Path, display: str):
    """Parse ``fai`` and check the records (``_check_records``)."""
    try:
        names, columns = _parse_fai(fai)
    except (OSError, ValueError) as err:
        raise InputError(f"{display}: its index {fai} is unreadable ({err}); delete it to rebuild") from None
    _check_records(names, columns[0], display)
    return names, columns


def _check_records(names: Sequence[str], lengths: np.ndarray, display: str, distinct: bool | None = None) -> None:
    """InputError unless there is a record and names are unique; a note for records without bases.

    Records without bases (a filtered contig's header left behind) hold no
    hit; they are kept, so that record numbers stay those of the file, and
    said once. Written for a million records: the names' hashes sorted
    (:meth:`TextList.all_distinct`, no str decoded; ``distinct``: its answer, where the scan found it
    with the hashes its threads found), a loop only to name the duplicate in the message.
    """
    if not names:
        raise InputError(f"{display}: contains no FASTA records")
    if not (distinct if distinct is not None else TextList.of(names).all_distinct()):
        first_seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in first_seen:
                raise InputError(f"{display}: record name '{name}' is used twice (records {first_seen[name] + 1} "
                                 f"and {i + 1}); record names (the first word of each '>' line) must be unique")
            first_seen[name] = i
    empty = np.flatnonzero(np.asarray(lengths) == 0)
    if empty.size:
        i = int(empty[0])
        others = f" and {empty.size - 1} more record{'s' if empty.size != 2 else ''}" if empty.size > 1 else ""
        note(f"{display}: record '{names[i]}' (record {i + 1}){others} {'have' if others else 'has'} no sequence "
             f"and can hold no hit")


# --- the slow, exact pass: precise errors and ragged-line normalisation --------------

def _scan_whole_file(target: Path, kind: str, display: str) -> None:
    """Re-read ``target`` line by line to raise the InputError that names the bad line."""
    with _decompressed(target, kind) as stream:
        _scan_fasta(_read_lines(stream, display, kind), display)


def _normalise(source: Path, kind: str, destination: Path, display: str) -> None:
    """Rewrite ``source`` to ``destination`` with NORMALISED_LINE_WIDTH bases per line."""
    with _decompressed(source, kind) as stream, _atomic_write(destination) as out:
        _scan_fasta(_read_lines(stream, display, kind), display, out)


def _scan_fasta(lines: Iterator[bytes], display: str, out: IO[bytes] | None = None,
                width: int = NORMALISED_LINE_WIDTH) -> None:
    """Check FASTA ``lines`` one by one; with ``out``, also write them re-wrapped to ``width``.

    Raises InputError naming the line for: text before the first header, a
    header without a name, a header that is not UTF-8, a non-ASCII byte in a
    sequence line. Blank lines and whitespace inside sequence lines are
    dropped; headers are copied unchanged (with '\\n' line endings).
    """
    record = None
    pending = bytearray()  # bases not yet written (fewer than a few lines' worth)

    def write_full_lines(final: bool) -> None:
        full = len(pending) if final else len(pending) - len(pending) % width
        if full:
            out.write(b"\n".join(pending[i:i + width] for i in range(0, full, width)) + b"\n")
            del pending[:full]

    for line_no, raw in enumerate(lines, start=1):
        line = raw.rstrip(b"\r\n")
        if line.startswith(b">"):
            words = line[1:].split()
            if not words:
                raise InputError(f"{display}: line {line_no}: header line has no record name (nothing after '>')")
            try:
                record = words[0].decode("utf-8")
                line.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{display}: line {line_no}: header is not UTF-8 text: {quote(line)}") from None
            if out is not None:
                write_full_lines(final=True)
                out.write(line + b"\n")
            continue
        bases = line.translate(None, _WHITESPACE)
        if not bases:
            continue
        if record is None:
            raise InputError(f"{display}: line {line_no}: text before the first '>' header: {quote(line)}")
        if not bases.isascii():
            byte = next(b for b in bases if b >= 0x80)
            raise InputError(f"{display}: line {line_no}: record '{record}' has a non-ASCII byte "
                             f"(0x{byte:02X}) in its sequence")
        if out is not None:
            pending += bases
            if len(pending) >= 1 << 20:
                write_full_lines(final=False)
    if out is not None:
        write_full_lines(final=True)
