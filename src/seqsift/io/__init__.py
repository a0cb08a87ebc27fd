"""Reading sequence files: references, pattern files, screen's FASTA/FASTQ inputs.

Everything that turns a file on disk into names and sequence bytes lives
here, so that ``seqsift.searching`` only orchestrates:

* :mod:`seqsift.io.reference` -- ``open_reference``: validate a FASTA
  reference (plain, gzip, BGZF), index it and read windows of it;
* :mod:`seqsift.io.patterns` -- ``read_patterns`` and friends: the user's
  patterns from files, Python objects or the command line.
"""
from .patterns import ALPHABETS, patterns_from_cli, read_patterns, validate_patterns_for_job
from .reference import NORMALISED_LINE_WIDTH, Reference, cache_directory, open_reference

__all__ = ["open_reference", "Reference", "cache_directory", "NORMALISED_LINE_WIDTH",
           "read_patterns", "patterns_from_cli", "validate_patterns_for_job", "ALPHABETS"]
