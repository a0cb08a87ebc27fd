"""Output files: where each job's rows go, written whole or not at all.

One table of suffixes for every job (:data:`SUFFIXES`); each job names the
formats its writer can write. ``.gz`` after a text suffix (``hits.tsv.gz``,
``sites.bed.gz``) compresses the file, on python-isal's threads.

Every file is written to a temporary file beside its target
(``.NAME.XXXXXXXX.part``) and renamed into place only when the job has
finished, so a failed or interrupted job never leaves a half-written or
clobbered output (:class:`AtomicFile`). Like a shell's ``>``: a new file gets
0666 less the umask, a file that exists keeps its mode, and an output that is
a symbolic link is written through (the link stays, its target is
replaced). A partitioned Parquet output (a folder path) written into a folder
that already exists keeps that folder (its owner and mode): the part files
are moved into it. Standard output is streamed.

:class:`TableWriter` writes Arrow tables as TSV (a plain header line of the
column names), BED (none) or Parquet, on a thread of its own when asked
(``background.BackgroundWrites``): Arrow's CSV writer, Parquet encoding and
gzip release the GIL, so the output is written while the job goes on. An
error there ends the job at the client's next write or at
:meth:`TableWriter.close`, as if it had been raised in place.
:class:`FrameCollector` is the Python API's writer (one DataFrame).
"""
from __future__ import annotations

import os
import secrets
import shutil
import stat
import sys
from pathlib import Path

from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from . import stages
from .background import BackgroundWrites
from .columns import name_array

if TYPE_CHECKING:  # pandas loads when a job writes, not with the command line (check_output_path)
    import pandas as pd

INTERVAL_FORMATS = ("tsv", "bed", "parquet")
"""What a job whose rows are intervals of a reference (search, crispr) writes."""
SUFFIXES = {".tsv": "tsv", ".txt": "tsv", ".bed": "bed", ".parquet": "parquet", ".pq": "parquet"}
"""Output file suffix -> format, for every job (a job lists the formats it writes)."""
COMPRESSED_SUFFIX = ".gz"
"""After a text format's suffix: gzip the file (python-isal, on threads)."""
TEXT_FORMATS = ("tsv", "bed")
DATASET = "parquet-dataset"
"""The format of a folder path: a partitioned Parquet dataset (part-NNNNN.parquet)."""
DATASET_PART_ROWS = 4_000_000
"""Rows per file of a partitioned Parquet output (a folder of part-NNNNN.parquet)."""
WRITE_QUEUE = 4
"""Writes that may wait for the writer thread; past this, the client waits (memory stays bounded)."""
GZIP_THREADS = 4
GZIP_LEVEL = 1
"""python-isal's fastest level: compressed output should not slow the job it ends."""


def to_stdout(path) -> bool:
    return path is None or str(path) == "-"


def real_target(path) -> str:
    """Where an output really goes (a link is written through, a dataset folder's trailing / dropped):
    its lock and saved tasks live beside that."""
    return os.path.realpath(str(path).rstrip("/" + os.sep))


def _is_dataset(path) -> bool:
    """A path ending in a separator, or an existing folder: a partitioned Parquet dataset."""
    return str(path).endswith(("/", os.sep)) or Path(path).is_dir()


def compressed(path) -> bool:
    """Whether a file output is gzipped (its name ends in .gz)."""
    return not to_stdout(path) and str(path).lower().endswith(COMPRESSED_SUFFIX) and not _is_dataset(path)


def output_format(path: str | os.PathLike | None, formats: tuple[str, ...] | None = INTERVAL_FORMATS) -> str:
    """``tsv``, ``bed``, ``parquet`` or ``parquet-dataset`` for an output path (stdout: tsv).

    ``formats``: those the job writes (InputError for another); None: any
    name, written as text (Cas-OFFinder's format).
    """
    if to_stdout(path):
        return "tsv"
    if _is_dataset(path):
        if formats is None:
            raise InputError(f"{path}: a folder; this output is a file")
        if "parquet" not in formats:
            raise InputError(f"{path}: a folder; this job writes files ({', '.join(_suffixes(formats))})")
        return DATASET
    if formats is None:
        return "tsv"
    name = str(path).lower()
    gz = name.endswith(COMPRESSED_SUFFIX)
    suffix = Path(name[:-len(COMPRESSED_SUFFIX)] if gz else name).suffix
    known = SUFFIXES.get(suffix)
    if known not in formats or (gz and known not in TEXT_FORMATS):
        allowed = ", ".join(_suffixes(formats))
        folder = ", or a folder path ending in / for partitioned Parquet" if "parquet" in formats else ""
        raise InputError(f"{path}: unknown output format {(suffix + ('.gz' if gz else '')) or '(no extension)'!r}; "
                         f"use one of {allowed}{folder}")
    return known


