"""seqsift's CFD, MIT and specificity scores against the values CRISPOR itself published.

Every expected number below was written by CRISPOR (github.com/maximilianh/crisporWebsite), never computed
here or by seqsift:

* ``OFFS`` rows: ``sampleFiles/out/hg19.offs.tsv``, CRISPOR's off-target table for its hg19 sample sequence
  (chr7:5564967-5565467, sampleFiles/in/hg19.fa), written at commit 8b6be7e612ccb53e03d1c44f0831d28d61f927fc
  (2018-11-05, "bedtools mode"; blob ed63cb1f372fd19ee461129cdd131a0d26f197b9, unchanged up to the stored
  head 49b5f1eb18cbc6e2d23f9bb6026ec9d8b4f7e182). Its columns: guideId, guideSeq (20 nt + PAM), offtargetSeq,
  mismatchPos, mismatchCount, mitOfftargetScore, cfdOfftargetScore, chrom, start, end, strand. 12 of its
  16,852 rows, over three guides: mismatches at positions 1 to 20, NGG, NAG and NGA PAMs, two CFD zeros.
* ``GUIDE_243FORW_MIT_SCORES`` and its specificity 94: the same file's mitOfftargetScore column for guide
  243forw (all its 34 off-targets), and ``sampleFiles/out/hg19.guides.tsv`` (same commit; blob
  5f7d81c1e6aa10dc867c5a5b83992806b3418520), column mitSpecScore.
* ``CFD_DOCTESTS``: the doctests of ``calcCfdScore`` in ``crispor.py`` at commit
  6a3328cfc630a2572a94111c2ffd4310f00192d8 (its last change in the stored history).

Precision: that CRISPOR (``#!/usr/bin/env python2.7``) wrote each score with ``str(x)``, Python 2.7's 12
significant digits, so a score is compared within 1e-11 relative (the printed rounding is at most 5e-12
relative; an exact ``'%.12g'`` string match would fail on 41 of the file's 16,852 CFD values, whose 13th
digit is a 5 that the two implementations' last-bit product order rounds apart). The doctests print Python's
full repr: compared within 1e-12 relative.

What agrees and what does not, and why (CRISPOR's code: ``crispor.py`` at 8b6be7e, functions
``calcHitScore``, ``calc_cfd``, ``calcCfdScore``, ``calcMitGuideScore`` and the off-target loop before them):

* CFD: every one of the file's 16,852 rows (checked once when these tests were written; the rows below
  are a sample). CRISPOR's CFD includes the PAM's two last bases (Doench's PAM table), as seqsift's does.
* MIT, with two CRISPOR conventions that are not Hsu et al.'s formula:
  1. For a guide with PAM NGG, CRISPOR multiplies the MIT score of an off-target whose PAM is not NGG
     (it searches NAG and NGA too) by 0.2 ("a heuristic based on the guideSeq data"; the line
     ``if pam=="NGG" and otSeq[-2:]!="GG": mitScore = mitScore * 0.2``). seqsift's MIT score is Hsu's and
     leaves the PAM out.
  2. ``calcHitScore`` takes the mean distance between mismatches as ``sum(dists)/len(dists)`` of integers,
     which Python 2.7 floors: with n mismatches at p_1 < ... < p_n, CRISPOR's 2018 files use
     floor((p_n - p_1) / (n - 1)) where Hsu et al. (and seqsift) use the exact mean. Where the division is
     exact the scores agree; elsewhere CRISPOR's 2018 value is seqsift's times D(floor d) / D(d), D the
     middle factor of Hsu's formula. CRISPOR runs on Python 3 since commit b18bb8e98fb0d07c6dff90cba5be5ad0b72fc3c2
     (2023-02-07, "Moving all the code to Python3"), where the same unchanged line divides exactly, as
     seqsift does; so this is a difference between CRISPOR versions, not a seqsift bug.
  With both conventions applied to seqsift's scores, all 16,852 MIT values of the file agree.
* Specificity: CRISPOR's mitSpecScore is calcMitGuideScore(sum of the guide's off-target MIT scores, the 0.2
  factor included) = round(100 * 100 / (100 + sum)); seqsift's ``specificity`` of CRISPOR's printed scores
  gives the published number for all 53 guides of the file that have off-targets listed.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import pytest

import seqsift
from seqsift.crispr.scores import cfd_score, mit_score, specificity

from crispr_oracle import revcomp
from test_engine import write_fasta

PRINTED_PRECISION = 1e-11  # relative: CRISPOR printed str(score) under Python 2.7, 12 significant digits


class CrisporSite(NamedTuple):
    """One row of CRISPOR's hg19.offs.tsv (its guideId .. strand columns, end and locusDesc left out)."""
    guide_id: str
    guide: str            # guideSeq: 20 nt + PAM
    off_target: str       # offtargetSeq, in the guide's orientation: 20 nt + PAM
    mismatch_pos: str     # '*' where the 20 guide bases differ
    mismatch_count: int
    mit: str              # mitOfftargetScore, as printed
    cfd: str              # cfdOfftargetScore, as printed
    chrom: str
    start: int
    strand: str


