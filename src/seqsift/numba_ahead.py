"""Numba's first compiles, run in parallel child processes when this machine's cache lacks them.

On a fresh machine (an empty Numba cache: a new cluster node, a new venv) a
job's host kernels compile on first use. In the job's process those compiles
run one after another under the GIL, beside the threads feeding the GPU: on
the H100 host the kernels that located a GPU search's hits held the first
edit job's two task threads 5.3 s each, while the GPU idled (issue 27, a
0.5 Gbp genome: 11.5 s fresh, 3.2 s with the cache). Those hits are now
located on the GPU (kernels/locate); screen's SIMD alignment lanes
(kernels.sw.cpu) still compile through here.

A :class:`WarmUp` names a function that calls some Numba kernels with the
argument types a job will use, and those kernels. :func:`load` starts one
child process per warm-up whose kernels have no cache entry yet
(``python -m seqsift.numba_ahead MODULE:FUNCTION [ARG]``), each on a core of
its own, so that they compile at once and write Numba's on-disk cache; it
then makes every warm-up's calls in this process, which load what the
children wrote (tenths of a second). :func:`load_soon` does all that on a
thread of its own (8.5 s instead of 12.0 s for that fresh 0.5 Gbp job).

Whether the children are needed is told without importing Numba here
(0.7-1.0 s of the GIL on the H100 host, beside CuPy's import, which held
the children back by as much on a fresh machine): a :func:`stamp_path` file,
written once a process has loaded every kernel of a set from Numba's cache,
says that set compiled before. While the children compile, this process
imports Numba and the kernels' modules, so that only the loads are left
when they end.

Nothing depends on the children: where one fails, or the cache cannot be
written (``NUMBA_CACHE_DIR`` read-only), or Numba's cache layout is not the
one known here, or a stamp outlived the cache it speaks for, the calls in
this process compile what is missing, as they would without this module.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WarmUp:
    """``call`` ("module:function", with ``arg`` as its one argument if given) calls ``kernels``
    ("module:name" of each Numba dispatcher) with a job's argument types."""

    call: str
    kernels: tuple[str, ...]
    arg: str | None = None

    def run(self) -> None:
        function = _resolve(self.call)
        function() if self.arg is None else function(self.arg)

    def import_modules(self) -> None:
        """Import the call's and the kernels' modules (Numba with them), calling nothing."""
        for name in (self.call, *self.kernels):
            importlib.import_module(name.split(":")[0])

    def cached(self) -> bool:
        """Whether every one of the kernels has an entry in Numba's cache (True where that cannot be told)."""
        for name in self.kernels:
            try:
                dispatcher = _resolve(name)
            except AttributeError:  # not there (any more): nothing to compile
                continue
            if not in_cache(dispatcher):
                return False
        return True


def in_cache(dispatcher) -> bool:
    """Whether a Numba dispatcher has an entry in Numba's on-disk cache (True where that cannot be told:
    not a caching dispatcher, or another Numba layout)."""
    try:
        index = dispatcher._cache._cache_file._index_path
    except AttributeError:
        return True
    return os.path.exists(index)


def _resolve(name: str):
    module, attribute = name.split(":")
    return getattr(importlib.import_module(module), attribute)


def stamp_path(warm_ups: list[WarmUp]) -> Path | None:
    """The file that says these warm-ups' kernels were all found in Numba's cache by an earlier process.

    Its name hashes what a cache entry depends on: Python's version, Numba's
    install (the path and time of its ``__init__``), the cache's place
    (``NUMBA_CACHE_DIR``), this machine's CPU (Numba keeps an entry per CPU:
    cluster nodes of other CPUs that share a home folder each compile their
    own), and the path, size and time of each module the kernels live in, so
    that a new Python, Numba or seqsift install, or an edited module, finds
    no stamp. It lies in ``NUMBA_CACHE_DIR`` where that is
    set (removed with the cache), else in seqsift's cache folder. None where a
    module cannot be found without importing it.
    """
    from .cache import cache_directory

    parts = [sys.version, os.environ.get("NUMBA_CACHE_DIR", ""), _cpu()]
    for module in ["numba", *sorted({name.split(":")[0] for w in warm_ups for name in (w.call, *w.kernels)})]:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.origin or not os.path.exists(spec.origin):
            return None
        status = os.stat(spec.origin)
        parts.append(f"{spec.origin}:{status.st_size}:{status.st_mtime_ns}")
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]
    folder = (Path(os.environ["NUMBA_CACHE_DIR"]) if os.environ.get("NUMBA_CACHE_DIR")
              else cache_directory(create=False) / "numba")
    return folder / "seqsift-warm-ups" / key


