"""Running the installed ``seqsift`` console script in a fresh process, as a user does."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

SEQSIFT = shutil.which("seqsift")


def seqsift_command(*args) -> list[str]:
    """The console script and its arguments (``python -m seqsift`` only where it is not installed)."""
    head = [SEQSIFT] if SEQSIFT else [sys.executable, "-m", "seqsift"]
    return [*head, *map(str, args)]


def run_seqsift(*args, umask: int | None = None, stderr=subprocess.PIPE, cwd=None, timeout=300):
    """Run ``seqsift ARGS``; ``umask`` sets the child's umask; ``stderr`` may be an open file."""
    preexec = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run(seqsift_command(*args), stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=cwd,
                          timeout=timeout, preexec_fn=preexec)


def one_line_error(result, *fragments: str) -> str:
    """The single ``seqsift: error:`` line of a run that failed on bad input (exit 2)."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("seqsift: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def write_job_inputs(folder, genome: str, patterns: list[tuple[str, str]]):
    """``folder/ref.fa`` holding one record ``chrA`` = ``genome``, and ``folder/sites.tsv`` of name<TAB>sequence."""
    reference = folder / "ref.fa"
    reference.write_text(">chrA\n" + genome + "\n")
    pattern_file = folder / "sites.tsv"
    pattern_file.write_text("".join(f"{name}\t{sequence}\n" for name, sequence in patterns))
    return reference, pattern_file
