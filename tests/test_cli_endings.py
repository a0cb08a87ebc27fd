"""How a run of the installed ``seqsift`` console script ends when it does not finish normally.

Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while the
job runs or while its local cluster starts, a task that raises on a worker,
and a reader of standard output that goes away (``| head``): each ends in one
line on stderr and a documented exit status, with no traceback and no
process left behind (cli.py's docstring; issue 14, items 9 and 11).

Each test starts the console script in a new session (its own process
group), tags its environment with a unique value, and afterwards waits for
every process carrying that tag to be gone.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from test_engine import write_fasta

TESTS = Path(__file__).parent
TAG = "SEQSIFT_TEST_RUN"
WAIT_LIMIT_S = 120


def _console_script() -> str:
    path = shutil.which("seqsift")
    if path is None:
        pytest.skip("the seqsift console script is not installed (pip install .)")
    return path


def _environment(tmp_path, fault: str | None = None) -> tuple[dict, str]:
    """The console script's environment: tagged, its own $TMPDIR, and a planted worker fault."""
    tag = uuid.uuid4().hex
    env = {**os.environ, TAG: tag, "TMPDIR": str(tmp_path)}
    if fault is not None:
        env["SEQSIFT_PLANTED_FAULT"] = fault
        env["DASK_DISTRIBUTED__WORKER__PRELOAD"] = '["fault_injection"]'
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    return env, tag


