"""edit-rowdp and edit-rowdp-shfl on the GPU: the experiments of Ho, Oh & Kim (2017).

    python benchmarks/bench_rowdp.py [--repeats 10] [--out benchmarks/results]

(a) The paper's Table 1: one pattern of m = 16, k = 6, + strand, over texts of
    3.14 to 22.87 MB (the paper's six sizes; here E. coli 536 repeated to the
    size when $SEQSIFT_TEST_DATA has it, else random DNA; the paper used yeast
    ORFs). Throughput = text characters per second (the paper's equation 5,
    bytes of input per second), for edit-rowdp (the paper's PASM_GPU),
    edit-rowdp-shfl (WsPASM_GPUshared) and edit-myers on the same job; the
    ratio shfl / baseline beside the paper's (1.25x on average).
(b) The paper's Figs. 6-7: the pattern length swept (m = 8 .. 256; k = 6, 2 at m = 8)
    over the largest text.
(c) The tile width (columns per thread R) of both kernels at Table 1's job.

Time: CUDA events around the launcher (find_ends: X matrix, launches, hit
compaction and the copy of the hits), text already on the device, after a
warm-up, median of ``--repeats``; for the rowdp kernels also around their
launches alone (rowdp.cuda.launch_kernels: no host work, no copy of the hits).
Roof: cells/s of the kernels alone (m x text characters per second) x int32
SASS instructions per cell (benchmarks/rowdp_sass.py) against the H100's
int32 rate (DESIGN.md), and all SASS instructions against its issue rate. Writes ``rowdp_gpu.json`` (DESIGN.md's shape) and ``rowdp_gpu.png``.
"""
from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
from pathlib import Path

import numpy as np

from gpu_timing import event_seconds  # benchmarks/gpu_timing.py, beside this script
from seqsift.bench import source_commit
from seqsift.alphabet import encode_text
from seqsift.kernels import find_ends, rowdp
from seqsift.pattern_set import PatternSet

INT_ROOF = 16.7e12  # H100 int32 ops/s (DESIGN.md)
ALGORITHMS = ("edit-rowdp", "edit-rowdp-shfl", "edit-myers")
# The paper's Table 1 (GTX 660): input MB -> (PASM_GPU, WsPASM_GPUshared) in "Gb/s".
PAPER_TABLE_1 = {3.14: (1.59, 1.94), 4.87: (1.58, 1.95), 7.74: (1.52, 1.99), 12.88: (1.61, 1.98),
                 17.56: (1.59, 1.97), 22.87: (1.57, 1.99)}
PAPER_MEAN_RATIO = 1.25
PAPER_BEST = 1.99  # WsPASM_GPUshared, Gb/s, read here as 1e9 text characters/s
# SASS instructions per cell, (int32 ops = integer ALU + IMAD, all issued), by kernel and R
# columns per thread, on the mismatch path of a single-code pattern position (a match skips 9
# (shfl) or 14 (global) of them), the per-row work shared by a thread's R cells:
# benchmarks/rowdp_sass.py on nvcc 13.0's sm_90 code of rowdp.cu (CuPy's NVRTC may differ a little).
SASS_PER_CELL = {
    "edit-rowdp-shfl": {1: (19.0, 34.0), 2: (21.5, 32.5), 4: (14.8, 24.2), 8: (11.9, 20.6), 16: (11.8, 20.2)},
    "edit-rowdp": {1: (69.0, 88.0), 2: (51.5, 66.0), 4: (42.8, 55.0), 8: (38.4, 49.5), 16: (36.2, 46.8)},
}
ISSUE_ROOF = 33.4e12  # H100: 132 SMs x 4 schedulers x 32 lanes x 1.98 GHz, instructions of any kind


def text_of(size: int, genome: np.ndarray | None, rng) -> np.ndarray:
    if genome is None:
        return rng.integers(0, 4, size, dtype=np.uint8)
    return np.resize(genome, size)


def ecoli() -> np.ndarray | None:
    folder = os.environ.get("SEQSIFT_TEST_DATA")
    path = Path(folder) / "ecoli536.fa.gz" if folder else None
    if path is None or not path.exists():
        return None
    with gzip.open(path, "rt") as handle:
        return encode_text("".join(line.strip() for line in handle if not line.startswith(">")))


