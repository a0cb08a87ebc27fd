"""Issue 26's end-to-end screen: reads against targets, all-vs-all, threshold, FASTQ.gz in, Parquet out.

    python benchmarks/bench_screen_e2e.py --out DIR [--reads 100000] [--targets 1000] [--threshold 200]
                                          [--align] [--kernel-reads 10000] [--scoring 2,3,5,2]

Writes DIR/targets.fa.gz (``--targets`` random sequences of 2,000 nt) and DIR/reads.fq.gz (``--reads``
reads of 150 nt, each copied from a random place of a random target with 1% substitutions and 0.2%
single-base insertions and deletions; its source is in its name), then runs, in a fresh process with
the stage timers on (``SEQSIFT_STAGE_TIMES=1``, ``seqsift.runtime.stages``)::

    seqsift screen DIR/reads.fq.gz DIR/targets.fa.gz --all-vs-all --threshold T --no-align -o DIR/out.parquet

(``--align``: with the alignments too; ``--scoring c1,c2,O,E``: that scoring, ``--match c1 --mismatch c2
--gap-open O --gap-extend E``, the records named with ``-scoring-c1-c2-O-E``, e.g. 2,3,5,2 with T = 240,
where the q-gram filter screens: a read against its source scores ~290, random pairs ~30). Random 150 x 2,000 pairs score 126-151 with the default
scoring (c1 = 2, c2 = 1, g = 1: gaps are cheap, so random scores grow with length); a read against
its source scores ~280: T = 200 keeps exactly the sources. Reported: the wall time, the startup
before the CLI's main, the stages (read = read and encode both inputs; transfer = the codes to the
GPU; kernel = the tiles' flag kernels and the survivors' scores; locate = alignments; write; summed
over task threads), the rows and whether every read found its source; and the kernel alone on the
first ``--kernel-reads`` reads against every target (codes on the device, one tile call, CUDA
events), cells/s counted as reads x targets x 150 x 2,000.

Writes DIR/screen_e2e.json (DESIGN.md's shape; the job as ``e2e-screen-100k-x-1000`` with ``wall_s``)
and DIR/screen_e2e.png (each job's wall: the start before the CLI's main, the inputs' read, the rest of
main, beside the 5 s goal), and prints a table. ``--plot FILE.json``: only the PNG of a saved result,
beside it.
"""
from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from bench_end_to_end import run_cli
from gpu_timing import event_seconds

READ_LENGTH, TARGET_LENGTH = 150, 2000
LETTERS = np.frombuffer(b"ACGT", np.uint8)


def simulate(out: Path, reads: int, targets: int, seed: int = 26) -> tuple[Path, Path, np.ndarray]:
    """The two input files, and each read's source target."""
    rng = np.random.default_rng(seed)
    genome = rng.integers(0, 4, (targets, TARGET_LENGTH), dtype=np.uint8)
    target_file = out / "targets.fa.gz"
    with gzip.open(target_file, "wt", compresslevel=6) as f:
        f.write("".join(f">t{t}\n{LETTERS[genome[t]].tobytes().decode()}\n" for t in range(targets)))
    sources = rng.integers(0, targets, reads)
    span = READ_LENGTH + 8   # room for the deletions
    begins = rng.integers(0, TARGET_LENGTH - span, reads)
    pieces = genome[sources[:, None], begins[:, None] + np.arange(span)]
    substituted = rng.random(pieces.shape) < 0.01
    pieces[substituted] = rng.integers(0, 4, int(substituted.sum()))
    rolls = rng.random(pieces.shape)
    deleted, inserted = rolls < 0.001, rolls > 0.999
    sequences = pieces[:, :READ_LENGTH].copy()
    for r in np.flatnonzero(deleted.any(axis=1) | inserted.any(axis=1)):   # ~30% of the reads
        row = pieces[r][~deleted[r]]
        at = np.flatnonzero(inserted[r][~deleted[r]])
        row = np.insert(row, at + 1, rng.integers(0, 4, at.size).astype(np.uint8))
        sequences[r] = row[:READ_LENGTH]
    text = LETTERS[sequences]
    quality = "I" * READ_LENGTH
    lines = [f"@r{r}_t{sources[r]}_{begins[r]}\n{text[r].tobytes().decode()}\n+\n{quality}\n" for r in range(reads)]
    read_file = out / "reads.fq.gz"
    with gzip.open(read_file, "wt", compresslevel=6) as f:
        f.write("".join(lines))
    return read_file, target_file, sources


