"""The ``seqsift`` command's entry point (pyproject's console script, and ``python -m seqsift``).

A run goes to this user's ``seqsift serve`` when one listens and can be
trusted (server_client.py); otherwise ``cli.console_main`` runs it in this
process, with the ``serve`` subcommand added by server.py. The layers, each
importing only those below it::

    console.py                     the entry: which of the two runs a command
    server.py                      ``seqsift serve``: runs cli.main for callers
    cli.py                         the parser and the commands
    server_client.py, errors.py    the standard library only

So a run handed to a server starts without loading NumPy, pandas or Dask here.
"""
import sys


def main() -> None:
    """The command: this user's server runs it if one listens, else ``cli.console_main`` here."""
    from .server_client import run_on_server

    status = run_on_server(sys.argv[1:])
    if status is None:
        from .cli import console_main
        from .server import add_serve_parser

        console_main(extra_commands=(add_serve_parser,))
        return
    from .errors import exit_now

    exit_now(status)
