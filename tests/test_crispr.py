"""seqsift.crispr against the brute-force oracle (tests/crispr_oracle.py), scores, formats, bad input."""
from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

import seqsift
from seqsift.crispr.scores import cfd_score, mit_score, specificity
from seqsift.errors import InputError

from crispr_oracle import oracle_sites, revcomp
from test_engine import write_fasta

ORACLE_COLUMNS = ["guide", "record", "start", "end", "strand", "mismatches", "bulge_type", "bulge_size",
                  "guide_aligned", "site"]


def as_rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted(tuple(int(v) if isinstance(v, (np.integer,)) else v for v in row)
                  for row in frame[ORACLE_COLUMNS].itertuples(index=False, name=None))


PAM_BASES = {"N": "ACGT", "G": "G", "A": "A", "C": "C", "T": "T", "R": "AG", "V": "ACG"}


def random_case(rng: random.Random, alphabet: str, guide_length: int, guides: int = 3, pam: str = "NGG",
                pam_side: int = 3):
    """Random records with each guide planted a few times: mutated, bulged, on either strand, next to a PAM."""
    records = [[f"r{i}", "".join(rng.choice(alphabet) for _ in range(rng.randint(40, 400)))] for i in range(3)]
    chosen = [(f"g{g}", "".join(rng.choice("ACGT") for _ in range(guide_length))) for g in range(guides)]
    for _, guide in chosen:
        for _ in range(4):
            copy = list(guide)
            for _ in range(rng.randint(0, 2)):
                copy[rng.randrange(len(copy))] = rng.choice("ACGT")
            if rng.random() < 0.3:
                at = rng.randint(1, len(copy) - 1)
                copy = copy[:at] + [rng.choice("ACGT")] + copy[at:] if rng.random() < 0.5 else copy[:at] + copy[at + 1:]
            site_pam = "".join(rng.choice(PAM_BASES[c]) for c in pam)
            site = "".join(copy) + site_pam if pam_side == 3 else site_pam + "".join(copy)
            if rng.random() < 0.5:
                site = revcomp(site)
            record = rng.choice(records)
            at = rng.choice([0, len(record[1]), rng.randint(0, len(record[1]))])
            record[1] = record[1][:at] + site + record[1][at:]
    return [tuple(r) for r in records], chosen


CONFIGS = [  # pam, side, k, dna bulge, rna bulge, guide length
    ("NGG", 3, 2, 0, 0, 7),
    ("NRG", 3, 2, 0, 0, 6),
    ("TTTV", 5, 2, 0, 0, 6),
    ("G", 3, 1, 0, 0, 5),
    ("NGG", 3, 1, 1, 0, 7),
    ("NGG", 3, 1, 0, 1, 7),
    ("TTTV", 5, 1, 1, 1, 6),
    ("G", 3, 1, 2, 2, 6),
]


@pytest.mark.parametrize("pam, side, k, dna, rna, length", CONFIGS)
@pytest.mark.parametrize("seed", [1, 2])
def test_sites_match_the_oracle_on_random_genomes(client, tmp_path, pam, side, k, dna, rna, length, seed):
    rng = random.Random(f"{pam}-{side}-{dna}-{rna}-{seed}")
    alphabet = "ACGT" if seed == 1 else "ACGTacgtNN"
    records, guides = random_case(rng, alphabet, length, pam=pam, pam_side=side)
    reference = write_fasta(tmp_path / "ref.fa", records)
    expected = oracle_sites(records, guides, pam, k, side, dna, rna)
    for chunk_size in (23, 1000):
        got = seqsift.crispr(str(reference), guides, pam=pam, mismatches=k, pam_side=side, dna_bulge=dna,
                             rna_bulge=rna, client=client, chunk_size=chunk_size, backend="cpu")
        assert as_rows(got) == expected
    assert expected, "the case should have sites (guides are drawn from the genome)"