def _suffixes(formats: tuple[str, ...]) -> list[str]:
    plain = [s for s, f in SUFFIXES.items() if f in formats]
    return plain + [s + COMPRESSED_SUFFIX for s, f in SUFFIXES.items() if f in formats and f in TEXT_FORMATS]


def check_output_path(path: str | os.PathLike | None, formats: tuple[str, ...] | None = ("tsv", "bed", "parquet"),
                      what: str = "output") -> None:
    """Fail before any work if the output could not be written (one line naming it)."""
    if to_stdout(path):
        return
    output_format(path, formats)
    target = Path(real_target(path))
    directory = target.parent
    if not directory.is_dir():
        raise InputError(f"{path}: {what} directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise InputError(f"{path}: {what} directory {directory} is not writable")
    if target.is_dir():  # a Parquet dataset's folder (output_format refused it for a file)
        if any(target.iterdir()):
            raise InputError(f"{path}: the output folder is not empty")
        if not os.access(target, os.W_OK):
            raise InputError(f"{path}: the output folder is not writable")


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


class AtomicFile:
    """A binary output stream to ``path`` (None or "-": standard output) that is in place only after
    :meth:`close`; :meth:`abort` leaves the target as it was (module docstring). ``.gz`` names are
    gzipped."""

    def __init__(self, path):
        self.path = None if to_stdout(path) else Path(str(path))
        self._temp: Path | None = None
        if self.path is None:
            sys.stdout.flush()
            self.stream = sys.stdout.buffer
            return
        self.target = Path(os.path.realpath(self.path))
        self._temp = _create_beside(self.target, folder=False)
        raw = open(self._temp, "wb")
        if compressed(self.path):
            from isal import igzip_threaded

            self.stream = igzip_threaded.open(raw, "wb", compresslevel=GZIP_LEVEL, threads=GZIP_THREADS)
            self._raw = raw
        else:
            self.stream, self._raw = raw, None

    def write(self, data) -> None:
        self.stream.write(data)

    def close(self) -> None:
        """Finish the file and rename it into place (standard output: flush)."""
        if self._temp is None:
            self.stream.flush()
            return
        self.stream.close()
        if self._raw is not None:
            self._raw.close()
        os.replace(self._temp, self.target)
        self._temp = None

    def abort(self) -> None:
        if self._temp is None:
            return
        try:
            self.stream.close()
            if self._raw is not None:
                self._raw.close()
        except (OSError, ValueError):
            pass
        finally:
            self._temp.unlink(missing_ok=True)
            self._temp = None


class TableWriter:
    """Streams Arrow tables to ``path`` (``None`` or ``-``: standard output, TSV) in one of ``formats``.

    The format comes from the path (:func:`output_format`). TSV starts with a
    plain header line of the column names (what pandas, R and spreadsheet
    users expect); BED has none (what BED tools expect). :meth:`close` moves
    the output into place; :meth:`abort` removes it, leaving the target
    untouched. With ``background``, tables are written on a thread of the
    writer's own (module docstring); ``count`` counts them as they are
    handed over. ``dtypes``: each column's, so that an output without rows
    (an empty Parquet file) still has them.
    """

    def __init__(self, path: str | os.PathLike | None, columns: list[str], dtypes: dict,
                 formats: tuple[str, ...] | None = ("tsv", "bed", "parquet"), background: bool = False):
        self.format = output_format(path, formats)
        self.columns = columns
        self.dtypes = dtypes
        self.count = 0
        self.path = None if to_stdout(path) else Path(str(path).rstrip("/" + os.sep))
        self._file: AtomicFile | None = None   # tsv / bed
        self._temp: Path | None = None         # parquet: the temporary file; dataset: the temporary folder
        self._parquet = None      # parquet: the open pyarrow ParquetWriter
        self._part_rows = 0       # parquet-dataset: rows in the current part file
        self._parts = 0
        if self.format in TEXT_FORMATS:
            self._file = AtomicFile(path)
        elif self.format == DATASET and self.target.is_dir():
            # An existing (empty) folder stays, with its owner and mode: the parts go into it at the end.
            self._temp = Path(self.target) / f".seqsift-{secrets.token_hex(4)}.part"
            os.mkdir(self._temp, 0o777)
        else:
            self._temp = _create_beside(self.target, folder=self.format == DATASET)
        if self.format == "tsv":
            self._file.write(("\t".join(columns) + "\n").encode())
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
        elif self.format == DATASET:
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
            text = [field.name for field in table.schema if str(field.type) in ("string", "large_string")]
            self._parquet = pq.ParquetWriter(path, table.schema, use_dictionary=text)
        self._parquet.write_table(table)

    def _write_text(self, table) -> None:
        self._file.write(text_bytes(table))

    def close(self) -> None:
        """Finish the output and move it into place (raises what a write on the writer thread failed with)."""
        if self._thread is not None:
            self._thread.finish()   # on a failure (raised here) abort() still finds it, ended
            self._thread = None
        if self._file is not None:
            self._file.close()
            return
        if self._parquet is None and self.count == 0:
            # No row: still a valid, empty table with the columns.
            empty = self._temp if self.format == "parquet" else self._temp / "part-00000.parquet"
            self._write_parquet(arrow_table(empty_frame(self.columns, self.dtypes)), empty)
        if self._parquet is not None:
            self._parquet.close()
        if self._temp.parent == self.target:  # parts into the folder that was there (checked empty)
            for part in sorted(self._temp.iterdir()):
                os.replace(part, self.target / part.name)
            self._temp.rmdir()
        else:
            os.replace(self._temp, self.target)
        self._temp = None

    def abort(self) -> None:
        """Drop the partial output: the target path is left untouched."""
        if self._thread is not None:
            thread, self._thread = self._thread, None
            thread.cancel()
        if self._file is not None:
            self._file.abort()
            return
        if self._temp is None:
            return
        try:
            if self._parquet is not None:
                self._parquet.close()
        finally:
            if self._temp.is_dir():
                shutil.rmtree(self._temp, ignore_errors=True)
            else:
                self._temp.unlink(missing_ok=True)
            self._temp = None

    def result(self) -> int:
        """What a job writing to a file returns: the number of rows written."""
        return self.count


def text_bytes(table) -> bytes:
    """An Arrow table as tab-separated lines, no header, no quoting.

    Arrow's CSV writer is ~10x faster than pandas' for millions of rows. Names
    and CIGARs hold no tab or newline, so no field needs quoting. It encodes
    in memory and the bytes are written: handed the Python file object, it
    wrote at wrong offsets once (NUL-filled gaps) in the multi-threaded client.
    """
    import pyarrow as pa
    import pyarrow.csv as csv

    encoded = pa.BufferOutputStream()
    csv.write_csv(table, encoded, write_options=csv.WriteOptions(include_header=False, delimiter="\t",
                                                                 quoting_style="none"))
    return encoded.getvalue().to_pybytes()


def empty_frame(columns: list[str], dtypes: dict) -> pd.DataFrame:
    """No rows, each column of its dtype (``dtypes``: column -> NumPy dtype, object for text)."""
    import pandas as pd

    return pd.DataFrame({c: np.empty(0, dtype=dtypes[c]) for c in columns})


class NameColumns:
    """Names looked up by index columns with Arrow's ``take`` (no Python object per row: for tens of
    millions of rows this is most of a writer's work); each column's names are one Arrow array, built
    once per job."""

    def __init__(self, **names):
        self.arrays = {column: name_array(values, large=False) for column, values in names.items()}

    def __contains__(self, column: str) -> bool:
        return column in self.arrays

    def take(self, column: str, indices):
        """The names of ``column`` at ``indices`` (an integer array or Series)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        return pc.take(self.arrays[column], pa.array(np.asarray(indices)))


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
    import pandas as pd
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
    """The Python API's writer: each write's rows named (``name_rows``: index rows -> the output's
    columns) and kept; :meth:`result` is one DataFrame (``empty()`` when there are none)."""

    def __init__(self, name_rows, empty):
        self.name_rows, self.empty = name_rows, empty
        self.parts: list[pd.DataFrame] = []
        self.count = 0

    def write(self, rows: pd.DataFrame) -> None:
        if len(rows):
            with stages.timed("write"):
                self.parts.append(self.name_rows(rows))
            self.count += len(rows)

    def close(self) -> None:
        pass

    def abort(self) -> None:
        self.parts.clear()

    def result(self) -> pd.DataFrame:
        import pandas as pd

        if not self.parts:
            return self.empty()
        return pd.concat(self.parts, ignore_index=True)


def refuse_overwriting_inputs(output: str | os.PathLike | None, inputs: dict[str, object]) -> None:
    """InputError if ``output`` is one of the job's input files (``inputs``: what it is -> path).

    Compared by the file itself (device and inode) where both exist, else by
    the resolved path, so a symbolic link or ``./`` spelling is caught too.
    """
    if to_stdout(output):
        return
    target = real_target(output)
    for what, path in inputs.items():
        if not isinstance(path, (str, os.PathLike)):
            continue
        source = os.path.realpath(os.path.expanduser(os.fspath(path)))
        try:
            same = os.path.samefile(target, source)
        except OSError:
            same = target == source
        if same:
            raise InputError(f"{output}: this is the {what}; writing there would replace it, "
                             "so choose another output path")
