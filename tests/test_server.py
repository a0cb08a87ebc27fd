"""``seqsift serve``: the opt-in warm server that the ``seqsift`` command hands its runs to (seqsift/server.py).

Each test starts the server through the installed console script with its
own socket (``SEQSIFT_SERVER_SOCKET``), waits for its "listening" line, runs
the console script as a user does, and compares with a run in the calling
process (no server at that socket). The server runs CPU jobs here; on the
GPU machine the same code path holds the CUDA cluster.
"""
from __future__ import annotations

import json
import os
import signal
import socket as sockets
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from console import seqsift_command
from seqsift.server_client import served
from test_engine import write_fasta

import random


def _env(socket: Path, **extra) -> dict:
    return {**os.environ, "SEQSIFT_SERVER_SOCKET": str(socket), **extra}


class Server:
    def __init__(self, socket: Path, process: subprocess.Popen, first_line: str):
        self.socket, self.process, self.first_line = socket, process, first_line

    def run(self, *args, cwd=None, env_extra=None, umask=None) -> subprocess.CompletedProcess:
        preexec = (lambda: os.umask(umask)) if umask is not None else None
        return subprocess.run(seqsift_command(*args), env=_env(self.socket, **(env_extra or {})), cwd=cwd,
                              capture_output=True, text=True, timeout=300, preexec_fn=preexec)

    def status(self) -> dict:
        result = self.run("serve", "--status")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)