def seconds_and_hits(algorithm: str, text, batch, k: int, repeats: int, **options):
    """(median seconds of the whole call, of its kernels alone (None for edit-myers), hits)."""
    from seqsift.kernels.cuda import compact_hits_buffers

    def call():
        if options:
            launcher = rowdp.rowdp_shfl if algorithm == "edit-rowdp-shfl" else rowdp.rowdp_global
            return launcher(text, batch, k, 0, int(text.size), **options)
        return find_ends(algorithm, "cuda", text, batch, k, 0, int(text.size))

    hits = call()  # compile and warm up
    whole = event_seconds(call, repeats, warm_up=False)
    kernels = None
    if algorithm in SASS_PER_CELL:
        # The launches alone, into hit buffers large enough: no host work, no copy of the hits.
        groups, _ = rowdp.cuda.tile_groups(np.asarray(batch.lengths), k, options.get("columns"))
        buffers = compact_hits_buffers(max(1 << 16, 2 * len(hits)))
        shuffle = algorithm == "edit-rowdp-shfl"
        kernels = event_seconds(
            lambda: rowdp.cuda.launch_kernels(text, batch, k, 0, int(text.size), shuffle, groups, buffers), repeats,
            warm_up=False, before=lambda: buffers[0].fill(0))
        assert int(buffers[0].get()[0]) == len(hits)
    return whole, kernels, len(hits)


def record(algorithm, workload, n, m, k, seconds, kernel_seconds, matches, paper_value=None, columns=None):
    """One record: throughput of the whole call; roof fractions of the kernels alone."""
    rate = n / seconds
    extra = {}
    roof = None
    if algorithm in SASS_PER_CELL:
        r = columns or rowdp.columns_per_thread(m, k)
        int_ops, issued = SASS_PER_CELL[algorithm][r]
        cells = m * n / kernel_seconds
        roof = cells * int_ops / INT_ROOF
        extra = dict(kernel_time_s=kernel_seconds, kernel_chars_per_s=n / kernel_seconds, kernel_cells_per_s=cells,
                     columns_per_thread=r, int_ops_per_cell=int_ops, sass_per_cell=issued,
                     issue_roof_fraction=cells * issued / ISSUE_ROOF)
    return dict(algorithm=algorithm, workload=workload, quantity="text_chars_per_s", value=rate,
                roof_fraction=roof, paper_value=paper_value, time_s=seconds, matches=matches,
                cells_per_s=m * rate, **extra)


