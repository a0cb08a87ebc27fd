"""A plain-Python reading of the hit contract (DESIGN.md), for small inputs.

It shares no code with seqsift beyond nothing at all: its own IUPAC table,
its own dynamic programming, its own grouping of runs. Engine tests compare
``seqsift.search`` with it row for row.
"""
from __future__ import annotations

import pandas as pd

IUPAC = {"A": "A", "C": "C", "G": "G", "T": "T", "R": "AG", "Y": "CT", "S": "CG", "W": "AT",
         "K": "GT", "M": "AC", "B": "CGT", "D": "AGT", "H": "ACT", "V": "ACG", "N": "ACGT"}
COMPLEMENT = {"A": "T", "C": "G", "G": "C", "T": "A", "R": "Y", "Y": "R", "S": "S", "W": "W",
              "K": "M", "M": "K", "B": "V", "D": "H", "H": "D", "V": "B", "N": "N"}


def matches(pattern_letter: str, text_letter: str) -> bool:
    return text_letter.upper() in IUPAC[pattern_letter] and text_letter.upper() in "ACGT"


def reverse_complement(pattern: str) -> str:
    return "".join(COMPLEMENT[c] for c in reversed(pattern))


def global_distance(pattern: str, text: str) -> int:
    previous = list(range(len(text) + 1))
    for i, p in enumerate(pattern, 1):
        current = [i] + [0] * len(text)
        for j, t in enumerate(text, 1):
            current[j] = min(previous[j - 1] + (0 if matches(p, t) else 1), previous[j] + 1, current[j - 1] + 1)
        previous = current
    return previous[-1]


def end_distances(pattern: str, text: str) -> list[int]:
    """d(e) for e = 0..len(text): min over s of ED(pattern, text[s:e])."""
    column = list(range(len(pattern) + 1))
    out = [column[-1]]
    for t in text:
        new = [0]
        for i, p in enumerate(pattern, 1):
            new.append(min(column[i - 1] + (0 if matches(p, t) else 1), column[i] + 1, new[i - 1] + 1))
        column = new
        out.append(column[-1])
    return out


def expected_rows(records: list[tuple[str, str]], patterns: list[tuple[str, str]], k: int,
                  metric: str, mode: str = "best", strands: str = "both") -> pd.DataFrame:
    rows = []
    for r, (record_name, text) in enumerate(records):
        for p, (pattern_name, forward) in enumerate(patterns):
            for strand in ("+", "-"):
                if strands not in ("both", strand):
                    continue
                pattern = forward if strand == "+" else reverse_complement(forward)
                m = len(pattern)
                if metric == "hamming":
                    for s in range(len(text) - m + 1):
                        d = sum(not matches(a, b) for a, b in zip(pattern, text[s:s + m]))
                        if d <= k:
                            rows.append((r, s, s + m, p, d, strand))
                    continue
                d = end_distances(pattern, text)
                ends = [e for e in range(1, len(text) + 1) if d[e] <= k]
                if mode == "ends":
                    rows.extend((r, -1, e, p, d[e], strand) for e in ends)
                    continue
                runs, run = [], []
                for e in ends:
                    if run and e != run[-1] + 1:
                        runs.append(run)
                        run = []
                    run.append(e)
                if run:
                    runs.append(run)
                for run in runs:
                    best = min(run, key=lambda e: (d[e], e))
                    start = next(s for s in range(max(0, best - m - k), best + 1)
                                 if global_distance(pattern, text[s:best]) == d[best])
                    rows.append((r, start, best, p, d[best], strand))
    frame = pd.DataFrame(rows, columns=["record", "start", "end", "pattern", "distance", "strand"])
    key = ["record", "start", "pattern", "strand", "end"] if mode == "best" else ["record", "end", "pattern", "strand"]
    frame = frame.sort_values(key, kind="stable", ignore_index=True)
    frame["record"] = [records[i][0] for i in frame["record"]]
    frame["pattern"] = [patterns[i][0] for i in frame["pattern"]]
    if mode == "ends":
        frame = frame.drop(columns="start")
    return frame