def start_server(socket: Path, *extra) -> Server:
    process = subprocess.Popen(seqsift_command("serve", "--backend", "cpu", *extra), env=_env(socket),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first_line = process.stdout.readline()  # the server says it listens once the socket is bound
    return Server(socket, process, first_line)


@pytest.fixture
def server(tmp_path):
    socket = tmp_path / "sock" / "server.sock"
    started = start_server(socket, "--idle-minutes", "10")
    assert "listening" in started.first_line, started.process.stderr.read()
    yield started
    stop = started.run("serve", "--stop")
    assert stop.returncode == 0, stop.stderr
    assert started.process.wait(timeout=120) == 0
    assert not socket.exists()


@pytest.fixture
def job_files(tmp_path):
    rng = random.Random(5)
    genome = "".join(rng.choice("ACGT") for _ in range(30_000))
    reference = write_fasta(tmp_path / "ref.fa", [("chr1", genome[:17_000]), ("chr2", genome[17_000:])])
    patterns = tmp_path / "patterns.txt"
    patterns.write_text("".join(genome[s:s + 18] + "\n" for s in range(100, 29_000, 700)))
    return reference, patterns


def local_run(tmp_path, *args, cwd=None):
    """The same command with no server at its socket: run in the calling process."""
    return subprocess.run(seqsift_command(*args), env=_env(tmp_path / "no-server.sock"), cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_a_search_through_the_server_writes_what_a_local_run_writes(server, job_files, tmp_path):
    reference, patterns = job_files
    through = server.run("search", reference, patterns, "-k", "2", "--metric", "edit", "--backend", "cpu",
                         "-o", tmp_path / "served.tsv", "--no-progress")
    here = local_run(tmp_path, "search", reference, patterns, "-k", "2", "--metric", "edit", "--backend", "cpu",
                     "-o", tmp_path / "local.tsv", "--no-progress")
    assert through.returncode == here.returncode == 0, (through.stderr, here.stderr)
    served_rows = (tmp_path / "served.tsv").read_text()
    assert served_rows == (tmp_path / "local.tsv").read_text()
    assert served_rows.count("\n") > 40
    assert server.status()["jobs"] == 1


def test_standard_output_relative_paths_and_the_environment_reach_the_job(server, job_files, tmp_path):
    reference, patterns = job_files
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    args = ("crispr", os.path.relpath(reference, elsewhere), os.path.relpath(patterns, elsewhere), "--pam", "NRG",
            "-k", "3", "--backend", "cpu", "--no-progress")
    through = server.run(*args, cwd=elsewhere, env_extra={"SEQSIFT_CACHE": str(tmp_path / "cache-served")})
    here = local_run(tmp_path, *args, cwd=elsewhere)
    assert through.returncode == here.returncode == 0, (through.stderr, here.stderr)
    assert through.stdout == here.stdout and through.stdout.count("\n") > 5
    assert (tmp_path / "cache-served").is_dir()  # the caller's SEQSIFT_CACHE, not the server's


def test_bad_input_ends_in_the_same_line_and_status_as_a_local_run(server, tmp_path, job_files):
    _, patterns = job_files
    through = server.run("search", tmp_path / "missing.fa", patterns, "-k", "1", "--backend", "cpu")
    here = local_run(tmp_path, "search", tmp_path / "missing.fa", patterns, "-k", "1", "--backend", "cpu")
    assert through.returncode == here.returncode == 2
    assert through.stderr == here.stderr and through.stderr.startswith("seqsift: error: ")
    assert server.run("search", *job_files, "-k", "0", "--backend", "cpu", "--no-progress").returncode == 0
    assert server.status()["jobs"] == 2


@pytest.fixture
def long_job(tmp_path):
    """(reference, patterns) of a search that writes hits to stdout for a while: two letters, hits everywhere."""
    rng = random.Random(9)
    genome = "".join(rng.choice("AC") for _ in range(400_000))
    reference = write_fasta(tmp_path / "big.fa", [("chr1", genome)])
    patterns = tmp_path / "many.txt"
    patterns.write_text("".join(genome[s:s + 16] + "\n" for s in range(0, 300_000, 997)))
    return reference, patterns


def start_long_job(server, reference, patterns) -> subprocess.Popen:
    return subprocess.Popen(seqsift_command("search", reference, patterns, "-k", "4", "--backend", "cpu",
                                            "--mode", "ends", "--no-progress"),
                            env=_env(server.socket), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_caller_that_stops_reading_interrupts_its_job_and_the_server_goes_on(server, long_job, tmp_path):
    reference, patterns = long_job
    caller = start_long_job(server, reference, patterns)
    assert caller.stdout.readline()  # the job runs and writes
    caller.send_signal(signal.SIGINT)
    assert caller.wait(timeout=120) == 130
    assert b"seqsift: interrupted" in caller.stderr.read()
    after = server.run("search", reference, patterns, "-k", "0", "--backend", "cpu", "-o", tmp_path / "after.tsv",
                       "--no-progress")
    assert after.returncode == 0, after.stderr
    assert (tmp_path / "after.tsv").read_text().count("\n") > 300


def test_a_reader_that_goes_away_ends_the_caller_quietly_with_141(server, long_job):
    reference, patterns = long_job
    caller = start_long_job(server, reference, patterns)
    assert caller.stdout.readline()  # like `| head -1`: read a line, then stop reading
    caller.stdout.close()
    assert caller.wait(timeout=120) == 141
    assert caller.stderr.read() == b""
    assert server.run("search", reference, patterns, "-k", "0", "--backend", "cpu", "--no-progress").returncode == 0


def test_the_server_stops_when_idle_and_removes_its_socket(tmp_path):
    socket = tmp_path / "idle" / "server.sock"
    started = start_server(socket, "--idle-minutes", "0.02")
    assert "listening" in started.first_line
    assert started.process.wait(timeout=120) == 0
    assert not socket.exists()


def test_a_second_server_on_the_same_socket_is_refused(server):
    second = start_server(server.socket, "--idle-minutes", "1")
    assert second.process.wait(timeout=120) == 2
    assert "already running" in second.process.stderr.read()


def test_a_socket_folder_open_to_others_is_refused(tmp_path):
    folder = tmp_path / "open"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    started = start_server(folder / "server.sock", "--idle-minutes", "1")
    assert started.process.wait(timeout=120) == 2
    lines = started.process.stderr.read().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("seqsift: error: ") and "chmod 700" in lines[0]


def test_without_a_server_a_stale_socket_file_means_a_local_run(tmp_path, job_files):
    stale = tmp_path / "stale.sock"
    stale.write_text("not a socket")
    result = subprocess.run(seqsift_command("search", *job_files, "-k", "0", "--backend", "cpu", "--no-progress"),
                            env=_env(stale), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") > 40


@pytest.mark.parametrize("argv, expected", [
    (["search", "ref.fa", "p.txt", "-k", "1"], True),
    (["crispr", "ref.fa", "g.txt"], True),
    (["search", "ref.fa", "-", "-k", "1"], False),                # patterns on our standard input
    (["search", "ref.fa", "/dev/stdin", "-k", "1"], False),
    (["search", "ref.fa", "p.txt", "--scheduler", "tcp://x:1"], False),
    (["search", "ref.fa", "p.txt", "--gpus=0,1"], False),
    (["serve", "--stop"], False),
    (["--version"], False),
])
def test_which_runs_go_to_a_server(argv, expected):
    assert served(argv) is expected


# -- a shared machine: the server must be this user's own --------------------------------------

OTHER_UID = 65534  # "nobody"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's socket needs root "
                                                           "(chown and setuid); CI runs as root")


class FakeServer:
    """A listener that answers every run with invented rows: what a hijacker would do."""

    def __init__(self, path: Path):
        self.listener = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(4)
        self.requests: list[bytes] = []
        threading.Thread(target=self._answer, daemon=True).start()

    def _answer(self):
        from seqsift.server_client import FRAME

        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                self.requests.append(connection.makefile("rb").readline())
                connection.sendall(FRAME.pack(b"O", 9) + b"invented\n" + FRAME.pack(b"X", 1) + b"0")

    def close(self):
        self.listener.close()


def _run_with_env(env, *args):
    return subprocess.run(seqsift_command(*args), env=env, capture_output=True, text=True, timeout=300)


@needs_root
def test_a_server_folder_planted_by_another_user_in_tmp_is_not_used(tmp_path, job_files):
    """The reproduced hijack: XDG_RUNTIME_DIR unset, another user made /tmp/seqsift-<uid>/server.sock first."""
    shared_tmp = tmp_path / "shared-tmp"
    shared_tmp.mkdir()
    shared_tmp.chmod(0o1777)
    planted = shared_tmp / f"seqsift-{os.getuid()}"
    planted.mkdir(mode=0o700)
    fake = FakeServer(planted / "server.sock")
    os.chown(planted / "server.sock", OTHER_UID, OTHER_UID)
    os.chown(planted, OTHER_UID, OTHER_UID)
    env = {k: v for k, v in os.environ.items() if k not in ("SEQSIFT_SERVER_SOCKET", "XDG_RUNTIME_DIR")}
    env["TMPDIR"] = str(shared_tmp)
    try:
        result = _run_with_env(env, "search", *job_files, "-k", "0", "--backend", "cpu", "--no-progress")
    finally:
        fake.close()
    assert result.returncode == 0, result.stderr
    assert fake.requests == []  # nothing of ours reached it: not our arguments, folder or environment
    assert "invented" not in result.stdout and result.stdout.count("\n") > 40
    notes = [line for line in result.stderr.splitlines() if line.startswith("seqsift: note: ")]
    assert len(notes) == 1 and "running here" in notes[0] and f"user id {OTHER_UID}" in notes[0]


@needs_root
def test_a_socket_whose_listener_runs_as_another_user_is_not_used(tmp_path, job_files):
    """Folder and socket file look like ours, but SO_PEERCRED says the process at the other end is not."""
    drop = Path(tempfile.mkdtemp(dir="/tmp"))
    drop.chmod(0o777)
    ready_read, ready_write = os.pipe()
    child = os.fork()
    if child == 0:  # the other user's process: listen() as that user, so SO_PEERCRED names it
        try:
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            listener = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
            listener.bind(str(drop / "s.sock"))
            listener.listen(4)
            os.write(ready_write, b"r")
            while True:
                connection, _ = listener.accept()
                connection.makefile("rb").readline()
                connection.sendall(b"O" + (9).to_bytes(4, "little") + b"invented\n" + b"X" + (1).to_bytes(4, "little")
                                   + b"0")
                connection.close()
        finally:
            os._exit(0)
    try:
        assert os.read(ready_read, 1) == b"r"
        private = tmp_path / "private"
        private.mkdir(mode=0o700)
        (drop / "s.sock").rename(private / "server.sock")
        os.chown(private / "server.sock", os.getuid(), os.getgid())
        os.chmod(private / "server.sock", 0o600)
        result = _run_with_env(_env(private / "server.sock"), "search", *job_files, "-k", "0", "--backend", "cpu",
                               "--no-progress")
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        os.close(ready_read)
        os.close(ready_write)
        drop.rmdir()
    assert result.returncode == 0, result.stderr
    assert "invented" not in result.stdout and result.stdout.count("\n") > 40
    assert "runs as user id" in result.stderr and "running here" in result.stderr


def test_a_socket_file_open_to_others_is_not_used(tmp_path, job_files):
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    fake = FakeServer(folder / "server.sock")
    os.chmod(folder / "server.sock", 0o666)
    try:
        result = _run_with_env(_env(folder / "server.sock"), "search", *job_files, "-k", "0", "--backend", "cpu",
                               "--no-progress")
    finally:
        fake.close()
    assert result.returncode == 0 and fake.requests == []
    assert "others may use it" in result.stderr and "invented" not in result.stdout


# -- nothing a caller sends stops the server ----------------------------------------------------

def _raw_request(socket_path: Path, payload: bytes) -> list[tuple[bytes, bytes]]:
    """Send ``payload`` on a fresh connection; the frames the server answers with, until it closes."""
    from seqsift.server_client import read_frame

    with sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM) as connection:
        connection.connect(str(socket_path))
        connection.sendall(payload)
        reader = connection.makefile("rb")
        frames = []
        while (frame := read_frame(reader)) is not None:
            frames.append(frame)
        return frames


@pytest.mark.parametrize("payload, says", [
    (b"[1,2]\n", b"not a JSON object"),
    (b"not json at all\n", b"not one line of JSON"),
    (b'{"kind": "run", "argv": ["search", "x.fa", "p.txt", "-k", "1"], "env": {}}\n', b"cwd must be"),
    (b'{"kind": "run", "argv": ["bench"], "cwd": "/", "env": {}}\n', b"runs only search"),
    (b'{"kind": "run", "argv": ["search"], "cwd": "/", "env": {"PATH": "/evil"}}\n', b"env may hold only"),
])
def test_a_malformed_request_gets_one_error_line_and_the_server_goes_on(server, job_files, payload, says):
    frames = _raw_request(server.socket, payload)
    assert [kind for kind, _ in frames] == [b"E", b"X"] and frames[1][1] == b"2"
    assert frames[0][1].startswith(b"seqsift: error: bad request") and says in frames[0][1]
    assert server.run("search", *job_files, "-k", "0", "--backend", "cpu", "--no-progress").returncode == 0


def test_a_working_folder_the_server_cannot_enter_fails_that_job_only(server, job_files, tmp_path):
    request = {"kind": "run", "argv": ["search", str(job_files[0]), str(job_files[1]), "-k", "0", "--backend", "cpu"],
               "cwd": str(tmp_path / "gone"), "env": {}, "umask": 0o022}
    frames = _raw_request(server.socket, json.dumps(request).encode() + b"\n")
    assert frames[-1] == (b"X", b"2")
    assert b"cannot enter the working folder" in b"".join(p for k, p in frames if k == b"E")
    assert server.status()["jobs"] == 1  # that job ended, and the server answers


def test_a_status_caller_that_hangs_up_at_once_leaves_the_server_running(server):
    for _ in range(3):
        with sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM) as connection:
            connection.connect(str(server.socket))
            connection.sendall(b'{"kind": "status"}\n')
    assert server.status()["pid"] == server.process.pid


def test_a_silent_connection_blocks_neither_status_nor_jobs(server, job_files):
    with sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM) as silent:
        silent.connect(str(server.socket))  # sends nothing, keeps the connection open
        assert server.status()["running"] is False
        done = server.run("search", *job_files, "-k", "0", "--backend", "cpu", "--no-progress")
        assert done.returncode == 0 and done.stdout.count("\n") > 40


