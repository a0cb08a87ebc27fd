"""Writers for hit rows: TSV, BED6, Parquet, or an in-memory DataFrame.

Every file writer writes to a temporary file beside the target and renames
it into place only when the job has finished, so a failed or interrupted job
never leaves a half-written output file. Standard output is streamed.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..patterns import STRAND_SYMBOLS

FORMATS = {".tsv": "tsv", ".txt": "tsv", ".bed": "bed", ".parquet": "parquet", ".pq": "parquet"}
DATASET_PART_ROWS = 4_000_000
"""Rows per file of a partitioned Parquet output (a folder of part-NNNNN.parquet)."""


def _is_dataset(path) -> bool:
    """A path ending in a separator, or an existing folder: a partitioned Parquet dataset."""
    return str(path).endswith(("/", os.sep)) or Path(path).is_dir()


def output_format(path: str | os.PathLike | None) -> str:
    """``tsv``, ``bed``, ``parquet`` or ``parquet-dataset`` for an output path (stdout: tsv)."""
    if path is None or str(path) == "-":
        return "tsv"
    if _is_dataset(path):
        return "parquet-dataset"
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"{path}: unknown output format {suffix or '(no extension)'!r}; use one of "
                         f"{', '.join(sorted(FORMATS))}, or a folder path ending in / for partitioned Parquet")
    return FORMATS[suffix]


def check_output_path(path: str | os.PathLike | None) -> None:
    """Fail before any work if the output could not be written."""
    if path is None or str(path) == "-":
        return
    output_format(path)
    target = Path(path)
    directory = target.resolve().parent
    if not directory.is_dir():
        raise InputError(f"{path}: output directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise InputError(f"{path}: output directory {directory} is not writable")
    if target.is_dir() and any(target.iterdir()):
        raise InputError(f"{path}: the output folder is not empty")


def named(rows: pd.DataFrame, columns: list[str], record_names, pattern_names) -> pd.DataFrame:
    """Index columns -> names (record, pattern, strand), in output column order."""
    out = rows[columns].copy()
    out["record"] = np.asarray(record_names, dtype=object)[rows["record"].to_numpy()]
    out["pattern"] = np.asarray(pattern_names, dtype=object)[rows["pattern"].to_numpy()]
    out["strand"] = np.asarray(STRAND_SYMBOLS, dtype=object)[rows["strand"].to_numpy()]
    return out


class HitWriter:
    """Streams named rows to ``path`` (``None`` or ``-``: standard output).

    Files and folders are written under a temporary name beside the target
    (``.NAME.XXXX.part``) and moved into place by :meth:`close`; :meth:`abort`
    removes them, leaving the target untouched.
    """

    def __init__(self, path: str | os.PathLike | None, columns: list[str]):
        self.format = output_format(path)
        self.columns = columns
        self.count = 0
        self.path = None if path is None or str(path) == "-" else Path(str(path).rstrip("/" + os.sep))
        self._temp: Path | None = None
        self._stream = None       # tsv / bed: a binary stream
        self._parquet = None      # parquet: the open pyarrow ParquetWriter
        self._part_rows = 0       # parquet-dataset: rows in the current part file
        self._parts = 0
        if self.path is None:
            sys.stdout.flush()
            self._stream = sys.stdout.buffer
        elif self.format == "parquet-dataset":
            self._temp = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.", suffix=".part",
                                               dir=self.path.resolve().parent))
        else:
            fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".part",
                                        dir=self.path.resolve().parent)
            self._temp = Path(temp)
            if self.format == "parquet":
                os.close(fd)
            else:
                self._stream = os.fdopen(fd, "wb")
        if self.format == "tsv":
            self._stream.write(("#" + "\t".join(columns) + "\n").encode())

    def write(self, rows: pd.DataFrame) -> None:
        if len(rows) == 0:
            return
        self.count += len(rows)
        if self.format == "parquet":
            self._write_parquet(_arrow_table(rows), self._temp)
        elif self.format == "parquet-dataset":
            if self._parquet is not None and self._part_rows >= DATASET_PART_ROWS:
                self._parquet.close()
                self._parquet, self._part_rows = None, 0
            if self._parquet is None:
                self._parts += 1
            self._write_parquet(_arrow_table(rows), self._temp / f"part-{self._parts - 1:05d}.parquet")
            self._part_rows += len(rows)
        else:
            self._write_text(_arrow_table(self._bed(rows) if self.format == "bed" else rows))

    def _write_parquet(self, table, path: Path) -> None:
        import pyarrow.parquet as pq

        if self._parquet is None:
            self._parquet = pq.ParquetWriter(path, table.schema)
        self._parquet.write_table(table)

    def _write_text(self, table) -> None:
        import pyarrow as pa
        import pyarrow.csv as csv

        # Arrow's CSV writer is ~10x faster than pandas' for millions of rows. Names
        # and CIGARs hold no tab or newline, so no field needs quoting. It encodes
        # in memory and we write the bytes: handed the Python file object, it wrote
        # at wrong offsets once (NUL-filled gaps) in the multi-threaded client.
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
        """Finish the output and move it into place."""
        if self.format in ("parquet", "parquet-dataset") and self._parquet is None and self.count == 0:
            # No hit: still a valid, empty table with the columns.
            empty = self._temp if self.format == "parquet" else self._temp / "part-00000.parquet"
            self._write_parquet(_arrow_table(_empty_frame(self.columns)), empty)
        if self._parquet is not None:
            self._parquet.close()
        if self._temp is None:
            self._stream.flush()
            return
        if self._stream is not None:
            self._stream.close()
        if self.format == "parquet-dataset" and self.path.is_dir():
            self.path.rmdir()  # checked empty before the job
        os.replace(self._temp, self.path)
        self._temp = None

    def abort(self) -> None:
        """Drop the partial output: the target path is left untouched."""
        if self._temp is None:
            return
        try:
            if self._parquet is not None:
                self._parquet.close()
            elif self._stream is not None:
                self._stream.close()
        finally:
            if self._temp.is_dir():
                shutil.rmtree(self._temp, ignore_errors=True)
            else:
                self._temp.unlink(missing_ok=True)
            self._temp = None


OUTPUT_DTYPES = {"record": object, "start": np.int64, "end": np.int64, "pattern": object,
                 "distance": np.int16, "strand": object, "aligned": object, "cigar": object}


def _empty_frame(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: np.empty(0, dtype=OUTPUT_DTYPES[c]) for c in columns})


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
            return _empty_frame(self.columns)
        return pd.concat(self.parts, ignore_index=True)
