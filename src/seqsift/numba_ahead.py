"""Numba's first compiles, run in parallel child processes when this machine's cache lacks them.

On a fresh machine (an empty Numba cache: a new cluster node, a new venv) a
GPU search's first hits wait for Numba to compile the host kernels that
locate and sort them. In the job's process those compiles run one after
another under the GIL, beside the threads feeding the GPU: on the H100 host
they held the first edit job's two task threads 5.3 s each, while the GPU
idled (issue 27, a 0.5 Gbp genome: 11.5 s fresh, 3.2 s with the cache).

A :class:`WarmUp` names a function that calls some Numba kernels with the
argument types a job will use, and those kernels. :func:`load` starts one
child process per warm-up whose kernels have no cache entry yet
(``python -m seqsift.numba_ahead MODULE:FUNCTION [ARG]``), each on a core of
its own, so that they compile at once and write Numba's on-disk cache; it
then makes every warm-up's calls in this process, which load what the
children wrote (tenths of a second). :func:`load_soon` does all that on a
thread of its own (8.5 s instead of 12.0 s for that fresh 0.5 Gbp job).

Nothing depends on the children: where one fails, or the cache cannot be
written (``NUMBA_CACHE_DIR`` read-only), or Numba's cache layout is not the
one known here, the calls in this process compile what is missing, as they
would without this module.
"""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
from dataclasses import dataclass


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


def load(warm_ups: list[WarmUp]) -> None:
    """Each warm-up's kernels ready in this process: compiled first in parallel child processes where
    Numba's cache lacks them (module docstring), then called here."""
    missing = [warm_up for warm_up in warm_ups if not warm_up.cached()]
    children = [subprocess.Popen([sys.executable, "-m", __name__, warm_up.call,
                                  *([] if warm_up.arg is None else [warm_up.arg])],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for warm_up in missing]
    for child in children:
        child.wait()
    for warm_up in warm_ups:
        warm_up.run()


def load_soon(warm_ups: list[WarmUp]) -> threading.Event:
    """:func:`load` on a daemon thread of its own; the event is set once it has ended. What it raises
    is dropped: the job's own first calls compile what is missing, and meet the error there."""
    done = threading.Event()

    def run() -> None:
        try:
            load(warm_ups)
        except Exception:  # noqa: BLE001
            pass
        finally:
            done.set()

    threading.Thread(target=run, name="seqsift-numba-warm-up", daemon=True).start()
    return done


if __name__ == "__main__":  # a child of load(): one warm-up's calls, which write the cache
    WarmUp(sys.argv[1], (), sys.argv[2] if len(sys.argv) > 2 else None).run()
