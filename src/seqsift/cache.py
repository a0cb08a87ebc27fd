"""seqsift's cache directory: ``$SEQSIFT_CACHE``, else ``$XDG_CACHE_HOME/seqsift``, else ``~/.cache/seqsift``.

It holds the references' genome caches, decompressed or normalised copies and
indexes (``reference/``, see io/reference.py), the FASTA scanner compiled on
this machine (``native/``, io/native.py) and the algorithm tables
``seqsift bench`` measures on this machine (kernels/planner.py). On a cluster
it must be on a filesystem the workers share. ``seqsift cache --list`` shows
what it holds and ``seqsift cache --clear`` removes the cached references
(each source keeps one version at a time, but every reference ever searched
keeps its copy until then).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import InputError


def cache_directory(create: bool = True) -> Path:
    """seqsift's cache directory, created unless ``create=False``."""
    if os.environ.get("SEQSIFT_CACHE"):
        directory = Path(os.path.expanduser(os.environ["SEQSIFT_CACHE"]))
    elif os.environ.get("XDG_CACHE_HOME"):
        directory = Path(os.environ["XDG_CACHE_HOME"]) / "seqsift"
    else:
        directory = Path.home() / ".cache" / "seqsift"
    if create:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InputError(f"cannot create seqsift's cache directory {directory} ({err.strerror or err}); "
                             f"set SEQSIFT_CACHE to a writable directory") from None
    return directory


REFERENCE_FOLDER = "reference"
"""The cache's folder of references' genome caches, indexes and decompressed or normalised copies."""

NATIVE_FOLDER = "native"
"""The cache's folder of the FASTA scanner compiled on this machine (io/native.py), this user's alone."""

_ENTRY_NAME = re.compile(r"(.*\.[0-9a-f]{12}\.[0-9a-f]{8})(\..*)?$")
"""A file of one reference version in REFERENCE_FOLDER: ``<stem>.<path hash>.<state hash><suffix>``
(io/reference.py's ``_CacheEntry``; the stem may hold dots)."""


def _human(size: int) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def cached_references() -> list[tuple[str, int, float]]:
    """(name, bytes, last modified) of each cached reference version (its genome cache, indexes, copies)."""
    folder = cache_directory(create=False) / REFERENCE_FOLDER
    entries: dict[str, list] = {}
    for path in folder.glob("*") if folder.is_dir() else ():
        named = _ENTRY_NAME.match(path.name)
        if not path.is_file() or named is None:  # builds.log and the like: not a reference's
            continue
        name = named.group(1)
        info = path.stat()
        entry = entries.setdefault(name, [0, 0.0])
        entry[0] += info.st_size
        entry[1] = max(entry[1], info.st_mtime)
    return sorted(((name, size, when) for name, (size, when) in entries.items()), key=lambda e: -e[1])


def list_cache(out) -> int:
    """``seqsift cache --list``: the cache folder, each cached reference with its size, and the total."""
    import time

    directory = cache_directory(create=False)
    references = cached_references()
    tables = sorted(directory.glob("algorithm_table-*.json")) if directory.is_dir() else []
    print(f"seqsift cache: {directory}", file=out)
    for name, size, when in references:
        print(f"  {_human(size):>9}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(when))}  {name}", file=out)
    table_sizes = [table.stat().st_size for table in tables]
    for table, size in zip(tables, table_sizes):
        print(f"  {_human(size):>9}  measured table  {table.name}", file=out)
    # io/native.py's builds of the FASTA scanner (fasta_scan.c), one per version of the file
    scanners = sorted((directory / NATIVE_FOLDER).glob("*.so")) if (directory / NATIVE_FOLDER).is_dir() else []
    scanner_sizes = [scanner.stat().st_size for scanner in scanners]
    for scanner, size in zip(scanners, scanner_sizes):
        print(f"  {_human(size):>9}  compiled FASTA scanner  {NATIVE_FOLDER}/{scanner.name}", file=out)
    total = sum(size for _, size, _ in references) + sum(table_sizes) + sum(scanner_sizes)
    print(f"  {_human(total):>9}  in all ({len(references)} cached reference version"
          f"{'s' if len(references) != 1 else ''}; seqsift cache --clear removes them)", file=out)
    return 0


def clear_cache(out) -> int:
    """``seqsift cache --clear``: remove every cached reference (rebuilt when next used); keep the tables
    ``seqsift bench`` measured. A job that has a genome cache open keeps reading it until it ends."""
    import shutil

    folder = cache_directory(create=False) / REFERENCE_FOLDER
    freed = sum(size for _, size, _ in cached_references())
    if folder.is_dir():
        try:
            shutil.rmtree(folder)
        except OSError as err:
            raise InputError(f"cannot clear {folder} ({err.strerror or err})") from None
    print(f"seqsift cache: removed {_human(freed)} of cached references from {folder} "
          f"(measured algorithm tables kept)", file=out)
    return 0