def adversarial_genome():
    """N runs, lowercase, sites at record ends, overlapping sites on both strands, IUPAC in the genome."""
    guide = "GACGTTACCA"
    site = guide + "AGG"
    palindrome = "CCT" + revcomp(guide)  # the - strand site, starting with the reverse complemented PAM
    records = [
        ("start_end", site + "ACGTNNNNNNacgtRYacg" + site.lower() + "TTAC" + palindrome),
        ("overlap", "CC" + site + palindrome[:-2] + "GG" + site[1:] + "NNNN" + revcomp(site)),
        ("n_inside", "AAAA" + guide[:4] + "N" + guide[5:] + "TGG" + "A" * 7 + guide[:3] + "n" + guide[4:] + "cgg"),
        ("short", "ACG"),
        ("pam_n", guide + "ANG" + guide + "AGN" + "T" * 5 + guide[:-1] + "TAGG"),
    ]
    return records, [("plain", guide), ("iupac", "GACRTTNCCA"), ("other", "TTTTTTTTTT")]


@pytest.mark.parametrize("dna, rna", [(0, 0), (1, 1)])
@pytest.mark.parametrize("chunk_size", [5, 9, 16, 1000])
def test_adversarial_genome_matches_the_oracle(client, tmp_path, chunk_size, dna, rna):
    records, guides = adversarial_genome()
    reference = write_fasta(tmp_path / "adv.fa", records, width=7)
    got = seqsift.crispr(str(reference), guides, pam="NGG", mismatches=2, dna_bulge=dna, rna_bulge=rna,
                         client=client, chunk_size=chunk_size, backend="cpu")
    expected = oracle_sites(records, guides, "NGG", 2, 3, dna, rna)
    assert as_rows(got) == expected
    strands_at = {(r[1], r[2], r[4]) for r in expected if r[0] == "plain" and r[5] == 0 and r[6] == "none"}
    assert ("start_end", 0, "+") in strands_at and any(s == "-" for _, _, s in strands_at)


def test_rows_are_sorted_and_owned_once_across_tiny_chunks(client, tmp_path):
    rng = random.Random(7)
    records, guides = random_case(rng, "ACGT", 6, guides=4)
    reference = write_fasta(tmp_path / "ref.fa", records)
    got = seqsift.crispr(str(reference), guides, pam="NRG", mismatches=2, dna_bulge=1, client=client,
                         chunk_size=3, backend="cpu")
    order = [(["r0", "r1", "r2"].index(r), s) for r, s in zip(got["record"], got["start"])]
    assert order == sorted(order)
    assert not got.duplicated(["guide", "record", "start", "end", "strand"]).any()


def test_per_guide_mismatch_limits(client, tmp_path):
    rng = random.Random(11)
    records, guides = random_case(rng, "ACGT", 7, guides=3)
    reference = write_fasta(tmp_path / "ref.fa", records)
    got = seqsift.crispr(str(reference), guides, pam="NGG", mismatches=[0, 2, 3], client=client, backend="cpu")
    assert as_rows(got) == oracle_sites(records, guides, "NGG", [0, 2, 3])


def test_strand_option_keeps_one_strand(client, tmp_path):
    records, guides = adversarial_genome()
    reference = write_fasta(tmp_path / "adv.fa", records)
    got = seqsift.crispr(str(reference), guides, pam="NGG", mismatches=2, strand="-", client=client, backend="cpu")
    assert as_rows(got) == oracle_sites(records, guides, "NGG", 2, strands=("-",))


# --- scores: hand computations from the definitions -------------------------------------------------

GUIDE = "GACGCATAAAGATGAGACGC"


def mutated(guide: str, positions: list[int]) -> str:
    """``guide`` with a different base at each 1-based position."""
    letters = list(guide)
    for p in positions:
        letters[p - 1] = "C" if letters[p - 1] == "A" else "A"
    return "".join(letters)


def test_cfd_of_a_perfect_site_is_the_pam_activity():
    assert cfd_score(GUIDE, GUIDE, "TGG") == 1.0
    assert cfd_score(GUIDE, GUIDE, "TAG") == pytest.approx(0.259259259)   # Table 19: PAM AG
    assert cfd_score(GUIDE, GUIDE, "TCT") == 0.0


def test_cfd_multiplies_the_mismatch_activities():
    # position 1: guide G, site A -> RNA G against DNA T (the site base's complement): rG:dT,1 = 0.9
    # position 20: guide C, site T -> rC:dA,20 = 0.3; PAM CGG -> GG = 1
    site = "A" + GUIDE[1:19] + "T"
    assert cfd_score(GUIDE, site, "CGG") == pytest.approx(0.9 * 0.3)
    # position 14: guide G, site C -> rG:dG,14 = 0.428571429; PAM AGA -> GA = 0.069444444
    site = GUIDE[:13] + "C" + GUIDE[14:]
    assert cfd_score(GUIDE, site, "AGA") == pytest.approx(0.428571429 * 0.069444444)


