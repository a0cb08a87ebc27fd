"""edit-myers on the GPU (issue 8): cell updates per second, beside edlib on the CPU cores.

    python benchmarks/bench_edit_gpu.py [--gbp 1.0] [--out benchmarks/results]

Workload: 1,000 random patterns of m = 20 and m = 32 nt (one strand: 1,000
rows), k = 3, over a random text of ``--gbp`` Gbp already on the device. Cell
updates = m x text length x patterns; time: CUDA events around the kernel
launcher after a warm-up, median of ``--repeats``. edlib (HW mode, one pattern
at a time) runs on every CPU core of the machine through a process pool over a
shorter text; its rate is per character, so the two compare per pattern.

Roof: the fraction of the GPU's instruction issue rate (ISSUE_ROOF) that
SASS_PER_STEP instructions per pattern word and text character take.

Writes ``edit_gpu.json`` (DESIGN.md's shape) and ``edit_gpu.png``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from gpu_timing import call_seconds  # benchmarks/gpu_timing.py, beside this script
from seqsift.bench import source_commit
from seqsift.pattern_set import PatternSet

ISSUE_ROOF = 132 * 4 * 32 * 1.98e9  # H100 thread-instructions/s: 132 SMs x 4 schedulers x 32 lanes x 1.98 GHz
SASS_PER_STEP = 17.5
"""SASS instructions per (pattern row word, text character) in myers_short32's steady loop (cuobjdump -sass of
edit.cu at 556af87, benchmarks/README.md): one step updates one word, m cells."""
K = 3


def issue_roof_fraction(steps_per_s: float) -> float:
    """The share of the GPU's instruction issue rate that the kernel's steps use."""
    return steps_per_s * SASS_PER_STEP / ISSUE_ROOF


def patterns_of(rng, m: int, count: int) -> PatternSet:
    letters = np.array(list("ACGT"))
    return PatternSet(tuple(f"p{i}" for i in range(count)),
                      tuple("".join(letters[rng.integers(0, 4, m)]) for _ in range(count)))


def gpu_seconds(text, batch, repeats: int) -> float:
    return call_seconds("edit-myers", text, batch, K, repeats)


def _edlib_one(args):
    import edlib

    pattern, text = args
    began = time.perf_counter()
    edlib.align(pattern, text, mode="HW", task="distance", k=K)
    return time.perf_counter() - began


def edlib_seconds_per_char_per_pattern(patterns: PatternSet, text: str, workers: int) -> float:
    """Wall seconds per text character per pattern with ``workers`` processes."""
    jobs = [(p, text) for p in patterns.sequences]
    began = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_edlib_one, jobs))
    return (time.perf_counter() - began) / (len(jobs) * len(text))


def main() -> None:
    import cupy

    parser = argparse.ArgumentParser()
    parser.add_argument("--gbp", type=float, default=1.0)
    parser.add_argument("--patterns", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    rng = np.random.default_rng(8)
    n = int(args.gbp * 1e9)
    text = cupy.random.randint(0, 4, n, dtype=cupy.uint8)
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    cores = os.cpu_count() or 1
    edlib_text = "".join(np.array(list("ACGT"))[rng.integers(0, 4, 2_000_000)])
    records = []
    for m in (20, 32):
        patterns = patterns_of(rng, m, args.patterns)
        batch = patterns.oriented(range(len(patterns)), (0,))
        seconds = gpu_seconds(text, batch, args.repeats)
        cups = m * n * len(patterns) / seconds
        workload = f"{len(patterns)} x {m} nt, k={K}, + strand, {args.gbp:g} Gbp random on the device"
        records.append(dict(algorithm="edit-myers", workload=workload, quantity="cell_updates_per_s",
                            value=cups, roof_fraction=issue_roof_fraction(n * len(patterns) / seconds),
                            paper_value=None, time_s=seconds,
                            goal="30e12 at m=32"))
        edlib_rate = edlib_seconds_per_char_per_pattern(patterns_of(rng, m, 4 * cores), edlib_text, cores)
        gpu_rate = seconds / (n * len(patterns))
        records.append(dict(algorithm=f"edlib-hw ({cores} CPU processes)", workload=workload,
                            quantity="cell_updates_per_s", value=m / edlib_rate, roof_fraction=None,
                            paper_value=None, time_s=edlib_rate * n * len(patterns),
                            note="extrapolated from 2 Mbp x 4 patterns per core"))
        print(f"m={m}: edit-myers {seconds:.3f} s = {cups / 1e12:.2f} TCUPS; edlib on {cores} cores "
              f"{m / edlib_rate / 1e9:.2f} GCUPS; GPU/edlib per pattern {edlib_rate / gpu_rate:.0f}x")
    commit = source_commit()
    result = {"device": device, "date": datetime.date.today().isoformat(), "commit": commit or "unknown",
              "records": records}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "edit_gpu.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(records, args.out / "edit_gpu.png", device)


def plot(records, path: Path, device: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{r['algorithm']}\n{r['workload'].split(',')[0]}" for r in records]
    ax.bar(range(len(records)), [r["value"] for r in records],
           color=["tab:green" if "myers" in r["algorithm"] else "grey" for r in records])
    ax.axhline(30e12, color="red", linestyle="--", linewidth=1, label="goal 30 TCUPS (m=32)")
    ax.set_yscale("log")
    ax.set_xticks(range(len(records)), labels, fontsize=6)
    ax.set_ylabel("cell updates / s")
    ax.set_title(f"edit-myers, k=3 — {device}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
