"""``seqsift crispr`` through the installed console script, and the API on E. coli 536."""
from __future__ import annotations

import gzip
import re
import subprocess

import numpy as np
import pandas as pd
import pytest

import seqsift

from crispr_oracle import oracle_sites

GUIDE = "GACGCATAAAGATGAGACGC"
GENOME = ("TTTT" + GUIDE + "TGG" + "CCCCAT" + GUIDE[:19] + "A" + "AGG" + "ACGTNNNN"
          + "CCA" + "GCGTCTCATCTTTATGCGTC" + "TT" + GUIDE[:5] + "T" + GUIDE[6:] + "CGG")


HEADERS = {"chrA": "chrA description", "chrB": "chrB"}
"""Each record's header line after '>' (Cas-OFFinder's chromosome column)."""


@pytest.fixture
def files(tmp_path):
    reference = tmp_path / "ref.fa"
    reference.write_text(">chrA description\n" + GENOME[:50] + "\n" + GENOME[50:] + "\n>chrB\n" + GENOME[::-1] + "\n")
    guides = tmp_path / "guides.tsv"
    guides.write_text(f"g1\t{GUIDE}\ng2\tACGTACGTACGTACGTACGT\n")
    return reference, guides


def seqsift_crispr(*args, cwd=None):
    return subprocess.run(["seqsift", "crispr", *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_tsv_output_has_the_columns_and_the_oracle_rows(files, tmp_path):
    reference, guides = files
    out = tmp_path / "sites.tsv"
    result = seqsift_crispr(reference, guides, "--pam", "NGG", "-k", "3", "-o", out, "--workers", "1")
    assert result.returncode == 0, result.stderr
    header = out.read_text().splitlines()[0]
    assert header == "guide\trecord\tstart\tend\tstrand\tmismatches\tbulge_type\tbulge_size\tguide_aligned\tsite\tcfd\tmit"
    table = pd.read_csv(out, sep="\t")
    got = sorted(tuple(r) for r in table[["guide", "record", "start", "end", "strand", "mismatches", "bulge_type",
                                          "bulge_size", "guide_aligned", "site"]].itertuples(index=False, name=None))
    records = [("chrA", GENOME), ("chrB", GENOME[::-1])]
    expected = oracle_sites(records, [("g1", GUIDE), ("g2", "ACGTACGTACGTACGTACGT")], "NGG", 3)
    assert got == expected
    assert len(expected) >= 3
    perfect = table[(table["mismatches"] == 0) & (table["guide"] == "g1")]
    assert list(perfect["strand"]) == ["+", "-"]  # the planted site and its reverse complement
    assert list(perfect["cfd"]) == [1.0, 1.0] and list(perfect["mit"]) == [100.0, 100.0]


def test_bed_parquet_and_cas_offinder_formats(files, tmp_path):
    reference, guides = files
    bed, parquet = tmp_path / "sites.bed", tmp_path / "sites.parquet"
    for out in (bed, parquet):
        result = seqsift_crispr(reference, guides, "-k", "3", "-o", out, "--workers", "1")
        assert result.returncode == 0, result.stderr
    frame = pd.read_parquet(parquet)
    assert list(frame.columns) == ["guide", "record", "start", "end", "strand", "mismatches", "bulge_type",
                                   "bulge_size", "guide_aligned", "site", "cfd", "mit"]
    lines = [line.split("\t") for line in bed.read_text().splitlines()]
    assert len(lines) == len(frame)
    for fields, (_, row) in zip(lines, frame.iterrows()):
        score = 0 if np.isnan(row["cfd"]) else round(1000 * row["cfd"])
        assert fields == [row["record"], str(row["start"]), str(row["end"]), row["guide"], str(score), row["strand"]]
    result = seqsift_crispr(reference, guides, "-k", "3", "--format", "cas-offinder", "--workers", "1")
    assert result.returncode == 0, result.stderr
    # Cas-OFFinder 2.4's columns, the guide's name as its id column, the whole header line as the chromosome
    expected = [f"{g}{'N' * 3}\t{HEADERS[r]}\t{s}\t{site}\t{strand}\t{m}\t{name}" for g, r, s, site, strand, m, name
                in zip([GUIDE if x == "g1" else "ACGTACGTACGTACGTACGT" for x in frame["guide"]], frame["record"],
                       frame["start"], frame["site"], frame["strand"], frame["mismatches"], frame["guide"])]
    assert result.stdout.splitlines() == expected


def test_summary_and_bulges_from_the_command_line(files, tmp_path):
    reference, guides = files
    summary = tmp_path / "guides_summary.tsv"
    result = seqsift_crispr(reference, guides, "-k", "2", "--dna-bulge", "1", "--rna-bulge", "1",
                            "--summary", summary, "-o", tmp_path / "s.tsv", "--workers", "1")
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(summary, sep="\t")
    assert list(table.columns) == ["guide", "sequence", "mm0", "mm1", "mm2", "dna1_mm0", "dna1_mm1", "dna1_mm2",
                                   "rna1_mm0", "rna1_mm1", "rna1_mm2", "mit_specificity", "cfd_specificity"]
    sites = pd.read_csv(tmp_path / "s.tsv", sep="\t")
    g1 = table[table["guide"] == "g1"].iloc[0]
    for kind, prefix in (("none", ""), ("DNA", "dna1_"), ("RNA", "rna1_")):
        for m in range(3):
            count = ((sites["guide"] == "g1") & (sites["bulge_type"] == kind) & (sites["mismatches"] == m)).sum()
            assert g1[f"{prefix}mm{m}"] == count


@pytest.mark.parametrize("args, message", [
    (["--pam", "NZG"], "seqsift: error: --pam: PAM 'NZG' has letters that are not IUPAC nucleotide codes: 'Z'"),
    (["--dna-bulge", "3"], "seqsift: error: bulge sizes: DNA bulge size 3 is not supported (at most 2)"),
    (["--rna-bulge", "-1"], "seqsift: error: bulge sizes: the RNA bulge size must be a whole number >= 0, not -1"),
])
def test_bad_options_end_in_one_line(files, tmp_path, args, message):
    reference, guides = files
    out = tmp_path / "never.tsv"
    result = seqsift_crispr(reference, guides, *args, "-o", out)
    assert result.returncode == 2
    assert result.stderr.strip() == message
    assert not out.exists()


def test_bad_cas_offinder_input_names_file_and_line(files, tmp_path):
    reference, _ = files
    spec = tmp_path / "input.txt"
    spec.write_text(f"{reference}\nNNNNNNNNNNNNNNNNNNNNNGG\n{GUIDE}NNN 3\n{GUIDE[:-1]}NNN 3\n")
    result = seqsift_crispr("--cas-offinder", spec)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"seqsift: error: {spec}: line 4: guide ")
    assert "has 22 letters but the pattern on line 2 has 23" in lines[0]


def test_cas_offinder_input_runs_from_the_command_line(files, tmp_path):
    reference, _ = files
    spec = tmp_path / "input.txt"
    spec.write_text(f"{reference}\nNNNNNNNNNNNNNNNNNNNNNGG\n{GUIDE}NNN 1 first\n")
    result = seqsift_crispr("--cas-offinder", spec, "--format", "cas-offinder", "--workers", "1")
    assert result.returncode == 0, result.stderr
    expected = oracle_sites([("chrA", GENOME), ("chrB", GENOME[::-1])], [("first", GUIDE)], "NGG", 1)
    assert result.stdout.splitlines() == [f"{GUIDE}NNN\t{HEADERS[record]}\t{start}\t{site}\t{strand}\t{mm}\tfirst"
                                          for _, record, start, _, strand, mm, _, _, _, site in expected]
    assert result.stdout.splitlines()[:2] == [f"{GUIDE}NNN\tchrA description\t4\t{GUIDE}TGG\t+\t0\tfirst",
                                              f"{GUIDE}NNN\tchrA description\t33\t{GUIDE[:19]}aAGG\t+\t1\tfirst"]


# --- E. coli 536: the API against a NumPy reading of the definition --------------------------------------

def numpy_sites(sequence: bytes, guides: list[str], k: int) -> set[tuple]:
    """(guide index, start, strand, mismatches) of NGG sites, by brute force over every NGG position."""
    codes = np.frombuffer(sequence, dtype=np.uint8)
    acgt = np.isin(codes, np.frombuffer(b"ACGT", np.uint8))
    n = len(codes)
    windows = np.lib.stride_tricks.sliding_window_view(codes, 20)
    plus = np.flatnonzero((codes[22:] == ord("G")) & (codes[21:n - 1] == ord("G")) & acgt[20:n - 2])
    minus = np.flatnonzero((codes[:n - 22] == ord("C")) & (codes[1:n - 21] == ord("C")) & acgt[2:n - 20])
    complement = bytes.maketrans(b"ACGT", b"TGCA")
    out = set()
    for index, guide in enumerate(guides):
        forward = np.frombuffer(guide.encode(), np.uint8)
        reverse = np.frombuffer(guide.encode().translate(complement)[::-1], np.uint8)
        for strand, starts, pattern, offset in (("+", plus, forward, 0), ("-", minus, reverse, 3)):
            mismatches = (windows[starts + offset] != pattern).sum(axis=1)
            for s, m in zip(starts[mismatches <= k], mismatches[mismatches <= k]):
                out.add((index, int(s), strand, int(m)))
    return out


def test_ecoli_200_guides_match_a_numpy_reading(client, real_data, tmp_path):
    genome = tmp_path / "ecoli536.fa"
    genome.write_bytes(gzip.decompress((real_data / "ecoli536.fa.gz").read_bytes()))
    sequence = "".join(genome.read_text().splitlines()[1:]).upper()
    sites = [m.start() - 20 for m in re.finditer(r"(?=[ACGT]GG)", sequence) if m.start() >= 20]
    guides = [sequence[s:s + 20] for s in sites[::len(sites) // 200][:200]]
    got = seqsift.crispr(str(genome), guides, pam="NGG", mismatches=3, client=client, backend="cpu")
    index = {f"pattern_{i + 1}": i for i in range(len(guides))}
    ours = {(index[g], int(s), strand, int(m)) for g, s, strand, m in
            zip(got["guide"], got["start"], got["strand"], got["mismatches"])}
    assert ours == numpy_sites(sequence.encode(), guides, 3)
    assert (got["end"] - got["start"] == 23).all()
    assert len(got) >= 200


def test_cas_offinder_3_lines_with_bulges(files, tmp_path):
    reference, guides = files
    tsv = tmp_path / "s.tsv"
    for extra in (["-o", tsv], ["--format", "cas-offinder"]):
        result = seqsift_crispr(reference, guides, "-k", "2", "--dna-bulge", "1", "--rna-bulge", "1", "--workers", "1",
                                *extra)
        assert result.returncode == 0, result.stderr
    sites = pd.read_csv(tsv, sep="\t")
    lines = result.stdout.splitlines()
    assert lines[0] == "#Id\tBulge Type\tcrRNA\tDNA\tChromosome\tLocation\tDirection\tMismatches\tBulge Size"
    expected = [f"{g}\t{'X' if t == 'none' else t}\t{a}\t{s}\t{HEADERS[r]}\t{start}\t{strand}\t{m}\t{b}"
                for g, t, a, s, r, start, strand, m, b in zip(
                    sites["guide"], sites["bulge_type"], sites["guide_aligned"], sites["site"], sites["record"],
                    sites["start"], sites["strand"], sites["mismatches"], sites["bulge_size"])]
    assert lines[1:] == expected
    assert {"X", "DNA", "RNA"} <= {line.split("\t")[1] for line in lines[1:]}


def test_guides_on_the_command_line_as_search_reads_patterns(files, tmp_path):
    """GUIDES that name no file are the guides themselves (comma-separated), as search's PATTERNS are."""
    reference, _ = files
    result = seqsift_crispr(reference, f"{GUIDE},ACGTACGTACGTACGTACGT", "-k", "3", "--workers", "1")
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(__import__("io").StringIO(result.stdout), sep="\t")
    got = sorted(tuple(r) for r in table[["record", "start", "end", "strand", "mismatches", "site"]]
                 .itertuples(index=False, name=None))
    records = [("chrA", GENOME), ("chrB", GENOME[::-1])]
    expected = sorted(row[1:6] + row[9:10] for row in oracle_sites(records, [("g1", GUIDE),
                                                                             ("g2", "ACGTACGTACGTACGTACGT")], "NGG", 3))
    assert got == expected and len(expected) >= 3
    missing = seqsift_crispr(reference, tmp_path / "no-such-guides.txt", "-k", "3")
    assert missing.returncode != 0 and missing.stderr.count("\n") == 1 and "no such file" in missing.stderr


def test_verbose_says_how_the_work_is_cut(files, tmp_path):
    """-v: one note with the bases, the tasks and the guide batches (crispr has no algorithm to choose)."""
    reference, guides = files
    bases = sum(len(line.strip()) for line in open(reference) if not line.startswith(">"))
    count = sum(1 for line in open(guides) if line.strip())
    result = seqsift_crispr(reference, guides, "-k", "2", "--backend", "cpu", "--pattern-batch", "1",
                            "-o", tmp_path / "sites.tsv", "-v", "--no-progress")
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if " task(s) of up to " in line]
    assert len(notes) == 1, result.stderr
    assert notes[0].startswith(f"seqsift: note: {bases:,} bases in ")
    assert f"x {count:,} batch(es) of up to 1 guides, on cpu" in notes[0]
    quiet = seqsift_crispr(reference, guides, "-k", "2", "--backend", "cpu", "-o", tmp_path / "quiet.tsv",
                           "--no-progress")
    assert " task(s) of up to " not in quiet.stderr
