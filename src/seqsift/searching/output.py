"""The search's writers: index rows from the merge -> named TSV, BED6, Parquet, or a DataFrame.

Record, pattern and strand arrive as indices; the writers look their names
up (:class:`HitWriter` with Arrow's ``take``, no Python object per row: for
tens of millions of hits this is most of the client's work). Files are
written by ``runtime.output.TableWriter`` (whole or not at all, on its
writer thread).
"""
from __future__ import annotations

import os
from functools import partial

import numpy as np
import pandas as pd

from ..pattern_set import STRAND_SYMBOLS
from ..runtime import stages
from ..runtime.output import FrameCollector, NameColumns, TableWriter, arrow_column, empty_frame

FORMATS = ("tsv", "bed", "parquet")
OUTPUT_DTYPES = {"record": object, "start": np.int64, "end": np.int64, "pattern": object,
                 "distance": np.int16, "strand": object, "aligned": object, "cigar": object}


def hit_writer(output, columns: list[str], record_names, pattern_names):
    """The writer for ``output``: None -> the API's DataFrame (FrameCollector), else a HitWriter."""
    if output is None:  # the names as object arrays once, not per write
        return FrameCollector(partial(named, columns=columns, record_names=np.asarray(record_names, dtype=object),
                                      pattern_names=np.asarray(pattern_names, dtype=object)),
                              partial(empty_frame, columns, OUTPUT_DTYPES))
    return HitWriter(output, columns, record_names, pattern_names)


def named(rows: pd.DataFrame, columns: list[str], record_names, pattern_names) -> pd.DataFrame:
    """Index columns -> names (record, pattern, strand), in output column order (the Python API's frame)."""
    out = rows[columns].copy()
    out["record"] = np.asarray(record_names, dtype=object)[rows["record"].to_numpy()]
    out["pattern"] = np.asarray(pattern_names, dtype=object)[rows["pattern"].to_numpy()]
    out["strand"] = np.asarray(STRAND_SYMBOLS, dtype=object)[rows["strand"].to_numpy()]
    return out


class HitWriter(TableWriter):
    """Search rows (index columns, from the merge) -> named columns, in Arrow.

    Record, pattern and strand arrive as indices; their names are looked up
    with Arrow's ``take`` (no Python object per row: for tens of millions of
    hits this is most of the client's work).
    """

    def __init__(self, path: str | os.PathLike | None, columns: list[str], record_names, pattern_names,
                 background: bool = True):
        super().__init__(path, columns, OUTPUT_DTYPES, FORMATS, background=background)
        self._names = NameColumns(record=record_names, pattern=pattern_names, strand=STRAND_SYMBOLS)

    def write(self, rows: pd.DataFrame) -> None:
        """Append rows of index columns (the writer thread converts them; ``rows`` must not change after)."""
        if len(rows):
            self._hand_over(len(rows), self._write_rows, rows)

    def _write_rows(self, rows: pd.DataFrame) -> None:
        with stages.timed("write"):
            self._append(self._named_table(rows))

    def _named_table(self, rows: pd.DataFrame):
        import pyarrow as pa
        import pyarrow.compute as pc

        arrays = {}
        for name in self.columns:
            if name in self._names:
                arrays[name] = self._names.take(name, rows[name])
            else:
                arrays[name] = arrow_column(rows[name])
        if self.format == "bed":   # BED6: chrom start end name score strand (ends mode: the last character)
            start = arrays["start"] if "start" in arrays else pc.subtract(arrays["end"], 1)
            arrays = {"chrom": arrays["record"], "start": start, "end": arrays["end"], "name": arrays["pattern"],
                      "score": arrays["distance"], "strand": arrays["strand"]}
        return pa.table(arrays)


