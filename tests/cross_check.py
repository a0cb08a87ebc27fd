"""The cross-check libraries (edlib, parasail) are optional test dependencies.

Without one, only the comparisons against it are skipped, each where it is
needed; the tests against seqsift's own oracles in the same modules still run.
"""
from __future__ import annotations

import importlib
from types import ModuleType

import pytest


def optional(name: str) -> ModuleType | None:
    """The module ``name``, or None when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def require(module: ModuleType | None, name: str) -> ModuleType:
    """``module``, or skip the calling test (a cross-check) when it is not installed."""
    if module is None:
        pytest.skip(f"{name} is not installed: this cross-check against it is skipped")
    return module
