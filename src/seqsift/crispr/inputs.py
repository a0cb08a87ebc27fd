"""What a CRISPR job reads: the PAM, the guides, and Cas-OFFinder's input file.

Guides come in every format ``seqsift search`` reads (``read_patterns``:
FASTA, name<TAB>sequence, one per line, Python lists and dicts), any length,
IUPAC codes allowed. The PAM is IUPAC letters (``NGG``, ``NRG``, ``TTTV``).

Cas-OFFinder's input file (``--cas-offinder INPUT``; Cas-OFFinder 2.4's README,
bulge sizes as in Cas-OFFinder 3)::

    /path/to/genome.fa           a FASTA file, or a folder of FASTA files
    NNNNNNNNNNNNNNNNNNNNNGG 1 1  N for each guide position, the PAM written out; optional DNA and RNA bulge sizes
    GGCCGACCTGTCGCTGACGCNNN 5    the guide, N over the PAM, the mismatch limit, an optional name
    ...

The PAM is the part of the pattern line that the guide lines leave as N (the
shortest such run over all guide lines), at the end where the pattern has
its letters (3' or 5'). Every problem is an InputError naming file and line.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..alphabet import invalid_pattern_letters, pattern_masks
from ..errors import InputError, quote, reading
from ..kernels.crispr import MAX_BULGE
from ..pattern_set import PatternSet

FASTA_SUFFIXES = (".fa", ".fasta", ".fna", ".fas", ".fa.gz", ".fasta.gz", ".fna.gz", ".fas.gz")


def parse_pam(pam: str, origin: str = "--pam") -> np.ndarray:
    """The PAM's IUPAC masks; InputError for letters that are not IUPAC codes."""
    if not isinstance(pam, str) or not pam.strip():
        raise InputError(f"{origin}: the PAM is empty (give IUPAC letters, e.g. NGG or TTTV)")
    pam = pam.strip().upper()
    bad = invalid_pattern_letters(pam)
    if bad:
        raise InputError(f"{origin}: PAM {quote(pam)} has letters that are not IUPAC nucleotide codes: "
                         f"{', '.join(repr(b) for b in bad)}")
    return pattern_masks(pam)


