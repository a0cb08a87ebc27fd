"""When each thread of one seqsift command does what: a timeline of its stages, for finding the host's waits.

    python benchmarks/timeline_cli.py [--as-imported] -- search genome.fa guides.fa -k 3 --metric edit -o hits.parquet

Runs ``seqsift.cli.main(argv)`` in this process with a few of seqsift's
functions wrapped to note, per thread, when they began and ended: opening
the reference, readying the device (CuPy, the CUDA context), submitting, each task's window read and
GPU upload (``upload``; ``fill`` is the part spent reading the file into the
pinned buffers), its kernels, locating and sorting its hits, and the client's
merge and write. Prints per thread the seconds in each stage and the span
from its first start to its last end, the first calls of each stage in time
order, and how much of the span of the kernel calls the GPU had a kernel
call running (their union). Nothing waits for the device that the job did
not wait for itself, so a kernel call ends when its hits are back on the host.

For ``screen`` it notes the inputs' read, the device's readying, each
task, its composition bound and its ``buffer_scores`` calls (as kernels:
the tile's flags, then the survivors' scores), the alignments and the
output's close.

Unlike ``profile_cli.py`` (where the time goes, sampled) this says when: how
long the first kernel waits after the process starts, and whether the GPU
idles between kernels. The ``imports`` stage loads what the command loads
inside ``main`` (pandas, Numba, seqsift's engine), before ``main``; with
``--as-imported`` (first) each module is wrapped when the command itself
imports it, so that imports fall where they do for a user and ``imports``
is the command line's own. Tasks show only where the worker runs in this process (one
GPU); with worker processes only the client's stages do. For finding the
host's costs, not for reporting speed (bench_end_to_end.py).
"""
from __future__ import annotations

import collections
import contextlib
import functools
import os
import sys
import threading
import time

T0 = time.perf_counter()
_events: list[tuple[str, str, float, float]] = []
_lock = threading.Lock()


def note(label: str, began: float, ended: float) -> None:
    with _lock:
        _events.append((threading.current_thread().name, label, began - T0, ended - T0))


def wrap(owner, name: str, label: str) -> None:
    """Replace ``owner.name`` by a function noting each call's interval as ``label``."""
    function = getattr(owner, name)

    @functools.wraps(function)
    def noted(*args, **kwargs):
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            note(label, began, time.perf_counter())

    setattr(owner, name, noted)


WRAPPED = [  # (module, attribute or Class.attribute, stage label)
    ("seqsift.searching", "open_reference", "open"), ("seqsift.kernels.cuda", "prepare_device", "prepare device"),
    ("seqsift.runtime.run", "submit_tasks", "submit"), ("seqsift.searching.task", "_search_chunks", "task"),
    ("seqsift.searching.task", "read_chunk", "read window"), ("seqsift.searching.task", "read_packed", "read packed window"),
    ("seqsift.kernels.cuda", "upload_and_encode", "upload"), ("seqsift.kernels", "find_ends", "kernel"),
    ("seqsift.searching.task", "_rows", "locate"), ("seqsift.searching.task", "sort_rows", "sort"),
    ("seqsift.searching.merge", "OrderedMerger.add_group", "merge"), ("seqsift.searching.output", "HitWriter.write", "write"),
    ("seqsift.searching.output", "HitWriter.close", "close output"),
    ("seqsift.crispr.task", "read_chunk", "read window"), ("seqsift.crispr.task", "read_packed", "read packed window"),
    ("seqsift.crispr.task", "find_sites", "kernel"),
    # the steps before the first task, on the main thread and the device's
    ("seqsift.crispr", "read_patterns", "guides"), ("seqsift.crispr", "open_reference", "open"),
    ("seqsift.runtime.clients", "JobClient.start_ahead", "start ahead"),
    ("seqsift.crispr.task", "CrisprJob.plan", "plan"), ("seqsift.crispr.task", "CrisprJob.writer", "writer"),
    ("seqsift.crispr.task", "CrisprJob.fingerprint", "fingerprint"),
    ("seqsift.crispr.task", "CrisprJob.small_enough", "small?"),
    ("seqsift.crispr.task", "CrisprJob.collector", "collector"),
    ("seqsift.searching.job", "SearchJob.plan", "plan"), ("seqsift.searching.job", "SearchJob.writer", "writer"),
    ("seqsift.searching.job", "SearchJob.collector", "collector"),
    ("seqsift.kernels.cuda", "_allocate_staging", "staging"), ("seqsift.kernels.cuda", "_encoder", "encoder"),
    ("seqsift.numba_ahead", "load", "numba load"),
    # screen: its inputs, its tasks (the composition bound, each buffer_scores call as a kernel), the job's end
    ("seqsift.screening.run", "read_sequences", "read inputs"), ("seqsift.kernels.cuda", "ready_device", "ready device"),
    ("seqsift.screening.task", "ScreenJob.plan", "plan"), ("seqsift.screening.task", "ScreenJob.writer", "writer"),
    ("seqsift.screening.task", "_screen_task", "task"), ("seqsift.screening.task", "_bound", "bound"),
    ("seqsift.kernels.sw", "buffer_scores", "kernel"), ("seqsift.kernels.sw", "align", "align"),
    ("seqsift.runtime.run", "run_tasks", "run tasks"), ("seqsift.runtime.output", "TableWriter.close", "close output")]