def test_mit_follows_hsu_2013():
    assert mit_score(GUIDE, GUIDE) == pytest.approx(100.0)
    one = GUIDE[:19] + "A"  # position 20 (M = 0.583): 100 * (1 - 0.583) * 1 / 1^2
    assert mit_score(GUIDE, one) == pytest.approx(41.7)
    two = "T" + GUIDE[1:19] + "A"  # positions 1 and 20: d = 19 -> middle factor 1; 1 / 2^2
    assert mit_score(GUIDE, two) == pytest.approx(100 * (1 - 0.0) * (1 - 0.583) / 4)
    three = mutated(GUIDE, [6, 10, 13])  # M = 0.395, 0.079, 0.613; mean distance d = (13 - 6) / 2
    d = (13 - 6) / 2
    expected = 100 * (1 - 0.395) * (1 - 0.079) * (1 - 0.613) / ((19 - d) / 19 * 4 + 1) / 9
    assert mit_score(GUIDE, three) == pytest.approx(expected)


def test_cfd_matches_a_published_example_of_an_independent_calculator():
    # The CFD_Scores_Calculator README (Ghahfarokhi, 2023), whose output it states is identical to Doench et
    # al.'s own script for sites without bulges: crRNA ATCGATGCTGATGCTAGATA+AGG against DNA
    # ACCGATGCTGATGCTAGATA+AGG (position 2: rU against dG) scores 0.857143.
    assert cfd_score("ATCGATGCTGATGCTAGATA", "ACCGATGCTGATGCTAGATA", "AGG") == pytest.approx(0.857143, abs=1e-6)


def test_scores_are_undefined_off_their_domain():
    assert math.isnan(cfd_score(GUIDE[:19], GUIDE[:19], "AGG"))
    assert math.isnan(mit_score(GUIDE, GUIDE[:19] + "N"))


def test_specificity_is_crispors():
    assert specificity([], 1.0) == 100
    assert specificity([100.0], 1.0) == 50          # 100 / (100 + 100)
    assert specificity([0.25, 0.25], 100.0) == 67   # CFD x 100: 100 / (100 + 50)


def test_site_rows_carry_scores_only_where_defined(client, tmp_path):
    genome = "TTTT" + GUIDE + "TGG" + "CCCC" + GUIDE[:19] + "A" + "AGG" + "CCCC" + GUIDE + "ACA"
    reference = write_fasta(tmp_path / "s.fa", [("s", genome)])
    got = seqsift.crispr(str(reference), [("g", GUIDE)], pam="NRG", mismatches=1, client=client, backend="cpu")
    by_start = got.set_index("start")
    assert by_start.loc[4, "cfd"] == 1.0 and by_start.loc[4, "mit"] == pytest.approx(100)
    assert by_start.loc[31, "cfd"] == pytest.approx(cfd_score(GUIDE, GUIDE[:19] + "A", "AGG"))
    assert by_start.loc[31, "site"] == GUIDE[:19] + "a" + "AGG"
    bulged = seqsift.crispr(str(reference), [("g", GUIDE)], pam="NGG", mismatches=0, dna_bulge=1,
                            client=client, backend="cpu")
    assert bulged[bulged["bulge_type"] != "none"]["mit"].isna().all()


def test_summary_counts_and_specificity(client, tmp_path):
    genome = "TTTT" + GUIDE + "TGG" + "CCCC" + GUIDE[:19] + "A" + "AGG" + "CCCC"
    reference = write_fasta(tmp_path / "s.fa", [("s", genome)])
    summary = tmp_path / "guides.tsv"
    out = tmp_path / "sites.tsv"
    count = seqsift.crispr(str(reference), [("g", GUIDE)], pam="NGG", mismatches=2, client=client, backend="cpu",
                           output=str(out), summary=str(summary))
    table = pd.read_csv(summary, sep="\t")
    assert count == 2
    assert list(table.columns[:5]) == ["guide", "sequence", "mm0", "mm1", "mm2"]
    row = table.iloc[0]
    assert (row["mm0"], row["mm1"], row["mm2"]) == (1, 1, 0)
    off_mit = mit_score(GUIDE, GUIDE[:19] + "A")
    assert row["mit_specificity"] == round(100 * 100 / (100 + off_mit))
    off_cfd = cfd_score(GUIDE, GUIDE[:19] + "A", "AGG")
    assert row["cfd_specificity"] == round(100 * 100 / (100 + 100 * off_cfd))


