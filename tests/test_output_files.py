"""What a user finds on disk after ``seqsift search -o``: modes, links, inputs left alone, a readable header.

Every test runs the installed console script in a fresh process.
"""
from __future__ import annotations

import os
import re
import stat

import pandas as pd
import pytest

from console import one_line_error, run_seqsift, write_job_inputs
from naive_search import expected_rows

GENOME = ("ACGTTGCAAGGCTAGCTAGGATCCATGCAAATTTGGGCCCATATATCGCGATTACAGGATCCATGAAACCC"
          "TTTGGGAAACCCGGGTTTAAACGTTGCAAGGCTTTCAGGCGATCCAAGTC")
PATTERNS = [("site1", "GGATCCATG"), ("site2", "TTTGGGAAA")]
RUN = ("--workers", "1", "--backend", "cpu", "--no-progress")


@pytest.fixture
def inputs(tmp_path):
    return write_job_inputs(tmp_path, GENOME, PATTERNS)


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def expected_hits() -> list[list]:
    return expected_rows([("chrA", GENOME)], PATTERNS, 1, "hamming").values.tolist()


# -- item 7: modes and links --------------------------------------------------------

def test_new_output_file_and_dataset_honour_the_umask(inputs, tmp_path):
    reference, patterns = inputs
    out = tmp_path / "hits.tsv"
    result = run_seqsift("search", reference, patterns, "-k", "1", "-o", out, *RUN, umask=0o027)
    assert result.returncode == 0, result.stderr
    assert mode_of(out) == 0o640            # 0666 less the umask, as a shell's > gives
    dataset = tmp_path / "hits_dataset"
    result = run_seqsift("search", reference, patterns, "-k", "1", "-o", f"{dataset}/", *RUN, umask=0o002)
    assert result.returncode == 0, result.stderr
    assert mode_of(dataset) == 0o775        # 0777 less the umask
    assert [mode_of(part) for part in dataset.iterdir()] == [0o664]


def test_existing_output_keeps_its_mode(inputs, tmp_path):
    reference, patterns = inputs
    out = tmp_path / "hits.tsv"
    out.write_text("an earlier result\n")
    out.chmod(0o604)
    result = run_seqsift("search", reference, patterns, "-k", "1", "-o", out, *RUN, umask=0o022)
    assert result.returncode == 0, result.stderr
    assert mode_of(out) == 0o604
    assert out.read_text() != "an earlier result\n"


def test_output_through_a_symbolic_link_replaces_its_target_and_keeps_the_link(inputs, tmp_path):
    reference, patterns = inputs
    (tmp_path / "results").mkdir()
    target = tmp_path / "results" / "hits.tsv"
    target.write_text("an earlier result\n")
    link = tmp_path / "latest.tsv"
    link.symlink_to(target)
    result = run_seqsift("search", reference, patterns, "-k", "1", "-o", link, *RUN)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert pd.read_csv(target, sep="\t")[["record", "start", "end", "pattern", "distance", "strand"]] \
        .values.tolist() == expected_hits()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.tsv", "ref.fa", "ref.fa.fai", "results",
                                                          "sites.tsv"]


# -- item 8: inputs are never overwritten; what a PATTERNS argument is -----------------

def test_output_naming_an_input_file_is_refused(inputs, tmp_path):
    reference, patterns = inputs
    before = {path: path.read_bytes() for path in (reference, patterns)}
    one_line_error(run_seqsift("search", reference, patterns, "-k", "1", "-o", reference, *RUN),
                   str(reference), "is the reference")
    one_line_error(run_seqsift("search", reference, patterns, "-k", "1", "-o", patterns, *RUN),
                   str(patterns), "is the pattern file")
    # The same file under another name: a symbolic link, and a path through '..'.
    alias = tmp_path / "alias.tsv"
    alias.symlink_to(patterns)
    one_line_error(run_seqsift("search", reference, patterns, "-k", "1", "-o", alias, *RUN), "is the pattern file")
    (tmp_path / "sub").mkdir()
    roundabout = tmp_path / "sub" / ".." / "ref.fa"
    one_line_error(run_seqsift("search", reference, patterns, "-k", "1", "-o", roundabout, *RUN), "is the reference")
    assert {path: path.read_bytes() for path in (reference, patterns)} == before


def test_pattern_argument_that_is_neither_a_file_nor_a_sequence(inputs):
    reference, _ = inputs
    one_line_error(run_seqsift("search", reference, "primers", "-k", "1", *RUN), "primers: no such file")


def test_iupac_word_that_is_not_a_file_is_searched_as_a_sequence_with_a_note(inputs):
    reference, _ = inputs
    result = run_seqsift("search", reference, "cards", "-k", "0", "--strand", "+", "--no-align", *RUN)
    assert result.returncode == 0, result.stderr
    assert "seqsift: note: cards: no file by that name, so it is searched as a sequence (CARDS)" in result.stderr
    # CARDS = C A [AG] [AGT] [CG]
    starts = [m.start() for m in re.finditer(r"(?=CA[AG][AGT][CG])", GENOME)]
    assert starts, "the genome should hold CARDS"
    got = pd.read_csv(pd.io.common.StringIO(result.stdout), sep="\t")
    assert got["start"].tolist() == starts and set(got["pattern"]) == {"cli_1"}


def test_plain_sequences_get_no_note(inputs):
    reference, _ = inputs
    result = run_seqsift("search", reference, "GGATCCATG,acgttgcaa", "-k", "0", *RUN)
    assert result.returncode == 0, result.stderr
    assert "note" not in result.stderr


# -- item 12: the TSV header ------------------------------------------------------------

def test_tsv_reads_back_with_plain_column_names(inputs, tmp_path):
    """README: ``pd.read_csv("hits.tsv", sep="\\t")`` gives the columns by their names."""
    reference, patterns = inputs
    out = tmp_path / "hits.tsv"
    result = run_seqsift("search", reference, patterns, "-k", "1", "-o", out, *RUN)
    assert result.returncode == 0, result.stderr
    hits = pd.read_csv(out, sep="\t")
    assert list(hits.columns) == ["record", "start", "end", "pattern", "distance", "strand", "aligned", "cigar"]
    assert hits[["record", "start", "end", "pattern", "distance", "strand"]].values.tolist() == expected_hits()
    # BED consumers get .bed: BED6, no header line at all.
    bed = tmp_path / "hits.bed"
    result = run_seqsift("search", reference, patterns, "-k", "1", "-o", bed, *RUN)
    assert result.returncode == 0, result.stderr
    assert pd.read_csv(bed, sep="\t", header=None).values.tolist() == expected_hits()
