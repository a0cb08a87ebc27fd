"""Writing CRISPR sites: TSV / BED6 / Parquet (runtime.output.TableWriter), Cas-OFFinder's format, the summary.

Columns (TSV has a header line of the column names)::

    guide record start end strand mismatches bulge_type bulge_size guide_aligned site cfd mit

BED6: record, start, end, guide, round(1000 x CFD) (0 where CFD is
undefined), strand. ``--format cas-offinder``: Cas-OFFinder 2.4's lines
(``crRNA chromosome position DNA strand mismatches [id]``) for jobs without
bulges, Cas-OFFinder 3's (``#Id Bulge Type crRNA DNA Chromosome Location
Direction Mismatches Bulge Size``) for jobs with bulges. Every file is
written beside its target and moved into place when complete
(``runtime.output.AtomicFile``: umask, links written through).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from ..pattern_set import STRAND_SYMBOLS
from ..runtime.columns import name_array, text_column, text_dtype
from ..runtime.output import AtomicFile, FrameCollector, NameColumns, TableWriter, arrow_column, text_bytes
from .scores import specificity

if TYPE_CHECKING:  # pandas loads once the job's writer is made, after its tasks are submitted
    import pandas as pd

COLUMNS = ["guide", "record", "start", "end", "strand", "mismatches", "bulge_type", "bulge_size",
           "guide_aligned", "site", "cfd", "mit"]
DTYPES = {"guide": object, "record": object, "start": np.int64, "end": np.int64, "strand": object,
          "mismatches": np.int16, "bulge_type": object, "bulge_size": np.int16, "guide_aligned": object,
          "site": object, "cfd": np.float64, "mit": np.float64}


@dataclass(frozen=True)
class SiteOutput:
    """How a crispr job's rows are written: ``auto`` (by the path's suffix) or ``cas-offinder`` lines
    (``with_ids``: a last column of guide names), and the per-guide summary file, if asked for."""

    format: str = "auto"
    with_ids: bool = True
    summary: str | None = None


def site_writer(job, output):
    """The writer of ``job``'s rows to ``output`` (None: the API's DataFrame), with its summary if asked."""
    settings = job.output or SiteOutput()
    record_names, guide_names = job.record_names, job.guides.names
    if output is None:
        writer = FrameCollector(partial(named, record_names=name_array(record_names),
                                        guide_names=name_array(guide_names)), empty_sites)
    elif settings.format == "cas-offinder":  # Cas-OFFinder writes each record's whole header line
        pad = "N" * len(job.pam)  # its crRNA column: each guide with N over the PAM
        crrna = [g + pad if job.pam_side == 3 else pad + g for g in job.guides.sequences]
        writer = CasOffinderWriter(output, job.record_headers, guide_names, crrna, settings.with_ids,
                                   bool(job.dna_bulge or job.rna_bulge))
    else:
        writer = SiteWriter(output, record_names, guide_names)
    if settings.summary is None:
        return writer
    return SummarizedWriter(writer, Summary(guide_names, job.guides.sequences, max(job.limits), job.dna_bulge,
                                            job.rna_bulge), settings.summary)


def significant_digits(values: np.ndarray, digits: int) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits (NaN, inf and 0 as they are)."""
    out = np.array(values, dtype=np.float64)
    finite = np.isfinite(out) & (out != 0)
    exponent = np.floor(np.log10(np.abs(out[finite])))
    scale = np.power(10.0, digits - 1 - exponent)
    out[finite] = np.round(out[finite] * scale) / scale
    return out


def named(rows: pd.DataFrame, record_names, guide_names) -> pd.DataFrame:
    """Index rows -> the output columns with names (the Python API's frame).

    ``record_names`` and ``guide_names``: sequences of str, or Arrow string
    arrays (built once); a name column is one Arrow take
    (runtime.columns.text_column), not a Python object per row.
    """
    import pandas as pd
    import pyarrow as pa

    out = pd.DataFrame({c: rows[c] for c in COLUMNS if c in rows})
    for column, names in (("guide", guide_names), ("record", record_names), ("strand", STRAND_SYMBOLS)):
        names = names if isinstance(names, pa.Array) else name_array(names)
        out[column] = text_column(names.take(pa.array(rows[column].to_numpy())))
    return out[COLUMNS].reset_index(drop=True)


