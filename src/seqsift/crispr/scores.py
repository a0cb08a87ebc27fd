"""Per-site CFD and MIT scores, and the per-guide specificity scores built on them.

* CFD, Cutting Frequency Determination (Doench et al. 2016, Nat Biotechnol
  34:184): the product, over the mismatched positions i of a 20-nt guide, of
  the activity of that (RNA base, DNA base, i) mismatch, times the activity
  of the site's PAM (its two bases after N). Tables: ``data/cfd_mismatch.tsv``
  and ``data/cfd_pam.tsv`` (Supplementary Table 19, as CRISPOR ships them).
  The DNA base of a key is the target strand's, the complement of the site's
  base, as in Doench's and CRISPOR's code.
* MIT (Hsu et al. 2013, Nat Biotechnol 31:827; crispr.mit.edu): with n
  mismatches at positions p_1 < ... < p_n of a 20-nt guide and mean distance
  d = (p_n - p_1) / (n - 1) between neighbours,
  score = 100 * prod(1 - M[p_i]) * 1 / ((19 - d) / 19 * 4 + 1) * 1 / n^2
  (the middle factor is 1 for n < 2, the last 1 for n = 0), M from
  ``data/mit_weights.tsv``. The PAM does not enter.
* Specificity of a guide (CRISPOR): 100 / (100 + S), S the sum of its
  off-target scores (MIT's 0..100, CFD's times 100), as a whole 0..100 number.
  The guide's own site (one site with no mismatch and no bulge) is not an
  off-target.

Both site scores are defined for 20-nt guides of A/C/G/T with a 3' PAM of the
NGG family (three letters, the first N), on sites without bulges whose bases
are all A/C/G/T; elsewhere they are undefined (NaN; an empty column value).
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

import numpy as np

SCORED_GUIDE_LENGTH = 20
_COMPLEMENT = {"A": "T", "C": "G", "G": "C", "T": "A"}


def _data_rows(name: str) -> list[list[str]]:
    text = (resources.files("seqsift") / "data" / name).read_text()
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    return rows[1:]  # past the header line


@lru_cache(maxsize=None)
def cfd_tables() -> tuple[dict[tuple[int, str, str], float], dict[str, float]]:
    """({(position, rna base, dna base): activity}, {two PAM bases: activity}); RNA U written as T."""
    mismatch = {(int(p), "T" if r == "U" else r, d): float(v) for p, r, d, v in _data_rows("cfd_mismatch.tsv")}
    pam = {k: float(v) for k, v in _data_rows("cfd_pam.tsv")}
    return mismatch, pam


@lru_cache(maxsize=None)
def mit_weights() -> np.ndarray:
    return np.array([float(w) for _, w in _data_rows("mit_weights.tsv")])


def scores_defined(guide_length: int, pam: str, pam_side: int) -> bool:
    """Whether CFD and MIT apply to a job's guides of this length and PAM (module docstring)."""
    return guide_length == SCORED_GUIDE_LENGTH and pam_side == 3 and len(pam) == 3 and pam[0] == "N"


def _acgt(text: str) -> bool:
    return all(c in _COMPLEMENT for c in text)


def cfd_score(guide: str, protospacer: str, site_pam: str) -> float:
    """CFD of a 20-nt guide against a site's 20 protospacer bases and its 3 PAM bases (guide orientation)."""
    guide, protospacer, site_pam = guide.upper(), protospacer.upper(), site_pam.upper()
    if len(guide) != SCORED_GUIDE_LENGTH or len(protospacer) != SCORED_GUIDE_LENGTH or len(site_pam) != 3 \
            or not _acgt(guide + protospacer + site_pam):
        return float("nan")
    mismatch, pam = cfd_tables()
    score = 1.0
    for position, (rna, dna) in enumerate(zip(guide, protospacer), start=1):
        if rna != dna:
            score *= mismatch[(position, rna, _COMPLEMENT[dna])]
    return score * pam[site_pam[1:]]


