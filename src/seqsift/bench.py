"""``seqsift bench``: measure every algorithm on this machine and write the table ``auto`` uses.

For the chosen backend it times each algorithm's kernel on random text
generated on the fly, at a grid of job shapes (metric, pattern length m, k,
pattern count), with the text already encoded (and, on CUDA, on the device):
the kernel's own speed, not the file reading around it. Text lengths are set
so that each measurement does about the same work, scaled to the device.
The crispr job's kernels (registry metric ``crispr``) are timed too, on
guides of 20 nt + NGG with up to 4 mismatches (:func:`crispr_records`).

It writes, into ``--out`` (default ``./seqsift-bench``):
* ``bench.json``: the results in DESIGN.md's shape (device, date, commit,
  records), one record per (algorithm, shape), plus the roofs measured on
  the spot (memory copy bandwidth; on CUDA the HBM roof);
* ``bench.md``: the same as Markdown tables (the crispr kernels in their
  own), with each paper's own figure beside the algorithm it describes;
* ``bench.png``: the search kernels' throughput per algorithm and shape;
and, for a full run, it saves the measurements as this machine's algorithm
table (``planner.user_table_path``), which ``--algorithm auto`` then uses.
A ``--quick`` run (a smoke test on short texts, a few shapes) writes only its
report: its rough numbers never replace the table ``auto`` uses.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

from . import kernels
from .pattern_set import PatternSet

# Job shapes measured: (metric, m, k, pattern count).
GRID = [(metric, m, k, count)
        for metric in kernels.METRICS
        for m in (16, 32, 100)
        for k in (0, 1, 4)
        for count in (1, 64, 1024)]
QUICK_GRID = [(metric, m, 2, count) for metric in kernels.METRICS for m in (12, 40) for count in (1, 32)]

# Pattern-positions per measurement (text length x rows), per backend.
WORK = {"cpu": 1e8, "cuda": 1e10}
QUICK_WORK = {"cpu": 2e6, "cuda": 1e9}

PAPER_FIGURES = {
    "hamming-thread": "Liu et al. 2012: 40-80x over one CPU core (Tesla C1060)",
    "hamming-block": "Liu et al. 2012: 40-80x over one CPU core (Tesla C1060)",
    "hamming-tiled": "Liu et al. 2012: 40-80x over one CPU core (Tesla C1060)",
    "edit-rowdp": "Ho et al. 2017: 1.99 Gb/s, m=16, k=6",
    "edit-rowdp-shfl": "Ho et al. 2017: 1.25x over PASM_GPU",
    "edit-nfa": "Onsjo & Aono 2009: 8.5 s for 165 Mbp, m=1024, k=15 (Tesla)",
    "exact-shiftor-scan": "Mitani et al. 2017: 1.88 Tbps (94% of TITAN X bandwidth)",
}


def random_patterns(rng: np.random.Generator, m: int, count: int) -> PatternSet:
    letters = np.array(list("ACGT"))
    sequences = tuple("".join(letters[rng.integers(0, 4, m)]) for _ in range(count))
    return PatternSet(tuple(f"p{i}" for i in range(count)), sequences)


def random_text(rng: np.random.Generator, n: int, patterns: PatternSet, k: int) -> np.ndarray:
    """Random text codes with every pattern planted once (so there are hits to report)."""
    text = rng.integers(0, 4, n, dtype=np.uint8)
    lookup = np.frombuffer(b"ACGT", dtype=np.uint8)
    room = max(1, n // (4 * len(patterns.sequences[0])))
    for seq in patterns.sequences[:room]:
        start = int(rng.integers(0, max(1, n - len(seq))))
        planted = np.searchsorted(lookup, np.frombuffer(seq.encode(), dtype=np.uint8)).astype(np.uint8)
        text[start:start + len(seq)] = planted[: n - start]
    return text


MAX_CALL_S = 0.25
"""A slow algorithm is timed on a prefix of the text whose call takes about this long."""


def time_kernel(algorithm: str, backend: str, text, batch, k: int, repeats: int) -> tuple[float, int]:
    """Median seconds of one search kernel call over ``text`` (or a prefix: :func:`time_over_text`), and
    the text length it searched."""
    return time_over_text(lambda part: kernels.find_ends(algorithm, backend, part, batch, k, 0, len(part)),
                          text, repeats)


def time_over_text(search, text, repeats: int) -> tuple[float, int]:
    """Median seconds of ``search(text)``, after a warm-up call, and the text length it searched.

    Two calls on 1/64 of the text warm up and project the time of a whole
    call; a kernel that would take more than MAX_CALL_S over the whole text
    is timed on a prefix sized to that (rates are per position searched).
    On the GPU the text is already on the device, as a worker's chunk is.
    """
    probe = max(1, len(text) // 64)
    search(text[:probe])  # compiles, allocates
    began = time.perf_counter()
    search(text[:probe])
    projected = (time.perf_counter() - began) * len(text) / probe
    if projected > MAX_CALL_S:
        text = text[:max(probe, int(len(text) * MAX_CALL_S / projected))]
    search(text)
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        search(text)
        times.append(time.perf_counter() - began)
    return float(np.median(times)), len(text)


def memory_copy_roof(backend: str) -> float:
    """Bytes read + written per second by a large copy on this backend."""
    size = 1 << 28 if backend == "cuda" else 1 << 26
    if backend == "cuda":
        import cupy

        source = cupy.ones(size, dtype=cupy.uint8)
        target = cupy.empty_like(source)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        cupy.copyto(target, source)
        start.record()
        for _ in range(10):
            cupy.copyto(target, source)
        stop.record()
        stop.synchronize()
        return 2 * size * 10 / (cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    source = np.ones(size, dtype=np.uint8)
    target = np.empty_like(source)
    began = time.perf_counter()
    for _ in range(5):
        np.copyto(target, source)
    return 2 * size * 5 / (time.perf_counter() - began)


def device_name(backend: str) -> str:
    if backend == "cuda":
        import cupy

        return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    from .cluster import cpu_cores

    name = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name} ({cpu_cores()} cores)"


def source_commit() -> str:
    """$SEQSIFT_COMMIT if set (a copied checkout's git metadata may be stale), else git's HEAD."""
    if os.environ.get("SEQSIFT_COMMIT"):
        return os.environ["SEQSIFT_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).parent).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def run_bench(backend: str, out: Path, quick: bool = False, save_table: bool = True, log=print) -> dict:
    """Measure, write bench.json / bench.md / bench.png into ``out``; a full run with
    ``save_table`` also saves the table ``auto`` uses (a quick run never does)."""
    rng = np.random.default_rng(2026)
    grid = QUICK_GRID if quick else GRID
    work = (QUICK_WORK if quick else WORK)[backend]
    repeats = 1 if quick else 3
    roof = memory_copy_roof(backend)
    log(f"memory copy roof on {backend}: {roof / 1e9:.1f} GB/s (read + write)")
    records, measurements = [], []
    for metric, m, k, count in grid:
        patterns = random_patterns(rng, m, count)
        batch = patterns.oriented(range(count), (0, 1))
        n = int(min(max(work / batch.rows, 20 * m), 1 << 30))
        text = random_text(rng, n, patterns, k)
        if backend == "cuda":
            from .kernels.cuda import to_device_text

            text = to_device_text(text)
        measured_kernels = set()  # several algorithms share one CPU path: time it once
        for name, algorithm in kernels.ALGORITHMS.items():
            if not algorithm.serves(metric) or not algorithm.admits(backend, m, k):
                continue
            if algorithm.backends[backend] in measured_kernels:
                continue
            measured_kernels.add(algorithm.backends[backend])
            seconds, searched = time_kernel(name, backend, text, batch, k, repeats)
            rate = batch.rows * searched / seconds
            workload = f"{count} x {m} nt, k={k}, both strands, {searched:,} bp random"
            log(f"{name:20s} {workload:50s} {rate:10.3g} pattern-positions/s")
            records.append({"algorithm": name, "workload": workload, "quantity": "pattern_positions_per_s",
                            "value": rate, "roof_fraction": (searched / seconds) / roof if count == 1 else None,
                            "paper_value": PAPER_FIGURES.get(name), "time_s": seconds})
            measurements.append({"backend": backend, "metric": metric, "m": m, "k": k, "patterns": count,
                                 "algorithm": name, "pattern_positions_per_s": rate})
    records += crispr_records(backend, rng, QUICK_CRISPR_GUIDES if quick else CRISPR_GUIDES, work, repeats, log)
    sw_records, sw_measurements = run_sw_bench(backend, quick, log)
    records += sw_records
    measurements += sw_measurements
    result = {"device": device_name(backend), "date": datetime.date.today().isoformat(), "commit": source_commit(),
              "backend": backend, "memory_copy_bytes_per_s": roof, "records": records}
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "bench.md").write_text(markdown(result))
    plot(result, out / "bench.png")
    if quick:
        log("quick run: the table --algorithm auto uses is left as it was")
    elif save_table:
        from .kernels.planner import _load, user_table_path

        path = user_table_path(backend)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"device": result["device"], "date": result["date"],
                                    "measurements": measurements}, indent=1) + "\n")
        _load.cache_clear()
        log(f"algorithm table for --algorithm auto saved to {path}")
    return result


# ---- the crispr job's kernels ------------------------------------------------------------------

CRISPR_GUIDES = (64, 1024)
QUICK_CRISPR_GUIDES = (16,)
"""Guide counts measured (a full run, a --quick one)."""
CRISPR_GUIDE_LENGTH, CRISPR_PAM, CRISPR_MISMATCHES = 20, "NGG", 4
"""The shape of every crispr measurement: SpCas9 guides, up to 4 mismatches, no bulges."""


def crispr_workload(rng: np.random.Generator, guides: int, work: float):
    """(GuideRows, text codes): ``guides`` random guides oriented for both strands as the crispr job orients
    them, and random text of about ``work`` row-positions with some guide + PAM sites planted."""
    from .alphabet import pattern_masks
    from .kernels.crispr import orient_guides

    sequences = random_patterns(rng, CRISPR_GUIDE_LENGTH, guides).sequences
    rows = orient_guides([pattern_masks(g) for g in sequences], [CRISPR_MISMATCHES] * guides,
                         pattern_masks(CRISPR_PAM), pam_side=3)
    sites = PatternSet(tuple(f"s{i}" for i in range(guides)), tuple(g + "AGG" for g in sequences))
    n = int(min(max(work / rows.rows, 20 * CRISPR_GUIDE_LENGTH), 1 << 30))
    return rows, random_text(rng, n, sites, CRISPR_MISMATCHES)


def crispr_records(backend: str, rng: np.random.Generator, guide_counts, work: float, repeats: int,
                   log=print) -> list[dict]:
    """One record per crispr kernel on ``backend`` (the registry's entries of metric ``crispr``) and guide count.

    Each kernel is called as the crispr job's tasks call it (no bulges, the
    whole text owned) through :func:`time_over_text`. Quantity
    ``guide_positions_per_s``: guides x text length searched / seconds, each
    guide searched on both strands.
    """
    names = [name for name, algorithm in kernels.ALGORITHMS.items()
             if algorithm.serves("crispr") and algorithm.admits(backend, CRISPR_GUIDE_LENGTH, CRISPR_MISMATCHES)]
    records = []
    for guides in guide_counts:
        rows, text = crispr_workload(rng, guides, work)
        if backend == "cuda":
            from .kernels.cuda import to_device_text

            text = to_device_text(text)
        for name in names:
            kernel = kernels.resolve_kernel(name, backend)
            seconds, searched = time_over_text(lambda part: kernel(part, rows, 0, 0, 0, len(part)), text, repeats)
            rate = guides * searched / seconds
            workload = (f"{guides} guides x {CRISPR_GUIDE_LENGTH} nt + {CRISPR_PAM}, k={CRISPR_MISMATCHES}, "
                        f"both strands, {searched:,} bp random")
            log(f"{name:20s} {workload:50s} {rate:10.3g} guide-positions/s")
            records.append({"algorithm": name, "workload": workload, "quantity": "guide_positions_per_s",
                            "value": rate, "roof_fraction": None, "paper_value": None, "time_s": seconds})
    return records


def crispr_markdown(records: list[dict]) -> list[str]:
    """bench.md's section of the crispr kernels' records (none: no lines)."""
    crispr = [r for r in records if r["quantity"] == "guide_positions_per_s"]
    if not crispr:
        return []
    lines = ["", "## The crispr job's kernels", "",
             f"Guides of {CRISPR_GUIDE_LENGTH} nt + {CRISPR_PAM}, up to {CRISPR_MISMATCHES} mismatches, no bulges. "
             "Throughput: guide-positions per second (guides x text length / time, each guide searched on "
             "both strands).", "",
             "| algorithm | workload | guide-positions/s |",
             "|---|---|---|"]
    lines += [f"| `{r['algorithm']}` | {r['workload']} | {r['value']:.3g} |" for r in crispr]
    return lines


def markdown(result: dict) -> str:
    lines = [f"# seqsift bench, {result['date']}, {result['device']} ({result['backend']})", "",
             f"Memory copy roof measured on the spot: {result['memory_copy_bytes_per_s'] / 1e9:.1f} GB/s "
             "(bytes read + written). Throughput: pattern-positions per second (rows x text length / time, "
             "both strands counted as two rows); roof fraction for single patterns: text bytes read per "
             "second over the copy roof.", "",
             "| algorithm | workload | pattern-positions/s | roof fraction | paper's figure |",
             "|---|---|---|---|---|"]
    for r in result["records"]:
        if r["quantity"] != "pattern_positions_per_s":
            continue
        fraction = f"{r['roof_fraction']:.1%}" if r["roof_fraction"] is not None else ""
        lines.append(f"| `{r['algorithm']}` | {r['workload']} | {r['value']:.3g} | {fraction} | "
                     f"{r['paper_value'] or ''} |")
    sw_rows = [r for r in result["records"] if r["quantity"] == "cell_updates"]
    if sw_rows:
        lines += ["", "Smith-Waterman screening (cell updates per second, pairs x m x n / time):", "",
                  "| algorithm | workload | cells/s |", "|---|---|---|"]
        lines += [f"| `{r['algorithm']}` | {r['workload']} | {r['value']:.3g} |" for r in sw_rows]
    return "\n".join(lines + crispr_markdown(result["records"])) + "\n"


# --------------------------------------------------------------------------
# The screen job's kernels (metric "sw"): cells per second per length bucket
# --------------------------------------------------------------------------

SW_GRID = [(32, 256), (128, 1024), (128, 8192), (150, 2048), (512, 4096)]
"""(m, n) buckets measured: m the shorter sequence of a pair, n the longer."""
SW_QUICK_GRID = [(32, 256), (128, 1024)]
SW_CELLS = {"cpu": 3e7, "cuda": 2e11}
"""DP cells per measured call (pairs = cells / (m n)), per backend."""
SW_SCORINGS = {"linear": (2, 1, 1, None, None), "affine": (2, 3, 1, 5, 2)}


def run_sw_bench(backend: str, quick: bool = False, log=print, algorithms=None) -> tuple[list, list]:
    """Time every screening algorithm (or those named in ``algorithms``) at each (m, n) bucket, for linear
    and affine gaps, on random pairs already on the device: (records in DESIGN.md's shape, rows of the
    algorithm table for ``planner.plan_sw``)."""
    from .kernels import sw

    rng = np.random.default_rng(2026)
    records, rows = [], []
    grid = SW_QUICK_GRID if quick else SW_GRID
    cells = SW_CELLS[backend] / (100 if quick else 1)
    for m, n in grid:
        pairs = max(64, int(cells / (m * n)) // 64 * 64)
        x = rng.integers(0, 4, (pairs, m), dtype=np.uint8)
        y = rng.integers(0, 4, (pairs, n), dtype=np.uint8)
        if backend == "cuda":
            import cupy

            x, y = cupy.asarray(x), cupy.asarray(y)
        for gaps, values in SW_SCORINGS.items():
            scoring = sw.Scoring(*values)
            for name in sw.sw_algorithms():
                if algorithms is not None and name not in algorithms:
                    continue
                entry = kernels.ALGORITHMS[name]
                if (gaps == "affine" and not entry.affine_gaps) or backend not in entry.backends:
                    continue
                seconds = _time_sw(name, backend, x, y, scoring, 1 if quick else 3)
                rate = pairs * m * n / seconds
                workload = f"{pairs:,} random pairs of {m} x {n}, {gaps} gaps ({scoring.describe()})"
                log(f"{name:20s} {workload:70s} {rate:10.3g} cells/s")
                records.append({"algorithm": name, "workload": workload, "quantity": "cell_updates", "value": rate,
                                "roof_fraction": None, "paper_value": None, "time_s": seconds})
                rows.append({"backend": backend, "metric": "sw", "m": m, "n": n, "gaps": gaps, "algorithm": name,
                             "cells_per_s": rate})
    return records, rows


def _time_sw(name: str, backend: str, x, y, scoring, repeats: int) -> float:
    """Median seconds of one pair_scores call (scores back on the host) after a warm-up call."""
    from .kernels import sw

    sw.pair_scores(name, backend, x[:64], y[:64], scoring)   # compiles
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        sw.pair_scores(name, backend, x, y, scoring)
        times.append(time.perf_counter() - began)
    return float(np.median(times))


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [r for r in result["records"] if r["quantity"] == "pattern_positions_per_s"]  # the search kernels
    names = sorted({r["algorithm"] for r in records})
    workloads = list(dict.fromkeys(r["workload"].split(", both")[0] for r in records))
    fig, ax = plt.subplots(figsize=(max(6, len(workloads) * 0.5), 4))
    for name in names:
        points = [(workloads.index(r["workload"].split(", both")[0]), r["value"])
                  for r in records if r["algorithm"] == name]
        ax.plot([p[0] for p in points], [p[1] for p in points], "o-", label=name)
    ax.set_xticks(range(len(workloads)), workloads, rotation=70, fontsize=6)
    ax.set_yscale("log")
    ax.set_ylabel("pattern-positions / s")
    ax.set_title(f"seqsift bench — {result['device']}", fontsize=8)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