BIG_IMPORTS = ("numpy", "cupy", "pandas", "pyarrow", "numba", "pynvml", "distributed", "dask", "scipy")
"""Packages whose import shows as a stage of its own (``import NAME``) on the thread that imports them."""


def _wrap_in(module, attribute: str, label: str) -> None:
    owner = module
    *classes, name = attribute.split(".")
    for part in classes:
        owner = getattr(owner, part)
    if hasattr(owner, name):
        wrap(owner, name, label)


def instrument() -> None:
    """Wrap the stages now: functions that the job finds as module globals at call time."""
    import importlib

    for module, attribute, label in WRAPPED:
        _wrap_in(importlib.import_module(module), attribute, label)
    _note_fills()


_finding = threading.local()


class _WrapWhenImported:
    """A meta path finder that wraps a module's stages once the command itself imports it (``--as-imported``)."""

    def find_spec(self, fullname, path, target=None):
        import importlib.util

        wanted = [(attribute, label) for module, attribute, label in WRAPPED if module == fullname]
        if (not wanted and fullname not in BIG_IMPORTS) or getattr(_finding, "now", False):
            return None
        _finding.now = True  # per thread: the other finders answer this one (threads import at once)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            _finding.now = False
        if spec is None:   # not installed here: the importer raises as it would without this finder
            return None
        run_module = spec.loader.exec_module

        def exec_module(module):
            began = time.perf_counter()
            try:
                run_module(module)
            finally:
                if fullname in BIG_IMPORTS:
                    note(f"import {fullname}", began, time.perf_counter())
            for attribute, label in wanted:
                _wrap_in(module, attribute, label)
            if fullname == "seqsift.kernels.cuda":
                _note_fills()

        spec.loader.exec_module = exec_module
        return spec


def _note_fills() -> None:
    from seqsift.kernels import cuda as kernels_cuda

    unwrapped_filler = kernels_cuda._filler

    @contextlib.contextmanager
    def noted_filler(source):
        with unwrapped_filler(source) as fill:
            def noted_fill(buffer, first):
                began = time.perf_counter()
                fill(buffer, first)
                note("fill", began, time.perf_counter())
            yield noted_fill

    kernels_cuda._filler = noted_filler


def report() -> None:
    seconds = collections.defaultdict(lambda: collections.defaultdict(float))
    spans: dict[tuple[str, str], list[float]] = {}
    for thread, label, began, ended in _events:
        seconds[thread][label] += ended - began
        span = spans.setdefault((thread, label), [began, ended])
        span[0], span[1] = min(span[0], began), max(span[1], ended)
    for thread, by_label in seconds.items():
        print(f"  {thread[:30]:30s} " + "  ".join(
            f"{label} {total:.2f} [{spans[(thread, label)][0]:.2f}-{spans[(thread, label)][1]:.2f}]"
            for label, total in sorted(by_label.items(), key=lambda item: spans[(thread, item[0])][0])))
    print("first calls:")
    shown = collections.Counter()
    for thread, label, began, ended in sorted(_events, key=lambda event: event[2]):
        shown[(thread, label)] += 1
        if shown[(thread, label)] == 1 and label != "fill":
            print(f"    {began:6.3f}-{ended:6.3f} {thread[:30]:30s} {label}")
    kernels = sorted((began, ended) for _, label, began, ended in _events if label == "kernel")
    busy, current = 0.0, None
    for began, ended in kernels:
        if current is None or began > current[1]:
            busy += current[1] - current[0] if current else 0.0
            current = [began, ended]
        else:
            current[1] = max(current[1], ended)
    if current:
        busy += current[1] - current[0]
        print(f"kernel calls: {len(kernels)}, running {busy:.2f} s of the {current[1] - kernels[0][0]:.2f} s "
              f"from the first one's start ({kernels[0][0]:.2f} s) to the last one's end")


def main() -> None:
    argv = sys.argv[1:]
    as_imported = argv[:1] == ["--as-imported"]
    if as_imported:
        argv = argv[1:]
        sys.meta_path.insert(0, _WrapWhenImported())
    if argv[:1] == ["--"]:
        argv = argv[1:]
    began = time.perf_counter()
    from seqsift import cli

    if not as_imported:
        instrument()
    note("imports", began, time.perf_counter())
    began = time.perf_counter()
    code = cli.main(argv)
    note("main", began, time.perf_counter())
    print(f"seqsift {' '.join(argv[:1])}: exit status {code}, {time.perf_counter() - T0:.2f} s since this "
          f"process began (stage [first start-last end], seconds since then)")
    report()
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
