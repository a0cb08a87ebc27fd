"""Text columns of output rows, built from one buffer: no Python object per row.

Workers build columns of strings (search's ``aligned`` and ``cigar``,
crispr's ``site`` and ``guide_aligned``, the names the writers look up) as
Arrow arrays over one byte buffer (:func:`arrow_strings`), and hand them to
pandas as the column pandas itself makes of Python strs (:func:`text_column`):
the same dtype either way, so frames concatenate and compare alike, and they
pickle and write as Arrow.
"""
from __future__ import annotations

import numpy as np


def text_dtype():
    """The dtype pandas gives a column of Python strs: pandas 3's Arrow-backed ``str``, or object before it."""
    import pandas as pd  # here: a job's modules load before its tasks are submitted, pandas with its first rows

    return pd.Series(np.array([""], dtype=object)).dtype


def text_column(strings):
    """An Arrow string array as the column pandas makes of Python strs (:func:`text_dtype`), built without them.

    pandas 3 keeps strs as Arrow strings: the array goes in as it is. Other
    pandas versions (object columns) get Python strs.
    """
    import pandas as pd

    dtype = text_dtype()
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        return pd.arrays.ArrowStringArray(strings, dtype=dtype)
    return strings.to_numpy(zero_copy_only=False)


def arrow_strings(offsets: np.ndarray, data: np.ndarray):
    """Packed strings (item h = data[offsets[h]:offsets[h + 1]], int64 offsets) as an Arrow large_string array.

    The bytes are the array's buffer as they are; only a byte outside ASCII
    (none in a validated reference) sends them through Python, where it reads
    as U+FFFD, as ``bytes.decode("ascii", errors="replace")`` would.
    """
    import pyarrow as pa

    if data.size and int(data.max()) >= 0x80:
        text = data.tobytes()
        bounds = offsets.tolist()
        return pa.array([text[a:b].decode("ascii", errors="replace") for a, b in zip(bounds, bounds[1:])],
                        type=pa.large_string())
    return pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))


def string_column(offsets: np.ndarray, data: np.ndarray):
    """Packed strings (:func:`arrow_strings`) as pandas' ``str`` column (:func:`text_column`), zero-copy."""
    return text_column(arrow_strings(offsets, data))


def name_array(names, large: bool = True):
    """A sequence of names (a reference's records, a job's patterns) as one Arrow array of
    ``large_string`` (else ``string``), from the buffers of its TextList (a reference's names: as they
    are, a million of them without a str each)."""
    import pyarrow as pa

    from ..io.text_list import TextList

    offsets, data = TextList.of(names).packed()
    array = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))
    return array if large else array.cast(pa.string())