class SiteWriter:
    """TSV, BED6 or Parquet by the path's suffix (stdout: TSV), through runtime.output.TableWriter."""

    def __init__(self, path, record_names, guide_names):
        self.table = TableWriter(path, COLUMNS, DTYPES,
                                 background=True)  # overlaps the search
        self._names = NameColumns(record=record_names, guide=guide_names, strand=STRAND_SYMBOLS)

    @property
    def count(self) -> int:
        return self.table.count

    def write(self, rows: pd.DataFrame) -> None:
        import pyarrow as pa

        if len(rows) == 0:
            return
        arrays = {}
        for name in COLUMNS:
            if name in self._names:
                arrays[name] = self._names.take(name, rows[name])
                continue
            if DTYPES[name] is object:
                arrays[name] = arrow_column(rows[name])
                continue
            values = rows[name].to_numpy()
            if values.dtype.kind == "f":  # CFD, MIT: 6 significant digits; NaN -> null: an empty TSV field
                arrays[name] = pa.array(significant_digits(values, 6), from_pandas=True)
            else:
                arrays[name] = pa.array(values)
        if self.table.format == "bed":
            score = np.nan_to_num(np.round(rows["cfd"].to_numpy() * 1000), nan=0).astype(np.int64)
            arrays = {"chrom": arrays["record"], "start": arrays["start"], "end": arrays["end"],
                      "name": arrays["guide"], "score": pa.array(score), "strand": arrays["strand"]}
        self.table.write_table(pa.table(arrays))

    def close(self) -> None:
        self.table.close()

    def abort(self) -> None:
        self.table.abort()

    def result(self) -> int:
        return self.count


class CasOffinderWriter:
    """Cas-OFFinder's output lines (module docstring), to a file (atomically) or standard output."""

    def __init__(self, path, record_names, guide_names, crrna: list[str], with_ids: bool, bulges: bool):
        self._names = NameColumns(record=record_names, guide=guide_names, crrna=crrna, strand=STRAND_SYMBOLS)
        self.with_ids, self.bulges = with_ids, bulges
        self.count = 0
        self.file = AtomicFile(path)
        if bulges:
            self.file.write(b"#Id\tBulge Type\tcrRNA\tDNA\tChromosome\tLocation\tDirection\tMismatches\tBulge Size\n")

    def write(self, rows: pd.DataFrame) -> None:
        """Lines built column-wise in Arrow (no Python object per site): millions of sites are common."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if len(rows) == 0:
            return
        names = self._names.take
        guide, record = rows["guide"].to_numpy(), rows["record"].to_numpy()
        strand = names("strand", rows["strand"].to_numpy())
        if self.bulges:
            kind = pc.replace_substring(arrow_column(rows["bulge_type"]), "none", "X")
            columns = [names("guide", guide), kind, arrow_column(rows["guide_aligned"]), arrow_column(rows["site"]),
                       names("record", record), pa.array(rows["start"].to_numpy()), strand,
                       pa.array(rows["mismatches"].to_numpy()), pa.array(rows["bulge_size"].to_numpy())]
        else:
            columns = [names("crrna", guide), names("record", record), pa.array(rows["start"].to_numpy()),
                       arrow_column(rows["site"]), strand, pa.array(rows["mismatches"].to_numpy())]
            if self.with_ids:
                columns.append(names("guide", guide))
        table = pa.table({f"c{i}": column for i, column in enumerate(columns)})
        self.file.write(text_bytes(table))
        self.count += len(rows)

    def close(self) -> None:
        self.file.close()

    def abort(self) -> None:
        self.file.abort()

    def result(self) -> int:
        return self.count


def empty_sites() -> pd.DataFrame:
    """The API's frame without rows: each column of its dtype (text columns as pandas makes them of strs)."""
    import pandas as pd

    return pd.DataFrame({c: np.empty(0, dtype=DTYPES[c]) for c in COLUMNS}).astype(
        {c: text_dtype() for c in COLUMNS if DTYPES[c] is object})


