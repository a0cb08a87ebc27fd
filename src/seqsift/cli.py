"""The ``seqsift`` command line: ``search``, ``screen`` (screening/cli.py), ``crispr`` (crispr/cli.py), ``demo``, ``bench``.

Every way a run can end shows the user one line on stderr, never a traceback:

* bad input: ``seqsift: error: ...`` naming the file, exit status 2, no
  partial output file;
* anything else that fails (a task raising on a worker, a bug):
  ``seqsift: error: <what> (details in <log>)``, exit status 1, with the full
  traceback, remote frames included, in that log file (``$TMPDIR/seqsift-*.log``);
* Ctrl-C: ``seqsift: interrupted``, exit status 130; the local cluster's
  workers never see the signal (``seqsift.cluster``) and are shut down;
* the reader of standard output going away (``seqsift search ... | head``):
  silence, and exit status 141 (128 + SIGPIPE), what a shell reports for
  ``grep`` or ``cat`` cut short the same way.

The console script (and ``python -m seqsift``) is :func:`console_main`: it
runs :func:`main` and then ends the process at once (:func:`exit_now`),
without the interpreter's teardown of CuPy, Numba and Dask objects. Python
code calling :func:`main` gets its exit status back as before.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import sys
import tempfile
import threading
import time
import traceback
from importlib import resources

from . import __version__, kernels
from .cli_options import add_output_options, add_run_options, positive_int, run_options
from .searching import search
from .searching.job import MODES
from .errors import (EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_FAILED, EXIT_INTERRUPTED, InputError,
                     discard_standard_output, exit_now, note)
from .pattern_set import STRAND_CHOICES
from .crispr.cli import add_crispr_parser
from .screening.cli import add_screen_parser


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block), like every other seqsift error."""

    def error(self, message: str):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def build_parser(extra_commands=()) -> argparse.ArgumentParser:
    """The ``seqsift`` parser; ``extra_commands``: functions adding subcommands from layers above this one
    (console.py adds server.py's ``serve``), each called with the subparsers."""
    parser = _Parser(prog="seqsift", description=(
        "Find approximate occurrences of many short patterns in whole genomes, "
        "on GPUs or CPU cores, through Dask."))
    parser.add_argument("--version", action="version", version=f"seqsift {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = commands.add_parser("search", help="search a FASTA reference for patterns",
                            description="Search REF for PATTERNS with at most k mismatches or differences.")
    s.add_argument("reference", metavar="REF", help="FASTA file (plain, BGZF or gzip)")
    s.add_argument("patterns", metavar="PATTERNS", nargs="?",
                   help="FASTA, one-per-line or name<TAB>sequence file; or sequences, comma-separated")
    s.add_argument("-p", "--pattern", action="append", default=[], metavar="SEQ",
                   help="a pattern on the command line (repeatable)")
    s.add_argument("-k", type=int, required=True, help="mismatches (hamming) or differences (edit) allowed")
    s.add_argument("--metric", default="hamming", choices=kernels.METRICS, help="hamming (default) or edit")
    s.add_argument("--mode", default="best", choices=MODES,
                   help="best: one row per locus with start (default); ends: every end position")
    s.add_argument("--strand", default="both", choices=list(STRAND_CHOICES), help="both (default), + or -")
    s.add_argument("--alphabet", default="dna", choices=["dna", "bytes"],
                   help="dna (default) or bytes: plain byte matching of non-DNA text (case-sensitive, "
                        "+ strand only; algorithms exact-shiftor-scan, edit-wm-scan, edit-wm-segmented)")
    s.add_argument("--no-align", action="store_true", help="leave out the aligned text and CIGAR columns")
    add_output_options(s, ".tsv, .bed, .parquet or folder/")
    add_run_options(s)
    s.set_defaults(handler=cmd_search)

    d = commands.add_parser("demo", help="search the bundled lambda phage genome for CRISPR guides",
                            description="Search the bundled lambda phage genome (NC_001416.1) for 40 "
                                        "20-nt guides drawn from it, k=3, both strands, and time it.")
    d.add_argument("-k", type=int, default=3, help="mismatches allowed (default 3)")
    add_run_options(d)
    d.set_defaults(handler=cmd_demo)
    add_screen_parser(commands)
    add_crispr_parser(commands)
    for add_command in extra_commands:
        add_command(commands)
    c = commands.add_parser("cache", help="list or clear seqsift's cache (genome caches of the references used)",
                            description="List what seqsift's cache folder holds, with sizes, or remove the "
                                        "cached references (rebuilt when next used; measured tables are kept).")
    what = c.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="each cached reference with its size, and the total")
    what.add_argument("--clear", action="store_true", help="remove the cached references")
    c.set_defaults(handler=cmd_cache)
    b = commands.add_parser("bench", help="measure every algorithm here; auto then uses the results",
                            description="Time every algorithm of a backend on random text at a grid of job "
                                        "shapes; write bench.md, bench.json and bench.png, and save the "
                                        "table that --algorithm auto uses on this machine (not with "
                                        "--quick).")
    b.add_argument("--backend", default="auto", choices=["auto", *kernels.BACKENDS])
    b.add_argument("--out", default="seqsift-bench", help="folder for the results (default ./seqsift-bench)")
    b.add_argument("--quick", action="store_true",
                   help="a small grid on short texts (a smoke test): writes only its report, not the table")
    b.add_argument("--no-save-table", action="store_true", help="do not change the table auto uses")
    b.set_defaults(handler=cmd_bench)
    return parser


