"""What the family's CPU (``cpu.py``, Numba) and CUDA (``cuda.py``) paths share that needs no Numba.

A GPU screen reads these without importing Numba: its kernels are CuPy's,
and Numba's import and cache loads had cost its command 0.5-0.9 s on the
H100 host (benchmarks/README.md).
"""
from __future__ import annotations

import numpy as np

CODE_N = 4
"""Text code of N and of every non-ACGT character (seqsift.alphabet.NEVER)."""

PLANES = 3
"""Bit planes per character (sw-bpbc): bit 0 and bit 1 of the base code, and the N bit."""

DPX_LANE_MAX = 32767
"""The largest value of a 16-bit lane of sw-dpx and sw-dpx-affine (dpx.cu)."""


def sliced_constant(value: int, s: int, dtype) -> np.ndarray:
    """A constant as s words: word i all ones when bit i of ``value`` is set (the paper's 1^32)."""
    ones = np.iinfo(dtype).max
    return np.array([ones if (value >> i) & 1 else 0 for i in range(s)], dtype=dtype)


def dpx_bias(scoring_open: int, c2: int) -> int:
    """B of dpx.cu: the smallest bias that keeps every stored lane >= 0 (so that the plain
    32-bit subtractions of a packed constant never borrow across lanes)."""
    return max(0, int(scoring_open) - int(c2))
