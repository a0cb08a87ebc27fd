"""The command line: real runs, and every bad input ending in one clean line."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pandas as pd
import pytest

from seqsift.cli import demo_guides, main

from naive_search import expected_rows

GENOME = ("ACGTTGCAAGGCTAGCTAGGATCCATGCAAATTTGGGCCCATATATCGCGATTACAGGATCCATGAAACCC"
          "TTTGGGAAACCCGGGTTTAAACGTTGCAAGGCTTT")


@pytest.fixture
def ref(tmp_path):
    path = tmp_path / "ref.fa"
    path.write_text(">chrA first\n" + GENOME[:60] + "\n" + GENOME[60:] + "\n>chrB\nGGATCCATGTTTTT\n")
    return path


def run_cli(*args, cwd=None):
    """The installed-style entry point in a fresh process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "seqsift", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_search_to_tsv_matches_the_contract(ref, tmp_path):
    out = tmp_path / "hits.tsv"
    result = run_cli("search", ref, "GGATCCATG,ACGTTGCAAGG", "-k", "1", "--metric", "edit",
                     "-o", out, "--workers", "1")
    assert result.returncode == 0, result.stderr
    got = pd.read_csv(out, sep="\t").rename(columns={"#record": "record"})
    records = [("chrA", GENOME), ("chrB", "GGATCCATGTTTTT")]
    expected = expected_rows(records, [("cli_1", "GGATCCATG"), ("cli_2", "ACGTTGCAAGG")], 1, "edit")
    assert got[["record", "start", "end", "pattern", "distance", "strand"]].values.tolist() == expected.values.tolist()


def test_search_to_stdout_with_pattern_file(ref, tmp_path):
    patterns = tmp_path / "guides.tsv"
    patterns.write_text("name\tsequence\nsite1\tGGATCCATG\nsite2\tTTTGGGAAA\n")
    result = run_cli("search", ref, patterns, "-k", "0", "--workers", "1", "--strand", "+", "--no-align")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "record\tstart\tend\tpattern\tdistance\tstrand"
    records = [("chrA", GENOME), ("chrB", "GGATCCATGTTTTT")]
    expected = expected_rows(records, [("site1", "GGATCCATG"), ("site2", "TTTGGGAAA")], 0, "hamming", strands="+")
    assert len(expected) == 4
    assert [line.split("\t") for line in lines[1:]] == expected.astype(str).values.tolist()


def test_demo_runs_on_the_bundled_lambda_genome():
    result = run_cli("demo", "--workers", "2", "--backend", "cpu")
    assert result.returncode == 0, result.stderr
    assert "lambda phage NC_001416.1 (48,502 bp), 40 guides" in result.stdout
    # Every guide is drawn from the genome, so each hits at least its own site.
    assert "guide_40" in result.stdout


def test_demo_guides_are_drawn_from_the_genome():
    genome = "".join(("ACGT"[i * 7 % 4] + "GG") for i in range(200))
    guides = demo_guides(genome, count=5)
    assert len(guides) == 5 and all(seq in genome and len(seq) == 20 for _, seq in guides)


def _bad(capsys, *args):
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code == 2 or code is None
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_bad_inputs_give_one_line(ref, tmp_path, capsys):
    empty = tmp_path / "empty.fa"
    empty.write_text("")
    fastq = tmp_path / "reads.fq"
    fastq.write_text("@r1\nACGT\n+\nIIII\n")
    patterns_empty_line = tmp_path / "p.fa"
    patterns_empty_line.write_text(">a\nACGT\n>b\n\n")
    cases = [
        (("search", tmp_path / "missing.fa", "ACGT", "-k", "1"), "missing.fa"),
        (("search", empty, "ACGT", "-k", "1"), "empty.fa"),
        (("search", fastq, "ACGT", "-k", "1"), "reads.fq"),
        (("search", ref, patterns_empty_line, "-k", "1"), "p.fa"),
        (("search", ref, "A" * 200, "-k", "1"), "longer"),
        (("search", ref, "ACGTQQ", "-k", "1"), "Q"),
        (("search", ref, "ACGT", "-k", "-1"), "k"),
        (("search", ref, "ACGT", "-k", "4"), "k"),
        (("search", ref, "ACGT", "-k", "1", "--metric", "levenshtein"), "metric"),
        (("search", ref, "ACGT", "-k", "1", "--mode", "all"), "mode"),
        (("search", ref, "ACGT", "-k", "1", "-o", tmp_path / "nodir" / "hits.tsv"), "nodir"),
        (("search", ref, "ACGT", "-k", "1", "-o", tmp_path / "hits.xlsx"), "hits.xlsx"),
        (("search", ref, "-k", "1"), "patterns"),
    ]
    for args, named in cases:
        line = _bad(capsys, *args)
        assert named.lower() in line.lower(), (args, line)
        assert line.startswith("seqsift")


def test_unreadable_reference(ref, capsys):
    os.chmod(ref, 0)
    try:
        if os.access(ref, os.R_OK):
            pytest.skip("running as root: permissions do not stop reads")
        assert "ref.fa" in _bad(capsys, "search", ref, "ACGT", "-k", "1")
    finally:
        os.chmod(ref, 0o644)


def test_no_partial_output_when_a_job_fails(ref, tmp_path, capsys):
    out = tmp_path / "hits.tsv"
    line = _bad(capsys, "search", ref, "ACGTQ", "-k", "1", "-o", out)
    assert "Q" in line
    assert list(tmp_path.glob("hits.tsv*")) == [] and list(tmp_path.glob(".hits.tsv*")) == []


def test_gzip_reference_in_a_read_only_directory(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    with gzip.open(folder / "ref.fa.gz", "wt") as handle:
        handle.write(">chrA\n" + GENOME + "\n")
    os.chmod(folder, 0o555)
    try:
        env_cache = tmp_path / "cache"
        result = subprocess.run([sys.executable, "-m", "seqsift", "search", str(folder / "ref.fa.gz"),
                                 "GGATCCATG", "-k", "0", "--workers", "1", "--strand", "+"],
                                capture_output=True, text=True, timeout=300,
                                env={**os.environ, "SEQSIFT_CACHE": str(env_cache)})
        assert result.returncode == 0, result.stderr
        assert len(result.stdout.splitlines()) == 3  # header + 2 hits
        assert "gzip" in result.stderr
        assert sorted(p.name for p in folder.iterdir()) == ["ref.fa.gz"]
    finally:
        os.chmod(folder, 0o755)