# --- bad input: one line naming the file and line ------------------------------------------------

def test_bad_pam_and_bulges_are_refused(tmp_path):
    reference = write_fasta(tmp_path / "s.fa", [("s", "ACGT" * 20)])
    with pytest.raises(InputError, match="--pam: PAM 'NXG' has letters that are not IUPAC"):
        seqsift.crispr(str(reference), ["ACGTACGTAC"], pam="NXG")
    with pytest.raises(InputError, match=r"DNA bulge size 3 is not supported \(at most 2\)"):
        seqsift.crispr(str(reference), ["ACGTACGTAC"], dna_bulge=3)
    with pytest.raises(InputError, match="would match everywhere"):
        seqsift.crispr(str(reference), ["ACGT"], mismatches=4)
    guides = tmp_path / "guides.tsv"
    guides.write_text("g1\tACGTACGTAC\n")
    with pytest.raises(InputError, match="this is the guide file"):
        seqsift.crispr(str(reference), str(guides), output=str(guides))
    assert guides.read_text() == "g1\tACGTACGTAC\n"


def test_cas_offinder_input_errors_name_file_and_line(tmp_path):
    reference = write_fasta(tmp_path / "s.fa", [("s", "ACGT" * 20)])
    spec = tmp_path / "in.txt"
    spec.write_text(f"{reference}\nNNNNNNNNNNNGG\nACGTACGTACNNN 2\nACGTACGTANNN 2\n")
    with pytest.raises(InputError, match=r"in.txt: line 4: guide 'ACGTACGTANNN' has 12 letters but the pattern "
                                         r"on line 2 has 13"):
        seqsift.crispr(None, cas_offinder=str(spec))
    spec.write_text(f"{reference}\nNNNNNNNNNNNGG 3 0\nACGTACGTACNNN 2\n")
    with pytest.raises(InputError, match=r"in.txt: line 2: DNA bulge size 3 is not supported \(at most 2\)"):
        seqsift.crispr(None, cas_offinder=str(spec))
    spec.write_text(f"{reference}\nNNNNNNNNNNNJG\nACGTACGTACNNN 2\n")
    with pytest.raises(InputError, match=r"in.txt: line 2: pattern 'NNNNNNNNNNNJG' has letters that are not IUPAC"):
        seqsift.crispr(None, cas_offinder=str(spec))


def test_cas_offinder_input_sets_pam_guides_limits_and_5_prime_side(client, tmp_path):
    rng = random.Random(3)
    records, guides = random_case(rng, "ACGT", 7, guides=2, pam="TTTV", pam_side=5)
    reference = write_fasta(tmp_path / "ref.fa", records)
    spec = tmp_path / "in.txt"
    spec.write_text(f"{reference}\nTTTVNNNNNNN 1 1\nNNNN{guides[0][1]} 1 first\nNNNN{guides[1][1]} 2 second\n")
    got = seqsift.crispr(None, cas_offinder=str(spec), client=client, backend="cpu")
    expected = oracle_sites(records, [("first", guides[0][1]), ("second", guides[1][1])], "TTTV", [1, 2], 5, 1, 1)
    assert as_rows(got) == expected


