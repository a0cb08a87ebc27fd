"""Host alignments of screened pairs (kernels.sw.align): the code before pass 1 ran in SIMD lanes and now.

    python benchmarks/bench_sw_align_cpu.py [--pairs 4096] [--old-pairs 384] [--repeats 3]
                                            [--old-commit 900c083] [--out benchmarks/results/sw_align_cpu.json]

Workloads (seeded): 150-nt reads copied from 2,000-nt random targets with
1% substitutions and 0.2% indels, each against the target it came from; and
random non-matching pairs of the same shapes. Scorings: linear 2/1/1 and
affine match 2, mismatch 3, open 5, extend 2. The scores come from
sw_cpu.gotoh_scores (another kernel). One Numba thread, so the rates are per
thread; each version runs ``--repeats`` times, alternating, and the best time
counts. "old" is src/seqsift/kernels/sw/cpu.py at ``--old-commit`` (read with
git show, imported from a temporary file): its align_pairs and
align_pairs_affine, called as kernels.sw.align calls them; "new" is this
checkout's. On the pairs both ran, coordinates and operations must be equal.

cells/s counts m x n cells per pair (the DP matrix pass 1 covers), whatever
each version actually computes. The new code is also timed through
kernels.sw.align (CIGAR text included). Writes ``--out`` (DESIGN.md's shape)
and prints a table.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from seqsift.kernels import sw
from seqsift.bench import device_name, source_commit
from seqsift.kernels.sw import cpu as new_cpu

M, N = 150, 2000
SCORINGS = {"linear 2/1/1": sw.Scoring(2, 1, 1), "affine 2/3/5/2": sw.Scoring(2, 3, gap_open=5, gap_extend=2)}


def git(*args) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parent).stdout


def load_old(commit: str, folder: str):
    """The old sw/cpu.py as a module of its own (it imports only numpy and numba)."""
    path = Path(folder) / "sw_cpu_old.py"
    path.write_text(git("show", f"{commit}:src/seqsift/kernels/sw/cpu.py"))
    spec = importlib.util.spec_from_file_location("sw_cpu_old", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reads_in_targets(rng, pairs: int):
    """(queries, targets): reads of M nt from random N-nt targets, 1% substitutions, 0.2% indels."""
    queries, targets = [], []
    for _ in range(pairs):
        t = rng.integers(0, 4, N).astype(np.uint8)
        at = int(rng.integers(0, N - M - 10))
        read = []
        for c in t[at:at + M + 5]:
            r = rng.random()
            if r < 0.001:
                continue                                       # deletion
            if r < 0.002:
                read.append(int(rng.integers(0, 4)))           # insertion
            read.append(int(rng.integers(0, 4)) if rng.random() < 0.01 else int(c))
        queries.append(np.array(read[:M], np.uint8))
        targets.append(t)
    return queries, targets


def random_pairs(rng, pairs: int):
    return ([rng.integers(0, 4, M).astype(np.uint8) for _ in range(pairs)],
            [rng.integers(0, 4, N).astype(np.uint8) for _ in range(pairs)])


def pack(queries, targets):
    codes = np.concatenate(queries + targets + [np.zeros(1, np.uint8)])
    q_len = np.array([len(q) for q in queries], np.int64)
    t_len = np.array([len(t) for t in targets], np.int64)
    q_start = np.cumsum(q_len) - q_len
    t_start = q_len.sum() + np.cumsum(t_len) - t_len
    return codes, q_start, q_len, t_start, t_len


def scores_of(queries, targets, scoring) -> np.ndarray:
    x = np.full((len(queries), max(len(q) for q in queries)), 4, np.uint8)
    y = np.full((len(targets), max(len(t) for t in targets)), 4, np.uint8)   # N padding: no score change
    for p, (q, t) in enumerate(zip(queries, targets)):
        x[p, :len(q)] = q
        y[p, :len(t)] = t
    scores = np.zeros(len(queries), np.int64)
    sw.sw_cpu.gotoh_scores(x, y, scoring.match, scoring.mismatch, scoring.open, scoring.extend, scores)
    return scores


def align_with(module, data, scores, scoring):
    """kernels.sw.align's call of align_pairs(_affine) of ``module``: (coords, ops per pair, seconds)."""
    codes, q_start, q_len, t_start, t_len = data
    pairs = scores.shape[0]
    room = q_len + t_len
    op_offsets = np.cumsum(room) - room
    ops = np.empty(int(room.sum()) + 1, np.uint8)
    op_counts = np.zeros(pairs, np.int64)
    coords = np.zeros((pairs, 4), np.int64)
    status = np.zeros(pairs, np.int8)
    began = time.perf_counter()
    if scoring.affine:
        module.align_pairs_affine(codes, q_start, q_len, t_start, t_len, scores, scoring.match, scoring.mismatch,
                                  scoring.open, scoring.extend, np.int64(1 << 31), op_offsets, ops, op_counts,
                                  coords, status)
    else:
        module.align_pairs(codes, q_start, q_len, t_start, t_len, scores, scoring.match, scoring.mismatch,
                           scoring.gap, np.int64(1 << 31), op_offsets, ops, op_counts, coords, status)
    seconds = time.perf_counter() - began
    assert not status.any(), "an alignment failed"
    return coords, [ops[o:o + c].tobytes() for o, c in zip(op_offsets.tolist(), op_counts.tolist())], seconds


