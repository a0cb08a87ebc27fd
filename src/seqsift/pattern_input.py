"""Moved to :mod:`seqsift.io.patterns`; this name stays for code that imports the old one.

The module object itself is replaced, so ``seqsift.pattern_input`` and
``seqsift.io.patterns`` are one module (patching one patches the other).
"""
import sys

from .io import patterns as _moved

sys.modules[__name__] = _moved