def cmd_cache(args) -> int:
    from .cache import clear_cache, list_cache

    return list_cache(sys.stdout) if args.list else clear_cache(sys.stdout)


def cmd_bench(args) -> int:
    from pathlib import Path

    from .bench import run_bench
    from .runtime.clients import resolve_backend

    backend = resolve_backend(args.backend)
    run_bench(backend, Path(args.out), quick=args.quick, save_table=not args.no_save_table,
              log=lambda line: print(line, flush=True))
    print(f"results in {args.out}/bench.md, bench.json, bench.png")
    return 0


def _patterns_argument(args) -> object:
    """Patterns from the positional argument and/or ``--pattern`` (a file path or a PatternSet)."""
    from .io.patterns import patterns_from_arguments

    return patterns_from_arguments(args.patterns, args.pattern, alphabet=getattr(args, "alphabet", "dna"),
                                   note=note)


def _search_options(args) -> dict:
    """search's own run options, beside the shared ones (cli_options.run_options)."""
    return dict(algorithm=args.algorithm, verbose=args.verbose, chunk_size=args.chunk_size,
                pattern_batch_size=args.pattern_batch, **run_options(args))


def cmd_search(args) -> int:
    search(args.reference, _patterns_argument(args), args.k, metric=args.metric, strand=args.strand,
           mode=args.mode, output=args.output or "-", align=not args.no_align, resume=args.resume,
           alphabet=args.alphabet, wait_for_lock=args.wait_for_lock, **_search_options(args))
    return 0