G447 = "ATTGAGTGACCACTCTACGGTGG"
G243 = "TCCTCTATACCCGCACTATCTGG"
G75 = "ACTTTGATGAACACGAGCATCGG"

OFFS = [  # rows of sampleFiles/out/hg19.offs.tsv @ 8b6be7e612ccb53e03d1c44f0831d28d61f927fc, copied verbatim
    CrisporSite("447rev", G447, "CTTGAGTTACCACACTACAGAGG", "*......*.....*....*.", 4,
                "0.0785004401408", "0.23688046632", "chr5", 71597435, "-"),
    CrisporSite("447rev", G447, "ACCCAGTGACCACTCTACGTTGG", ".***...............*", 4,
                "0.687682922535", "0.136134453971", "chr3", 52780118, "+"),
    CrisporSite("447rev", G447, "AATGATTCACCACTCTACGGTAG", ".*...*.*............", 3,
                "0.307764390897", "0.0899992693688", "chr12", 6197040, "+"),
    CrisporSite("447rev", G447, "GTTGAGTGCCCACTCTACTTAGG", "*.......*.........**", 4,
                "0.134234172095", "0.2666666666", "chr11", 47384705, "-"),
    CrisporSite("447rev", G447, "ATTGAGTGACCACTCTTCCTGGG", "................*.**", 3,
                "0.117321346154", "0.0418390803487", "chr4", 81912244, "+"),
    CrisporSite("243forw", G243, "GCCTCTAAACCCGCACGATCTGG", "*......*........*...", 3,
                "1.29012345679", "0.0900255755703", "chr20", 47281237, "+"),
    CrisporSite("243forw", G243, "TCCTCTAGACCAGCACTATCCGA", ".......*...*........", 2,
                "0.59164556962", "0.0363756611118", "chr7", 103634319, "+"),
    CrisporSite("243forw", G243, "ACGTCTATACCCTCACTATTGGG", "*.*.........*......*", 4,
                "0.266133291021", "0.045", "chr9", 103717492, "-"),
    CrisporSite("75rev", G75, "ACTTTGGTGTGCACGAGCATTGG", "......*..**.........", 3,
                "0.847159442529", "0.40484429061", "chr9", 101592492, "+"),
    CrisporSite("75rev", G75, "ACTTTCATGAACACTAGCATTGA", ".....*........*.....", 2,
                "0.261072881356", "0.00676406922935", "chr1", 33852822, "+"),
    CrisporSite("75rev", G75, "ACTTTGAAGAACAGGAGCACAGG", ".......*.....*.....*", 3,
                "0.18474600939", "0.0", "chr13", 82565308, "-"),
    CrisporSite("75rev", G75, "ACTTTGATGCACAGGAACATGGG", ".........*...*..*...", 3,
                "0.134381544177", "0.0", "chr6", 126211826, "-"),
]

# hg19.offs.tsv's mitOfftargetScore of every off-target of guide 243forw (TCCTCTATACCCGCACTATCTGG), in the
# file's order; hg19.guides.tsv gives the guide mitSpecScore 94 and offtargetCount 34.
GUIDE_243FORW_MIT_SCORES = (
    "0.13092935625", "0.509948268072", "0.185123143333", "0.169849647104", "0.458669827586", "0.148700430482",
    "0.14272479375", "0.267928703571", "0.127068039759", "0.316035636972", "0.08473962", "0.08473962",
    "0.0732494638554", "0.178245253165", "1.29012345679", "0.0741213406627", "0.071983419", "0.020657028",
    "0.072353162154", "0.253408778165", "0.266133291021", "0.164916268574", "0.072353162154", "0.59164556962",
    "0.0767727768987", "0.0245304107801", "0.0369752819277", "0.0303989177215", "0.0125560398491",
    "0.046441516306", "0.129928189377", "0.00742584541034", "0.00742584541034", "0.076477639594",
)
GUIDE_243FORW_MIT_SPECIFICITY = 94