# -- a served job runs with its caller's settings -----------------------------------------------

@pytest.mark.parametrize("umask, mode", [(0o077, 0o600), (0o002, 0o664)])
def test_a_served_job_writes_with_the_callers_umask(server, job_files, tmp_path, umask, mode):
    output = tmp_path / f"hits-{umask:o}.tsv"
    done = server.run("search", *job_files, "-k", "0", "--backend", "cpu", "--no-progress", "-o", output,
                      umask=umask)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(output.stat().st_mode) == mode


def test_a_served_job_uses_the_callers_xdg_cache_home(server, job_files, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    through = subprocess.run(seqsift_command("search", *job_files, "-k", "0", "--backend", "cpu", "--no-progress"),
                             env={**{k: v for k, v in _env(server.socket).items() if k != "SEQSIFT_CACHE"}, **env},
                             capture_output=True, text=True, timeout=300)
    assert through.returncode == 0, through.stderr
    assert (tmp_path / "xdg" / "seqsift").is_dir()


def _wait_for_path(path: Path, process: subprocess.Popen) -> None:
    """Until ``path`` exists (the served job took its output lock), or ``process`` ended first."""
    while not path.exists():
        assert process.poll() is None, process.stderr.read()
        threading.Event().wait(0.05)


def _holder_of(lock: Path, process: subprocess.Popen) -> dict:
    """The holder's details in ``lock``, once the served job has written them (it creates the file, then
    locks it, then writes), or ``process`` ended first."""
    _wait_for_path(lock, process)
    while True:
        try:
            return json.loads(lock.read_text())
        except ValueError:  # created, its details not written yet
            assert process.poll() is None, process.stderr.read()
            threading.Event().wait(0.05)


def test_ctrl_c_stops_a_served_job_there_and_a_waiting_caller_is_told(server, long_job, tmp_path):
    reference, patterns = long_job
    first_output, second_output = tmp_path / "first.tsv", tmp_path / "second.tsv"
    args = ("search", reference, patterns, "-k", "4", "--backend", "cpu", "--mode", "ends", "--no-progress")
    first = subprocess.Popen(seqsift_command(*args, "-o", first_output), env=_env(server.socket),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    holder = _holder_of(tmp_path / ".first.tsv.seqsift-lock", first)
    assert holder["command"].startswith("seqsift search") and str(first_output) in holder["command"]
    second = subprocess.Popen(seqsift_command("search", reference, patterns, "-k", "0", "--backend", "cpu",
                                              "--no-progress", "-o", second_output),
                              env=_env(server.socket), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "is running another job; waiting" in second.stderr.readline()
    first.send_signal(signal.SIGINT)
    assert first.wait(timeout=120) == 130
    assert second.wait(timeout=300) == 0, second.stderr.read()
    # The second job ran after the first one ended: the first wrote nothing, not even later.
    assert not first_output.exists()
    # Only what an interrupted job keeps for --resume is left (no output, no .part file, no lock).
    assert [p.name for p in tmp_path.iterdir() if "first" in p.name] in ([], [".first.tsv.seqsift-tasks"])
    assert second_output.read_text().count("\n") > 300
