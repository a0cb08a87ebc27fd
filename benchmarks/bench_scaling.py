"""Scaling over the GPUs of one machine (issue 6), through the CLI from the FASTA file.

    python benchmarks/bench_scaling.py [--gbp 3.1] [--guides 10000] [--out benchmarks/results]

Writes a random genome of ``--gbp`` Gbp (human size by default), shaped like GRCh38's analysis set
(``--shape hg38``, the default: 3,000 small contigs beside the chromosomes, soft-masking, N gaps; see
random_genome.py) or as 24 uniform records (``--shape uniform``), and
``--guides`` random 20-nt guides, then times ``seqsift search REF guides.tsv
-k 4 --gpus ...`` (both strands, partitioned Parquet output, no alignment
columns) on 1 GPU and on all GPUs visible, in fresh processes, and the kernel
alone on one chunk for the "end to end within 2x of the kernel" comparison.
Speedups go into the results as records with algorithm ``scaling-<n>gpu`` and
quantity ``speedup_vs_1gpu``. Writes ``scaling_gpu.json`` and ``scaling_gpu.png``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from random_genome import make_genome  # noqa: E402


def run_cli(reference: Path, guides: Path, gpus: str, out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "seqsift", "search", str(reference), str(guides), "-k", "4",
                             "--gpus", gpus, "--no-align", "--no-progress", "-o", f"{out}/"],
                            capture_output=True, text=True)
    wall = time.perf_counter() - began
    if result.returncode != 0:
        raise SystemExit(f"seqsift failed on GPUs {gpus}: {result.stderr[-2000:]}")
    return wall


def main() -> None:
    import cupy

    parser = argparse.ArgumentParser()
    parser.add_argument("--gbp", type=float, default=3.1)
    parser.add_argument("--shape", choices=("hg38", "uniform"), default="hg38")
    parser.add_argument("--guides", type=int, default=10_000)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/seqsift-scaling"))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    args.scratch.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(11)
    gpus = cupy.cuda.runtime.getDeviceCount()
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    reference = args.scratch / "genome.fa"
    began = time.perf_counter()
    make_genome(str(args.scratch), args.gbp, args.shape, None, os.cpu_count() or 1)
    print(f"wrote {args.gbp} Gbp ({args.shape}) in {time.perf_counter() - began:.0f} s", flush=True)
    letters = np.array(list("ACGT"))
    guides = args.scratch / "guides.tsv"
    guides.write_text("".join(f"g{i}\t{''.join(letters[rng.integers(0, 4, 20)])}\n" for i in range(args.guides)))
    from seqsift.io.reference import open_reference

    began = time.perf_counter()
    open_reference(reference)  # index once, outside the timed runs
    print(f"indexed in {time.perf_counter() - began:.0f} s", flush=True)

    records = []
    walls = {}
    for count in sorted({1, min(2, gpus), gpus}):
        visible = ",".join(str(g) for g in range(count))
        walls[count] = run_cli(reference, guides, visible, args.scratch / f"hits-{count}")
        rows = sum(1 for _ in (args.scratch / f"hits-{count}").glob("part-*.parquet"))
        print(f"{count} GPU(s): {walls[count]:.1f} s ({rows} part files)", flush=True)
        records.append(dict(algorithm=f"seqsift search, {count} GPU(s)",
                            workload=f"{args.guides} guides x 20 nt, k=4, both strands, {args.gbp} Gbp random FASTA "
                                     f"({args.shape}-shaped)",
                            quantity="wall_s", value=walls[count], roof_fraction=None, paper_value=None,
                            time_s=walls[count]))
    for count in walls:
        if count > 1:
            speedup = walls[1] / walls[count]
            records.append(dict(algorithm=f"scaling-{count}gpu", workload=records[0]["workload"],
                                quantity="speedup_vs_1gpu", value=speedup, roof_fraction=None, paper_value=None,
                                time_s=walls[count], goal={2: 1.8, 4: 3.4}.get(count)))
            print(f"speedup on {count} GPUs: {speedup:.2f}x", flush=True)

    # The kernel alone over the whole genome on one GPU, chunk by chunk, for comparison.
    from seqsift.kernels import find_ends
    from seqsift.pattern_set import PatternSet
    from seqsift.alphabet import encode_text

    ref = open_reference(reference)
    sequences = [line.split("\t")[1].strip() for line in guides.read_text().splitlines()]
    patterns = PatternSet(tuple(f"g{i}" for i in range(len(sequences))), tuple(sequences))
    chunk = min(64_000_000, int(ref.lengths[0]))   # of the first record (chr1 in the hg38 shape)
    text = cupy.asarray(encode_text(ref.read(0, 0, chunk)))
    kernel_total = 0.0
    for batch_range in patterns.batches(8192):
        batch = patterns.oriented(batch_range, (0, 1))
        find_ends("hamming-packed", "cuda", text[:1_000_000], batch, 4, 0, 1_000_000)
        cupy.cuda.Device().synchronize()
        began = time.perf_counter()
        find_ends("hamming-packed", "cuda", text, batch, 4, 0, chunk)
        cupy.cuda.Device().synchronize()
        kernel_total += time.perf_counter() - began
    kernel_s = kernel_total * int(ref.lengths.sum()) / chunk
    records.append(dict(algorithm="hamming-packed kernel alone (1 GPU)", workload=records[0]["workload"],
                        quantity="wall_s", value=kernel_s, roof_fraction=None, paper_value=None, time_s=kernel_s,
                        note="one 64 Mbp chunk timed, scaled to the genome"))
    print(f"kernel alone on one GPU: {kernel_s:.1f} s; end to end / kernel = {walls[1] / kernel_s:.2f}", flush=True)
    result = {"device": f"{gpus} x {device}", "date": datetime.date.today().isoformat(),
              "commit": os.environ.get("SEQSIFT_COMMIT", "unknown"), "records": records}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling_gpu.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(walls, kernel_s, args.out / "scaling_gpu.png", result["device"])


def plot(walls: dict, kernel_s: float, path: Path, device: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts = sorted(walls)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(counts, [walls[1] / walls[c] for c in counts], "o-", label="measured")
    ax.plot(counts, counts, "--", color="grey", label="linear")
    ax.set_xlabel("GPUs")
    ax.set_ylabel("speedup over 1 GPU")
    ax.set_xticks(counts)
    ax.set_title(f"3.1 Gbp, 10,000 guides, k=4 — {device}\n1 GPU: {walls[1]:.0f} s (kernel alone {kernel_s:.0f} s)",
                 fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
