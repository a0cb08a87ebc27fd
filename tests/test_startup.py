"""A seqsift command's fixed costs: what it imports before it needs it, and how it ends.

Each check runs in a fresh interpreter, since this test session has long
imported everything.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import pandas as pd

from fresh_process import loaded_after, python
from naive_search import expected_rows
from test_engine import write_fasta

JOB_STACK = ("pandas", "pyarrow", "dask", "distributed", "numba", "llvmlite", "cupy", "dask_cuda")
"""Modules a job needs and ``seqsift --help`` does not (seconds to import on the GPU machine)."""


def _loaded_after(code: str) -> list[str]:
    """The modules of JOB_STACK loaded once ``code`` has run in a fresh interpreter."""
    return loaded_after(code, JOB_STACK)


def test_the_command_line_imports_no_job_stack():
    assert _loaded_after("import seqsift.cli") == []


def test_the_console_entry_and_the_server_client_import_only_the_standard_library():
    """A run handed to ``seqsift serve`` loads nothing but console.py and server.py's client half."""
    result = python("""
        import sys
        import seqsift.console, seqsift.server_client
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "pandas", "dask", "distributed",
                                                                    "numba", "cupy", "pyarrow")))
        print(sorted(m for m in sys.modules if m.startswith("seqsift")))
    """)
    assert result.returncode == 0, result.stderr
    third_party, ours = result.stdout.strip().splitlines()[-2:]
    assert eval(third_party) == []
    assert eval(ours) == ["seqsift", "seqsift.console", "seqsift.errors", "seqsift.server_client"]


def test_help_imports_no_job_stack():
    assert _loaded_after("""
        import contextlib, io
        from seqsift.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["--help"]) == 0
            assert main(["search", "--help"]) == 0
            assert main(["crispr", "--help"]) == 0
            assert main(["screen", "--help"]) == 0
    """) == []


def test_a_bad_input_starts_no_cluster_machinery(tmp_path):
    """A job stopped by its input never loads Dask, distributed or Numba (pandas: the output checks use it)."""
    missing = tmp_path / "missing.fa"
    loaded = _loaded_after("""
        import contextlib, io
        from seqsift.cli import main
        with contextlib.redirect_stderr(io.StringIO()):
            assert main(["search", %r, "-p", "ACGTACGT", "-k", "1"]) == 2
    """ % str(missing))
    assert set(loaded) <= {"pandas", "pyarrow"}, loaded


def test_the_public_functions_stay_functions_after_lazy_imports():
    """``seqsift.crispr`` is the function even when its package's modules were imported first."""
    result = python("""
        import sys
        import seqsift.crispr.cli, seqsift.cli
        import seqsift
        assert seqsift.crispr.__module__ == "seqsift.crispr" and callable(seqsift.crispr), seqsift.crispr
        assert "seqsift.screening.run" not in sys.modules  # the screen job loads when it runs
        assert callable(seqsift.screen) and seqsift.screen.__module__ == "seqsift.screening.run"
        assert callable(seqsift.search)
        from seqsift import screen, search, crispr
    """)
    assert result.returncode == 0, result.stderr


def _job(tmp_path):
    """A small genome and a 5-mer: about 600 rows (more than one stdout buffer of TSV)."""
    rng = random.Random(11)
    genome = "".join(rng.choice("ACGT") for _ in range(150_000))
    reference = write_fasta(tmp_path / "ref.fa", [("chr1", genome)])
    expected = expected_rows([("chr1", genome)], [("p", "ACGTA")], 0, "hamming")
    return reference, expected


def _rows(tsv_text: str) -> list[tuple]:
    lines = tsv_text.splitlines()
    assert lines[0].split("\t")[:6] == ["record", "start", "end", "pattern", "distance", "strand"]
    return [tuple(line.split("\t")[:6]) for line in lines[1:]]


def _expected(frame: pd.DataFrame) -> list[tuple]:
    return [("chr1", str(r.start), str(r.end), "cli_1", str(r.distance), r.strand)  # -p patterns are cli_1, ...
            for r in frame.sort_values(["start", "strand"]).itertuples()]


def test_the_console_exit_skips_the_teardown_not_the_output(tmp_path):
    """``console_main`` ends without finalising the interpreter (an object's ``__del__`` at teardown never
    runs), still runs the atexit handlers, and leaves every row on stdout and in the -o file, status 0."""
    reference, expected = _job(tmp_path)
    out = tmp_path / "hits.tsv"
    child = f"""
        import atexit, sys
        class Teardown:
            def __del__(self):
                open({str(tmp_path / 'teardown-ran')!r}, "w").close()
        teardown = Teardown()
        atexit.register(lambda: open({str(tmp_path / 'atexit-ran')!r}, "w").close())
        sys.argv = ["seqsift", "search", {reference!r}, "-p", "ACGTA", "-k", "0", "--backend", "cpu",
                    "--workers", "1", "--no-progress"] + sys.argv[1:]
        from seqsift.cli import console_main
        console_main()
        raise AssertionError("console_main returned")
    """
    to_stdout = subprocess.run([sys.executable, "-c", textwrap.dedent(child)], capture_output=True, text=True,
                               timeout=300)
    assert to_stdout.returncode == 0, to_stdout.stderr
    assert to_stdout.stderr == ""
    assert _rows(to_stdout.stdout) == _expected(expected)
    assert (tmp_path / "atexit-ran").exists()
    assert not (tmp_path / "teardown-ran").exists()

    (tmp_path / "atexit-ran").unlink()
    to_file = subprocess.run([sys.executable, "-c", textwrap.dedent(child), "-o", str(out)],
                             capture_output=True, text=True, timeout=300)
    assert to_file.returncode == 0 and to_file.stdout == "", to_file.stderr
    assert _rows(out.read_text()) == _expected(expected)
    assert (tmp_path / "atexit-ran").exists()
    assert not (tmp_path / "teardown-ran").exists()


