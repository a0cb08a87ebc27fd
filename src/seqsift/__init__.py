"""seqsift: approximate matching of many short patterns against whole genomes.

Public surface: :func:`search` (patterns against a genome), :func:`screen`
(Smith-Waterman scores of sequence pairs), :func:`crispr` (CRISPR off-target sites) and the ``seqsift`` command line
(``cli.py``).

Importing seqsift costs nothing beyond the standard library: each public
function loads its package (and NumPy, pandas, Dask, Numba) on first use. So
``seqsift --help`` or a command that fails on its input answers at once, and
a run handed to ``seqsift serve`` (console.py) starts in tens of
milliseconds.
"""
import sys as _sys
import types as _types

__version__ = "0.1.0"
__all__ = ["search", "screen", "crispr", "__version__"]

_PUBLIC = {"search": "seqsift.searching", "crispr": "seqsift.crispr", "screen": "seqsift.screening"}


def __getattr__(name: str):
    """``seqsift.search``, ``seqsift.crispr``, ``seqsift.screen``: imported on first use."""
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    function = getattr(import_module(_PUBLIC[name]), name)
    globals()[name] = function  # later lookups find it here, without this function
    return function


class _Package(_types.ModuleType):
    """This package's module type. Importing ``seqsift.crispr.<module>`` binds the subpackage to the
    name ``crispr`` here; the public name ``seqsift.crispr`` is the function, so that binding is
    left out (the subpackage stays importable as ``seqsift.crispr.*`` through ``sys.modules``)."""

    def __setattr__(self, name, value):
        if name == "crispr" and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