# calcCfdScore's doctests (crispor.py @ 6a3328cfc630a2572a94111c2ffd4310f00192d8): guide + PAM, site + PAM, value
CFD_DOCTESTS = [
    ("GGGGGGGGGGGGGGGGGGGGGGG", "GGGGGGGGGGGGGGGGGAAAGGG", 0.4635989007074176),
    ("GGGGGGGGGGGGGGGGGGGGGGG", "GGGGGGGGGGGGGGGGGGGGGGG", 1.0),
    ("GGGGGGGGGGGGGGGGGGGGGGG", "aaaaGaGaGGGGGGGGGGGGGGG", 0.5140384614450001),
    ("ATGGTCGGACTCCCTGCCAGAGG", "ATGGTGGGACTCCCTGCCAGAGG", 0.5),
    ("ATGGTCGGACTCCCTGCCAGAGG", "ATGATCCAAATCCCTGCCAGAGG", 0.53625000020625),
    ("ATGTGGAGATTGCCACCTACCGG", "ATCTGGAGATTGCCACCTACAGG", 0.384615385),
]


def site_id(site: CrisporSite) -> str:
    return f"{site.guide_id}-{site.chrom}:{site.start}"


def mismatch_positions(site: CrisporSite) -> list[int]:
    """0-based positions of CRISPOR's '*' marks (checked against the sequences in test_crispor_rows_are_whole)."""
    return [i for i, mark in enumerate(site.mismatch_pos) if mark == "*"]


def mean_distance_is_whole(site: CrisporSite) -> bool:
    """Whether Python 2.7's integer mean distance in CRISPOR's calcHitScore equals the exact mean."""
    p = mismatch_positions(site)
    return len(p) < 2 or (p[-1] - p[0]) % (len(p) - 1) == 0


def alternative_pam(site: CrisporSite) -> bool:
    """CRISPOR's test for its 0.2 MIT factor: guide PAM NGG, off-target PAM not ending in GG (NAG, NGA)."""
    return site.off_target[-2:] != "GG"


def hsu_distance_factor(mean_distance: float) -> float:
    """The middle factor of Hsu et al. 2013's MIT score, 1 / ((19 - d) / 19 * 4 + 1)."""
    return 1.0 / ((19.0 - mean_distance) / 19.0 * 4.0 + 1.0)


def seqsift_mit(site: CrisporSite) -> float:
    return mit_score(site.guide[:20], site.off_target[:20])


def seqsift_cfd(site: CrisporSite) -> float:
    return cfd_score(site.guide[:20], site.off_target[:20], site.off_target[20:])


def test_crispor_rows_are_whole():
    """The copied rows are consistent: the '*' marks and counts are the sequences' mismatches."""
    for site in OFFS:
        differ = [i for i in range(20) if site.guide[i] != site.off_target[i]]
        assert differ == mismatch_positions(site) and len(differ) == site.mismatch_count, site_id(site)
    assert {s.off_target[-3:][1:] for s in OFFS} == {"GG", "AG", "GA"}
    assert {p for s in OFFS for p in mismatch_positions(s)} >= {0, 19}


@pytest.mark.parametrize("site", OFFS, ids=site_id)
def test_cfd_is_crispors(site):
    assert seqsift_cfd(site) == pytest.approx(float(site.cfd), rel=PRINTED_PRECISION, abs=0)


@pytest.mark.parametrize("guide, off_target, expected", CFD_DOCTESTS)
def test_cfd_is_crispors_doctests(guide, off_target, expected):
    # calcCfdScore upper-cases both sequences, scores the first 20 bases and the last two PAM bases
    assert cfd_score(guide[:20], off_target[:20], off_target[20:]) == pytest.approx(expected, rel=1e-12, abs=0)


