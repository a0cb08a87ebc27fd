"""seqsift: approximate matching of many short patterns against whole genomes.

Public surface: :func:`search` and the ``seqsift`` command line (``cli.py``).
"""
__version__ = "0.1.0"

from .engine import search  # noqa: E402

__all__ = ["search", "__version__"]