def kernel_alone(read_file: Path, target_file: Path, reads: int, threshold: int, repeats: int = 3) -> dict:
    """The tile flag kernel on the first ``reads`` reads x every target, codes on the device (CUDA events)."""
    import cupy

    from seqsift.kernels import sw
    from seqsift.screening import read_sequences

    queries, targets = read_sequences(str(read_file)), read_sequences(str(target_file))
    codes = cupy.asarray(np.concatenate([queries.codes[:queries.offsets[reads]], targets.codes]))
    x_start, x_len = queries.offsets[:reads], queries.lengths[:reads]
    y_start, y_len = targets.offsets[:-1] + queries.offsets[reads], targets.lengths
    scoring = sw.Scoring()
    out = {}
    for label, t in (("flags", threshold), ("scores", None)):
        box = {}

        def call():
            box["result"] = sw.buffer_scores("sw-dpx", "cuda", codes, x_start, x_len, y_start, y_len, scoring,
                                             product=True, threshold=t)
        seconds = event_seconds(call, repeats)
        result = box["result"]
        out[label] = {"seconds": seconds, "cells_per_s": reads * len(y_len) * READ_LENGTH * TARGET_LENGTH / seconds,
                      "passing": int(np.count_nonzero(result if t else result >= threshold))}
    return out


