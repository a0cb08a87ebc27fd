"""CPU throughput of the Numba kernels on E. coli 536, beside edlib (issue 2).

    python benchmarks/bench_cpu.py [--data ../shared/data] [--out benchmarks/results]

Workloads: 100 and 1,000 20-nt patterns cut from the genome (each mutated at
3 random positions), k = 3, both strands, over the whole 4.94 Mbp genome:

* ``hamming-pigeonhole`` and ``edit-myers`` called directly (kernel time, all
  cores of this machine through Numba's thread pool), reported per pattern
  (both strands of one pattern count as one pattern);
* edlib's HW-mode search of one pattern at a time (single-threaded, as edlib
  is; both strands searched, so it does the same work per pattern);
* the whole job end to end (``seqsift.search`` on a local CPU cluster, FASTA
  to DataFrame).

Goals (issue 2): edit-myers at least as fast per pattern as edlib;
hamming-pigeonhole at least 10x faster per pattern than edlib's edit search.
Writes ``cpu_search.json`` (DESIGN.md's results shape) and ``cpu_search.png``.
"""
from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import platform
import random
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

from seqsift.alphabet import encode_text
from seqsift.kernels import find_ends
from seqsift.pattern_set import PatternSet

K = 3
M = 20


def load_genome(data: Path) -> str:
    with gzip.open(data / "ecoli536.fa.gz", "rt") as handle:
        return "".join(line.strip() for line in handle if not line.startswith(">")).upper()


def make_patterns(genome: str, count: int, seed: int = 7) -> PatternSet:
    rng = random.Random(seed)
    sequences = []
    for _ in range(count):
        start = rng.randrange(len(genome) - M)
        seq = list(genome[start:start + M])
        for position in rng.sample(range(M), 3):
            seq[position] = rng.choice("ACGT")
        sequences.append("".join(seq))
    return PatternSet(tuple(f"p{i}" for i in range(count)), tuple(sequences))


def median_time(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        function()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def time_kernel(algorithm: str, text: np.ndarray, patterns: PatternSet, repeats: int) -> float:
    batch = patterns.oriented(range(len(patterns)), (0, 1))
    find_ends(algorithm, "cpu", text[:10_000], batch, K, 0, 10_000)  # compile (cached) and warm up
    return median_time(lambda: find_ends(algorithm, "cpu", text, batch, K, 0, len(text)), repeats)


def edlib_seconds_per_pattern(genome: str, patterns: PatternSet, sample: int) -> float:
    """edlib HW mode, one pattern (both strands) at a time, mean over ``sample`` patterns."""
    import edlib

    complement = str.maketrans("ACGT", "TGCA")
    chosen = patterns.sequences[:sample]
    began = time.perf_counter()
    for seq in chosen:
        for oriented in (seq, seq.translate(complement)[::-1]):
            edlib.align(oriented, genome, mode="HW", task="distance", k=K)
    return (time.perf_counter() - began) / len(chosen)


def end_to_end_seconds(data: Path, patterns: PatternSet, metric: str) -> float:
    import seqsift

    began = time.perf_counter()
    seqsift.search(str(data / "ecoli536.fa.gz"), list(zip(patterns.names, patterns.sequences)), K,
                   metric=metric, align=False)
    return time.perf_counter() - began


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("SEQSIFT_TEST_DATA", "../shared/data")))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--edlib-sample", type=int, default=20)
    args = parser.parse_args()

    genome = load_genome(args.data)
    text = encode_text(genome)
    n = len(genome)
    workload = f"{{count}} x {M} nt, k={K}, both strands, E. coli 536 ({n:,} bp)"
    records = []
    edlib_per_pattern = None
    for count in (100, 1000):
        patterns = make_patterns(genome, count)
        if edlib_per_pattern is None:
            edlib_per_pattern = edlib_seconds_per_pattern(genome, patterns, args.edlib_sample)
            records.append(dict(algorithm="edlib-hw (1 thread)", workload=workload.format(count=1),
                                quantity="s_per_pattern", value=edlib_per_pattern, roof_fraction=None,
                                paper_value=None, time_s=edlib_per_pattern))
        for algorithm, metric in (("hamming-pigeonhole", "hamming"), ("edit-myers", "edit")):
            seconds = time_kernel(algorithm, text, patterns, args.repeats)
            per_pattern = seconds / count
            records.append(dict(algorithm=algorithm, workload=workload.format(count=count),
                                quantity="s_per_pattern", value=per_pattern, roof_fraction=None,
                                paper_value=None, time_s=seconds,
                                speedup_vs_edlib=edlib_per_pattern / per_pattern,
                                pattern_positions_per_s=count * 2 * n / seconds))
            wall = end_to_end_seconds(args.data, patterns, metric)
            records.append(dict(algorithm=f"{algorithm} end-to-end", workload=workload.format(count=count),
                                quantity="wall_s", value=wall, roof_fraction=None, paper_value=None,
                                time_s=wall))
            print(f"{algorithm:20s} {count:5d} patterns: kernel {seconds:8.3f} s "
                  f"({per_pattern * 1e3:8.3f} ms/pattern, {edlib_per_pattern / per_pattern:6.1f}x edlib), "
                  f"end to end {wall:6.2f} s")
    print(f"edlib HW, one pattern at a time: {edlib_per_pattern * 1e3:.2f} ms/pattern (both strands)")

    result = {"device": cpu_name(), "date": datetime.date.today().isoformat(), "commit": commit(),
              "records": records}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cpu_search.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(records, args.out / "cpu_search.png", result["device"])


def plot(records, path: Path, device: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernel_rows = [r for r in records if r["quantity"] == "s_per_pattern"]
    labels = [f"{r['algorithm']}\n{r['workload'].split(' x')[0]} patterns" for r in kernel_rows]
    values = [r["value"] * 1e3 for r in kernel_rows]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(range(len(values)), values, color=["grey"] + ["tab:blue", "tab:orange"] * 2)
    ax.set_xticks(range(len(values)), labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("ms per pattern (both strands), log")
    ax.set_title(f"E. coli 536, 20 nt, k=3 — {device}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
