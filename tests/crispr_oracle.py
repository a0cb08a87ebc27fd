"""A brute-force reading of issue 16's off-target site definition, for small genomes.

It shares no code with seqsift: its own IUPAC and complement tables, and it
tries every start, every site length and every bulge position literally:

* a site T[s:e] on ``+`` reads, in the guide's orientation, T[s:e]; on ``-``
  its reverse complement; with a 3' PAM its last P letters are the PAM, with a
  5' PAM its first P;
* the PAM matches exactly (each genome base within the PAM letter's set; only
  A/C/G/T can), the rest (the protospacer) aligns to the guide with at most k
  mismatches (a non-ACGT genome base is a mismatch), and
  - equally long: no bulge;
  - b longer (b <= dna_bulge): b genome bases skipped after guide base i,
    1 <= i < L (a DNA bulge);
  - b shorter (b <= rna_bulge): guide bases i+1..i+b (1-based) unpaired,
    1 <= i and i + b < L (an RNA bulge);
* per site the alignment with the fewest mismatches, the bulge leftmost in
  the guide's orientation on ties.

Rows: (guide, record, start, end, strand, mismatches, bulge_type, bulge_size,
guide_aligned, site) with site in the guide's orientation (mismatched genome
bases in lower case, '-' over an RNA bulge) and guide_aligned the guide plus
the PAM as given ('-' over a DNA bulge).
"""
from __future__ import annotations

SETS = {"A": "A", "C": "C", "G": "G", "T": "T", "U": "T", "R": "AG", "Y": "CT", "S": "CG", "W": "AT", "K": "GT",
        "M": "AC", "B": "CGT", "D": "AGT", "H": "ACT", "V": "ACG", "N": "ACGT"}
COMPLEMENTS = {"A": "T", "C": "G", "G": "C", "T": "A", "R": "Y", "Y": "R", "S": "S", "W": "W", "K": "M", "M": "K",
               "B": "V", "V": "B", "D": "H", "H": "D", "N": "N"}


def base_matches(letter: str, base: str) -> bool:
    return base in "ACGT" and base in SETS[letter]


def revcomp(text: str) -> str:
    return "".join(COMPLEMENTS.get(c, c) for c in reversed(text))


def _align(guide: str, proto: str, dna_bulge: int, rna_bulge: int):
    """Best (mismatches, kind, size, guide_aligned, proto_aligned) or None."""
    L, n = len(guide), len(proto)
    options = []
    if n == L:
        options.append(("none", 0, guide, proto))
    elif L < n <= L + dna_bulge:
        b = n - L
        for i in range(1, L):
            options.append(("DNA", b, guide[:i] + "-" * b + guide[i:], proto))
    elif L - rna_bulge <= n < L:
        b = L - n
        for i in range(1, L - b):
            options.append(("RNA", b, guide, proto[:i] + "-" * b + proto[i:]))
    best = None
    for kind, size, g, p in options:  # in order of i: the first minimum is the leftmost
        mm = sum(1 for x, y in zip(g, p) if x != "-" and y != "-" and not base_matches(x, y))
        if best is None or mm < best[0]:
            best = (mm, kind, size, g, p)
    return best


def _mark(g: str, p: str) -> str:
    return "".join(y if x == "-" or y == "-" or base_matches(x, y) else y.lower() for x, y in zip(g, p))


def oracle_sites(records, guides, pam: str, k, pam_side: int = 3, dna_bulge: int = 0, rna_bulge: int = 0,
                 strands=("+", "-")) -> list[tuple]:
    """records: [(name, sequence)]; guides: [(name, sequence)]; k: int or one per guide."""
    limits = [k] * len(guides) if isinstance(k, int) else list(k)
    P = len(pam)
    out = []
    for (gname, guide), limit in zip(guides, limits):
        guide = guide.upper()
        L = len(guide)
        for rname, seq in records:
            seq = seq.upper()
            for length in range(P + L - rna_bulge, P + L + dna_bulge + 1):
                for s in range(0, len(seq) - length + 1):
                    for strand in strands:
                        window = seq[s:s + length] if strand == "+" else revcomp(seq[s:s + length])
                        site_pam, proto = (window[-P:], window[:-P]) if pam_side == 3 else (window[:P], window[P:])
                        if not all(base_matches(x, y) for x, y in zip(pam, site_pam)):
                            continue
                        best = _align(guide, proto, dna_bulge, rna_bulge)
                        if best is None or best[0] > limit:
                            continue
                        mm, kind, size, g, p = best
                        marked = _mark(g, p)
                        aligned = g + pam if pam_side == 3 else pam + g
                        site = marked + site_pam if pam_side == 3 else site_pam + marked
                        out.append((gname, rname, s, s + length, strand, mm, kind, size, aligned, site))
    return sorted(out)
