"""seqsift: approximate matching of many short patterns against whole genomes.

Public surface: :func:`search` (patterns against a genome), :func:`screen`
(Smith-Waterman scores of sequence pairs), :func:`crispr` (CRISPR off-target sites) and the ``seqsift`` command line
(``cli.py``).
"""
__version__ = "0.1.0"

from .engine import search  # noqa: E402
from .screening import screen  # noqa: E402
from .crispr import crispr  # noqa: E402  (the function; the package stays importable as seqsift.crispr.*)

__all__ = ["search", "screen", "crispr", "__version__"]
