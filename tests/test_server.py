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
import subprocess
from pathlib import Path

import pytest

from console import seqsift_command
from seqsift.server import served
from test_engine import write_fasta

import random


def _env(socket: Path, **extra) -> dict:
    return {**os.environ, "SEQSIFT_SERVER_SOCKET": str(socket), **extra}


class Server:
    def __init__(self, socket: Path, process: subprocess.Popen, first_line: str):
        self.socket, self.process, self.first_line = socket, process, first_line

    def run(self, *args, cwd=None, env_extra=None) -> subprocess.CompletedProcess:
        return subprocess.run(seqsift_command(*args), env=_env(self.socket, **(env_extra or {})), cwd=cwd,
                              capture_output=True, text=True, timeout=300)

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
    (["search", "ref.fa", "p.txt", "--scheduler", "tcp://x:1"], False),
    (["search", "ref.fa", "p.txt", "--gpus=0,1"], False),
    (["serve", "--stop"], False),
    (["--version"], False),
])
def test_which_runs_go_to_a_server(argv, expected):
    assert served(argv) is expected