def test_interrupted_job_resumes_from_its_saved_tasks(tmp_path, monkeypatch):
    """In-process CPU cluster (no client): a planted task failure, then --resume runs only the rest."""
    import sys
    import time

    import seqsift.crispr.task

    crispr_module = sys.modules["seqsift.crispr.task"]  # run_crispr_job takes the task from there when it runs
    rng = random.Random(5)
    records, guides = random_case(rng, "ACGT", 8, guides=3)
    reference = write_fasta(tmp_path / "ref.fa", records)
    # More task threads than tasks: group 0 always has a thread while the others wait for its saved result.
    options = dict(pam="NGG", mismatches=2, chunk_size=120, backend="cpu", workers=32)
    expected = tmp_path / "expected.tsv"
    seqsift.crispr(str(reference), guides, output=str(expected), **options)
    out = tmp_path / "sites.tsv"
    store = tmp_path / ".sites.tsv.seqsift-tasks"
    real_task = crispr_module.run_crispr_task

    def failing_after_a_save(job, group, guide_range):
        if group.index == 0:
            return real_task(job, group, guide_range)
        deadline = time.monotonic() + 60
        while not list(store.glob("task-*.arrow")) and time.monotonic() < deadline:  # the file is the event
            time.sleep(0.01)
        raise RuntimeError("planted fault")

    monkeypatch.setattr(crispr_module, "run_crispr_task", failing_after_a_save)
    with pytest.raises(RuntimeError, match="planted fault"):
        seqsift.crispr(str(reference), guides, output=str(out), **options)
    assert not out.exists()
    assert [p.name.split(".")[0] for p in store.glob("task-*.arrow")] == ["task-0-0"]  # task-G-B.<sha256>.arrow
    monkeypatch.setattr(crispr_module, "run_crispr_task", real_task)
    with pytest.raises(InputError, match="cannot resume"):
        seqsift.crispr(str(reference), guides, output=str(out), resume=True, **{**options, "mismatches": 1})
    seqsift.crispr(str(reference), guides, output=str(out), resume=True, **options)
    assert out.read_text() == expected.read_text()
    assert not store.exists()


def test_partitioned_parquet_output(client, tmp_path):
    rng = random.Random(8)
    records, guides = random_case(rng, "ACGT", 7)
    reference = write_fasta(tmp_path / "ref.fa", records)
    folder = tmp_path / "sites"
    count = seqsift.crispr(str(reference), guides, pam="NGG", mismatches=2, client=client, backend="cpu",
                           output=str(folder) + "/")
    frame = pd.read_parquet(folder)
    assert count == len(frame) > 0
    assert as_rows(frame) == oracle_sites(records, guides, "NGG", 2)


def test_array_scores_equal_the_per_site_definitions():
    from seqsift.crispr.scores import cfd_scores, mit_scores

    rng = random.Random(12)
    guides, sites, pams = [], [], []
    for _ in range(400):
        guide = "".join(rng.choice("ACGT") for _ in range(20))
        site = "".join(c if rng.random() < 0.8 else rng.choice("ACGTN") for c in guide)
        guides.append(guide), sites.append(site), pams.append(rng.choice("ACGT") + rng.choice("ACGN") + "G")
    as_bytes = lambda texts: np.array([np.frombuffer(t.encode(), np.uint8) for t in texts])  # noqa: E731
    got_cfd = cfd_scores(as_bytes(guides), as_bytes(sites), as_bytes(pams))
    got_mit = mit_scores(as_bytes(guides), as_bytes(sites))
    expected_cfd = np.array([cfd_score(g, s, p) for g, s, p in zip(guides, sites, pams)])
    expected_mit = np.array([mit_score(g, s) for g, s in zip(guides, sites)])
    np.testing.assert_allclose(got_cfd, expected_cfd, equal_nan=True)
    np.testing.assert_allclose(got_mit, expected_mit, equal_nan=True)
    assert np.isnan(expected_cfd).any() and (expected_cfd > 0).any() and (expected_mit < 100).any()


def test_cas_offinder_input_with_a_folder_of_fasta_files(client, tmp_path):
    rng = random.Random(21)
    records, guides = random_case(rng, "ACGT", 7, guides=2)
    folder = tmp_path / "genome"
    folder.mkdir()
    write_fasta(folder / "b_second.fa", records[1:])
    write_fasta(folder / "a_first.fasta", records[:1])
    (folder / "notes.txt").write_text("not a FASTA file\n")
    spec = tmp_path / "in.txt"
    spec.write_text(f"{folder}\nNNNNNNNNGG\n" + "".join(f"{g}NNN 2 {name}\n" for name, g in guides))
    got = seqsift.crispr(None, cas_offinder=str(spec), client=client, backend="cpu")
    assert as_rows(got) == oracle_sites(records, guides, "NGG", 2)
    assert list(dict.fromkeys(got["record"])) == [name for name, _ in records if name in set(got["record"])]


