"""Writers for hit rows: TSV, BED6, Parquet, or an in-memory DataFrame.

Every file writer writes to a temporary file beside the target and renames
it into place only when the job has finished, so a failed or interrupted job
never leaves a half-written output file. Standard output is streamed.

A search's writer (:class:`HitWriter`) encodes on a thread of its own
(``background.BackgroundWrites``), fed through a bounded queue: looking names up,
Arrow's CSV writer and Parquet encoding release the GIL, so the output is
written while the search goes on, and only the last rows' write remains
when the last task ends. An error there ends the job at the client's next
write or at :meth:`TableWriter.close`, as if it had been raised in place.
"""
from __future__ import annotations

import os
import secrets
import shutil
import stat
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..patterns import STRAND_SYMBOLS
from . import stages
from .background import BackgroundWrites

FORMATS = {".tsv": "tsv", ".txt": "tsv", ".bed": "bed", ".parquet": "parquet", ".pq": "parquet"}
DATASET_PART_ROWS = 4_000_000
"""Rows per file of a partitioned Parquet output (a folder of part-NNNNN.parquet)."""
WRITE_QUEUE = 4
"""Writes that may wait for the writer thread; past this, the client waits (memory stays bounded)."""


def _is_dataset(path) -> bool:
    """A path ending in a separator, or an existing folder: a partitioned Parquet dataset."""
    return str(path).endswith(("/", os.sep)) or Path(path).is_dir()


def output_format(path: str | os.PathLike | None, formats: dict[str, str] = FORMATS) -> str:
    """``tsv``, ``bed``, ``parquet`` or ``parquet-dataset`` for an output path (stdout: tsv)."""
    if path is None or str(path) == "-":
        return "tsv"
    if _is_dataset(path):
        return "parquet-dataset"
    suffix = Path(path).suffix.lower()
    if suffix not in formats:
        raise InputError(f"{path}: unknown output format {suffix or '(no extension)'!r}; use one of "
                         f"{', '.join(sorted(formats))}, or a folder path ending in / for partitioned Parquet")
    return formats[suffix]


