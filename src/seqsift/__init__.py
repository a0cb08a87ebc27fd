"""seqsift: approximate matching of many short patterns against whole genomes.

Public surface: :func:`search` (patterns against a genome), :func:`screen`
(Smith-Waterman scores of sequence pairs), :func:`crispr` (CRISPR off-target sites) and the ``seqsift`` command line
(``cli.py``).

Importing seqsift is cheap: the packages behind ``search`` and ``crispr``
import pandas, Dask, distributed and Numba only when a job runs, and
``screen`` loads its package on first use, so ``seqsift --help`` or a
command that fails on its input answers at once.
"""
__version__ = "0.1.0"

from .engine import search  # noqa: E402
from .crispr import crispr  # noqa: E402  (the function; the package stays importable as seqsift.crispr.*)


def __getattr__(name: str):
    """``seqsift.screen``, imported on first use (its package loads Numba's Smith-Waterman kernels)."""
    if name == "screen":
        from .screening import screen

        globals()["screen"] = screen
        return screen
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["search", "screen", "crispr", "__version__"]
