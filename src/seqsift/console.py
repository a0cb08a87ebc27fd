"""The ``seqsift`` command's entry point (pyproject's console script, and ``python -m seqsift``), and how it ends.

A run goes to this user's ``seqsift serve`` when one listens (server.py);
otherwise ``cli.console_main`` runs it in this process. This module and
server.py's client half import only the standard library, so a run handed
to the server starts without loading NumPy, pandas or Dask here.
"""
import atexit
import os
import sys

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command ended by Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as shells report grep or cat writing to a closed pipe


def main() -> None:
    """The command: this user's server runs it if one listens, else ``cli.console_main`` here."""
    from .server import run_on_server

    status = run_on_server(sys.argv[1:])
    if status is None:
        from .cli import console_main

        console_main()
        return
    exit_now(status)


def exit_now(code: int) -> None:
    """End this process with status ``code`` as soon as what it wrote is out, skipping the teardown.

    When ``cli.main`` returns, the job is over: its output is written, closed
    and renamed into place, its lock released, the cluster it started shut
    down and its worker processes gone. What a normal exit would still do is
    finalise the interpreter: join threads, run the ``atexit`` handlers, then
    free every module's objects one by one (CuPy's, Numba's, pandas', Dask's):
    0.7-0.9 s on the H100 after a 3 Gbp job, 0.2-0.3 s on a 2-core CPU
    machine after a small one, where the ``atexit`` handlers took under 5 ms
    of it (benchmarks/bench_startup.py measures the exit). Here the ``atexit``
    handlers still run (they remove temporary folders, flush logs, end
    multiprocessing's helpers), the standard streams are flushed, and
    ``os._exit`` ends the process; threads still running are daemons
    (Dask's, the progress bar's), which a normal exit does not wait for
    either. A reader gone from standard output at this last flush gives 141,
    and a flush that fails otherwise (disk full) a one-line error and 1, as
    anywhere else in a run.
    """
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = code or EXIT_BROKEN_PIPE
    except (OSError, ValueError) as err:  # disk full; stdout closed by the caller
        print(f"seqsift: error: writing standard output: {err}", file=sys.stderr)
        code = code or EXIT_FAILED
    try:
        sys.stderr.flush()
    except (OSError, ValueError):  # nowhere left to say anything
        pass
    os._exit(code)


def discard_standard_output() -> None:
    """Point standard output at /dev/null: the interpreter's final flush of what is still
    buffered would otherwise meet the closed pipe again and print "Exception ignored"."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout replaced by something without a descriptor
        pass