def test_saved_tasks_outlive_a_failure_while_the_output_is_put_in_place(tmp_path, monkeypatch):
    """The end of a job in order: output in place, then the saved tasks go (issue 14, item 4)."""
    from seqsift.crispr.output import SiteWriter

    rng = random.Random(6)
    records, guides = random_case(rng, "ACGT", 8, guides=2)
    reference = write_fasta(tmp_path / "ref.fa", records)
    out = tmp_path / "sites.tsv"
    store = tmp_path / ".sites.tsv.seqsift-tasks"

    def failing_close(self):
        raise OSError("disk full while renaming")

    monkeypatch.setattr(SiteWriter, "close", failing_close)
    with pytest.raises(OSError, match="disk full"):
        seqsift.crispr(str(reference), guides, output=str(out), pam="NGG", mismatches=2, chunk_size=120,
                       backend="cpu", workers=2)
    assert not out.exists()
    assert list(store.glob("task-*.arrow")), "the saved tasks were removed before the output was in place"


def test_guides_of_several_lengths_with_iupac_and_bulges_match_the_oracle(client, tmp_path):
    """One job, guides of 5..8 bases (IUPAC letters in some): rows and site strings are built per length."""
    rng = random.Random(31)
    records, guides = [], []
    for length in (5, 6, 7, 8):
        some_records, some_guides = random_case(rng, "ACGTacgtN", length, guides=2)
        records += [(f"{name}_{length}", text) for name, text in some_records]
        guides += [(f"{name}_{length}", guide[:2] + "R" + guide[3:] if length % 2 else guide)
                   for name, guide in some_guides]
    reference = write_fasta(tmp_path / "ref.fa", records)
    got = seqsift.crispr(str(reference), guides, pam="NGG", mismatches=1, dna_bulge=2, rna_bulge=1, client=client,
                         chunk_size=100, backend="cpu")
    expected = oracle_sites(records, guides, "NGG", 1, 3, 2, 1)
    assert {row[6] for row in expected} == {"none", "DNA", "RNA"} and len({len(row[8]) for row in expected}) > 4
    assert as_rows(got) == expected


@pytest.mark.parametrize("pam, side, length, k, dna, rna", [
    ("NGG", 3, 20, 2, 2, 2), ("NGG", 3, 20, 3, 1, 1), ("NGG", 3, 20, 4, 0, 2), ("TTTV", 5, 23, 3, 1, 1),
    ("TTTV", 5, 28, 2, 2, 2),   # 28 + 2 + 2 bases: the widest a packed word holds
    ("NGG", 3, 29, 2, 2, 2),    # one base more: the per-base path
])
def test_bulged_sites_at_the_mismatch_limit_match_the_oracle(client, tmp_path, pam, side, length, k, dna, rna):
    """Guides planted with k mismatches (or one more; some in N letters) and a DNA or RNA bulge of each size,
    in a genome with IUPAC letters: the CPU kernel's lower bounds, which skip the exact bulge search for
    pairs past the limit (a popcount on packed words, or a loop over the bases), keep every site the
    oracle finds, on either side of the PAM."""
    rng = random.Random(f"limit-{pam}-{length}-{k}-{dna}-{rna}")
    guides = [(f"g{g}", "".join(rng.choice("ACGT") for _ in range(length))) for g in range(4)]
    records = [[f"r{i}", "".join(rng.choice("ACGTacgtNRY") for _ in range(300))] for i in range(4)]
    for _, guide in guides:
        for size, kind in [(s, "DNA") for s in range(1, dna + 1)] + [(s, "RNA") for s in range(1, rna + 1)] * 2:
            copy = list(guide)
            at = rng.randint(2, length - 3)
            copy = copy[:at] + [rng.choice("ACGT") for _ in range(size)] + copy[at:] if kind == "DNA" \
                else copy[:at] + copy[at + size:]
            for spot in rng.sample(range(len(copy)), k + rng.choice([0, 0, 1])):   # at the limit, or one past
                copy[spot] = rng.choice([c for c in "ACGTN" if c != copy[spot]])
            site_pam = "".join(rng.choice(PAM_BASES[c]) for c in pam)
            site = "".join(copy) + site_pam if side == 3 else site_pam + "".join(copy)
            record = rng.choice(records)
            where = rng.randint(0, len(record[1]))
            record[1] = record[1][:where] + (revcomp(site) if rng.random() < 0.5 else site) + record[1][where:]
    records = [tuple(r) for r in records]
    reference = write_fasta(tmp_path / "ref.fa", records)
    expected = oracle_sites(records, guides, pam, k, side, dna, rna)
    got = seqsift.crispr(str(reference), guides, pam=pam, mismatches=k, pam_side=side, dna_bulge=dna,
                         rna_bulge=rna, client=client, chunk_size=250, backend="cpu")
    assert as_rows(got) == expected
    bulged = [row for row in expected if row[6] != "none"]
    assert any(row[5] == k for row in bulged), "some bulged sites should sit at the limit"


