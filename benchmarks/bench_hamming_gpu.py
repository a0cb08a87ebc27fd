"""The Hamming kernels on the GPU (issue 3): the paper's experiment, hamming-packed, one-pattern bandwidth.

    SEQSIFT_TEST_DATA=... python benchmarks/bench_hamming_gpu.py [--gbp 1.0] [--out benchmarks/results]

(a) Liu et al. 2012's experiment: one pattern of m = 16 .. 256 over a ~5 Mbp
    bacterial genome (E. coli 536 here; the paper used Yersinia pestis), k = m/8;
    time of hamming-thread, -block, -tiled beside the plain CPU scan on one core
    (NUMBA_NUM_THREADS=1), speedup beside the paper's 40-80x.
(b) hamming-packed: 1,000 guides of 20 nt, k = 4, both strands, over ``--gbp``
    Gbp of random text already on the device: guide-positions per second
    (goal 1.0e12) and the fraction of the int32 roof (instructions per
    row-position x row-positions/s over 16.7e12).
(c) one pattern of 32 nt, k = 2: text characters per second over the HBM
    roof (3.03e12 bytes/s read + write; the kernels read each text byte once),
    whole launcher and kernel alone; for hamming-packed (hamming_direct_*) also
    the bytes read and the instructions executed per character (SASS counts
    of the kernel's common path x how often a warp runs each part, from the
    kernel's NumPy emulation on a 4 Mbp sample) and their int32 roof fraction.
    ``--sass FILE`` reads the SASS counts from a ``cuobjdump -sass`` dump of
    hamming_direct_2_2 instead of the built-in ones.

Kernel timings: CUDA events after a warm-up, median of ``--repeats``. Writes
``hamming_gpu.json`` (DESIGN.md's shape) and ``hamming_gpu.png``.
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

from seqsift.bench import source_commit
from seqsift.alphabet import encode_text
from seqsift.kernels import find_ends
from gpu_timing import call_seconds, event_seconds  # benchmarks/gpu_timing.py, beside this script
from seqsift.pattern_set import PatternSet

HBM_ROOF = 3.03e12
INT_ROOF = 16.7e12
PACKED_INSTRUCTIONS_PER_ROW_POSITION = 5  # bit-sliced hot path per (row, window), see benchmarks/README.md
# hamming_direct_2_2's common path in SASS (nvcc 13.0, sm_90): per warp step of a
# 1,024-character tile (load ahead, pack, shuffles, loop) and per row in it
# (setup, early-exit end), per offset pair (one 16-bit load, 3 shifts, 7 LOP3,
# exit and loop tests) and per group passed. sass_counts() re-derives them from a dump.
DIRECT_SASS = {"tile": 85, "row": 33, "pair": 16, "group": 6}


def sass_counts(path: Path) -> dict:
    """DIRECT_SASS from a ``cuobjdump -sass -fun hamming_direct_2_2`` dump.

    pair: the loop around the first 16-bit shared load (the offset pairs);
    the tile and row parts keep the built-in counts unless the dump's pair loop
    differs, which the caller reports.
    """
    import re

    code = [(int(a, 16), text.strip())
            for a, text in re.findall(r"/\*([0-9a-f]{4,6})\*/\s+([^;]*);", path.read_text())]
    addresses = [a for a, _ in code]
    load = next(a for a, text in code if text.startswith("LDS.U16"))
    back = next(a for a, text in code if a > load and re.search(rf"BRA 0x{load:x}$", text))
    counts = dict(DIRECT_SASS)
    counts["pair"] = addresses.index(back) - addresses.index(load) + 1
    counts["instructions_total"] = len(code)
    return counts


def direct_kernel_seconds(text, batch, k, repeats):
    """hamming_direct_* alone (the launcher's work before and after left out), CUDA events."""
    import cupy

    from seqsift.kernels.hamming import cuda as hamming_cuda
    from seqsift.kernels.cuda import compact_hits_buffers, load_module

    n = int(text.size)
    m = int(batch.lengths.max())
    tiles = (n - m) // 32 // 32 + 1
    per_warp = hamming_cuda.direct_tiles_per_warp(tiles, hamming_cuda._multiprocessors(cupy.cuda.Device().id))
    kernel = load_module("hamming/hamming.cu").get_function(f"hamming_direct_{max(1, k.bit_length())}_2")
    plans = cupy.asarray(hamming_cuda.direct_row_plans(batch.masks[:, :m], batch.lengths))
    count, out_row, out_end, out_dist = compact_hits_buffers(1 << 20)
    args = (text, np.int64(n), plans, np.int32(batch.rows), np.int32(k), np.int64(0), np.int64(n), np.int64(0),
            np.int64(tiles), np.int32(per_warp), count, np.uint64(1 << 20), out_row, out_end, out_dist)
    warps = -(-tiles // per_warp)
    grid = (-(-warps * 32 // hamming_cuda.DIRECT_THREADS),)
    return event_seconds(lambda: kernel(grid, (hamming_cuda.DIRECT_THREADS,), args), repeats), per_warp


def direct_instructions_per_char(batch, k, sass, sample=4_000_000):
    """Instructions a lane executes per text character in hamming_direct_*, and how they split."""
    # The kernel's NumPy emulation lives with the tests that check it against the oracle.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from hamming_direct_emulation import emulate_direct

    codes = np.random.default_rng(9).integers(0, 4, sample).astype(np.uint8)
    stats = {}
    emulate_direct(codes, batch, k, 0, sample, tiles_per_warp=16, stats=stats)
    per_row = sass["row"] + sass["pair"] * stats["checks_per_row_tile"] + \
        sass["group"] * stats["groups_passed_per_row_tile"]
    per_tile = sass["tile"] + batch.rows * per_row
    return per_tile / 32, stats  # a lane's instructions cover its 32 characters


def random_patterns(rng, m, count):
    letters = np.array(list("ACGT"))
    return PatternSet(tuple(f"p{i}" for i in range(count)),
                      tuple("".join(letters[rng.integers(0, 4, m)]) for _ in range(count)))


def main() -> None:
    import cupy
    import numba

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("SEQSIFT_TEST_DATA", "../shared/data")))
    parser.add_argument("--gbp", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--sass", type=Path, help="cuobjdump -sass dump of hamming_direct_2_2")
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    records = []

    # (a) the paper's experiment
    with gzip.open(args.data / "ecoli536.fa.gz", "rt") as handle:
        genome = "".join(line.strip() for line in handle if not line.startswith(">"))
    host_text = encode_text(genome)
    text = cupy.asarray(host_text)
    numba.set_num_threads(1)
    for m in (16, 32, 64, 128, 256):
        start = int(rng.integers(0, len(genome) - m))
        batch = PatternSet(("p",), (genome[start:start + m],)).oriented(range(1), (0,))
        k = m // 8
        find_ends("hamming-scan", "cpu", host_text[:100_000], batch, k, 0, 100_000)
        began = time.perf_counter()
        find_ends("hamming-scan", "cpu", host_text, batch, k, 0, len(host_text))
        cpu = time.perf_counter() - began
        for algorithm in ("hamming-thread", "hamming-block", "hamming-tiled", "hamming-packed"):
            seconds = call_seconds(algorithm, text, batch, k, max(3, args.repeats // 2))
            records.append(dict(algorithm=algorithm, workload=f"1 x {m} nt, k={k}, E. coli 536 ({len(genome):,} bp)",
                                quantity="speedup_vs_1_cpu_core", value=cpu / seconds, roof_fraction=None,
                                paper_value="40-80x (OPT-block-thread, GTX 260)", time_s=seconds,
                                cpu_time_s=cpu))
            print(f"(a) m={m:3d} {algorithm:15s} {seconds * 1e3:9.3f} ms, {cpu / seconds:8.1f}x one core")

    # (b) hamming-packed, 1,000 guides, both strands, 1 Gbp on the device
    n = int(args.gbp * 1e9)
    text = cupy.random.randint(0, 4, n, dtype=cupy.uint8)
    guides = random_patterns(rng, 20, 1000)
    batch = guides.oriented(range(1000), (0, 1))
    seconds = call_seconds("hamming-packed", text, batch, 4, args.repeats)
    rate = len(guides) * n / seconds
    row_rate = batch.rows * n / seconds
    records.append(dict(algorithm="hamming-packed", workload=f"1000 guides x 20 nt, k=4, both strands, {args.gbp:g} Gbp random",
                        quantity="guide_positions_per_s", value=rate,
                        roof_fraction=row_rate * PACKED_INSTRUCTIONS_PER_ROW_POSITION / INT_ROOF,
                        paper_value=None, time_s=seconds, goal=1.0e12))
    print(f"(b) hamming-packed: {seconds:.3f} s, {rate:.3g} guide-positions/s (goal 1e12)")

    # (c) one pattern, m <= 32: bandwidth
    sass = sass_counts(args.sass) if args.sass else dict(DIRECT_SASS)
    if args.sass and sass["pair"] != DIRECT_SASS["pair"]:
        print(f"(c) note: the dump's pair loop has {sass['pair']} instructions, not {DIRECT_SASS['pair']}")
    single = random_patterns(rng, 32, 1)
    for strands in ((0,), (0, 1)):
        batch = single.oriented(range(1), strands)
        strand_text = "+ strand" if strands == (0,) else "both strands"
        for algorithm in ("hamming-packed", "hamming-tiled"):
            seconds = call_seconds(algorithm, text, batch, 2, args.repeats)
            record = dict(algorithm=algorithm, workload=f"1 x 32 nt, k=2, {strand_text}, {args.gbp:g} Gbp random",
                          quantity="text_chars_per_s", value=n / seconds, roof_fraction=n / seconds / HBM_ROOF,
                          paper_value=None, time_s=seconds, goal="0.5 of the HBM roof")
            line = f"(c) {algorithm} ({strand_text}): {n / seconds:.3g} chars/s = {n / seconds / HBM_ROOF:.1%} of HBM"
            if algorithm == "hamming-packed":
                kernel_s, per_warp = direct_kernel_seconds(text, batch, 2, args.repeats)
                per_char, stats = direct_instructions_per_char(batch, 2, sass)
                record.update(kernel_time_s=kernel_s, kernel_chars_per_s=n / kernel_s,
                              kernel_roof_fraction=n / kernel_s / HBM_ROOF,
                              bytes_per_char=1 + 16 * 2 / (per_warp * 1024),  # + 2 lanes' 16 B after each warp's run
                              instructions_per_char=per_char, int_roof_fraction=per_char * n / seconds / INT_ROOF,
                              sass_counts=sass, emulated_checks_per_row_tile=stats["checks_per_row_tile"],
                              emulated_groups_passed_per_row_tile=stats["groups_passed_per_row_tile"])
                line += (f"; kernel alone {kernel_s * 1e3:.3f} ms = {n / kernel_s / HBM_ROOF:.1%}; "
                         f"{per_char:.2f} instructions/char = {record['int_roof_fraction']:.1%} of the int32 roof")
            records.append(record)
            print(line)

    commit = source_commit()
    result = {"device": device, "date": datetime.date.today().isoformat(), "commit": commit or "unknown",
              "records": records}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hamming_gpu.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(records, args.out / "hamming_gpu.png", device)


def plot(records, path: Path, device: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for algorithm in ("hamming-thread", "hamming-block", "hamming-tiled", "hamming-packed"):
        points = [(int(r["workload"].split(" x ")[1].split()[0]), r["value"]) for r in records
                  if r["algorithm"] == algorithm and r["quantity"] == "speedup_vs_1_cpu_core"]
        ax.plot([p[0] for p in points], [p[1] for p in points], "o-", label=algorithm)
    ax.axhspan(40, 80, color="grey", alpha=0.2, label="paper: 40-80x (GTX 260)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("pattern length m (k = m/8), E. coli 536")
    ax.set_ylabel("speedup over one CPU core")
    ax.set_title(f"k-mismatch kernels — {device}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