def k_of(m: int) -> int:
    """k of the pattern-length sweep: the paper's 6 from m = 16 on, m / 4 below (m = 8: k = 2)."""
    return 6 if m >= 16 else max(1, m // 4)


def main() -> None:
    import cupy

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--scale", type=float, default=1.0, help="text sizes x this (a quick trial run)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    rng = np.random.default_rng(2017)
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    genome = ecoli()
    source = "E. coli 536 repeated" if genome is not None else "random DNA"
    letters = np.array(list("ACGT"))

    def one_pattern(m):
        sequence = "".join(letters[rng.integers(0, 4, m)])
        return PatternSet(("p",), (sequence,)).oriented(range(1), (0,))

    records = []
    # (a) Table 1: m = 16, k = 6.
    batch16 = one_pattern(16)
    ratios = []
    for megabytes, (paper_pasm, paper_shared) in PAPER_TABLE_1.items():
        n = int(megabytes * 1e6 * args.scale)
        text = cupy.asarray(text_of(n, genome, rng))
        workload = f"Table 1: 1 pattern x 16 nt, k=6, + strand, {n / 1e6:.2f} MB {source}"
        seconds = {}
        for algorithm in ALGORITHMS:
            paper = {"edit-rowdp": paper_pasm * 1e9, "edit-rowdp-shfl": paper_shared * 1e9}.get(algorithm)
            seconds[algorithm], kernel_seconds, matches = seconds_and_hits(algorithm, text, batch16, 6,
                                                                            args.repeats)
            records.append(record(algorithm, workload, n, 16, 6, seconds[algorithm], kernel_seconds, matches,
                                  paper))
        ratio = seconds["edit-rowdp"] / seconds["edit-rowdp-shfl"]
        ratios.append(ratio)
        records.append(dict(algorithm="edit-rowdp-shfl / edit-rowdp", workload=workload, quantity="speedup",
                            value=ratio, roof_fraction=None, paper_value=paper_shared / paper_pasm,
                            time_s=seconds["edit-rowdp-shfl"]))
        print(f"Table 1 {megabytes:6.2f} MB: " + ", ".join(
            f"{a} {n / seconds[a] / 1e9:6.2f}" for a in ALGORITHMS) + " G char/s"
            + f"; shfl/baseline {ratio:.2f}x (paper {paper_shared / paper_pasm:.2f}x)", flush=True)
        del text
    records.append(dict(algorithm="edit-rowdp-shfl / edit-rowdp", workload="Table 1, mean over the six texts",
                        quantity="speedup", value=float(np.mean(ratios)), roof_fraction=None,
                        paper_value=PAPER_MEAN_RATIO, time_s=None))

    # (b) Figs. 6-7: pattern length, largest text.
    n = int(22.87e6 * args.scale)
    text = cupy.asarray(text_of(n, genome, rng))
    for m in (8, 16, 32, 64, 128, 256):
        k = k_of(m)
        batch = one_pattern(m)
        workload = f"Figs. 6-7: 1 pattern x {m} nt, k={k}, + strand, {n / 1e6:.2f} MB {source}"
        line = []
        for algorithm in ALGORITHMS:
            seconds, kernel_seconds, matches = seconds_and_hits(algorithm, text, batch, k, args.repeats)
            records.append(record(algorithm, workload, n, m, k, seconds, kernel_seconds, matches))
            kernels = f", kernels {m * n / kernel_seconds / 1e12:.3f} Tcells/s" if kernel_seconds else ""
            line.append(f"{algorithm} {n / seconds / 1e9:7.2f} G char/s{kernels}")
        print(f"m={m:4d} k={k}: " + ", ".join(line), flush=True)

    # (c) Tile width: R columns per thread at Table 1's job.
    for algorithm in ALGORITHMS[:2]:
        line = []
        for columns in rowdp.COLUMNS:
            seconds, kernel_seconds, matches = seconds_and_hits(algorithm, text, batch16, 6, args.repeats,
                                                                columns=columns)
            records.append(record(algorithm, f"tile width: R={columns} columns per thread "
                                  f"({rowdp.THREADS * columns} per tile), 16 nt, k=6, {n / 1e6:.2f} MB {source}",
                                  n, 16, 6, seconds, kernel_seconds, matches, columns=columns))
            line.append(f"R={columns}: {n / seconds / 1e9:.2f} ({n / kernel_seconds / 1e9:.2f})")
        print(f"{algorithm} tile width, G char/s (kernels alone): " + ", ".join(line), flush=True)

    commit = source_commit()
    result = {"device": device, "date": datetime.date.today().isoformat(), "commit": commit or "unknown",
              "records": records}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rowdp_gpu.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(records, args.out / "rowdp_gpu.png", device)
    print(f"mean shfl/baseline over Table 1: {np.mean(ratios):.2f}x (paper {PAPER_MEAN_RATIO}x)")


def plot(records, path: Path, device: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    colors = {"edit-rowdp": "tab:blue", "edit-rowdp-shfl": "tab:green", "edit-myers": "tab:grey"}
    for algorithm in ALGORITHMS:
        table = [r for r in records if r["algorithm"] == algorithm and r["workload"].startswith("Table 1:")]
        sizes = [float(r["workload"].split(", ")[-1].split(" MB")[0]) for r in table]
        left.plot(sizes, [r["value"] / 1e9 for r in table], "o-", color=colors[algorithm], label=algorithm)
        sweep = [r for r in records if r["algorithm"] == algorithm and r["workload"].startswith("Figs.")]
        lengths = [int(r["workload"].split(" x ")[1].split(" nt")[0]) for r in sweep]
        right.plot(lengths, [r["value"] / 1e9 for r in sweep], "o-", color=colors[algorithm], label=algorithm)
    sizes = list(PAPER_TABLE_1)
    left.plot(sizes, [v[1] for v in PAPER_TABLE_1.values()], "s--", color="tab:green", alpha=0.5,
              label="paper WsPASM_GPUshared (GTX 660)")
    left.plot(sizes, [v[0] for v in PAPER_TABLE_1.values()], "s--", color="tab:blue", alpha=0.5,
              label="paper PASM_GPU (GTX 660)")
    for ax in (left, right):
        ax.set_yscale("log")
        ax.set_ylabel("text characters / s (1e9)")
        ax.legend(fontsize=7)
    left.set_xlabel("text (MB)")
    left.set_title("Table 1: m = 16, k = 6, one pattern", fontsize=9)
    right.set_xscale("log", base=2)
    right.set_xlabel("pattern length m (k = 6; 2 at m = 8), 22.87 MB")
    right.set_title("Figs. 6-7: pattern length", fontsize=9)
    fig.suptitle(f"edit-rowdp / edit-rowdp-shfl (Ho et al. 2017) — {device}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