def test_a_job_orients_each_guide_range_once_for_all_its_task_threads():
    """Tasks of one worker share the job: the rows of a guide range are built once (thread-safely), not per task."""
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    from crispr_oracle import SETS
    from seqsift.crispr.task import CrisprJob
    from seqsift.pattern_set import PatternSet

    sequences = ("ACGTACGTAC", "GGRTTA", "TTTNCAGGACCA", "CAGT")
    job = CrisprJob(references=(), guides=PatternSet(("a", "b", "c", "d"), sequences), limits=(1, 2, 3, 1),
                    pam="NGG", pam_side=3, dna_bulge=0, rna_bulge=0, strands=(0, 1), backend="cpu")
    with ThreadPoolExecutor(8) as pool:
        shared = list(pool.map(lambda _: job.rows(range(1, 3)), range(32)))
    assert all(rows is shared[0] for rows in shared)
    assert job.rows(range(0, 2)) is not shared[0]

    rows = shared[0]
    bit = {"A": 1, "C": 2, "G": 4, "T": 8}
    mask = lambda letters: [sum(bit[b] for b in SETS[letter]) for letter in letters]  # noqa: E731
    assert rows.guide_index.tolist() == [1, 1, 2, 2] and rows.strand.tolist() == [0, 1, 0, 1]
    assert rows.limit.tolist() == [2, 2, 3, 3] and rows.lengths.tolist() == [6, 6, 12, 12]
    for r, text in enumerate([sequences[1], revcomp(sequences[1]), sequences[2], revcomp(sequences[2])]):
        assert rows.masks[r].tolist() == mask(text) + [0] * (12 - len(text))

    copy = pickle.loads(pickle.dumps(job))  # what a worker receives: the fields, no caches
    assert set(copy.__dict__) == set(CrisprJob.__dataclass_fields__)
    assert copy.rows(range(1, 3)) is not rows and (copy.rows(range(1, 3)).masks == rows.masks).all()


@pytest.mark.parametrize("pam, side", [("NGG", 3), ("TTTV", 5), ("NRG", 3)])
def test_numpy_kernel_finds_what_the_numba_kernel_finds(pam, side):
    """kernels/crispr/vectorized.py (small jobs) against cpu.py on texts with N runs, guides of several lengths."""
    from seqsift.alphabet import encode_text, pattern_masks
    from seqsift.kernels.crispr import find_sites, orient_guides

    rng = random.Random(f"{pam}{side}")
    sequence = "".join(rng.choice("ACGTACGTACGTN") for _ in range(30_000))
    guides = []
    for g in range(60):
        length = (17, 20, 23, 32)[g % 4]
        at = rng.randrange(len(sequence) - length)
        guides.append("".join(c if c != "N" else "C" for c in sequence[at:at + length]))
    text = encode_text(sequence)
    compared = 0
    for strands in ((0, 1), (1,)):
        rows = orient_guides([pattern_masks(g) for g in guides], [rng.randint(0, 9) for _ in guides],
                             pattern_masks(pam), side, strands)
        for lo, hi in ((0, len(text)), (41, len(text) - 17), (10_000, 10_050)):
            expected = find_sites("cpu", text, rows, 0, 0, lo, hi).sorted()
            got = find_sites("cpu", text, rows, 0, 0, lo, hi, small=True).sorted()
            compared += len(expected)
            for name in expected.__dataclass_fields__:
                assert np.array_equal(getattr(got, name), getattr(expected, name)), name
                assert getattr(got, name).dtype == getattr(expected, name).dtype, name
    assert compared > 100


def test_small_job_choice():
    from seqsift.alphabet import pattern_masks
    from seqsift.kernels.crispr import SMALL_JOB_PAIRS, orient_guides, small_job

    plain = orient_guides([pattern_masks("ACGTACGTACGTACGTACGT")] * 100, [4] * 100, pattern_masks("NGG"), 3)
    assert small_job(5_000_000, plain, 0, 0)                      # E. coli, 100 guides: 6e7 pairs
    assert not small_job(3_100_000_000, plain, 0, 0)              # the human genome
    assert not small_job(5_000_000, plain, 1, 0)                  # bulges: the Numba kernel
    iupac = orient_guides([pattern_masks("ACGTACGTACGTACGTACGR")], [4], pattern_masks("NGG"), 3)
    assert not small_job(1000, iupac, 0, 0)
    # NGG: 1/16 of the positions per strand, 2 rows a guide
    assert small_job(int(SMALL_JOB_PAIRS * 16 / 200) - 1000, plain, 0, 0)
    assert not small_job(int(SMALL_JOB_PAIRS * 16 / 200) + 1000, plain, 0, 0)


