"""Numba's first compiles in child processes (seqsift.numba_ahead): on an empty cache the children
write it and this process loads every kernel from it, compiling none itself."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from seqsift.numba_ahead import WarmUp


def _in_fresh_process(code: str, cache) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


LOAD_AND_COUNT = """
    import json
    from seqsift import numba_ahead
    from seqsift.kernels import align_cpu
    from seqsift.runtime import order
    from seqsift.searching.warm_up import locate_warm_ups

    warm_ups = locate_warm_ups("edit")
    cached_before = [w.cached() for w in warm_ups]
    numba_ahead.load(warm_ups)
    stats = {name: [f.stats.cache_hits and sum(f.stats.cache_hits.values()),
                    f.stats.cache_misses and sum(f.stats.cache_misses.values())]
             for name, f in (("edit_ops", align_cpu.edit_ops), ("cigar_bytes", align_cpu.cigar_bytes),
                             ("copy_spans", align_cpu._copy_spans), ("merge_runs", order._merge_runs))}
    print(json.dumps({"cached_before": cached_before, "cached_after": [w.cached() for w in warm_ups],
                      "stats": stats}))
"""


def test_on_an_empty_cache_the_children_compile_and_this_process_only_loads(tmp_path):
    got = _in_fresh_process(LOAD_AND_COUNT, tmp_path / "numba")
    assert got["cached_before"] == [False, False, False]
    assert got["cached_after"] == [True, True, True]
    for name, (hits, misses) in got["stats"].items():
        assert hits and not misses, (name, hits, misses)   # loaded from the children's cache, never compiled here


CHILD_FAILS = """
import os

import numpy as np

from seqsift.kernels import align_cpu


def copy_once():
    if os.environ.get("FAIL_IN_CHILDREN_OF") == str(os.getppid()):
        raise SystemExit("a child of the test's process fails")
    zero = np.zeros(1, np.int64)
    align_cpu.gather_spans(np.frombuffer(b"ACGTACGT", np.uint8), zero, zero + 4)
"""


def test_a_warm_up_whose_child_fails_is_compiled_here(tmp_path, monkeypatch):
    """A child that fails leaves the cache empty; the calls in this process then compile what is
    missing (a cache miss), and work."""
    (tmp_path / "warm_ups_failing.py").write_text(CHILD_FAILS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    got = _in_fresh_process("""
        import json, os
        from seqsift import numba_ahead
        from seqsift.kernels import align_cpu

        os.environ["FAIL_IN_CHILDREN_OF"] = str(os.getpid())
        warm_up = numba_ahead.WarmUp("warm_ups_failing:copy_once", ("seqsift.kernels.align_cpu:_copy_spans",))
        numba_ahead.load([warm_up])
        print(json.dumps({"misses": sum(align_cpu._copy_spans.stats.cache_misses.values()),
                          "cached": warm_up.cached()}))
    """, tmp_path / "numba")
    assert got == {"misses": 1, "cached": True}  # compiled here, and saved by this process


def test_a_kernel_name_numba_cannot_tell_about_counts_as_cached():
    assert WarmUp("seqsift.searching.task:gather_once", ("seqsift.searching.task:gather_once",)).cached()


def test_the_warm_up_children_import_no_pandas():
    """A child of numba_ahead imports only the warm-up module (its import is part of its time)."""
    result = subprocess.run([sys.executable, "-c", "import sys, seqsift.searching.warm_up\nprint(sorted(m for m in "
                             "('pandas', 'pyarrow', 'cupy', 'distributed') if m in sys.modules))"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