def _cpu() -> str:
    """This machine's architecture and CPU model and flags (Linux's /proc/cpuinfo; the architecture alone
    elsewhere)."""
    import platform

    described = [platform.machine()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith(("model name", "flags", "Features", "CPU part")):
                    described.append(line.strip())
                elif not line.strip():  # the first processor's block ends
                    break
    except OSError:
        pass
    return "\n".join(described)


def load(warm_ups: list[WarmUp], after: threading.Event | None = None) -> None:
    """Each warm-up's kernels ready in this process: compiled first in parallel child processes unless a
    stamp says an earlier process found them all cached (module docstring), then called here.

    ``after``: an event that the imports and calls here wait for where no child compiles. Where
    children compile (seconds), this process imports meanwhile, so that only the loads are left
    when they end (on the H100 host, 0.5-0.9 s sooner on a fresh machine than with ``after``).
    """
    stamp = stamp_path(warm_ups)
    compiled_before = stamp is not None and stamp.exists()
    children = [] if compiled_before else [
        subprocess.Popen([sys.executable, "-m", __name__, warm_up.call, *([] if warm_up.arg is None else [warm_up.arg])],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for warm_up in warm_ups]
    if after is not None and not children:
        after.wait()
    for warm_up in warm_ups:
        warm_up.import_modules()
    for child in children:
        child.wait()
    for warm_up in warm_ups:
        warm_up.run()
    if stamp is not None and not compiled_before and all(warm_up.cached() for warm_up in warm_ups):
        try:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.touch()
        except OSError:  # a read-only cache: the children run again next time, and find the kernels cached
            pass


def load_soon(warm_ups: list[WarmUp], after: threading.Event | None = None) -> threading.Event:
    """:func:`load` on a daemon thread of its own; the event is set once it has ended. What it raises
    is dropped: the job's own first calls compile what is missing, and meet the error there.

    ``after`` (see :func:`load`): a one-GPU job passes the end of readying its device. Importing Numba
    and loading its cached kernels hold the GIL for 0.5-1 s, which CuPy's import and the CUDA context
    beside them waited for, and with them the job's first kernel (H100 host, hg38-shaped genome:
    the edit job's first kernel at 1.55 s instead of 2.05-2.17 s).
    """
    done = threading.Event()

    def run() -> None:
        try:
            load(warm_ups, after)
        except Exception:  # noqa: BLE001
            pass
        finally:
            done.set()

    threading.Thread(target=run, name="seqsift-numba-warm-up", daemon=True).start()
    return done


_loading: dict[str, threading.Event] = {}  # key -> load_soon's event, for load_once
_loading_lock = threading.Lock()


def load_once(key: str, warm_ups: list[WarmUp], after: threading.Event | None = None) -> threading.Event:
    """:func:`load_soon` of ``warm_ups`` the first time ``key`` is asked for in this process; its event
    (the same one every time)."""
    with _loading_lock:
        if key not in _loading:
            _loading[key] = load_soon(warm_ups, after)
        return _loading[key]


def loading(key: str) -> threading.Event | None:
    """The event of :func:`load_once`'s ``key``, or None where it was not started in this process."""
    return _loading.get(key)


if __name__ == "__main__":  # a child of load(): one warm-up's calls, which write the cache
    WarmUp(sys.argv[1], (), sys.argv[2] if len(sys.argv) > 2 else None).run()
