"""The ``seqsift crispr`` subcommand: CRISPR off-target sites with PAMs, bulges, CFD and MIT.

``add_crispr_parser(subcommands)`` adds it to the ``seqsift`` parser;
``cmd_crispr(args)`` runs it.

    seqsift crispr REF GUIDES --pam NGG -k 4 [--pam-side 3|5] [--dna-bulge B] [--rna-bulge B]
                   [-o out.tsv|.bed|.parquet|folder/] [--format cas-offinder] [--summary guides.tsv]
                   [--resume] [run options]
    seqsift crispr --cas-offinder INPUT [-o out.txt] [--format cas-offinder] [run options]
"""
from __future__ import annotations

import argparse

from ..cli_options import add_output_options, add_run_options, refuse_options_not_taken, run_options, whole_number
from ..errors import InputError


def add_crispr_parser(subcommands) -> argparse.ArgumentParser:
    """Add ``crispr`` to ``subcommands`` (argparse subparsers); returns its parser."""
    c = subcommands.add_parser(
        "crispr", help="find CRISPR off-target sites (PAM, mismatches, bulges, CFD and MIT scores)",
        description="Find every site of each guide in REF: the PAM matches exactly, the guide with at most k "
                    "mismatches and optionally one DNA or RNA bulge (counted apart from mismatches); both "
                    "strands; 0-based half-open forward coordinates covering the PAM. Columns: guide record "
                    "start end strand mismatches bulge_type bulge_size guide_aligned site cfd mit.")
    c.add_argument("reference", metavar="REF", nargs="?", help="FASTA file (plain, BGZF or gzip) or a folder of them")
    c.add_argument("guides", metavar="GUIDES", nargs="?",
                   help="FASTA, one-per-line or name<TAB>sequence file of guides (without the PAM), or the "
                        "guides themselves, comma-separated, as search reads PATTERNS")
    c.add_argument("--pam", default="NGG", help="PAM in IUPAC letters (default NGG; Cas12a: TTTV with --pam-side 5)")
    c.add_argument("-k", "--mismatches", type=whole_number, default=4, help="guide mismatches allowed (default 4)")
    c.add_argument("--pam-side", type=int, choices=[3, 5], default=3,
                   help="3: PAM after the guide (Cas9, default); 5: before it (Cas12a)")
    c.add_argument("--dna-bulge", type=whole_number, default=0, metavar="B",
                   help="largest DNA bulge (extra genome bases), 0-2 (default 0)")
    c.add_argument("--rna-bulge", type=whole_number, default=0, metavar="B",
                   help="largest RNA bulge (unpaired guide bases), 0-2 (default 0)")
    c.add_argument("--strand", default="both", choices=["both", "+", "-"], help="both (default), + or -")
    add_output_options(c, ".tsv, .bed, .parquet or folder/")
    c.add_argument("--format", default="auto", choices=["auto", "cas-offinder"], dest="output_format",
                   help="auto: by the -o suffix (default); cas-offinder: Cas-OFFinder's output lines")
    c.add_argument("--summary", metavar="FILE", help="per-guide site counts and MIT/CFD specificity (TSV)")
    c.add_argument("--merge", type=whole_number, metavar="W",
                   help="keep one site per guide and strand among sites whose starts lie within W bases (the "
                        "fewest mismatches + bulge bases, then the highest CFD; CRISPRme uses 3); default: "
                        "every site")
    c.add_argument("--cas-offinder", metavar="INPUT",
                   help="read a Cas-OFFinder input file (genome, pattern, guides with their limits) instead of "
                        "REF, GUIDES, --pam, -k and the bulge options")
    add_run_options(c, pattern_batch_help="guides per task", not_taken=("--algorithm",),
                    why_not="crispr has one PAM-first kernel per backend")
    c.set_defaults(handler=cmd_crispr)
    return c


def cmd_crispr(args) -> int:
    from . import crispr

    refuse_options_not_taken(args)
    if args.cas_offinder is not None:
        if args.reference is not None or args.guides is not None:
            raise InputError("--cas-offinder INPUT names the genome and the guides: give no REF or GUIDES")
        source = dict(cas_offinder=args.cas_offinder)
    else:
        if args.reference is None or args.guides is None:
            raise InputError("give REF and GUIDES (or --cas-offinder INPUT)")
        from ..errors import note
        from ..io.patterns import patterns_from_arguments

        guides = patterns_from_arguments(args.guides, [], note=note)  # a file, else sequences (as search's)
        source = dict(reference=args.reference, guides=guides, pam=args.pam, mismatches=args.mismatches,
                      pam_side=args.pam_side, dna_bulge=args.dna_bulge, rna_bulge=args.rna_bulge)
    source.setdefault("reference", None)
    crispr(**source, output=args.output or "-", output_format=args.output_format, summary=args.summary,
           strand=args.strand, resume=args.resume, wait_for_lock=args.wait_for_lock, merge=args.merge,
           chunk_size=args.chunk_size, guide_batch_size=args.pattern_batch, verbose=args.verbose,
           **run_options(args))
    return 0