def test_python_dash_m_exit_codes(tmp_path):
    """``python -m seqsift`` (console_main): 2 on bad input with one line, 141 for a reader gone, 1 on a full disk."""
    reference, _ = _job(tmp_path)
    command = [sys.executable, "-m", "seqsift", "search"]
    bad = subprocess.run([*command, str(tmp_path / "missing.fa"), "-p", "ACGT", "-k", "0"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("seqsift: error: "), bad.stderr

    job = [*command, reference, "-p", "ACGTA", "-k", "0", "--backend", "cpu", "--workers", "1", "--no-progress"]
    reader_gone = subprocess.Popen(job, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader_gone.stdout.readline().startswith(b"record\tstart\tend")
    reader_gone.stdout.close()
    assert reader_gone.stderr.read() == b""
    assert reader_gone.wait(timeout=300) == 141

    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            disk_full = subprocess.run(job, stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
        assert disk_full.returncode == 1
        assert disk_full.stderr.count("\n") == 1 and disk_full.stderr.startswith("seqsift: error: "), disk_full.stderr


def _worker_timers(dask_worker) -> dict:
    """A worker's periodic callbacks: name -> interval in ms."""
    return {name: callback.callback_time for name, callback in dask_worker.periodic_callbacks.items()}


def test_the_clusters_seqsift_starts_run_no_profiler_and_poll_rarely():
    """No sampling profiler in the workers, the system monitor every 5 s (not 0.5 s), and no memory
    monitor in the in-process worker, which shares its process with the client."""
    from distributed import Client

    from seqsift.cluster import in_process_cluster, local_cluster

    for start, in_process in ((lambda: in_process_cluster(2), True), (lambda: local_cluster("cpu", workers=1), False)):
        cluster = start()
        try:
            with Client(cluster) as client:
                timers = list(client.run(_worker_timers).values())
                scheduler_monitor = client.run_on_scheduler(
                    lambda dask_scheduler: dask_scheduler.periodic_callbacks["monitor"].callback_time)
        finally:
            cluster.close()
        assert len(timers) == 1
        assert "profile" not in timers[0] and "profile-cycle" not in timers[0], timers[0]
        assert timers[0]["monitor"] == 5000 and scheduler_monitor == 5000
        if in_process:
            assert "memory_monitor" not in timers[0], timers[0]


def test_count_gpus_asks_nvml_once_and_imports_no_dask_cuda(tmp_path):
    """The GPU count of dask-cuda's rule (CUDA_VISIBLE_DEVICES, else NVML), with NVML initialised once per
    process, and neither dask-cuda itself (seconds of imports) nor pynvml (0.1 s) loaded; a stand-in for
    NVML's C library counts the calls. No library: 0 GPUs. An empty CUDA_VISIBLE_DEVICES, or "-1", hides
    every GPU."""
    fakes = tmp_path / "fakes"
    (fakes / "dask_cuda").mkdir(parents=True)
    (fakes / "dask_cuda" / "__init__.py").write_text("raise ImportError('count_gpus must not import dask_cuda')\n")
    (fakes / "pynvml.py").write_text("raise ImportError('count_gpus must not import pynvml')\n")
    result = python("""
        import ctypes, os, sys
        from seqsift import cluster
        from seqsift.cluster import count_gpus

        class FakeNvml:
            inits = 0
            def nvmlInit_v2(self):
                FakeNvml.inits += 1
                return 0
            def nvmlDeviceGetCount_v2(self, count):
                ctypes.cast(count, ctypes.POINTER(ctypes.c_uint))[0] = 3
                return 0

        real = ctypes.CDLL
        ctypes.CDLL = lambda name: (_ for _ in ()).throw(OSError(name))   # no driver
        assert cluster._nvml_device_count() == 0
        ctypes.CDLL = lambda name: FakeNvml() if name == "libnvidia-ml.so.1" else real(name)
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        assert (count_gpus(), count_gpus()) == (3, 3) and FakeNvml.inits == 1, FakeNvml.inits
        assert "pynvml" not in sys.modules
        os.environ["CUDA_VISIBLE_DEVICES"] = "0,2"
        assert count_gpus() == 2 and FakeNvml.inits == 1
        for hidden, count in (("", 0), ("-1", 0), (" ", 0), ("1,-1,0", 1), ("GPU-8f1d,MIG-2a", 2)):
            os.environ["CUDA_VISIBLE_DEVICES"] = hidden   # CUDA stops at the first entry naming no device
            assert count_gpus() == count, (hidden, count_gpus())
    """, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(fakes), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert result.returncode == 0, result.stderr