def _tagged_processes(tag: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(TAG) == tag:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _assert_nothing_left(tag: str) -> None:
    """Every process of the run (workers, nannies' children, trackers) is gone, or goes soon."""
    _, alive = psutil.wait_procs(_tagged_processes(tag), timeout=30)
    alive = [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"left behind: {[' '.join(p.cmdline())[:120] for p in alive]}"


def _wait_until(condition, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"seqsift ended (status {process.returncode}) before {what}: "
                                 f"{process.stderr.read()}")
        assert time.monotonic() < deadline, f"no {what} within {WAIT_LIMIT_S} s"
        time.sleep(0.02)


def _worker_started(process: subprocess.Popen):
    """A condition: the seqsift process has a Dask worker process (spawned) among its children."""
    parent = psutil.Process(process.pid)

    def started() -> bool:
        try:
            return any("spawn_main" in " ".join(child.cmdline()) for child in parent.children(recursive=True))
        except psutil.Error:
            return False

    return started


@pytest.fixture
def reference(tmp_path):
    rng = random.Random(9)
    records = [(f"chr{r}", "".join(rng.choice("ACGT") for _ in range(20_000))) for r in range(2)]
    return write_fasta(tmp_path / "ref.fa", records)


def _start(reference, tmp_path, env, *extra):
    return subprocess.Popen([_console_script(), "search", reference, "GGATCCATGCAAATTTGG", "-k", "2",
                             "--backend", "cpu", "--workers", "2", "--no-progress", "--chunk-size", "5000",
                             *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, cwd=tmp_path)


def _interrupt(process: subprocess.Popen) -> tuple[int, list[str]]:
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=WAIT_LIMIT_S)
    return process.returncode, err.splitlines()


def test_ctrl_c_while_the_job_runs(reference, tmp_path):
    marker = tmp_path / "a-task-is-running"
    env, tag = _environment(tmp_path, fault=f"hang:{marker}")
    process = _start(reference, tmp_path, env)
    _wait_until(marker.exists, process, "a running task")
    code, lines = _interrupt(process)
    assert lines == ["seqsift: interrupted"], "\n".join(lines)
    assert code == 130
    _assert_nothing_left(tag)


def test_ctrl_c_while_the_cluster_starts(reference, tmp_path):
    env, tag = _environment(tmp_path)
    process = _start(reference, tmp_path, env)
    _wait_until(_worker_started(process), process, "a worker process")
    code, lines = _interrupt(process)
    assert lines == ["seqsift: interrupted"], "\n".join(lines)
    assert code == 130
    _assert_nothing_left(tag)


def test_ctrl_c_with_an_output_file_keeps_the_finished_tasks_note(reference, tmp_path):
    """With -o, the one other line is the note on the saved tasks: still no traceback."""
    marker = tmp_path / "a-task-is-running"
    env, tag = _environment(tmp_path, fault=f"hang:{marker}")
    process = _start(reference, tmp_path, env, "-o", tmp_path / "hits.tsv")
    _wait_until(marker.exists, process, "a running task")
    code, lines = _interrupt(process)
    assert lines[-1] == "seqsift: interrupted" and code == 130, "\n".join(lines)
    assert all(line.startswith("seqsift: note: ") for line in lines[:-1]), "\n".join(lines)
    assert not (tmp_path / "hits.tsv").exists()
    _assert_nothing_left(tag)


def test_a_task_that_raises_on_a_worker(reference, tmp_path):
    env, tag = _environment(tmp_path, fault="fail_always")
    result = subprocess.run([_console_script(), "search", reference, "GGATCCATGCAAATTTGG", "-k", "2",
                             "--backend", "cpu", "--workers", "1", "--no-progress"],
                            capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert result.returncode == 1
    assert lines[0].startswith("seqsift: error: RuntimeError: planted fault: every task fails (details in ")
    log = Path(lines[0].rsplit("(details in ", 1)[1].rstrip(")"))
    assert log.parent == tmp_path and log.name.startswith("seqsift-") and log.suffix == ".log"
    details = log.read_text()
    assert "Traceback" in details and "planted fault: every task fails" in details
    assert "fault_injection.py" in details, "the log should hold the worker's frames"
    assert "seqsift search" in details
    _assert_nothing_left(tag)


def test_a_reader_that_stops_reading(tmp_path):
    """``seqsift search ... | head -1``: quiet, status 141 like grep's, whatever was left unwritten."""
    rng = random.Random(3)
    reference = write_fasta(tmp_path / "big.fa", [("chr1", "".join(rng.choice("ACGT") for _ in range(400_000)))])
    env, tag = _environment(tmp_path)
    search = subprocess.Popen([_console_script(), "search", reference, "ACGTAC", "-k", "1", "--backend", "cpu",
                               "--workers", "1", "--no-progress"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    first_line = search.stdout.readline()
    search.stdout.close()  # the reader goes away, as head does after its lines
    err = search.stderr.read().decode()
    search.wait(timeout=WAIT_LIMIT_S)
    assert b"start\tend\tpattern" in first_line  # the header line
    assert err == ""
    assert search.returncode == 141
    _assert_nothing_left(tag)


class _RaisesOnCollection:
    def __del__(self):
        raise KeyboardInterrupt


@pytest.mark.parametrize("where", ["__del__", "weakref callback"])
def test_a_ctrl_c_that_python_swallowed_is_delivered_again(monkeypatch, where):
    """A KeyboardInterrupt raised where Python drops exceptions ("Exception ignored in ...": a
    finalizer, a weakref or gc callback; CI once lost a Ctrl-C in importlib's module-lock callback)
    reaches the command's ordinary code again, through its sys.unraisablehook."""
    import threading
    import weakref

    from seqsift.cli import redeliver_swallowed_interrupts

    monkeypatch.setattr(sys, "unraisablehook", redeliver_swallowed_interrupts)

    class Target:
        pass

    def callback(_reference):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        if where == "__del__":
            doomed = _RaisesOnCollection()
        else:
            doomed = Target()
            watcher = weakref.ref(doomed, callback)  # noqa: F841 (kept alive until the wait)
        del doomed                               # the KeyboardInterrupt is raised and dropped here ...
        threading.Event().wait(60)               # ... and delivered again during this wait


def test_other_swallowed_exceptions_are_reported_as_python_does(monkeypatch, capsys):
    from seqsift.cli import redeliver_swallowed_interrupts

    monkeypatch.setattr(sys, "unraisablehook", redeliver_swallowed_interrupts)

    class Broken:
        def __del__(self):
            raise ValueError("in a finalizer")

    broken = Broken()
    del broken
    assert "ValueError: in a finalizer" in capsys.readouterr().err


WATCH_FIRST_PANDAS_IMPORT = """
import sys, threading

class Watch:
    first = None

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" and Watch.first is None:
            Watch.first = threading.current_thread().name
        return None

sys.meta_path.insert(0, Watch())
from seqsift.cli import main
code = main(sys.argv[1:])
print(Watch.first)
sys.exit(code)
"""


@pytest.mark.parametrize("command", ["search", "crispr"])
def test_a_jobs_pandas_import_is_never_on_the_thread_ctrl_c_interrupts(reference, tmp_path, command):
    """The writer's imports run on a thread of their own (runtime.run.WRITER_IMPORTS): Ctrl-C's
    KeyboardInterrupt, which only the main thread gets, cannot land inside them while the job's other
    threads import the same modules."""
    guide = "GGATCCATGCAAATTTGG"
    args = (["search", reference, guide, "-k", "2", "--workers", "1"] if command == "search" else
            ["crispr", reference, str(write_fasta(tmp_path / "guide.fa", [("g", guide[:15])])), "--pam", "NGG",
             "-k", "2"])
    result = subprocess.run([sys.executable, "-c", WATCH_FIRST_PANDAS_IMPORT, *args, "--backend", "cpu",
                             "--no-progress", "-o", str(tmp_path / "out.tsv")],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "seqsift-imports"
