"""The ``seqsift screen`` subcommand: Smith-Waterman screening of sequence pairs.

``add_screen_parser(subcommands)`` adds it to the ``seqsift`` parser;
``cmd_screen(args)`` runs it.

    seqsift screen QUERIES TARGETS [--threshold T] [-o hits.tsv] [--all-vs-all]
                   [--match 2 --mismatch 1 --gap 1 | --gap-open O --gap-extend E]
                   [--no-align] [run options]

Output: TSV (a ``#`` header line) on standard output or in the ``-o`` file,
or Parquet for ``-o x.parquet``. Without --threshold: every pair's
``query target score``. With --threshold T: the pairs scoring at least T, with
``query_start query_end target_start target_end cigar`` (0-based, half-open;
CIGAR of =, X, I, D) unless --no-align; ``--threshold 0`` lists every pair
with its alignment.
"""
from __future__ import annotations

import argparse

from ..cli_options import (add_output_options, add_run_options, positive_int, refuse_options_not_taken,
                           run_options, whole_number)
from ..errors import InputError


def add_screen_parser(subcommands) -> argparse.ArgumentParser:
    """Add ``screen`` to ``subcommands`` (argparse subparsers); returns its parser."""
    s = subcommands.add_parser(
        "screen", help="score sequence pairs by Smith-Waterman (local alignment)",
        description="Score pairs of sequences (record k of QUERIES with record k of TARGETS, or every query "
                    "with every target) by Smith-Waterman: +match for equal bases, -mismatch "
                    "otherwise (N and other non-ACGT letters always mismatch), -gap per gap position (linear "
                    "gaps), or with --gap-open O --gap-extend E affine gaps: a gap of length L scores "
                    "-(O + (L-1) E), as parasail counts. Print "
                    "every pair's score, or with --threshold the pairs scoring at least T and their alignment.")
    s.add_argument("queries", metavar="QUERIES", help="FASTA or FASTQ file (plain or gzip)")
    s.add_argument("targets", metavar="TARGETS", help="FASTA or FASTQ file (plain or gzip)")
    s.add_argument("-t", "--threshold", type=whole_number, metavar="T",
                   help="report only pairs with score >= T, with their alignment (0: every pair)")
    add_output_options(s, ".tsv, .parquet or folder/")
    s.add_argument("--all-vs-all", action="store_true",
                   help="every query against every target (default: records paired by order)")
    s.add_argument("--match", type=whole_number, default=2, help="score of equal bases, c1 (default 2)")
    s.add_argument("--mismatch", type=whole_number, default=1, help="penalty of unequal bases, c2 (default 1)")
    s.add_argument("--gap", type=whole_number, default=1, help="penalty per gap position, g (default 1)")
    s.add_argument("--gap-open", type=whole_number, metavar="O",
                   help="affine gaps: penalty of a gap's first position (with --gap-extend; replaces --gap)")
    s.add_argument("--gap-extend", type=whole_number, metavar="E",
                   help="affine gaps: penalty of each further gap position (with --gap-open)")
    s.add_argument("--strand", choices=["+", "-", "both"], default="+",
                   help="score each query as given (+, the default), its reverse complement (-), or the better "
                        "of the two (both: reads from either strand); - and both add a strand column")
    s.add_argument("--no-align", action="store_true", help="leave out the alignment columns")
    s.add_argument("--word-bits", type=int, choices=[32, 64],
                   help="pairs per machine word of sw-bpbc (default: 32 on GPUs, 64 on CPUs)")
    s.add_argument("--batch-pairs", type=positive_int, metavar="N",
                   help="pairs per task (default: from the pair lengths and the workers)")
    add_run_options(s, algorithm_help=("auto (default: per length bucket, from seqsift bench), sw-bpbc (bit-sliced, "
                                       "32/64 pairs per word), sw-wordwise, sw-dpx (16-bit DPX lanes); also for "
                                       "affine gaps: sw-gotoh, sw-dpx-affine, sw-lanes (CPU cores only: 32 pairs in "
                                       "SIMD lanes, the CPU's default)"),
                    not_taken=("--chunk-size", "--pattern-batch"), why_not="screen splits its work by --batch-pairs")
    s.set_defaults(handler=cmd_screen)
    return s


def cmd_screen(args) -> int:
    from . import screen

    refuse_options_not_taken(args)
    if (args.gap_open is None) != (args.gap_extend is None):
        raise InputError("affine gaps need both --gap-open and --gap-extend")
    screen(args.queries, args.targets, threshold=args.threshold, match=args.match, mismatch=args.mismatch,
           gap=args.gap, gap_open=args.gap_open, gap_extend=args.gap_extend, all_vs_all=args.all_vs_all,
           align=not args.no_align, output=args.output or "-", algorithm=args.algorithm, word_bits=args.word_bits,
           batch_pairs=args.batch_pairs, verbose=args.verbose, strand=args.strand, resume=args.resume,
           wait_for_lock=args.wait_for_lock, **run_options(args))
    return 0