def subset(data, count):
    codes, q_start, q_len, t_start, t_len = data
    return codes, q_start[:count], q_len[:count], t_start[:count], t_len[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=4096, help="pairs per workload for the new code")
    parser.add_argument("--old-pairs", type=int, default=384, help="the first pairs of each workload for the old code")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--old-commit", default="900c083")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "sw_align_cpu.json")
    args = parser.parse_args()
    numba.set_num_threads(1)
    new_cpu.COLD_SCALAR_CELLS = -1.0   # the lanes, as a machine that has compiled them runs every batch
    rng = np.random.default_rng(2026)
    workloads = {"150-nt reads (1% subst., 0.2% indels) in the 2,000-nt targets they came from":
                 reads_in_targets(rng, args.pairs),
                 "random 150 x 2,000-nt pairs": random_pairs(rng, args.pairs)}
    records, lines = [], []
    with tempfile.TemporaryDirectory() as folder:
        old_cpu = load_old(args.old_commit, folder)
        for (wname, (queries, targets)), (sname, scoring) in ((w, s) for w in workloads.items()
                                                              for s in SCORINGS.items()):
            data = pack(queries, targets)
            scores = scores_of(queries, targets, scoring)
            cells = data[2] * data[4]
            runs = {"old": (old_cpu, min(args.old_pairs, args.pairs)), "new": (new_cpu, args.pairs)}
            for module, count in runs.values():   # compile (or load Numba's cache), outside the timing
                align_with(module, subset(data, 2), scores[:2], scoring)
            best = {name: float("inf") for name in runs}
            results = {}
            for _ in range(args.repeats):
                for name, (module, count) in runs.items():
                    coords, ops, seconds = align_with(module, subset(data, count), scores[:count], scoring)
                    best[name] = min(best[name], seconds)
                    results[name] = (coords, ops)
            common = runs["old"][1]
            assert np.array_equal(results["old"][0][:common], results["new"][0][:common]), "coordinates differ"
            assert results["old"][1][:common] == results["new"][1][:common], "operations differ"
            for name, (_, count) in runs.items():
                seconds = best[name]
                workload = f"{wname}, {sname}, {count:,} pairs, 1 thread, sw-align-cpu {name} ({'commit ' + args.old_commit if name == 'old' else 'this commit'})"
                for quantity, value in (("pairs_per_s", count / seconds),
                                        ("cells_per_s", float(cells[:count].sum()) / seconds)):
                    records.append({"algorithm": f"sw-align-cpu ({name})", "workload": workload, "quantity": quantity,
                                    "value": value, "roof_fraction": None, "paper_value": None, "time_s": seconds})
                lines.append(f"{sname:15s} {wname[:40]:40s} {name:4s} {seconds / count * 1e3:9.4f} ms/pair "
                             f"{count / seconds:10.0f} pairs/s {cells[:count].sum() / seconds / 1e9:7.3f} Gcells/s")
            whole = float("inf")   # the new code through kernels.sw.align: CIGAR text included
            for _ in range(args.repeats):
                began = time.perf_counter()
                sw.align(*data, scores, scoring)
                whole = min(whole, time.perf_counter() - began)
            records.append({"algorithm": "sw-align-cpu (new, sw.align)", "workload": f"{wname}, {sname}, "
                            f"{args.pairs:,} pairs, 1 thread, kernels.sw.align whole (CIGAR text included)",
                            "quantity": "pairs_per_s", "value": args.pairs / whole, "roof_fraction": None,
                            "paper_value": None, "time_s": whole})
            lines.append(f"{sname:15s} {wname[:40]:40s} sw.align {whole / args.pairs * 1e3:9.4f} ms/pair")
            speedup = (best["old"] / runs["old"][1]) / (best["new"] / runs["new"][1])
            lines.append(f"{'':15s} {'':40s} new/old per pair: {speedup:.1f}x")
            print("\n".join(lines[-4:]), flush=True)
    result = {"device": device_name("cpu"), "date": datetime.date.today().isoformat(), "commit": source_commit(),
              "records": records}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    plot(result, args.out.with_suffix(".png"))
    print(f"wrote {args.out} and its .png")


def plot(result: dict, path: Path) -> None:
    """Pairs per second and thread, old beside new, per workload and scoring (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def label(record: dict) -> str:
        pairs = "reads in their targets" if record["workload"].startswith("150-nt reads") else "random pairs"
        return f"{pairs}\n{'linear' if 'linear' in record['workload'] else 'affine'}"

    rows = [r for r in result["records"] if r["quantity"] == "pairs_per_s" and "sw.align" not in r["algorithm"]]
    labels = sorted({label(r) for r in rows})
    figure, axes = plt.subplots(figsize=(8, 4))
    for k, version in enumerate(("old", "new")):
        values = {label(r): r["value"] for r in rows if r["algorithm"] == f"sw-align-cpu ({version})"}
        axes.bar([i + (k - 0.5) * 0.4 for i in range(len(labels))], [values[label] for label in labels], 0.4,
                 label=version)
    axes.set_xticks(range(len(labels)), labels, fontsize=8)
    axes.set_yscale("log")
    axes.set_ylabel("alignments per second, one thread")
    axes.set_title(f"Host alignments of screen's passing pairs\n{result['device']}", fontsize=10)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