def check_output_path(path: str | os.PathLike | None, formats: dict[str, str] = FORMATS) -> None:
    """Fail before any work if the output could not be written."""
    if path is None or str(path) == "-":
        return
    output_format(path, formats)
    target = Path(path)
    directory = target.resolve().parent
    if not directory.is_dir():
        raise InputError(f"{path}: output directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise InputError(f"{path}: output directory {directory} is not writable")
    if target.is_dir() and any(target.iterdir()):
        raise InputError(f"{path}: the output folder is not empty")


def _create_beside(target: Path, folder: bool) -> Path:
    """A new empty file (or folder) ``.NAME.XXXXXXXX.part`` beside ``target``, to be renamed onto it.

    Its mode is what the user would get from a shell: a new file 0666 and a
    folder 0777 less the umask (``mkstemp``/``mkdtemp`` would make them 0600
    and 0700), and a target that exists keeps its own mode.
    """
    try:
        keep_mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        keep_mode = None
    while True:
        temporary = target.parent / f".{target.name}.{secrets.token_hex(4)}.part"
        try:
            if folder:
                os.mkdir(temporary, 0o777)
            else:
                os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        if keep_mode is not None:
            os.chmod(temporary, keep_mode)
        return temporary


def named(rows: pd.DataFrame, columns: list[str], record_names, pattern_names) -> pd.DataFrame:
    """Index columns -> names (record, pattern, strand), in output column order (the Python API's frame)."""
    out = rows[columns].copy()
    out["record"] = np.asarray(record_names, dtype=object)[rows["record"].to_numpy()]
    out["pattern"] = np.asarray(pattern_names, dtype=object)[rows["pattern"].to_numpy()]
    out["strand"] = np.asarray(STRAND_SYMBOLS, dtype=object)[rows["strand"].to_numpy()]
    return out


class TableWriter:
    """Streams tables to ``path`` (``None`` or ``-``: standard output, TSV).

    The format comes from the path (``formats``: suffix -> tsv, bed or
    parquet; a folder path: a partitioned Parquet dataset). TSV starts with a
    plain header line of the column names (what pandas, R and spreadsheet
    users expect); BED has none (what BED tools expect). Files and folders are
    written under a temporary name beside the target (``.NAME.XXXX.part``)
    and moved into place by :meth:`close`; :meth:`abort` removes them, leaving
    the target untouched. With ``background``, tables are written on a
    thread of the writer's own (module docstring); ``count`` counts them as
    they are handed over.
    """

    def __init__(self, path: str | os.PathLike | None, columns: list[str], formats: dict[str, str] = FORMATS,
                 dtypes: dict | None = None, background: bool = False):
        self.format = output_format(path, formats)
        self.columns = columns
        self.dtypes = OUTPUT_DTYPES if dtypes is None else dtypes  # of each column: an empty Parquet file has them
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
        else:
            self._temp = _create_beside(self.target, folder=self.format == "parquet-dataset")
            if self.format in ("tsv", "bed"):
                self._stream = open(self._temp, "wb")
        if self.format == "tsv":
            self._stream.write(("\t".join(columns) + "\n").encode())
        self._thread = BackgroundWrites(WRITE_QUEUE, "seqsift-writer") if background else None

    def _hand_over(self, rows: int, write, *args) -> None:
        """Count ``rows`` and run ``write(*args)``: now, or queued for the writer thread."""
        self.count += rows
        if self._thread is None:
            write(*args)
        else:
            self._thread.submit(write, *args)

    @property
    def target(self) -> Path | None:
        """The file the output ends up in: ``path``, or where it points if it is a symbolic link
        (the link is kept and its target replaced, as a shell's ``>`` does)."""
        return None if self.path is None else Path(os.path.realpath(self.path))

    def write_table(self, table) -> None:
        """Append an Arrow table whose columns are ``columns`` (BED: its six columns)."""
        if table.num_rows:
            self._hand_over(table.num_rows, self._append, table)

    def _append(self, table) -> None:
        """Write ``table`` to the output (on the writer thread, if there is one)."""
        if self.format == "parquet":
            self._write_parquet(table, self._temp)
        elif self.format == "parquet-dataset":
            if self._parquet is not None and self._part_rows >= DATASET_PART_ROWS:
                self._parquet.close()
                self._parquet, self._part_rows = None, 0
            if self._parquet is None:
                self._parts += 1
            self._write_parquet(table, self._temp / f"part-{self._parts - 1:05d}.parquet")
            self._part_rows += table.num_rows
        else:
            self._write_text(table)

    def write(self, frame: pd.DataFrame) -> None:
        """Append a DataFrame with the ``columns``."""
        self.write_table(arrow_table(frame[self.columns]))

    def _write_parquet(self, table, path: Path) -> None:
        import pyarrow.parquet as pq

        if self._parquet is None:
            # Dictionary pages only for the text columns (names repeat); for the
            # integer columns pyarrow's attempt costs ~20% of the write for nothing.
            text = [field.name for field in table.schema if str(field.type) == "string"]
            self._parquet = pq.ParquetWriter(path, table.schema, use_dictionary=text)
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

    def close(self) -> None:
        """Finish the output and move it into place (raises what a write on the writer thread failed with)."""
        if self._thread is not None:
            self._thread.finish()   # on a failure (raised here) abort() still finds it, ended
            self._thread = None
        if self.format in ("parquet", "parquet-dataset") and self._parquet is None and self.count == 0:
            # No row: still a valid, empty table with the columns.
            empty = self._temp if self.format == "parquet" else self._temp / "part-00000.parquet"
            self._write_parquet(arrow_table(empty_frame(self.columns, self.dtypes)), empty)
        if self._parquet is not None:
            self._parquet.close()
        if self._temp is None:
            self._stream.flush()
            return
        if self._stream is not None:
            self._stream.close()
        if self.format == "parquet-dataset" and self.target.is_dir():
            self.target.rmdir()  # checked empty before the job
        os.replace(self._temp, self.target)
        self._temp = None

    def abort(self) -> None:
        """Drop the partial output: the target path is left untouched."""
        if self._thread is not None:
            thread, self._thread = self._thread, None
            thread.cancel()
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


class HitWriter(TableWriter):
    """Search rows (index columns, from the merge) -> named columns, in Arrow.

    Record, pattern and strand arrive as indices; their names are looked up
    with Arrow's ``take`` (no Python object per row: for tens of millions of
    hits this is most of the client's work).
    """

    def __init__(self, path: str | os.PathLike | None, columns: list[str], record_names, pattern_names,
                 background: bool = True):
        super().__init__(path, columns, background=background)
        import pyarrow as pa

        self._names = {"record": pa.array(list(record_names), type=pa.string()),
                       "pattern": pa.array(list(pattern_names), type=pa.string()),
                       "strand": pa.array(list(STRAND_SYMBOLS), type=pa.string())}

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
                arrays[name] = pc.take(self._names[name], pa.array(rows[name].to_numpy()))
            else:
                arrays[name] = arrow_column(rows[name])
        if self.format == "bed":   # BED6: chrom start end name score strand (ends mode: the last character)
            start = arrays["start"] if "start" in arrays else pc.subtract(arrays["end"], 1)
            arrays = {"chrom": arrays["record"], "start": start, "end": arrays["end"], "name": arrays["pattern"],
                      "score": arrays["distance"], "strand": arrays["strand"]}
        return pa.table(arrays)


OUTPUT_DTYPES = {"record": object, "start": np.int64, "end": np.int64, "pattern": object,
                 "distance": np.int16, "strand": object, "aligned": object, "cigar": object}


def empty_frame(columns: list[str], dtypes: dict = OUTPUT_DTYPES) -> pd.DataFrame:
    return pd.DataFrame({c: np.empty(0, dtype=dtypes[c]) for c in columns})


def arrow_table(rows: pd.DataFrame):
    """An Arrow table built column by column from NumPy arrays.

    (``pa.Table.from_pandas`` on pandas' Arrow-backed string columns, sliced
    by the merge, gave CSV bytes with NUL runs: pyarrow 26 with pandas 3.1.)
    """
    import pyarrow as pa

    return pa.table({name: arrow_column(rows[name]) for name in rows.columns})


def arrow_column(column: pd.Series):
    """One column as an Arrow array: strings as ``string``, numbers as they are.

    A string column backed by Arrow (the workers' ``aligned`` and ``cigar``,
    built from one buffer each) goes over without a Python object per row;
    an object column of Python strings is converted.
    """
    import pyarrow as pa

    if isinstance(column.dtype, pd.StringDtype) and column.dtype.storage == "pyarrow":
        array = pa.array(column.array)  # zero-copy, through __arrow_array__
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        return array.cast(pa.string())
    values = column.to_numpy()
    if values.dtype.kind in "OUT":
        return pa.array(values.astype(object), type=pa.string())
    return pa.array(values)


class FrameCollector:
    """The Python API's writer: keeps the rows and returns one DataFrame with names."""

    def __init__(self, columns: list[str], record_names, pattern_names):
        self.columns = columns
        self.record_names, self.pattern_names = record_names, pattern_names
        self.parts: list[pd.DataFrame] = []
        self.count = 0

    def write(self, rows: pd.DataFrame) -> None:
        if len(rows):
            with stages.timed("write"):
                self.parts.append(named(rows, self.columns, self.record_names, self.pattern_names))
            self.count += len(rows)

    def frame(self) -> pd.DataFrame:
        if not self.parts:
            return empty_frame(self.columns)
        return pd.concat(self.parts, ignore_index=True)


def refuse_overwriting_inputs(output: str | os.PathLike | None, inputs: dict[str, object]) -> None:
    """InputError if ``output`` is one of the job's input files (``inputs``: what it is -> path).

    Compared by the file itself (device and inode) where both exist, else by
    the resolved path, so a symbolic link or ``./`` spelling is caught too.
    """
    if output is None or str(output) == "-":
        return
    target = os.path.realpath(str(output).rstrip("/" + os.sep))
    for what, path in inputs.items():
        if not isinstance(path, (str, os.PathLike)):
            continue
        source = os.path.realpath(os.path.expanduser(os.fspath(path)))
        try:
            same = os.path.samefile(target, source)
        except OSError:
            same = target == source
        if same:
            raise InputError(f"{output}: this is the {what}; writing the hits there would replace it, "
                             "so choose another output path")
