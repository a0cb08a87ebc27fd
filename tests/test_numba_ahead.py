"""Numba's first compiles in child processes (seqsift.numba_ahead): on an empty cache the children
write it and this process loads every kernel from it, compiling none itself."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from seqsift.numba_ahead import WarmUp

# Warm-ups of the CPU locate kernels, as a module of the test's own: each child process imports it.
LOCATE_WARM_UPS = """
import numpy as np

from seqsift.alphabet import TEXT_CODE_ARRAY
from seqsift.kernels.locate import cpu
from seqsift.numba_ahead import WarmUp
from seqsift.pattern_set import PatternSet

CPU = "seqsift.kernels.locate.cpu"


def ops_once(metric):
    batch = PatternSet(("warm-up",), ("ACGT",)).oriented(range(1), (0,))
    raw = np.frombuffer(b"ACGTACGT", np.uint8)  # read-only raw bytes, as a search's window
    zero = np.zeros(1, np.int64)
    cpu.locate_ops(metric, raw, batch.masks, batch.lengths, zero, zero + 4, zero, code_of=TEXT_CODE_ARRAY,
                   lowest=zero)


def cigar_once():
    one = np.ones(1, np.int64)
    cpu.cigar_buffer(np.zeros(4, np.uint8), one - 1, one * 4)


def warm_ups(metric):
    ops = "hamming_ops" if metric == "hamming" else "edit_ops"
    return [WarmUp(f"{__name__}:ops_once", (f"{CPU}:{ops}",), metric),
            WarmUp(f"{__name__}:cigar_once", (f"{CPU}:cigar_bytes",))]
"""


@pytest.fixture(autouse=True)
def _locate_warm_ups(tmp_path, monkeypatch):
    """``import locate_warm_ups`` works here and in every child process."""
    (tmp_path / "locate_warm_ups.py").write_text(LOCATE_WARM_UPS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))


def _in_fresh_process(code: str, cache) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


LOAD_AND_COUNT = """
    import json
    from seqsift import numba_ahead
    from seqsift.kernels.locate import cpu
    from locate_warm_ups import warm_ups as locate_warm_ups

    warm_ups = locate_warm_ups("edit")
    cached_before = [w.cached() for w in warm_ups]
    numba_ahead.load(warm_ups)
    stats = {name: [f.stats.cache_hits and sum(f.stats.cache_hits.values()),
                    f.stats.cache_misses and sum(f.stats.cache_misses.values())]
             for name, f in (("edit_ops", cpu.edit_ops), ("cigar_bytes", cpu.cigar_bytes))}
    print(json.dumps({"cached_before": cached_before, "cached_after": [w.cached() for w in warm_ups],
                      "stats": stats}))
"""


def test_on_an_empty_cache_the_children_compile_and_this_process_only_loads(tmp_path):
    got = _in_fresh_process(LOAD_AND_COUNT, tmp_path / "numba")
    assert got["cached_before"] == [False, False]
    assert got["cached_after"] == [True, True]
    for name, (hits, misses) in got["stats"].items():
        assert hits and not misses, (name, hits, misses)   # loaded from the children's cache, never compiled here


CHILD_FAILS = """
import os

import numpy as np

from seqsift.kernels.locate import cpu


def cigar_once():
    if os.environ.get("FAIL_IN_CHILDREN_OF") == str(os.getppid()):
        raise SystemExit("a child of the test's process fails")
    one = np.ones(1, np.int64)
    cpu.cigar_buffer(np.zeros(4, np.uint8), one - 1, one * 4)