def demo_guides(sequence: str, count: int = 40, length: int = 20) -> list[tuple[str, str]]:
    """``count`` guides: the 20-mers before an NGG PAM, evenly spaced over the genome."""
    sites = [m.start() - length for m in re.finditer(r"(?=[ACGT]GG)", sequence) if m.start() >= length]
    step = max(1, len(sites) // count)
    return [(f"guide_{i + 1:02d}_at_{s}", sequence[s:s + length]) for i, s in enumerate(sites[::step][:count])]


def cmd_demo(args) -> int:
    import pandas as pd

    reference = resources.files("seqsift") / "data" / "lambda_phage.fa"
    with resources.as_file(reference) as path:
        sequence = "".join(line.strip() for line in open(path) if not line.startswith(">"))
        guides = demo_guides(sequence)
        began = time.perf_counter()
        hits = search(str(path), guides, args.k, metric="hamming", **_search_options(args))
        elapsed = time.perf_counter() - began
    with pd.option_context("display.max_rows", 30, "display.width", 120):
        print(hits.to_string(max_rows=30, index=False))
    per_guide = hits.groupby("pattern").size()
    print(f"\nlambda phage NC_001416.1 ({len(sequence):,} bp), {len(guides)} guides of 20 nt, "
          f"k={args.k}, both strands: {len(hits):,} hits "
          f"({int((per_guide == 1).sum())} guides hit exactly one site) in {elapsed:.2f} s "
          f"(cluster start-up included)")
    return 0


def redeliver_swallowed_interrupts(unraisable) -> None:
    """``sys.unraisablehook`` of the command: a Ctrl-C that Python swallowed is delivered again.

    A KeyboardInterrupt raised where Python cannot propagate an exception (a gc
    callback, a weakref callback, ``__del__``: "Exception ignored in ...") is
    dropped, so a Ctrl-C that fell there, while the command imported modules or
    collected garbage, was lost, and a job waiting on a long task waited on
    (seen in tests/test_cli_endings.py: importlib's module-lock callback, and
    distributed's gc timer). Here it is raised again once this hook has
    returned: a SIGALRM a millisecond on (:func:`_interrupt_outside_the_hook`;
    raised in this hook it would be dropped too). Other exceptions go to
    Python's own hook.
    """
    if not issubclass(unraisable.exc_type, KeyboardInterrupt):
        sys.__unraisablehook__(unraisable)
    elif threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGALRM, _interrupt_outside_the_hook)
        signal.setitimer(signal.ITIMER_REAL, 0.001)
    else:
        import _thread

        _thread.interrupt_main()


def _interrupt_outside_the_hook(signum, frame) -> None:
    """SIGALRM's handler: KeyboardInterrupt, unless the hook is still running (then a millisecond later)."""
    if frame is not None and frame.f_code is redeliver_swallowed_interrupts.__code__:
        signal.setitimer(signal.ITIMER_REAL, 0.001)
        return
    raise KeyboardInterrupt


def main(argv: list[str] | None = None, extra_commands=()) -> int:
    try:
        args = build_parser(extra_commands).parse_args(argv)
    except SystemExit as exit_request:  # --help, --version, or a one-line usage error
        return exit_request.code
    sys.unraisablehook = redeliver_swallowed_interrupts
    try:
        return args.handler(args)
    except InputError as err:
        print(f"seqsift: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("seqsift: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        discard_standard_output()
        return EXIT_BROKEN_PIPE
    except OSError as err:  # disk full, permission lost mid-job, ...
        print(f"seqsift: error: {err}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as err:  # a task that raised on a worker, a bug: the traceback goes to a log
        print(f"seqsift: error: {_one_line(err)} (details in {_write_traceback_log(err, argv)})",
              file=sys.stderr)
        return EXIT_FAILED


def console_main(extra_commands=()) -> None:
    """The ``seqsift`` command run in this process (console.py sends it to a server first, if one
    listens): :func:`main` with the command line's arguments, then :func:`exit_now`."""
    exit_now(main(extra_commands=extra_commands))


def _one_line(err: BaseException, limit: int = 300) -> str:
    """``Type: first line of the message``, cut at ``limit`` characters."""
    lines = str(err).strip().splitlines()
    text = f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _write_traceback_log(err: BaseException, argv: list[str] | None) -> str:
    """Write the command and ``err``'s full traceback to a new ``$TMPDIR/seqsift-*.log``; its path.

    A task's exception raised on a Dask worker carries the worker's frames, so the
    log shows where on the worker it failed.
    """
    command = shlex.join(["seqsift", *(sys.argv[1:] if argv is None else argv)])
    text = (f"seqsift {__version__}, Python {sys.version.split()[0]}\n$ {command}\n\n"
            + "".join(traceback.format_exception(err)))
    try:
        descriptor, path = tempfile.mkstemp(prefix="seqsift-", suffix=".log")
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
    except OSError:  # no writable temporary folder: the traceback is the only record left
        sys.stderr.write(text)
        return "the traceback above"
    return path


if __name__ == "__main__":
    console_main()
