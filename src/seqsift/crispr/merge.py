"""``--merge W``: one site per guide and strand among sites whose starts lie within W bases.

Bulges let a guide's on-target appear again shifted by a base or two (a DNA
bulge at the end, an RNA bulge at the start), and a repeat gives runs of
near-identical sites. CRISPRme's convention (its default W is 3) keeps one
site of each such cluster: sites of one guide on one strand of one record
whose starts follow each other by at most W bases are one cluster (a chain:
each within W of the one before), and the site kept has the fewest
mismatches + bulge bases, then the highest CFD (a site without a CFD
counts as lowest), then the leftmost start, then the shortest.

:class:`MergedSites` does it on the stream of final rows (in output order)
the crispr job's collector emits, holding back only clusters that may still
grow and the kept sites that such a cluster could still precede.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

_KEY = ["record", "guide", "strand"]


def best_of_clusters(rows: pd.DataFrame, cluster: np.ndarray) -> np.ndarray:
    """Index (into ``rows``) of the site kept of each cluster id (module docstring's order), in cluster order."""
    cost = rows["mismatches"].to_numpy().astype(np.int64) + rows["bulge_size"].to_numpy().astype(np.int64)
    cfd = np.nan_to_num(rows["cfd"].to_numpy().astype(np.float64), nan=-1.0)
    start, end = rows["start"].to_numpy(), rows["end"].to_numpy()
    order = np.lexsort((end - start, start, -cfd, cost, cluster))
    first = np.ones(len(order), dtype=bool)
    first[1:] = cluster[order][1:] != cluster[order][:-1]
    return order[first]


class MergedSites:
    """A collector (runtime.job.Collector) that merges clusters of the ``inner`` collector's rows."""

    def __init__(self, inner, window: int):
        self.inner, self.window = inner, int(window)
        self.open = None      # rows of clusters that may still grow (sorted by key, start)
        self.kept = None      # sites kept of closed clusters, not yet emitted (output order)

    def take(self, unit, frames):
        for rows in self.inner.take(unit, frames):
            yield from self._add(rows, final=False)

    def finish(self):
        for rows in self.inner.finish():
            yield from self._add(rows, final=False)
        yield from self._add(None, final=True)

    def close(self) -> None:
        self.inner.close()
        self.open = self.kept = None

    def _add(self, rows: pd.DataFrame | None, final: bool):
        parts = [frame for frame in (self.open, rows) if frame is not None and len(frame)]
        if not parts:
            yield from self._emit(None, final)
            return
        pending = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
        pending = pending.take(np.lexsort((pending["start"].to_numpy(), pending["strand"].to_numpy(),
                                           pending["guide"].to_numpy(), pending["record"].to_numpy())))
        pending = pending.reset_index(drop=True)
        record, guide, strand = (pending[c].to_numpy() for c in _KEY)
        start = pending["start"].to_numpy()
        new_key = np.ones(len(pending), dtype=bool)
        new_key[1:] = (record[1:] != record[:-1]) | (guide[1:] != guide[:-1]) | (strand[1:] != strand[:-1])
        new_cluster = new_key.copy()
        new_cluster[1:] |= (start[1:] - start[:-1]) > self.window
        cluster = np.cumsum(new_cluster) - 1
        # A key's last cluster may still grow (its next site may come), unless this is the end.
        last_of_key = np.ones(len(pending), dtype=bool)
        last_of_key[:-1] = new_key[1:]
        still_open = np.zeros(cluster[-1] + 1, dtype=bool) if len(pending) else np.zeros(0, bool)
        if not final:
            still_open[cluster[last_of_key]] = True
        open_rows = still_open[cluster]
        self.open = pending[open_rows].reset_index(drop=True) if open_rows.any() else None
        closed = pending[~open_rows].reset_index(drop=True)
        kept = closed.take(best_of_clusters(closed, cluster[~open_rows])) if len(closed) else None
        yield from self._emit(kept, final)

    def _emit(self, kept: pd.DataFrame | None, final: bool):
        """The kept sites that no open cluster can precede any more, in output order."""
        from .task import sort_rows

        parts = [frame for frame in (self.kept, kept) if frame is not None and len(frame)]
        if not parts:
            return
        waiting = sort_rows(pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0])
        if final or self.open is None:
            self.kept = None
            yield waiting
            return
        # An open cluster's site starts at or after its first start: rows before the smallest are final.
        first = self.open.sort_values(["record", "start"]).iloc[0]
        record, start = waiting["record"].to_numpy(), waiting["start"].to_numpy()
        ready = (record < first["record"]) | ((record == first["record"]) & (start < first["start"]))
        cut = int(np.argmin(ready)) if not ready.all() else len(waiting)  # ready is a prefix (sorted rows)
        self.kept = waiting.iloc[cut:].reset_index(drop=True) if cut < len(waiting) else None
        if cut:
            yield waiting.iloc[:cut]