"""


def test_a_warm_up_whose_child_fails_is_compiled_here(tmp_path, monkeypatch):
    """A child that fails leaves the cache empty; the calls in this process then compile what is
    missing (a cache miss), and work."""
    (tmp_path / "warm_ups_failing.py").write_text(CHILD_FAILS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    got = _in_fresh_process("""
        import json, os
        from seqsift import numba_ahead
        from seqsift.kernels.locate import cpu

        os.environ["FAIL_IN_CHILDREN_OF"] = str(os.getpid())
        warm_up = numba_ahead.WarmUp("warm_ups_failing:cigar_once", ("seqsift.kernels.locate.cpu:cigar_bytes",))
        numba_ahead.load([warm_up])
        print(json.dumps({"misses": sum(cpu.cigar_bytes.stats.cache_misses.values()),
                          "cached": warm_up.cached()}))
    """, tmp_path / "numba")
    assert got == {"misses": 1, "cached": True}  # compiled here, and saved by this process


def test_a_kernel_name_numba_cannot_tell_about_counts_as_cached():
    assert WarmUp("seqsift.searching.task:gather_once", ("seqsift.searching.task:gather_once",)).cached()


def test_the_warm_up_children_import_no_pandas():
    """A child of numba_ahead imports only the warm-up module (its import is part of its time): the
    package's own, screen's SIMD lanes (kernels.sw.cpu)."""
    result = subprocess.run([sys.executable, "-c", "import sys, seqsift.kernels.sw.cpu\nprint(sorted(m for m in "
                             "('pandas', 'pyarrow', 'cupy', 'distributed') if m in sys.modules))"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


STAMPED_LOAD = """
    import json, subprocess
    from seqsift import numba_ahead
    from seqsift.kernels.locate import cpu
    from locate_warm_ups import warm_ups as locate_warm_ups

    warm_ups = locate_warm_ups("edit")
    stamp = numba_ahead.stamp_path(warm_ups)
    stamped_before = stamp.exists()
    spawned = []
    real_popen = subprocess.Popen
    def counting_popen(*args, **kwargs):
        spawned.append(args[0])
        return real_popen(*args, **kwargs)
    numba_ahead.subprocess.Popen = counting_popen
    numba_ahead.load(warm_ups)
    misses = sum(sum(f.stats.cache_misses.values()) for f in (cpu.edit_ops, cpu.cigar_bytes))
    print(json.dumps({"stamped_before": stamped_before, "stamped_after": stamp.exists(),
                      "children": len(spawned), "misses_here": misses}))
"""


def test_a_stamp_spares_the_children_once_the_cache_holds_every_kernel(tmp_path):
    first = _in_fresh_process(STAMPED_LOAD, tmp_path / "numba")
    assert first == {"stamped_before": False, "stamped_after": True, "children": 2, "misses_here": 0}
    second = _in_fresh_process(STAMPED_LOAD, tmp_path / "numba")
    assert second == {"stamped_before": True, "stamped_after": True, "children": 0, "misses_here": 0}


def test_a_stamp_that_outlived_its_cache_entries_only_costs_a_compile_here(tmp_path):
    _in_fresh_process(STAMPED_LOAD, tmp_path / "numba")
    for entry in (tmp_path / "numba").rglob("*.nb[ic]"):  # the cache's entries gone, the stamp kept
        entry.unlink()
    got = _in_fresh_process(STAMPED_LOAD, tmp_path / "numba")
    assert got["stamped_before"] and got["children"] == 0
    assert got["misses_here"] > 0  # compiled in this process, as without numba_ahead


def test_the_stamp_names_every_module_it_depends_on(tmp_path, monkeypatch):
    from seqsift import numba_ahead

    (tmp_path / "warm_ups_edited.py").write_text("def once():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    warm_ups = [WarmUp("warm_ups_edited:once", ("seqsift.kernels.locate.cpu:cigar_bytes",))]
    before = numba_ahead.stamp_path(warm_ups)
    assert before.is_relative_to(tmp_path / "numba")
    os.utime(tmp_path / "warm_ups_edited.py", ns=(1, 1))  # the module edited (another time)
    edited = numba_ahead.stamp_path(warm_ups)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    moved = numba_ahead.stamp_path(warm_ups)
    monkeypatch.setattr(numba_ahead, "_cpu", lambda: "x86_64\nmodel name\t: another CPU")  # a node beside
    other_cpu = numba_ahead.stamp_path(warm_ups)
    assert len({before.name, edited.name, moved.name, other_cpu.name}) == 4
    assert numba_ahead.stamp_path([WarmUp("no_such_module_here:once", ())]) is None


WAITS_FOR_THE_DEVICE = """
    import json, threading
    from seqsift import numba_ahead
    from locate_warm_ups import warm_ups as locate_warm_ups

    class DeviceReady(threading.Event):
        waited = False
        def wait(self, timeout=None):
            type(self).waited = True
            return super().wait(timeout)

    ready = DeviceReady()
    ready.set()
    numba_ahead.load(locate_warm_ups("hamming"), after=ready)
    print(json.dumps({"waited": DeviceReady.waited}))
"""


def test_the_loads_wait_for_the_device_only_where_no_child_compiles(tmp_path):
    """With children compiling, this process imports Numba meanwhile; with a stamp (nothing to
    compile), its imports and loads wait until the job's device is ready."""
    assert _in_fresh_process(WAITS_FOR_THE_DEVICE, tmp_path / "numba") == {"waited": False}
    assert _in_fresh_process(WAITS_FOR_THE_DEVICE, tmp_path / "numba") == {"waited": True}