def mit_score(guide: str, protospacer: str) -> float:
    """MIT off-target score (0..100) of a 20-nt guide against a site's 20 protospacer bases."""
    guide, protospacer = guide.upper(), protospacer.upper()
    if len(guide) != SCORED_GUIDE_LENGTH or len(protospacer) != SCORED_GUIDE_LENGTH \
            or not _acgt(guide + protospacer):
        return float("nan")
    weights = mit_weights()
    positions = [i for i, (a, b) in enumerate(zip(guide, protospacer)) if a != b]
    n = len(positions)
    score = 1.0
    for i in positions:
        score *= 1.0 - weights[i]
    if n >= 2:
        mean_distance = (positions[-1] - positions[0]) / (n - 1)
        score *= 1.0 / ((19.0 - mean_distance) / 19.0 * 4.0 + 1.0)
    if n >= 1:
        score *= 1.0 / (n * n)
    return 100.0 * score


def specificity(off_target_scores, scale: float) -> int:
    """CRISPOR's guide specificity: round(100 * 100 / (100 + scale * sum)), NaN scores left out."""
    values = np.asarray(off_target_scores, dtype=float)
    total = float(np.nansum(values)) * scale
    return int(round(100.0 * 100.0 / (100.0 + total)))


_BASE_INDEX = np.full(256, 4, dtype=np.int64)
for _i, _b in enumerate(b"ACGT"):
    _BASE_INDEX[_b] = _i


@lru_cache(maxsize=None)
def _cfd_arrays() -> tuple[np.ndarray, np.ndarray]:
    """(activity[position 0..19, guide base, site base] with 1 where equal, pam[base, base]); bases A C G T."""
    mismatch, pam = cfd_tables()
    activity = np.ones((SCORED_GUIDE_LENGTH, 4, 4))
    for (position, rna, dna), value in mismatch.items():
        site_base = _COMPLEMENT[dna]
        activity[position - 1, "ACGT".index(rna), "ACGT".index(site_base)] = value
    pam_activity = np.zeros((4, 4))
    for two, value in pam.items():
        pam_activity["ACGT".index(two[0]), "ACGT".index(two[1])] = value
    return activity, pam_activity


def cfd_scores(guides: np.ndarray, protospacers: np.ndarray, site_pams: np.ndarray) -> np.ndarray:
    """:func:`cfd_score` of many sites: (sites, 20) guide and protospacer bytes, (sites, 3) PAM bytes (upper case)."""
    activity, pam_activity = _cfd_arrays()
    g, s, p = _BASE_INDEX[guides], _BASE_INDEX[protospacers], _BASE_INDEX[site_pams]
    defined = (g < 4).all(axis=1) & (s < 4).all(axis=1) & (p < 4).all(axis=1)
    g, s, p = np.minimum(g, 3), np.minimum(s, 3), np.minimum(p, 3)
    scores = activity[np.arange(SCORED_GUIDE_LENGTH), g, s].prod(axis=1) * pam_activity[p[:, 1], p[:, 2]]
    return np.where(defined, scores, np.nan)


def mit_scores(guides: np.ndarray, protospacers: np.ndarray) -> np.ndarray:
    """:func:`mit_score` of many sites: (sites, 20) guide and protospacer bytes (upper case)."""
    g, s = _BASE_INDEX[guides], _BASE_INDEX[protospacers]
    defined = (g < 4).all(axis=1) & (s < 4).all(axis=1)
    mismatched = g != s
    n = mismatched.sum(axis=1)
    score = np.where(mismatched, 1.0 - mit_weights(), 1.0).prod(axis=1)
    positions = np.arange(SCORED_GUIDE_LENGTH)
    first = np.where(mismatched, positions, SCORED_GUIDE_LENGTH).min(axis=1)
    last = np.where(mismatched, positions, -1).max(axis=1)
    mean_distance = (last - first) / np.maximum(n - 1, 1)
    score = np.where(n >= 2, score / ((19.0 - mean_distance) / 19.0 * 4.0 + 1.0), score)
    score = np.where(n >= 1, score / np.maximum(n, 1) ** 2, score)
    return np.where(defined, 100.0 * score, np.nan)
