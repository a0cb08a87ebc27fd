"""Moved to :mod:`seqsift.io.reference`; this name stays for code that imports the old one.

The module object itself is replaced, so ``seqsift.reference`` and
``seqsift.io.reference`` are one module (patching one patches the other).
"""
import sys

from .io import reference as _moved

sys.modules[__name__] = _moved