class SummarizedWriter:
    """A site writer that also counts every row it writes in a :class:`Summary`, written to ``path``
    once the output is complete (:meth:`close`; ``JobRun`` checked and locked ``path`` like ``-o``)."""

    def __init__(self, writer, summary: "Summary", path):
        self.writer, self.summary, self.path = writer, summary, path

    @property
    def count(self) -> int:
        return self.writer.count

    def write(self, rows: pd.DataFrame) -> None:
        self.writer.write(rows)
        self.summary.add(rows)

    def close(self) -> None:
        self.writer.close()
        self.summary.write(self.path)

    def abort(self) -> None:
        self.writer.abort()

    def result(self):
        return self.writer.result()


class Summary:
    """Per guide: sites at each (bulge, mismatch) count, and CRISPOR's MIT and CFD specificity.

    Columns: ``guide sequence mm0 .. mmK [dna1_mm0 ..] [rna1_mm0 ..] mit_specificity cfd_specificity``;
    a specificity is empty where no site of the guide has a defined score.
    """

    def __init__(self, guide_names, sequences, max_mismatches: int, dna_bulge: int, rna_bulge: int):
        self.guide_names, self.sequences = list(guide_names), list(sequences)
        self.classes = [("none", 0)] + [("DNA", b) for b in range(1, dna_bulge + 1)] + \
                       [("RNA", b) for b in range(1, rna_bulge + 1)]
        self.max_mismatches = max_mismatches
        guides = len(self.guide_names)
        self.counts = np.zeros((guides, len(self.classes), max_mismatches + 1), dtype=np.int64)
        self.sums = {"mit": np.zeros(guides), "cfd": np.zeros(guides)}
        self.defined = {"mit": np.zeros(guides, bool), "cfd": np.zeros(guides, bool)}
        self.on_target = {"mit": np.zeros(guides), "cfd": np.zeros(guides)}  # best perfect site: the guide's own

    def add(self, rows: pd.DataFrame) -> None:
        if len(rows) == 0:
            return
        guide = rows["guide"].to_numpy()
        kind, size = rows["bulge_type"].to_numpy(), rows["bulge_size"].to_numpy().astype(np.int64)
        dna_classes = sum(1 for k, _ in self.classes if k == "DNA")
        # classes: none, then DNA 1..B, then RNA 1..B (in __init__'s order)
        klass = np.where(kind == "none", 0, np.where(kind == "DNA", size, dna_classes + size))
        np.add.at(self.counts, (guide, klass, rows["mismatches"].to_numpy()), 1)
        perfect = (klass == 0) & (rows["mismatches"].to_numpy() == 0)
        for score in ("mit", "cfd"):
            values = rows[score].to_numpy()
            known = ~np.isnan(values)
            np.add.at(self.sums[score], guide[known], values[known])
            self.defined[score][guide[known]] = True
            np.maximum.at(self.on_target[score], guide[perfect & known], values[perfect & known])

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        columns = {"guide": self.guide_names, "sequence": self.sequences}
        for c, (kind, size) in enumerate(self.classes):
            prefix = "" if kind == "none" else f"{kind.lower()}{size}_"
            for m in range(self.max_mismatches + 1):
                columns[f"{prefix}mm{m}"] = self.counts[:, c, m]
        for score, scale in (("mit", 1.0), ("cfd", 100.0)):
            off_target = self.sums[score] - self.on_target[score]
            columns[f"{score}_specificity"] = pd.array(
                [specificity([s], scale) if d else None for s, d in zip(off_target, self.defined[score])],
                dtype="Int64")
        return pd.DataFrame(columns)

    def write(self, path) -> None:
        """The summary TSV (a plain header line, as the site TSV), whole or not at all."""
        frame = self.frame()
        text = "\t".join(frame.columns) + "\n" + frame.to_csv(sep="\t", header=False, index=False, na_rep="")
        file = AtomicFile(path)
        try:
            file.write(text.encode())
        except BaseException:
            file.abort()
            raise
        file.close()
