"""seqsift: approximate matching of many short patterns against whole genomes.

Public surface: :func:`search` (patterns against a genome), :func:`screen`
(Smith-Waterman scores of sequence pairs) and the ``seqsift`` command line
(``cli.py``).
"""
__version__ = "0.1.0"

from .engine import search  # noqa: E402
from .screening import screen  # noqa: E402

__all__ = ["search", "screen", "__version__"]