def check_bulges(dna_bulge: int, rna_bulge: int, origin: str = "bulge sizes") -> None:
    for name, value in (("DNA", dna_bulge), ("RNA", rna_bulge)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InputError(f"{origin}: the {name} bulge size must be a whole number >= 0, not {value!r}")
        if value > MAX_BULGE:
            raise InputError(f"{origin}: {name} bulge size {value} is not supported (at most {MAX_BULGE})")


@dataclass(frozen=True)
class CasOffinderInput:
    """A parsed Cas-OFFinder input file."""

    genome: str             # the FASTA file or folder named on line 1
    pam: str                # e.g. "NGG"
    pam_side: int           # 3 or 5
    guides: PatternSet      # guide letters only (the PAM's N stripped)
    limits: tuple[int, ...] # mismatch limit of each guide
    dna_bulge: int
    rna_bulge: int
    pattern: str            # line 2's pattern, as written (upper case)


def read_cas_offinder_input(path) -> CasOffinderInput:
    """Parse Cas-OFFinder's input file (see the module docstring)."""
    display = os.fspath(path)
    try:
        with reading(display):
            if Path(display).is_dir():
                raise InputError(f"{display}: is a directory, not a Cas-OFFinder input file")
            text = Path(display).read_text(encoding="utf-8", errors="strict")
    except FileNotFoundError:
        raise InputError(f"{display}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{display}: not a UTF-8 text file") from None
    lines = [line.rstrip("\r") for line in text.split("\n")]
    if len(lines) < 3 or not lines[0].strip() or not lines[1].strip():
        raise InputError(f"{display}: a Cas-OFFinder input file needs a genome path (line 1), a pattern "
                         f"(line 2) and at least one guide line")
    genome = lines[0].strip()  # relative paths are relative to the working folder, as in Cas-OFFinder
    fields = lines[1].split()
    pattern = fields[0].upper()
    where = f"{display}: line 2"
    bad = invalid_pattern_letters(pattern)
    if bad:
        raise InputError(f"{where}: pattern {quote(pattern)} has letters that are not IUPAC codes: "
                         f"{', '.join(repr(b) for b in bad)}")
    if len(fields) not in (1, 3):
        raise InputError(f"{where}: expected the pattern alone, or the pattern, the DNA bulge size and the "
                         f"RNA bulge size; found {len(fields)} fields")
    dna_bulge = rna_bulge = 0
    if len(fields) == 3:
        try:
            dna_bulge, rna_bulge = int(fields[1]), int(fields[2])
        except ValueError:
            raise InputError(f"{where}: bulge sizes must be whole numbers, not {fields[1]!r} {fields[2]!r}") from None
        check_bulges(dna_bulge, rna_bulge, where)

    entries = []  # (line number, guide+N text, limit, name)
    for number, line in enumerate(lines[2:], start=3):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) not in (2, 3):
            raise InputError(f"{display}: line {number}: expected a guide, its mismatch limit and an optional "
                             f"name; found {len(parts)} fields")
        sequence = parts[0].upper()
        if len(sequence) != len(pattern):
            raise InputError(f"{display}: line {number}: guide {quote(sequence)} has {len(sequence)} letters but "
                             f"the pattern on line 2 has {len(pattern)}; they must be equally long")
        bad = invalid_pattern_letters(sequence)
        if bad:
            raise InputError(f"{display}: line {number}: guide {quote(sequence)} has letters that are not IUPAC "
                             f"codes: {', '.join(repr(b) for b in bad)}")
        try:
            limit = int(parts[1])
        except ValueError:
            raise InputError(f"{display}: line {number}: the mismatch limit must be a whole number, "
                             f"not {parts[1]!r}") from None
        if limit < 0:
            raise InputError(f"{display}: line {number}: the mismatch limit cannot be negative ({limit})")
        entries.append((number, sequence, limit, parts[2] if len(parts) == 3 else None))
    if not entries:
        raise InputError(f"{display}: no guide lines after the pattern (line 2)")

    letters = [i for i, c in enumerate(pattern) if c != "N"]
    if not letters:
        raise InputError(f"{where}: pattern {quote(pattern)} has no PAM letters (all N)")
    three_prime = letters[-1] == len(pattern) - 1 or letters[0] >= len(pattern) - letters[-1] - 1
    # The PAM spans what every guide line leaves as N at that end.
    runs = [len(s) - len(s.rstrip("N")) if three_prime else len(s) - len(s.lstrip("N")) for _, s, _, _ in entries]
    pam_length = min(runs)
    span = len(pattern) - letters[0] if three_prime else letters[-1] + 1
    if pam_length < span:
        number = entries[runs.index(pam_length)][0]
        raise InputError(f"{display}: line {number}: the guide must be N over the PAM's {span} positions at the "
                         f"{'3' if three_prime else '5'}' end of the pattern on line 2")
    if pam_length >= len(pattern):
        raise InputError(f"{display}: guide lines are all N: no guide bases to search for")
    pam = pattern[-pam_length:] if three_prime else pattern[:pam_length]
    if not Path(genome).exists():
        raise InputError(f"{display}: line 1: genome {genome}: no such file or folder")
    names, sequences, limits = [], [], []
    for number, sequence, limit, name in entries:
        guide = sequence[:-pam_length] if three_prime else sequence[pam_length:]
        if limit >= len(guide):
            raise InputError(f"{display}: line {number}: {limit} mismatches allowed in a guide of {len(guide)} "
                             f"bases would match everywhere; allow fewer than the guide's length")
        if name is not None and name in names:
            raise InputError(f"{display}: line {number}: guide name {quote(name)} is used twice; names must be unique")
        names.append(name if name is not None else f"line_{number}")
        sequences.append(guide)
        limits.append(limit)
    return CasOffinderInput(genome=genome, pam=pam, pam_side=3 if three_prime else 5,
                            guides=PatternSet(tuple(names), tuple(sequences)), limits=tuple(limits),
                            dna_bulge=dna_bulge, rna_bulge=rna_bulge, pattern=pattern)


def reference_files(genome: str, origin: str) -> list[str]:
    """A FASTA file itself, or the FASTA files of a folder (sorted by name), as Cas-OFFinder reads line 1."""
    path = Path(genome)
    if path.is_dir():
        files = sorted(str(p) for p in path.iterdir()
                       if p.is_file() and p.name.lower().endswith(FASTA_SUFFIXES))
        if not files:
            raise InputError(f"{origin}: folder {genome} holds no FASTA files ({', '.join(FASTA_SUFFIXES)})")
        return files
    if not path.exists():
        raise InputError(f"{origin}: line 1: genome {genome}: no such file or folder" if origin != "reference"
                         else f"{genome}: no such file or folder")
    return [genome]

