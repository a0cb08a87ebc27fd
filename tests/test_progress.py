"""Progress on stderr: the genome counted once, lines in a log from the start, estimates from finished work."""
from __future__ import annotations

import threading

import pytest

from console import run_seqsift
from seqsift.runtime.progress import Progress, format_amount, format_duration, format_part


class LogStream:
    """A non-terminal stream that records lines and signals when it has ``wanted`` of them."""

    def __init__(self, wanted: int = 0):
        self.text = ""
        self.wanted = wanted
        self.enough = threading.Event()

    def write(self, text: str) -> None:
        self.text += text
        if self.wanted and self.text.count("\n") >= self.wanted:
            self.enough.set()

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_amounts_and_durations():
    assert format_amount(4_940_000, "bp") == "4.94 Mbp"
    assert format_amount(980, "bp") == "980 bp"
    assert format_part(1_235_000, 4_940_000, "bp") == "1.24 of 4.94 Mbp"
    assert format_duration(39.4) == "0:39" and format_duration(3725) == "1:02:05"


def test_estimate_comes_from_finished_work_only():
    stream, clock = LogStream(), Clock()
    progress = Progress(4_940_000, unit="bp", label="searching", stream=stream, clock=clock, interval=3600)
    # A line at once, with no estimate: nothing has finished yet.
    assert stream.text == "searching: 0 of 4.94 Mbp (0%), 0:00 elapsed, estimating the time left\n"
    clock.now += 10
    assert progress.line().endswith("0:10 elapsed, estimating the time left")
    progress.advance(1_235_000)          # a quarter in 10 s: three quarters take 30 s more
    assert progress.line() == "searching: 1.24 of 4.94 Mbp (25%), 0:10 elapsed, about 0:30 left"
    progress.close()
    assert stream.text.splitlines()[-1] == "searching: 4.94 Mbp done in 0:10"


def test_a_resumed_jobs_saved_work_gives_no_rate():
    stream, clock = LogStream(), Clock()
    progress = Progress(4_000_000, unit="bp", label="searching", already_done=2_000_000, stream=stream,
                        clock=clock, interval=3600)
    clock.now += 10
    progress.advance(1_000_000)          # this run: 1 Mbp in 10 s, 1 Mbp left
    assert progress.line() == "searching: 3 of 4 Mbp (75%), 0:10 elapsed, about 0:10 left"
    progress.close(ok=False)
    assert stream.text.splitlines()[-1] == "searching: stopped after 0:10, at 3 of 4 Mbp"


def test_a_log_gets_lines_while_no_task_finishes():
    stream = LogStream(wanted=3)
    progress = Progress(1_000, unit="bp", label="searching", stream=stream, interval=0.01)
    try:
        assert stream.enough.wait(60), stream.text   # the event: three lines, without any advance
    finally:
        progress.close()
    lines = stream.text.splitlines()
    assert all(line.startswith("searching: 0 of 1 kbp (0%)") for line in lines[:3])
    assert lines[-1].startswith("searching: 1 kbp done in")


@pytest.mark.parametrize("pattern_batch", ["1", "2"])
def test_search_progress_in_a_log_counts_the_genome_once(tmp_path, pattern_batch):
    """stderr in a file: a first line at the start and a last at the end, over the genome's bases
    (10 kbp), whatever the number of pattern batches."""
    reference = tmp_path / "ref.fa"
    reference.write_text(">chrA\n" + "ACGTTGCAAGGCTAGCTAGG" * 250 + "\n>chrB\n" + "GGATCCATGTTTTTACGCAA" * 250 + "\n")
    log = tmp_path / "job.log"
    with open(log, "w") as stderr:
        result = run_seqsift("search", reference, "GGATCCATG,TTGCAAGGC", "-k", "1", "--pattern-batch",
                             pattern_batch, "--chunk-size", "2000", "-o", tmp_path / "hits.tsv",
                             "--workers", "1", "--backend", "cpu", stderr=stderr)
    text = log.read_text()
    assert result.returncode == 0, text
    lines = [line for line in text.splitlines() if line.startswith("searching")]  # not Dask's warnings
    assert lines and lines[0] == "searching: 0 of 10 kbp (0%), 0:00 elapsed, estimating the time left", text
    assert lines[-1].startswith("searching: 10 kbp done in "), text
    assert "\r" not in text and "\x1b" not in text


def test_screen_progress_in_a_log_counts_cells_from_the_start(tmp_path):
    """screen uses the same progress: a first line at the start (no guessed time), a last at the end."""
    queries = tmp_path / "q.fa"
    targets = tmp_path / "t.fa"
    queries.write_text("".join(f">q{k}\n{'ACGTTGCAAG' * 4}\n" for k in range(10)))
    targets.write_text("".join(f">t{k}\n{'GGATCCAT' * 6}\n" for k in range(10)))
    log = tmp_path / "job.log"
    with open(log, "w") as stderr:
        result = run_seqsift("screen", queries, targets, "--workers", "1", "--backend", "cpu",
                             "--batch-pairs", "3", "-o", tmp_path / "scores.tsv", stderr=stderr)
    text = log.read_text()
    assert result.returncode == 0, text
    lines = [line for line in text.splitlines() if line.startswith("screening")]
    # 10 pairs of 40 x 48 cells (lengths that need no padding).
    assert lines and lines[0] == "screening: 0 of 19.2 kcells (0%), 0:00 elapsed, estimating the time left", text
    assert lines[-1].startswith("screening: 19.2 kcells done in "), text