def plot(result: dict, path: Path) -> None:
    """Each end-to-end job's wall as stacked bars: start and imports before main, read, the rest of main."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    jobs = [r for r in result["records"] if r.get("wall_s") is not None]
    names = [r["algorithm"].replace("e2e-screen-", "") for r in jobs]
    startup = np.array([r["startup_s"] for r in jobs])
    read = np.array([r["stages"].get("read", 0.0) for r in jobs])
    rest = np.array([r["wall_s"] for r in jobs]) - startup - read
    fig, ax = plt.subplots(figsize=(7, 1.6 + 0.6 * len(jobs)))
    left = np.zeros(len(jobs))
    for part, label in ((startup, "start, imports"), (read, "read inputs"), (rest, "plan, kernels, write")):
        ax.barh(names, part, left=left, label=label)
        left += part
    goal = jobs[0].get("goal_s") if jobs else None
    if goal and result["device"] != "cpu":
        ax.axvline(goal, color="k", linestyle="--", label=f"goal {goal:g} s")
    ax.set_xlabel("seconds (fresh process, second run)")
    ax.set_title(f"seqsift screen end to end, {result['device']}, {result['date']}, {result['commit']}", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    if "--plot" in sys.argv:   # only the PNG of a saved result
        saved = Path(sys.argv[sys.argv.index("--plot") + 1])
        plot(json.loads(saved.read_text()), saved.with_suffix(".png"))
        return 0
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reads", type=int, default=100_000)
    ap.add_argument("--targets", type=int, default=1000)
    ap.add_argument("--threshold", type=int, default=200)
    ap.add_argument("--align", action="store_true", help="also run the job with its alignments")
    ap.add_argument("--kernel-reads", type=int, default=10_000)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--scoring", help="c1,c2,O,E: match, mismatch, gap open, gap extend (default: the CLI's)")
    args = ap.parse_args()
    scoring_argv, scoring_suffix = [], ""
    if args.scoring:
        c1, c2, gap_open, gap_extend = (int(v) for v in args.scoring.split(","))
        scoring_argv = ["--match", str(c1), "--mismatch", str(c2), "--gap-open", str(gap_open),
                        "--gap-extend", str(gap_extend)]
        scoring_suffix = f"-scoring-{c1}-{c2}-{gap_open}-{gap_extend}"
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    read_file, target_file, sources = simulate(args.out, args.reads, args.targets)
    print(f"inputs written in {time.perf_counter() - began:.1f} s: {read_file.stat().st_size / 1e6:.1f} MB + "
          f"{target_file.stat().st_size / 1e6:.1f} MB gzip", flush=True)
    workload = (f"{args.reads:,} reads of {READ_LENGTH} nt (FASTQ.gz) x {args.targets:,} targets of "
                f"{TARGET_LENGTH:,} nt (FASTA.gz), all-vs-all, threshold {args.threshold}, Parquet out"
                + (f", scoring {args.scoring} (c1, c2, O, E)" if args.scoring else ""))
    cells = args.reads * args.targets * READ_LENGTH * TARGET_LENGTH
    records = []
    import pandas as pd

    for align in (False, True) if args.align else (False,):
        output = args.out / ("out_align.parquet" if align else "out.parquet")
        argv = ["screen", str(read_file), str(target_file), "--all-vs-all", "--threshold", str(args.threshold),
                "--backend", args.backend, "-o", str(output)] + ([] if align else ["--no-align"]) + scoring_argv
        env = dict(os.environ, SEQSIFT_BENCH_STAGES=str(args.out / "stages.json"))
        run = run_cli(argv, env)   # bench_end_to_end's harness: a fresh process, the stage timers on
        rows = pd.read_parquet(output)
        found = rows["query"].str.extract(r"_t(\d+)_")[0].astype(int).to_numpy() == \
            rows["target"].str.slice(1).astype(int).to_numpy()
        sources_found = int(np.count_nonzero(found))
        shape = "100k-x-1000" if (args.reads, args.targets) == (100_000, 1000) else f"{args.reads}-x-{args.targets}"
        name = f"e2e-screen-{shape}" + scoring_suffix + ("-align" if align else "")
        record = {"algorithm": name, "workload": workload + (", with alignments" if align else ", --no-align"),
                  "quantity": "cell_updates", "value": cells / run["wall_s"], "roof_fraction": None,
                  "paper_value": None, "time_s": run["wall_s"], "wall_s": run["wall_s"], "rows": len(rows),
                  "sources_found": sources_found, "reads": args.reads, "startup_s": run["startup_s"],
                  "cli_main_s": run["cli_main_s"], "stages": run["stages"], "goal_s": 5.0}
        records.append(record)
        stages = ", ".join(f"{stage} {v:.2f}" for stage, v in run["stages"].items() if v)
        print(f"{name}: wall {run['wall_s']:.2f} s (startup {run['startup_s']:.2f}, main {run['cli_main_s']:.2f}); "
              f"stages: {stages}; {len(rows):,} rows, {sources_found:,} of {args.reads:,} reads with their source",
              flush=True)
    if args.backend == "cuda" and args.kernel_reads and not args.scoring:
        alone = kernel_alone(read_file, target_file, min(args.kernel_reads, args.reads), args.threshold)
        for label, value in alone.items():
            records.append({"algorithm": f"sw-dpx tiles ({label}, kernel alone)",
                            "workload": f"first {min(args.kernel_reads, args.reads):,} reads x every target of the "
                                        f"same inputs, codes on the device, one buffer_scores call",
                            "quantity": "cell_updates", "value": value["cells_per_s"], "roof_fraction": None,
                            "paper_value": None, "time_s": value["seconds"], "passing": value["passing"]})
            print(f"kernel alone ({label}): {value['cells_per_s']:.3g} cells/s, {value['seconds'] * 1e3:.1f} ms",
                  flush=True)
    from seqsift.bench import source_commit

    device = "cpu"
    if args.backend == "cuda":
        import cupy

        device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    result = {"device": device, "date": datetime.date.today().isoformat(),
              "commit": os.environ.get("SEQSIFT_COMMIT") or source_commit(), "records": records}
    (args.out / "screen_e2e.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(result, args.out / "screen_e2e.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
