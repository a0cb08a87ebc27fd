"""Writers for hit rows: TSV, BED6, Parquet, or an in-memory DataFrame.

Every file writer writes to a temporary file beside the target and renames
it into place only when the job has finished, so a failed or interrupted job
never leaves a half-written output file. Standard output is streamed.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..patterns import STRAND_SYMBOLS

FORMATS = {".tsv": "tsv", ".txt": "tsv", ".bed": "bed", ".parquet": "parquet", ".pq": "parquet"}


def output_format(path: str | os.PathLike | None) -> str:
    """``tsv``, ``bed`` or ``parquet`` from the output path's extension (stdout: tsv)."""
    if path is None or str(path) == "-":
        return "tsv"
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"{path}: unknown output format {suffix or '(no extension)'!r}; "
                         f"use one of {', '.join(sorted(FORMATS))}")
    return FORMATS[suffix]


def check_output_path(path: str | os.PathLike | None) -> None:
    """Fail before any work if the output could not be written."""
    if path is None or str(path) == "-":
        return
    output_format(path)
    directory = Path(path).resolve().parent
    if not directory.is_dir():
        raise InputError(f"{path}: output directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise InputError(f"{path}: output directory {directory} is not writable")
    if Path(path).is_dir():
        raise InputError(f"{path}: is a directory, not an output file")


def named(rows: pd.DataFrame, columns: list[str], record_names, pattern_names) -> pd.DataFrame:
    """Index columns -> names (record, pattern, strand), in output column order."""
    out = rows[columns].copy()
    out["record"] = np.asarray(record_names, dtype=object)[rows["record"].to_numpy()]
    out["pattern"] = np.asarray(pattern_names, dtype=object)[rows["pattern"].to_numpy()]
    out["strand"] = np.asarray(STRAND_SYMBOLS, dtype=object)[rows["strand"].to_numpy()]
    return out


class HitWriter:
    """Streams named rows to ``path`` (``None`` or ``-``: standard output)."""

    def __init__(self, path: str | os.PathLike | None, columns: list[str]):
        self.path = None if path is None or str(path) == "-" else Path(path)
        self.format = output_format(path)
        self.columns = columns
        self.count = 0
        self._parquet = None
        if self.path is None:
            sys.stdout.flush()
            self._stream = sys.stdout.buffer
            self._temp = None
        else:
            fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".part", dir=self.path.resolve().parent)
            self._temp = Path(temp)
            self._stream = None if self.format == "parquet" else os.fdopen(fd, "wb")
            if self.format == "parquet":
                os.close(fd)
        if self.format == "tsv":
            self._stream.write(("#" + "\t".join(columns) + "\n").encode())

    def write(self, rows: pd.DataFrame) -> None:
        if len(rows) == 0:
            return
        import pyarrow as pa

        self.count += len(rows)
        if self.format == "parquet":
            import pyarrow.parquet as pq

            table = _arrow_table(rows)
            if self._parquet is None:
                self._parquet = pq.ParquetWriter(self._temp, table.schema)
            self._parquet.write_table(table)
            return
        import pyarrow.csv as csv

        table = _arrow_table(self._bed(rows) if self.format == "bed" else rows)
        # Arrow's CSV writer is ~10x faster than pandas' for millions of rows. Names
        # and CIGARs hold no tab or newline, so no field needs quoting.
        # Encoded in memory, then written by us: handing Arrow the Python file object
        # made it write at wrong offsets (NUL-filled gaps) in a multi-threaded client.
        encoded = pa.BufferOutputStream()
        csv.write_csv(table, encoded, write_options=csv.WriteOptions(
            include_header=False, delimiter="\t", quoting_style="none"))
        self._stream.write(encoded.getvalue().to_pybytes())

    @staticmethod
    def _bed(rows: pd.DataFrame) -> pd.DataFrame:
        """BED6: chrom start end name score strand (ends mode: the last character)."""
        start = rows["start"] if "start" in rows else rows["end"] - 1
        return pd.DataFrame({"chrom": rows["record"], "start": start, "end": rows["end"],
                             "name": rows["pattern"], "score": rows["distance"], "strand": rows["strand"]})

    def close(self) -> None:
        """Finish the file and move it into place."""
        if self.format == "parquet":
            if self._parquet is None:  # no hit: still a valid, empty table with the columns
                import pyarrow as pa
                import pyarrow.parquet as pq

                pq.write_table(pa.table({c: pa.array([], type=pa.string()) for c in self.columns}), self._temp)
            else:
                self._parquet.close()
        elif self._temp is not None:
            self._stream.close()
        else:
            self._stream.flush()
        if self._temp is not None:
            os.replace(self._temp, self.path)
            self._temp = None

    def abort(self) -> None:
        """Drop the partial file: the target path is left untouched."""
        if self._temp is None:
            return
        try:
            if self._parquet is not None:
                self._parquet.close()
            elif self._stream is not None:
                self._stream.close()
        finally:
            self._temp.unlink(missing_ok=True)
            self._temp = None


def _arrow_table(rows: pd.DataFrame):
    """An Arrow table built column by column from NumPy arrays.

    (``pa.Table.from_pandas`` on pandas' Arrow-backed string columns, sliced
    by the merge, gave CSV bytes with NUL runs: pyarrow 26 with pandas 3.1.)
    """
    import pyarrow as pa

    columns = {}
    for name in rows.columns:
        values = rows[name].to_numpy()
        if values.dtype.kind in "OUT":
            values = pa.array(values.astype(object), type=pa.string())
        columns[name] = values
    return pa.table(columns)


class FrameCollector:
    """The Python API's writer: keeps the rows and returns one DataFrame."""

    def __init__(self, columns: list[str]):
        self.columns = columns
        self.parts: list[pd.DataFrame] = []
        self.count = 0

    def write(self, rows: pd.DataFrame) -> None:
        if len(rows):
            self.parts.append(rows)
            self.count += len(rows)

    def frame(self) -> pd.DataFrame:
        if not self.parts:
            return pd.DataFrame({c: pd.Series(dtype=object) for c in self.columns})
        return pd.concat(self.parts, ignore_index=True)
