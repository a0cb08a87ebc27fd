"""The compiled scan of a FASTA block (fasta_scan.c): built on first use, called through ctypes.

Why compiled: the NumPy scan of a block (fasta_scan._scan_block_numpy) makes some 30 passes over its
bytes, and its threads take turns at the GIL between and inside NumPy's calls. On the H100 host's 16
Xeon cores the blocks of 10^6 records of 100 bp (142 MB) took 0.25-0.57 s on 16 threads, no faster than
on 8; a one-pass prototype (Numba, names not included) took 0.06-0.10 s. On the 2-core machine the first
open of that file went from 0.83-1.48 s to 0.35-0.40 s with this file's scan, layout and ``.fai`` text
(benchmarks/README.md, session 42). Numba could make the same one pass, but its import alone took 0.66 s on
the H100 host, on a path (the GPU's) that imports nothing of Numba's otherwise; loading this library takes
a fraction of a millisecond, and ctypes releases the GIL for each call.

Why built here, not at install: ``pip install .`` stays free of a C compiler. The first call compiles
fasta_scan.c with the C compiler (``$CC``, else ``cc``; 0.1-0.2 s, once per machine and version of
the file) into ``native/`` in seqsift's cache directory, a folder only this user may write (the library
is code this process runs). Where that fails (no compiler, a cache folder others may write, a file
system that cannot map code), or ``SEQSIFT_NATIVE=0``, :func:`library` is None and the NumPy scan runs:
the results are the same (tests/test_io_scan.py runs both).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shlex
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

from ..cache import NATIVE_FOLDER, cache_directory
from ..errors import InputError

__all__ = ["library", "BlockCounts"]

SOURCE = Path(__file__).with_name("fasta_scan.c")
_FLAGS = ("-O2", "-shared", "-fPIC")   # no -march=native: a shared cache may serve other machines of the arch


class BlockCounts(ctypes.Structure):
    """fasta_scan.c's ``block_counts``: what one block's scan wrote."""

    _fields_ = [("runs", ctypes.c_int64), ("headers", ctypes.c_int64), ("header_bytes", ctypes.c_int64),
                ("name_bytes", ctypes.c_int64), ("sequence_bytes", ctypes.c_int64),
                ("before_first_header", ctypes.c_int64), ("sequence_non_ascii", ctypes.c_int32),
                ("names_unknown", ctypes.c_int32), ("described", ctypes.c_int32), ("name_too_long", ctypes.c_int32)]


_lock = threading.Lock()
_loaded: list = []   # [the library or None], once tried


def library() -> ctypes.CDLL | None:
    """fasta_scan.c's functions, compiled and loaded on the first call (None: use the NumPy scan)."""
    if not _loaded:
        with _lock:
            if not _loaded:
                _loaded.append(_load())
    return _loaded[0]


def _load() -> ctypes.CDLL | None:
    if os.environ.get("SEQSIFT_NATIVE", "1") == "0" or os.name != "posix":   # (the checks below are POSIX's)
        return None
    try:
        built = _built()
        functions = _load_private(built) if built is not None else None
    except (OSError, subprocess.SubprocessError, InputError, ValueError):   # (InputError: no cache directory;
        return None                                                        # ValueError: $CC unparsable)
    if functions is None:
        return None
    pointer, size = ctypes.c_void_p, ctypes.c_int64
    functions.count_newlines.argtypes = [pointer, size]
    functions.count_newlines.restype = size
    functions.scan_block.argtypes = [pointer, size, ctypes.c_int, size] + [pointer] * 11 + [ctypes.POINTER(BlockCounts)]
    functions.scan_block.restype = size
    functions.lay_out_records.argtypes = [pointer] * 5 + [size] * 4 + [pointer] * 6
    functions.lay_out_records.restype = size
    functions.format_fai.argtypes = [ctypes.c_char_p, pointer, size, size] + [pointer] * 5
    functions.format_fai.restype = size
    return functions


def _built() -> Path | None:
    """The compiled library's path (compiled now where missing); None where its folder is not private
    (a folder that others may write could hold their code under the library's name)."""
    compiler = shlex.split(os.environ.get("CC") or "cc")
    source = SOURCE.read_bytes()
    version = hashlib.sha256(source + repr((compiler, _FLAGS, platform.system(), platform.machine())).encode())
    folder = cache_directory() / NATIVE_FOLDER
    folder.mkdir(mode=0o700, exist_ok=True)
    if not _private(folder):
        return None
    built = folder / f"fasta_scan-{platform.machine()}-{version.hexdigest()[:16]}.so"
    if not built.exists():
        with tempfile.TemporaryDirectory(dir=folder) as work:
            partial = Path(work) / built.name
            subprocess.run([*compiler, *_FLAGS, "-o", str(partial), str(SOURCE)], check=True, timeout=120,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            partial.chmod(0o755)         # (whatever the umask: group-writable would fail _private)
            os.replace(partial, built)   # whole or not at all, beside another process doing the same
    return built


def _load_private(built: Path) -> ctypes.CDLL | None:
    """The library at ``built``, loaded from the very file checked to be this user's and writable by no
    one else (opened once, without following a link, and loaded through ``/proc/self/fd`` where Linux
    has it: a file swapped in between the check and the load is never run)."""
    descriptor = os.open(built, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not _private_info(os.fstat(descriptor)):
            return None
        by_descriptor = f"/proc/self/fd/{descriptor}"
        return ctypes.CDLL(by_descriptor if os.path.exists(by_descriptor) else str(built))
    finally:
        os.close(descriptor)


def _private(path: Path) -> bool:
    """Whether ``path`` (not followed, if a link) is this user's and no one else may write it."""
    return _private_info(path.lstat())


def _private_info(info: os.stat_result) -> bool:
    return (info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            and not stat.S_ISLNK(info.st_mode))