@pytest.mark.parametrize("site", [s for s in OFFS if not alternative_pam(s) and mean_distance_is_whole(s)],
                         ids=site_id)
def test_mit_is_crispors(site):
    """NGG sites whose mean mismatch distance is whole: CRISPOR's MIT is Hsu's, as seqsift's."""
    assert seqsift_mit(site) == pytest.approx(float(site.mit), rel=PRINTED_PRECISION, abs=0)


@pytest.mark.parametrize("site", [s for s in OFFS if alternative_pam(s) and mean_distance_is_whole(s)],
                         ids=site_id)
def test_crispor_divides_the_mit_of_nag_and_nga_sites_by_five(site):
    """CRISPOR's 0.2 factor for off-targets of an NGG guide with another PAM (module docstring, 1.)."""
    assert 0.2 * seqsift_mit(site) == pytest.approx(float(site.mit), rel=PRINTED_PRECISION, abs=0)
    assert seqsift_mit(site) != pytest.approx(float(site.mit), rel=1e-3)


@pytest.mark.parametrize("site", [s for s in OFFS if not mean_distance_is_whole(s)], ids=site_id)
def test_crispor_2018_floored_the_mean_mismatch_distance(site):
    """Python 2.7's integer division in CRISPOR's calcHitScore (module docstring, 2.): seqsift keeps Hsu's exact
    mean, so it differs from the 2018 file by exactly D(floor d) / D(d), and by nothing else."""
    p = mismatch_positions(site)
    exact = (p[-1] - p[0]) / (len(p) - 1)
    floored = (p[-1] - p[0]) // (len(p) - 1)
    pam_factor = 0.2 if alternative_pam(site) else 1.0
    as_crispor_2018 = seqsift_mit(site) * pam_factor * hsu_distance_factor(floored) / hsu_distance_factor(exact)
    assert as_crispor_2018 == pytest.approx(float(site.mit), rel=PRINTED_PRECISION, abs=0)
    assert seqsift_mit(site) * pam_factor != pytest.approx(float(site.mit), rel=1e-3)


def test_specificity_is_crispors_published_guide_score():
    scores = [float(s) for s in GUIDE_243FORW_MIT_SCORES]
    assert len(scores) == 34
    assert specificity(scores, 1.0) == GUIDE_243FORW_MIT_SPECIFICITY
    # the two rows of OFFS that are 243forw's NGG sites with a whole mean distance are in that list, as printed
    assert {s.mit for s in OFFS if s.guide_id == "243forw"} <= set(GUIDE_243FORW_MIT_SCORES)


def test_crispr_job_rows_carry_crispors_scores(client, tmp_path):
    """End to end: each CRISPOR off-target is a record of its own (forward as CRISPOR's strand says); seqsift
    finds each once, on that strand, with CRISPOR's mismatches and CFD, and the MIT of the unit tests above."""
    records = [(site_id(s), s.off_target if s.strand == "+" else revcomp(s.off_target)) for s in OFFS]
    reference = write_fasta(tmp_path / "crispor.fa", records)
    guides = [(gid, g[:20]) for gid, g in {s.guide_id: s.guide for s in OFFS}.items()]
    # NRR: the PAMs CRISPOR searched for an NGG guide (NGG, NAG, NGA) in one job; all are scored (N + two letters)
    got = seqsift.crispr(str(reference), guides, pam="NRR", mismatches=4, client=client, backend="cpu")
    assert sorted(got["record"]) == sorted(site_id(s) for s in OFFS)
    rows = got.set_index("record")
    for site in OFFS:
        row = rows.loc[site_id(site)]
        assert (row["guide"], row["strand"], int(row["mismatches"])) == (site.guide_id, site.strand,
                                                                         site.mismatch_count)
        assert row["site"].upper() == site.off_target
        assert "".join("*" if c.islower() else "." for c in row["site"][:20]) == site.mismatch_pos
        assert row["cfd"] == pytest.approx(float(site.cfd), rel=PRINTED_PRECISION, abs=0)
        assert not math.isnan(row["mit"]) and row["mit"] == pytest.approx(seqsift_mit(site), rel=1e-12)
        if not alternative_pam(site) and mean_distance_is_whole(site):
            assert row["mit"] == pytest.approx(float(site.mit), rel=PRINTED_PRECISION, abs=0)
