"""Opening a FASTA reference: validate it, index it, read slices of it fast.

``open_reference(path)`` accepts what users actually have:

* plain FASTA: indexed with a samtools-style ``.fai`` (built by pyfaidx);
* BGZF FASTA (``bgzip``): ``.fai`` + ``.gzi`` (built by pyfaidx), read by
  decompressing from the block the ``.gzi`` points at;
* plain gzip FASTA (``gzip``): pyfaidx cannot seek in it, so it is
  decompressed ONCE into seqsift's cache directory (a notice says so) and the
  copy is used from then on, as long as the original keeps its size and mtime.

Compression is told by the file's bytes, never by its name: a BGZF file is a
gzip file whose header carries a ``BC`` extra subfield (the SAM spec, 4.1).

Indexes go beside the FASTA (``x.fa.fai``, ``x.fa.gz.gzi``) when that directory
is writable, as samtools does, and otherwise into the cache directory, so a
reference in a read-only directory (a shared genome folder) works. An existing
up-to-date index beside the file is reused, wherever it is.

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
(or its cached copy) by path, so the cache must be on a filesystem they share
(a home directory on HPC usually is), or set ``SEQSIFT_CACHE`` to one.

A :class:`Reference` holds only paths, record names and the index numbers, so
it pickles small for Dask workers; each process opens the file lazily on its
first ``read`` and keeps it open.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import re
import struct
import sys
import tempfile
import threading
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

import numpy as np

from .cache import cache_directory
from .errors import InputError, quote, reading

__all__ = ["Reference", "open_reference", "cache_directory", "NORMALISED_LINE_WIDTH"]

NORMALISED_LINE_WIDTH = 60
"""Bases per line in the copies seqsift writes of ragged FASTA files."""

# The three layouts seqsift can read, told apart by _compression().
_PLAIN, _BGZF, _GZIP = "plain", "bgzf", "gzip"

_READ_BLOCK = 16 << 20        # bytes per read() when streaming a whole file
_SNIFF_BYTES = 64 << 10       # bytes looked at to decide "is this FASTA?"
_WHITESPACE = b" \t\r\n\v\f"


# --------------------------------------------------------------------------
# The Reference object handed to the engine and to Dask workers
# --------------------------------------------------------------------------

@dataclass(eq=False)
class Reference:
    """An indexed FASTA reference, cheap to pickle (paths and numbers only).

    path:         the file actually read (the user's file, or its cached copy)
    display_name: the file as the user named it, for messages
    names:        record names, in file order (first word of each header)
    lengths:      record lengths in bases, int64
    fai_path:     its .fai index; gzi_path: its .gzi (BGZF only, else None)
    bgzf:         whether ``path`` is BGZF-compressed
    offsets, line_bases, line_bytes: the .fai columns 3-5 (int64), i.e. where
                  each record's sequence starts in the file, bases per line,
                  bytes per line including the line ending.
    """

    path: str
    display_name: str
    names: tuple[str, ...]
    lengths: np.ndarray
    fai_path: str
    gzi_path: str | None
    bgzf: bool
    offsets: np.ndarray
    line_bases: np.ndarray
    line_bytes: np.ndarray

    def read(self, record_index: int, start: int, end: int, table: bytes | None = None) -> bytes:
        """Raw bytes of bases ``[start, end)`` (0-based) of record ``record_index``.

        Case is kept as in the file (soft-masked bases stay lowercase: the
        encoding in ``seqsift.alphabet`` treats them as uppercase). With a
        ``bytes.translate`` ``table`` (``alphabet.TEXT_CODE_TABLE``) the bases
        come back mapped through it, in the same pass that drops line breaks.
        Coordinates may be Python or NumPy integers of any size (int64-safe).
        Asking for anything outside ``0 <= start <= end <= length`` raises IndexError.
        """
        i = int(record_index)
        if not 0 <= i < len(self.names):
            raise IndexError(f"{self.display_name}: no record number {i} (it has {len(self.names)})")
        start, end, length = int(start), int(end), int(self.lengths[i])
        if not 0 <= start <= end <= length:
            raise IndexError(f"{self.display_name}: cannot read [{start}, {end}) of record "
                             f"{self.names[i]!r}, which has {length} bases")
        if start == end:
            return b""
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

    def close(self) -> None:
        """Close this process's open handle on the file (the next read reopens it)."""
        with _HANDLES_LOCK:
            handle = _HANDLES.pop(_handle_key(self), None)
        if isinstance(handle, int):
            os.close(handle)


# What each process keeps open, per reference: a Reference is unpickled afresh
# for every Dask task, so the handle lives here, keyed by the process id (a
# forked child must not share its parent's file offset) and the paths. For a
# plain file it is an OS file descriptor; for BGZF, the block table of the .gzi.
_HANDLES: dict[tuple, object] = {}
_HANDLES_LOCK = threading.Lock()


def _handle_key(ref: Reference) -> tuple:
    return (os.getpid(), ref.path, ref.fai_path, ref.gzi_path)


def _open_handle(ref: Reference):
    key = _handle_key(ref)
    handle = _HANDLES.get(key)
    if handle is None:
        with _HANDLES_LOCK:
            handle = _HANDLES.get(key)
            if handle is None:
                if ref.bgzf:
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

    # Pick the file to index: a normalised copy made earlier, a decompressed
    # copy of a plain gzip file, or the file itself.
    normalised = cache.path(".normalised.fa")
    if normalised.exists():
        target, target_kind = normalised, _PLAIN
    elif kind == _GZIP:
        target, target_kind = cache.path(".fa"), _PLAIN
        if not target.exists():
            cache.make_directory()
            _decompress(source, target, display)
            cache.prune()
            _notice(f"{display} is plain gzip; decompressed once to {target} (bgzip it to skip this)")
    else:
        target, target_kind = _name_pyfaidx_understands(source, kind, cache), kind

    try:
        fai, gzi = _ensure_index(target, target_kind, display, cache)
    except _RaggedLines as ragged:
        cache.make_directory()
        _normalise(source, kind, normalised, display)
        cache.prune()
        if target != source and target.parent == normalised.parent:
            _remove_quietly(target, Path(f"{target}.fai"))  # the decompressed copy is superseded
        _notice(f"{display} has lines of uneven length{ragged.where}, which a FASTA index cannot "
                f"describe; rewrote it once with even lines to {normalised}")
        target, target_kind = normalised, _PLAIN
        fai, gzi = _ensure_index(target, target_kind, display, cache)

    names, columns = _read_fai(fai, display)
    return Reference(path=str(target), display_name=display, names=names, lengths=columns[0],
                     fai_path=str(fai), gzi_path=None if gzi is None else str(gzi),
                     bgzf=target_kind == _BGZF, offsets=columns[1], line_bases=columns[2],
                     line_bytes=columns[3])


def _notice(message: str) -> None:
    print(f"seqsift: note: {message}", file=sys.stderr, flush=True)


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
        return cache_directory(create=False) / "reference" / f"{self.stem}.{self.key}.{self.state}{suffix}"

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


def _decompress(source: Path, target: Path, display: str) -> None:
    """Plain gzip ``source`` -> ``target`` (atomically)."""
    with _decompressed(source, _GZIP) as stream, _atomic_write(target) as out:
        for chunk in _read_chunks(stream, display, _GZIP):
            out.write(chunk)


def _name_pyfaidx_understands(source: Path, kind: str, cache: _CacheEntry) -> Path:
    """``source``, or a symlink to it in the cache whose name pyfaidx reads correctly.

    pyfaidx decides BGZF-or-plain by the file name (``.gz``/``.bgz``), not the
    bytes: a BGZF file called ``x.fa``, or a plain one called ``x.fa.gz``,
    gets a correctly named symlink.
    """
    name = source.name.lower()
    named_bgzf = name.endswith((".gz", ".bgz"))
    named_unsupported = name.endswith((".bz2", ".zip"))
    if (kind == _BGZF) == named_bgzf and not named_unsupported:
        return source
    link = cache.path(".link.fa.gz" if kind == _BGZF else ".link.fa")
    if not link.is_symlink():
        cache.make_directory()
        temporary = link.with_name(f".tmp-{os.getpid()}-{link.name}")
        _remove_quietly(temporary)
        os.symlink(os.path.abspath(source), temporary)
        os.replace(temporary, link)
        cache.prune()
    return link


# --- step 5: the index ---------------------------------------------------------

class _RaggedLines(Exception):
    """pyfaidx found a record whose lines are not all of one length."""

    def __init__(self, message: str):
        super().__init__(message)
        found = re.search(r">(\S+) at line (\d+)", message)
        self.where = f" (record '{found[1]}', line {found[2]})" if found else ""


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


def _ensure_index(target: Path, kind: str, display: str, cache: _CacheEntry) -> tuple[Path, Path | None]:
    """Paths of an up-to-date ``.fai`` (and ``.gzi`` for BGZF) for ``target``.

    Reuses a fresh index beside the file or in the cache; otherwise builds one
    beside the file if its directory is writable, else (or if writing there
    fails) in the cache. Raises _RaggedLines or InputError.
    """
    beside = (Path(f"{target}.fai"), Path(f"{target}.gzi") if kind == _BGZF else None)
    in_cache = (cache.path(".fai"), cache.path(".gzi") if kind == _BGZF else None)
    for fai, gzi in (beside, in_cache):
        if _index_is_fresh(target, fai, gzi) and _index_is_usable(fai, gzi, target, kind):
            return fai, gzi
    if _directory_is_writable(target.parent):
        try:
            _build_index(target, kind, display, *beside)
            return beside
        except OSError:
            pass  # e.g. a read-only filesystem that os.access did not see; use the cache
    cache.make_directory()
    _build_index(target, kind, display, *in_cache)
    cache.prune()
    return in_cache


def _build_index(target: Path, kind: str, display: str, fai: Path, gzi: Path | None) -> None:
    """Build ``fai`` (and ``gzi``) with pyfaidx, via temporary names + rename.

    pyfaidx's own errors become InputError (or _RaggedLines); to name the
    exact line, the file is then re-read by _scan_fasta.
    """
    import pyfaidx

    temporary = [p.with_name(f".tmp-{os.getpid()}-{threading.get_ident()}-{p.name}") if p else None
                 for p in (fai, gzi)]
    try:
        try:
            index = pyfaidx.Faidx(str(target), indexname=str(temporary[0]),
                                  gzi_indexname=None if gzi is None else str(temporary[1]),
                                  duplicate_action="first", rebuild=True, build_index=True)
            index.close()
        except pyfaidx.FastaIndexingError as err:
            if "not consistent" in str(err):
                raise _RaggedLines(str(err)) from None
            _scan_whole_file(target, kind, display)  # raises the precise InputError
            raise InputError(f"{display}: cannot be indexed: {err}") from None
        except UnicodeDecodeError:
            _scan_whole_file(target, kind, display)
            raise InputError(f"{display}: holds bytes that are not text") from None
        except (EOFError, zlib.error, ValueError, struct.error) as err:
            raise _read_error(display, kind, err) from None
        except OSError as err:
            if kind == _BGZF and "EOF marker" in str(err):
                raise InputError(f"{display}: the BGZF file is truncated (no end-of-file block)") from None
            raise
        _check_sequence_is_ascii(target, kind, display)
        os.replace(temporary[0], fai)
        if gzi is not None:
            os.replace(temporary[1], gzi)
    finally:
        _remove_quietly(*(p for p in temporary if p is not None))


def _check_sequence_is_ascii(target: Path, kind: str, display: str) -> None:
    """InputError for non-ASCII bytes in sequence lines (pyfaidx counts them as characters,
    not bytes, which would corrupt the index). Non-ASCII headers are fine."""
    with _decompressed(target, kind) as stream:
        for chunk in _read_chunks(stream, display, kind):
            if not chunk.isascii():
                _scan_whole_file(target, kind, display)  # raises if it is in a sequence line
                return


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
    """Parse ``fai`` and check the records: at least one, each with bases, names unique."""
    try:
        names, columns = _parse_fai(fai)
    except (OSError, ValueError) as err:
        raise InputError(f"{display}: its index {fai} is unreadable ({err}); delete it to rebuild") from None
    if not names:
        raise InputError(f"{display}: contains no FASTA records")
    first_seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in first_seen:
            raise InputError(f"{display}: record name '{name}' is used twice (records {first_seen[name] + 1} "
                             f"and {i + 1}); record names (the first word of each '>' line) must be unique")
        first_seen[name] = i
    empty = np.flatnonzero(columns[0] == 0)
    if empty.size:
        i = int(empty[0])
        others = f" (and {empty.size - 1} more records)" if empty.size > 1 else ""
        raise InputError(f"{display}: record '{names[i]}' (record {i + 1}) has no sequence{others}")
    return names, columns


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
