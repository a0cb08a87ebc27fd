"""The ``seqsift`` command's entry point (pyproject's console script, and ``python -m seqsift``).

A run goes to this user's ``seqsift serve`` when one listens (server.py);
otherwise ``cli.console_main`` runs it in this process. This module and
server.py's client half import only the standard library, so a run handed
to the server starts without loading NumPy, pandas or Dask here.
"""
import os
import sys


def main() -> None:
    from .server import run_on_server

    status = run_on_server(sys.argv[1:])
    if status is None:
        from .cli import console_main

        console_main()
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
