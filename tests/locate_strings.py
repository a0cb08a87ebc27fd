"""``locate``: the engine's ``kernels.locate_packed`` with each hit's CIGAR as a Python string.

The package builds CIGARs as one ASCII buffer with offsets (an Arrow string
array's layout, no Python object per hit); the tests compare them one hit at a
time, as strings.
"""
from __future__ import annotations

import numpy as np

from seqsift.kernels import locate_packed


def locate(metric: str, text: np.ndarray, batch, row, end, distance,
           code_of: np.ndarray | None = None) -> tuple[np.ndarray, list[str]]:
    """(starts int64, CIGAR strings) of the hits (row[h], end[h], distance[h]); raises as locate_packed does."""
    starts, (offsets, data) = locate_packed(metric, text, batch, row, end, distance, code_of=code_of)
    cigars = data.tobytes().decode("ascii")
    return starts, [cigars[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
