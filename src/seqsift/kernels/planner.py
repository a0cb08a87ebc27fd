"""``--algorithm auto``: the fastest algorithm for a job, from measured throughputs.

``seqsift bench`` measures every algorithm of a backend at a grid of job
shapes (metric, pattern length m, k, pattern count) and saves the throughputs
as an *algorithm table*. For a job, the planner takes the measured shape
nearest to the job's own, and among the algorithms measured there that admit
the job picks the one with the highest throughput. Every algorithm gives the
same hits, so the choice changes only the speed.

Tables, in the order they are looked for:
1. the user's own, written by ``seqsift bench`` on this machine:
   ``<seqsift cache>/algorithm_table-<backend>.json``;
2. the defaults shipped in ``seqsift/data/algorithm_table-<backend>.json``
   (CPU: measured on the developers' 2-core machine; CUDA: on the H100);
3. with neither, the fixed defaults of ``kernels.DEFAULT_ALGORITHM``.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path


@dataclass(frozen=True)
class Choice:
    algorithm: str
    reason: str


def table_name(backend: str) -> str:
    return f"algorithm_table-{backend}.json"


def user_table_path(backend: str) -> Path:
    from ..cache import cache_directory

    return cache_directory(create=False) / table_name(backend)


@lru_cache(maxsize=None)
def _load(path: str) -> tuple[dict, ...]:
    try:
        return tuple(json.loads(Path(path).read_text())["measurements"])
    except (OSError, ValueError, KeyError):
        return ()


def measurements(backend: str) -> tuple[tuple[dict, ...], str]:
    """The measurements for ``backend`` and where they came from."""
    user = user_table_path(backend)
    if user.is_file() and _load(str(user)):
        return _load(str(user)), str(user)
    shipped = resources.files("seqsift") / "data" / table_name(backend)
    with resources.as_file(shipped) as path:
        if path.is_file():
            return _load(str(path)), f"shipped defaults ({table_name(backend)})"
    return (), "no table"


def _distance_terms(point: dict, m: int, k: int, patterns: int) -> tuple[float, float, float]:
    """How far a measured job shape is from the job, per dimension: log scale for m and counts."""
    return (abs(math.log2(max(point["m"], 1) / max(m, 1))),
            abs(point["k"] - k) / 2,
            abs(math.log10(max(point["patterns"], 1) / max(patterns, 1))))


def _distance(point: dict, m: int, k: int, patterns: int) -> float:
    return sum(_distance_terms(point, m, k, patterns))


def _fastest_nearest(rows: list[dict], distance, rate: str) -> tuple[dict, float, int]:
    """(the fastest by ``rate`` of the rows at the nearest measured shape, that distance, how many
    rows were measured there)."""
    nearest = min(distance(r) for r in rows)
    candidates = [r for r in rows if distance(r) == nearest]
    return max(candidates, key=lambda r: r[rate]), nearest, len(candidates)


def plan(metric: str, backend: str, m_max: int, k: int, patterns: int, admits) -> Choice | None:
    """The measured-fastest admissible algorithm, or None without measurements.

    ``admits(name)`` says whether an algorithm can run this job on this
    backend (it exists there and its limits allow m_max and k). The reason
    names the table row used, the job's own shape, and the distance that made
    that row the nearest, term by term.
    """
    table, source = measurements(backend)
    rows = [r for r in table if r["backend"] == backend and r["metric"] == metric and admits(r["algorithm"])]
    if not rows:
        return None
    best, nearest, candidates = _fastest_nearest(rows, lambda r: _distance(r, m_max, k, patterns),
                                                 "pattern_positions_per_s")
    shape = f"m={best['m']}, k={best['k']}, {best['patterns']} patterns"
    job = f"m={m_max}, k={k}, {patterns} patterns"
    measured = (f"{best['algorithm']}: fastest measured at {shape} "
                f"({best['pattern_positions_per_s']:.3g} pattern-positions/s, the best of {candidates} "
                f"algorithm(s) measured there; {source})")
    if nearest == 0:
        return Choice(best["algorithm"], f"{measured}, this job's own shape")
    m_term, k_term, count_term = _distance_terms(best, m_max, k, patterns)
    return Choice(best["algorithm"],
                  f"{measured}; the table's nearest shape to this job ({job}): distance "
                  f"|log2(m/{best['m']})| + |k-{best['k']}|/2 + |log10(patterns/{best['patterns']})| = "
                  f"{m_term:.2f} + {k_term:.2f} + {count_term:.2f} = {nearest:.2f}, the smallest of "
                  f"{len({(r['m'], r['k'], r['patterns']) for r in rows})} measured shapes")


# --------------------------------------------------------------------------
# The screen job (metric "sw"): rows {"backend", "metric": "sw", "m", "n", "gaps": "linear" | "affine",
# "algorithm", "cells_per_s"} written by ``seqsift bench`` (bench.run_sw_bench), one per measured
# length bucket (m: the shorter sequence, n: the longer) and algorithm.
# --------------------------------------------------------------------------

def _sw_distance(point: dict, m: int, n: int) -> float:
    return abs(math.log2(max(point["m"], 1) / max(m, 1))) + abs(math.log2(max(point["n"], 1) / max(n, 1)))


def plan_sw(backend: str, m: int, n: int, affine: bool, admits) -> Choice | None:
    """The measured-fastest admissible screening algorithm for pairs of padded lengths m <= n, from the
    nearest measured (m, n) bucket of the same gap model; None without such measurements."""
    table, source = measurements(backend)
    gaps = "affine" if affine else "linear"
    rows = [r for r in table if r.get("backend") == backend and r.get("metric") == "sw"
            and r.get("gaps") == gaps and admits(r["algorithm"])]
    if not rows:
        return None
    best, _, _ = _fastest_nearest(rows, lambda r: _sw_distance(r, m, n), "cells_per_s")
    return Choice(best["algorithm"],
                  f"{best['algorithm']}: fastest measured for {gaps} gaps at m={best['m']}, n={best['n']} "
                  f"({best['cells_per_s']:.3g} cells/s; {source}), the nearest bucket to m={m}, n={n}")