def test_a_small_cpu_job_over_many_records_never_imports_numba(tmp_path):
    """Records packed into one text a slice each (kernels.encode, up to SLICED_RECORDS): packing a few
    thousand small records does not import Numba either (its import was 0.4 s of a 0.7 s job)."""
    rng = random.Random(6)
    guide = "".join(rng.choice("ACGT") for _ in range(20))
    records = [(f"r{i}", "".join(rng.choice("ACGT") for _ in range(300))) for i in range(2000)]
    records[7] = ("r7", records[7][1][:100] + guide + "AGG" + records[7][1][123:])
    reference = write_fasta(tmp_path / "ref.fa", records)
    guides = [("g", guide)]
    count, numba_loaded = _crispr_in_fresh_process(reference, guides, "numba")
    assert int(count) == len(oracle_sites(records, guides, "NGG", 3)) > 0
    assert numba_loaded == "False"


def test_a_small_cpu_job_never_starts_numba(tmp_path):
    """The point of the NumPy kernel: a small plain job's process never imports the Numba kernel module."""
    rng = random.Random(5)
    records, guides = random_case(rng, "ACGT", 20, guides=5)
    reference = write_fasta(tmp_path / "ref.fa", records)
    count, numba_kernel_loaded = _crispr_in_fresh_process(reference, guides, "seqsift.kernels.crispr.cpu")
    assert int(count) == len(oracle_sites(records, guides, "NGG", 3)) > 0
    assert numba_kernel_loaded == "False"


def _crispr_in_fresh_process(reference, guides, module: str) -> tuple[str, str]:
    """A small CPU crispr job in a fresh interpreter: its row count, and whether ``module`` was loaded."""
    from fresh_process import python

    result = python(f"import sys, seqsift\n"
                    f"rows = seqsift.crispr({str(reference)!r}, {guides!r}, mismatches=3, backend='cpu', workers=1)\n"
                    f"print(len(rows), {module!r} in sys.modules)\n")
    assert result.returncode == 0, result.stderr
    count, loaded = result.stdout.split()
    return count, loaded


@pytest.mark.parametrize("suffix", [".tsv", ".parquet"])
def test_site_writer_reads_object_and_arrow_text_columns_alike(tmp_path, suffix):
    """Rows come with text columns as Python objects or Arrow-backed (pandas 3, the task store): same file."""
    import pyarrow as pa

    from seqsift.crispr.output import SiteWriter

    rows = {"record": np.array([0, 1], np.int32), "start": np.array([5, 9]), "end": np.array([28, 32]),
            "guide": np.array([1, 0], np.int32), "strand": np.array([0, 1], np.int8),
            "mismatches": np.array([0, 2], np.int16), "bulge_type": ["none", "DNA"],
            "bulge_size": np.array([0, 1], np.int16), "guide_aligned": ["ACGTAGG", "AC-GTAGG"],
            "site": ["ACGTAGG", "ACgGTTGG"], "cfd": [np.nan, 0.5], "mit": [np.nan, 1.0]}
    written = []
    for text_type in (object, pd.ArrowDtype(pa.string())):
        frame = pd.DataFrame({name: pd.array(values, dtype=text_type) if name in ("bulge_type", "guide_aligned", "site")
                              else values for name, values in rows.items()})
        path = tmp_path / f"{len(written)}{suffix}"
        writer = SiteWriter(str(path), ["r0", "r1"], ["g0", "g1"])
        writer.write(frame)
        writer.close()
        written.append(pd.read_parquet(path) if suffix == ".parquet" else path.read_text())
    if suffix == ".parquet":
        assert written[0].equals(written[1]) and written[0]["site"].tolist() == ["ACGTAGG", "ACgGTTGG"]
    else:
        assert written[0] == written[1] and "AC-GTAGG\tACgGTTGG" in written[0]
