"""The screen's kernels on CPU cores: sw-lanes beside sw-bpbc, sw-gotoh and parasail, on the same pairs.

    python benchmarks/bench_sw_cpu.py [--out benchmarks/results] [--threads N]

Random DNA pairs of the screen's shapes (150 x 2,000: reads against their targets; 128 x 8,192: issue 26's
pairs), linear 2/1/1 and affine 2/3/5/2, codes in memory, each kernel's median of 3 calls after a warm-up
(compiles and cache loads left out). Every kernel's scores are checked equal to sw-gotoh's (the reference
of the CPU tests); parasail (``sw_striped_16``, its fastest here, and ``sw_scan_32``) runs on the same
pairs in one process per core, its slowest process's own compute time counted, and its scores are
compared with seqsift's.

Roof: sw-lanes' cell is about 10 vector operations linear and 17 affine (benchmarks/README.md, "the
alignments' pass 1"), 32 int16 lanes per 512-bit operation and two such operations a cycle: 6.4 and 3.8
cells per cycle per core at 16-bit lanes, times the cores and the clock (``--ghz``, default 2.6).
Writes ``sw_cpu.json`` (DESIGN.md's shape) and ``sw_cpu.png``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_sw_affine import parasail_scores, texts  # noqa: E402

from seqsift.bench import device_name, source_commit  # noqa: E402
from seqsift.kernels import sw  # noqa: E402

SHAPES = {"150 x 2,000": (150, 2_000, 1_024), "128 x 8,192": (128, 8_192, 256)}
SCORINGS = {"linear": sw.Scoring(2, 1, 1), "affine": sw.Scoring(2, 3, gap_open=5, gap_extend=2)}
CELLS_PER_CYCLE = {"linear": 64 / 10, "affine": 64 / 17}   # int16 lane-operations a cycle / operations a cell


def median_seconds(call, repeats: int = 3) -> float:
    call()   # warm-up: compiles, or loads from Numba's cache
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return float(np.median(times))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="parasail processes")
    parser.add_argument("--ghz", type=float, default=2.6, help="the cores' clock, for the roof")
    args = parser.parse_args()
    rng = np.random.default_rng(2611)
    records = []
    for shape, (m, n, pairs) in SHAPES.items():
        x = rng.integers(0, 4, (pairs, m), dtype=np.uint8)
        y = rng.integers(0, 4, (pairs, n), dtype=np.uint8)
        cells = pairs * m * n
        for gaps, scoring in SCORINGS.items():
            reference = sw.pair_scores("sw-gotoh", "cpu", x, y, scoring)
            roof = CELLS_PER_CYCLE[gaps] * (os.cpu_count() or 1) * args.ghz * 1e9
            names = ["sw-lanes", "sw-gotoh"] + (["sw-bpbc"] if gaps == "linear" else [])
            for name in names:
                scores = sw.pair_scores(name, "cpu", x, y, scoring)
                seconds = median_seconds(lambda: sw.pair_scores(name, "cpu", x, y, scoring))
                records.append({"algorithm": name, "workload": f"{pairs:,} random pairs of {shape}, {gaps} gaps "
                                f"({scoring.describe()}), {os.cpu_count()} cores", "quantity": "cell_updates",
                                "value": cells / seconds, "roof_fraction": cells / seconds / roof if name == "sw-lanes"
                                else None, "paper_value": None, "time_s": seconds,
                                "equal_to_sw_gotoh": bool(np.array_equal(scores, reference))})
                print(f"{name:10s} {shape:12s} {gaps:7s} {cells / seconds:10.3g} cells/s", flush=True)
            xs, ys = texts(x), texts(y)
            for function in ("sw_striped_16", "sw_scan_32"):
                got, seconds = parasail_scores(xs, ys, scoring, function, processes=args.threads)
                records.append({"algorithm": f"parasail {function}",
                                "workload": f"{pairs:,} random pairs of {shape}, {gaps} gaps ({scoring.describe()}), "
                                            f"{args.threads} processes",
                                "quantity": "cell_updates", "value": cells / seconds, "roof_fraction": None,
                                "paper_value": None, "time_s": seconds,
                                "equal_to_sw_gotoh": bool(np.array_equal(got, reference))})
                print(f"parasail {function:14s} {shape:12s} {gaps:7s} {cells / seconds:10.3g} cells/s", flush=True)
    result = {"device": device_name("cpu"), "date": datetime.date.today().isoformat(),
              "commit": source_commit(), "records": records}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sw_cpu.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(records, args.out / "sw_cpu.png", result["device"])
    return 0


def plot(records, path: Path, device: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [(shape, gaps) for shape in SHAPES for gaps in SCORINGS]
    names = ["sw-lanes", "sw-bpbc", "sw-gotoh", "parasail sw_striped_16", "parasail sw_scan_32"]
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        values = []
        for shape, gaps in groups:
            match = [r["value"] for r in records if r["algorithm"] == name and shape in r["workload"]
                     and f"{gaps} gaps" in r["workload"]]
            values.append(match[0] / 1e9 if match else 0)
        ax.bar([g + k * width for g in range(len(groups))], values, width, label=name)
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], [f"{s}\n{g}" for s, g in groups])
    ax.set_ylabel("1e9 cell updates / s")
    ax.set_title(f"Smith-Waterman scores on CPU cores ({device})", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
