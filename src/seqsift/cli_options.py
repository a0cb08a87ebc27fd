"""What every ``seqsift`` subcommand's parser shares: value types, the run options, the output options.

The value types raise ``argparse.ArgumentTypeError``, which the parser turns
into the one-line ``seqsift: error: ...`` of every other bad input.
:func:`add_run_options` adds the "where to run" group (backend, cluster,
task sizes, progress), worded per command, :func:`refuse_options_not_taken`
turns away the search options a command does not take, and
:func:`run_options` turns the group into the keyword arguments every job's
Python function takes; :func:`add_output_options`
adds ``-o``, ``--resume`` and ``--wait-for-lock``. search (cli.py), crispr
(crispr/cli.py) and screen (screening/cli.py) all use them.
"""
from __future__ import annotations

import argparse

from . import kernels
from .errors import InputError


def whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def positive_int(text: str) -> int:
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def gpu_list(text: str) -> list[int]:
    try:
        return [int(g) for g in text.split(",") if g.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of GPU indices: {text!r}") from None


SEARCH_ONLY = ("--algorithm", "--chunk-size", "--pattern-batch")
"""search's run options that another job's subcommand may leave out (``not_taken`` of :func:`add_run_options`)."""


def add_run_options(parser: argparse.ArgumentParser, *, algorithm_help: str | None = None,
                    pattern_batch_help: str = "patterns per task", not_taken: tuple[str, ...] = (),
                    why_not: str = "") -> None:
    """Where and how to run: the "where to run" group of every job's subcommand (and ``demo``).

    The defaults are search's. A command words ``--algorithm`` and ``--pattern-batch`` for itself
    with ``algorithm_help`` and ``pattern_batch_help``; the options of :data:`SEARCH_ONLY` it names in
    ``not_taken`` are left out of its help, and :func:`refuse_options_not_taken` turns them away
    ("--chunk-size is a search option; " + ``why_not``) when given other than their default.
    """
    unknown = set(not_taken) - set(SEARCH_ONLY)
    if unknown:
        raise ValueError(f"not search-only run options: {sorted(unknown)}")

    def help_unless_not_taken(flag: str, text: str) -> str:
        return argparse.SUPPRESS if flag in not_taken else text

    run = parser.add_argument_group("where to run")
    run.add_argument("--backend", default="auto", choices=["auto", *kernels.BACKENDS],
                     help="cuda when a GPU is visible (auto, default), else cpu")
    algorithm = run.add_argument("--algorithm", default="auto", help=help_unless_not_taken(
        "--algorithm", algorithm_help or f"auto (default) or one of: {', '.join(kernels.search_algorithms())}"))
    run.add_argument("--workers", type=positive_int, help="local CPU worker processes (default: one per core)")
    run.add_argument("--gpus", type=gpu_list, help="GPU indices for the local CUDA cluster, e.g. 0,2 (default: all)")
    run.add_argument("--scheduler", metavar="ADDRESS", help="join a running Dask scheduler, e.g. tcp://node1:8786")
    run.add_argument("--scheduler-file", metavar="PATH", help="join the Dask cluster described by this file")
    run.add_argument("--dashboard", action="store_true", help="serve the Dask dashboard on 127.0.0.1:8787")
    chunk_size = run.add_argument("--chunk-size", type=positive_int, help=help_unless_not_taken(
        "--chunk-size", "reference bases per task (default: from the genome size)"))
    pattern_batch = run.add_argument("--pattern-batch", type=positive_int,
                                     help=help_unless_not_taken("--pattern-batch", pattern_batch_help))
    run.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    run.add_argument("-v", "--verbose", action="store_true",
                     help="say how the job runs: the algorithm and why (search, screen), how it is cut into tasks")
    parser.set_defaults(run_options_not_taken=tuple(
        (action.option_strings[0], action.dest, action.default) for action in (algorithm, chunk_size, pattern_batch)
        if action.option_strings[0] in not_taken), run_options_why_not=why_not)


def refuse_options_not_taken(args) -> None:
    """Raise ``InputError`` for the first ``not_taken`` option (see :func:`add_run_options`) given a value."""
    for flag, dest, default in getattr(args, "run_options_not_taken", ()):
        if getattr(args, dest) != default:
            raise InputError(f"{flag} is a search option; {args.run_options_why_not}")


def add_output_options(parser: argparse.ArgumentParser, formats: str) -> None:
    """``-o``, ``--resume`` and ``--wait-for-lock`` (``formats``: what -o may name, for the help)."""
    parser.add_argument("-o", "--output", help=f"output {formats} (default: TSV on stdout); "
                                               ".tsv.gz and .bed.gz are compressed")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted job from the tasks it saved beside the -o file")
    parser.add_argument("--wait-for-lock", action="store_true",
                        help="if another job is writing the same -o file, wait for it (default: stop with an "
                             "error)")


def run_options(args) -> dict:
    """Where to run, as the keyword arguments every job's function takes (``search``, ``crispr``, ``screen``)."""
    return dict(backend=args.backend, workers=args.workers, gpus=args.gpus, scheduler=args.scheduler,
                scheduler_file=args.scheduler_file, dashboard=args.dashboard, progress=not args.no_progress)
