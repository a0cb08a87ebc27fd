"""sw-bpbc and sw-wordwise on the GPU (issue 9): the paper's Table IV workload, beside parasail.

    python benchmarks/bench_sw.py [--quick] [--out benchmarks/results]

Workload (Nishimura et al., Section VI): 32K (32,768) random DNA pairs,
m = 128, n = 1,024 ... 65,536, c1 = 2, c2 = 1, gap = 1. For each n:

* sw-bpbc with 32 and with 64 pairs per word: H2G (host codes to the device),
  W2B (both sequences), SW, B2W, G2H, each timed with CUDA events (median of
  ``--repeats`` runs at n = 1,024, fewer as n grows, after one warm-up of
  every kernel), and their total, as the paper's Table IV; ``--max-n``
  (default 8,192) bounds n, since the whole table is ~10 minutes of GPU time;
* sw-wordwise: H2G, the position-major layout its coalesced loads need, SW,
  G2H;
* screening: sw-bpbc's flag kernels (sw_reach: score >= 64, one bit per pair
  instead of the running maximum, 7-bit numbers instead of 9), which
  ``seqsift screen --threshold`` runs before scoring the pairs that pass;
* cell updates per second = pairs x m x n / SW kernel time (and / total),
  beside the paper's Table V. The paper's GCUPS column is about 3x
  pairs x m x n / its own SWA time (and 5.5x / its total): the script prints
  the ratio for every n;
* the roof: ALU-pipe instructions per bit-sliced cell (one thread, one DP
  cell of 32 or 64 pairs) from the SASS of the kernel's step loop, when nvcc
  and cuobjdump are found (else the counts measured when the kernel was
  written, below), against the integer roof of DESIGN.md (16.7e12 ALU
  instructions/s on the H100);
* parasail 1.3 (``sw_striped_sat``: striped SIMD, 8-bit lanes, 16/32-bit on
  saturation; and ``sw_scan_sat``, which agrees with seqsift on linear gaps
  where the striped one does not always: see parasail_rate) on every CPU
  core through a process pool, on a subset of the pairs.

All GPU variants must give identical scores; a sample is checked against
parasail. Writes ``sw_gpu_issue9.json`` (DESIGN.md's shape) and ``sw_gpu_issue9.png``, and
prints the tables.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from seqsift.bench import source_commit
from seqsift.kernels import sw

INT_ROOF = 16.7e12       # H100 ALU-pipe int32 instructions/s (DESIGN.md)
ISSUE_ROOF = 33.4e12     # 132 SMs x 4 schedulers x 32 lanes x 1.98 GHz: one warp instruction per clock each
GOAL = 10e12
M = 128
THRESHOLD = 64   # screening: the flag kernels (a 32-base exact match scores 64)
SCORING = sw.Scoring(2, 1, 1)

# Nishimura et al., Table IV (milliseconds, GeForce GTX TITAN X) and Table V (GCUPS).
PAPER_NS = [1024, 2048, 4096, 8192, 16384, 32768, 65536]
PAPER_GPU = {  # n: (H2G, W2B, SWA, B2W, G2H, Total)
    "sw-bpbc32": [(5.51, 0.14, 6.91, 0.01, 0.08, 12.66), (10.60, 0.22, 12.61, 0.01, 0.08, 23.52),
                  (19.01, 0.32, 24.17, 0.01, 0.07, 43.59), (38.00, 0.56, 48.29, 0.01, 0.07, 86.94),
                  (79.54, 1.02, 96.56, 0.01, 0.08, 177.21), (153.31, 1.85, 196.03, 0.01, 0.08, 351.27),
                  (299.47, 3.35, 392.52, 0.01, 0.08, 695.42)],
    "sw-bpbc64": [(5.71, 2.76, 10.72, 0.01, 0.08, 19.28), (10.81, 5.13, 20.47, 0.01, 0.08, 36.51),
                  (19.61, 9.84, 38.43, 0.01, 0.08, 67.97), (37.89, 19.22, 75.44, 0.01, 0.07, 132.64),
                  (76.21, 37.76, 150.08, 0.01, 0.08, 264.14), (151.97, 75.33, 301.07, 0.01, 0.08, 528.46),
                  (297.54, 150.59, 605.80, 0.01, 0.09, 1054.04)],
    "sw-wordwise": [(5.78, None, 30.66, None, 0.08, 36.51), (10.46, None, 52.66, None, 0.07, 63.20),
                    (20.22, None, 111.62, None, 0.07, 131.91), (39.83, None, 203.41, None, 0.08, 243.32),
                    (78.52, None, 446.47, None, 0.08, 525.07), (156.89, None, 835.81, None, 0.08, 992.78),
                    (315.53, None, 1861.36, None, 0.07, 2176.96)],
}
PAPER_GCUPS = [1877.40, 2022.85, 2197.58, 2199.75, 2149.79, 2159.60, 2158.43]  # Table V, GPU column

# ALU-pipe SASS instructions per step of the sw_bpbc step loop (one DP cell of a
# word of pairs per thread), counted with cuobjdump -sass (CUDA 13.0, sm_90) when
# the kernel was written; used when this machine has no nvcc / cuobjdump.
SASS_FALLBACK = {
    "sw_bpbc32_s9_paper": {"all_per_step": 197.5, "alu_per_step": 117.5, "lop3_per_step": 104.0,
                           "source": "cuobjdump -sass, CUDA 13.0 nvcc -arch=sm_90, when written (issue 9)"},
    "sw_bpbc64_s9_paper": {"all_per_step": 319.0, "alu_per_step": 220.5, "lop3_per_step": 207.0,
                           "source": "cuobjdump -sass, CUDA 13.0 nvcc -arch=sm_90, when written (issue 9)"},
}


# --------------------------------------------------------------------------
# SASS: instructions per bit-sliced cell
# --------------------------------------------------------------------------

ALU_OPS = ("LOP3", "LOP", "IADD3", "IADD", "ISETP", "SEL", "SHF", "LEA", "IMNMX", "VIMNMX", "PLOP3", "FLO",
           "POPC", "BMSK", "PRMT", "IABS", "SGXT")


def sass_of(kernel: str, width: int) -> str | None:
    """SASS of one kernel of sw.cu (score width ``width``), compiled for sm_90 by nvcc
    (None without nvcc / cuobjdump)."""
    nvcc, cuobjdump = shutil.which("nvcc"), shutil.which("cuobjdump")
    if not nvcc or not cuobjdump:
        return None
    source = Path(sw.__file__).with_name("sw.cu")
    obj = Path(tempfile.mkdtemp(prefix="bench-sw-")) / "sw.o"
    subprocess.run([nvcc, "-arch=sm_90", "-std=c++17", f"-DSW_SCORE_BITS={width}", "-c", str(source), "-o",
                    str(obj)], check=True)
    return subprocess.run([cuobjdump, "-sass", "-fun", kernel, str(obj)], check=True, capture_output=True,
                          text=True).stdout


def step_loop_counts(sass: str) -> dict:
    """Instructions per step of the DP step loop (unrolled twice): the backward branch whose body
    holds the __shfl_up_sync of the step. Counts every instruction of the body, the branches a
    lane 0 / lane 31 takes included (an upper bound of what one step issues)."""
    ins = []
    for line in sass.splitlines():
        found = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if found:
            ins.append((int(found.group(1), 16), found.group(2).strip()))
    index = {a: k for k, (a, _) in enumerate(ins)}
    best = None
    for k, (address, text) in enumerate(ins):
        target = re.search(r"BRA\s+(?:\S+\s+)?0x([0-9a-f]+)", text)
        if target and int(target.group(1), 16) < address and "BRA.DIV" not in text:
            body = ins[index.get(int(target.group(1), 16), k):k + 1]
            shuffles = sum("SHFL.UP" in t for _, t in body)
            barriers = sum("BAR" in t for _, t in body)
            if shuffles and not barriers and (best is None or len(body) < len(best)):
                best = body
    if best is None:
        return {}
    ops = [re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0] for _, t in best]
    steps = 2   # #pragma unroll 2
    alu = sum(op in ALU_OPS for op in ops)
    return {"all_per_step": len(ops) / steps, "alu_per_step": alu / steps,
            "lop3_per_step": ops.count("LOP3") / steps, "source": "cuobjdump -sass of nvcc -arch=sm_90"}


# --------------------------------------------------------------------------
# GPU timing
# --------------------------------------------------------------------------

def cuda_ms(function, repeats: int) -> tuple[float, object]:
    """Median CUDA-event milliseconds of ``repeats`` calls of function(), and its last result.

    The first n of a run warms up every kernel (compilation, allocation); later,
    longer runs are timed without a separate warm-up call.
    """
    import cupy

    result = None
    times = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        result = function()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times), result


def run_bpbc(x, y, x_host, y_host, word_bits: int, repeats: int) -> tuple[dict, np.ndarray]:
    """Table IV columns of sw-bpbc (ms) and its scores."""
    import cupy

    pairs, n = y.shape
    width = sw.cuda.gpu_score_width(sw.score_bits(SCORING, M))
    t = {}
    t["H2G"], _ = cuda_ms(lambda: (cupy.asarray(x_host), cupy.asarray(y_host)), repeats)
    t["W2B"], (xp, yp) = cuda_ms(lambda: (sw.cuda.cuda_w2b(x, pairs, M, word_bits), sw.cuda.cuda_w2b(y, pairs, n, word_bits)),
                                 repeats)
    t["SW"], sliced = cuda_ms(lambda: sw.cuda.cuda_sw_bpbc(xp, yp, M, n, SCORING, width, word_bits), repeats)
    t["B2W"], scores = cuda_ms(lambda: sw.cuda.cuda_b2w(sliced, pairs, word_bits), repeats)
    began = time.perf_counter()
    host = scores.get()
    t["G2H"] = (time.perf_counter() - began) * 1e3
    t["Total"] = sum(t.values())
    return t, host


def run_reach(x, y, word_bits: int, threshold: int, repeats: int) -> tuple[dict, np.ndarray]:
    """W2B and the flag kernel (score >= threshold) of sw-bpbc (ms), and the flags."""
    pairs, n = y.shape
    width = sw.cuda.gpu_score_width(sw.reach_bits(SCORING, threshold))
    t = {}
    t["W2B"], (xp, yp) = cuda_ms(lambda: (sw.cuda.cuda_w2b(x, pairs, M, word_bits), sw.cuda.cuda_w2b(y, pairs, n, word_bits)),
                                 repeats)
    t["SW"], words = cuda_ms(lambda: sw.cuda.cuda_sw_bpbc(xp, yp, M, n, SCORING, width, word_bits, threshold), repeats)
    return t, sw._unpack_flags(words[:, 0], word_bits, pairs).get()


def run_wordwise(x, y, x_host, y_host, repeats: int) -> tuple[dict, np.ndarray]:
    import cupy

    pairs, n = y.shape
    t = {}
    t["H2G"], _ = cuda_ms(lambda: (cupy.asarray(x_host), cupy.asarray(y_host)), repeats)
    t["layout"], (xt, yt) = cuda_ms(lambda: (cupy.ascontiguousarray(x.T), cupy.ascontiguousarray(y.T)), repeats)
    t["SW"], scores = cuda_ms(lambda: sw.cuda.cuda_wordwise_device(xt, yt, pairs, SCORING), repeats)
    del xt, yt
    began = time.perf_counter()
    host = scores.get()
    t["G2H"] = (time.perf_counter() - began) * 1e3
    t["Total"] = sum(t.values())
    return t, host


# --------------------------------------------------------------------------
# parasail on the CPU cores
# --------------------------------------------------------------------------

def _parasail_chunk(args):
    import parasail

    function, xs, ys = args
    align = getattr(parasail, function)
    matrix = parasail.matrix_create("ACGT", SCORING.match, -SCORING.mismatch)
    began = time.perf_counter()
    scores = [align(x, y, SCORING.gap, SCORING.gap, matrix).score for x, y in zip(xs, ys)]
    return scores, time.perf_counter() - began


def parasail_rate(function: str, x_host, y_host, pairs: int, cores: int) -> tuple[float, np.ndarray, float]:
    """Cells/s of parasail ``function`` on ``cores`` processes over the first ``pairs`` pairs, their scores, wall s.

    Linear gaps are open = extend = g. parasail 1.3.4's striped functions
    (Farrar) then return a score below the true one for some pairs (about 15%
    of random 128 x 1,024 pairs with 2/-1/1; its scan and diag functions and
    the scalar sw agree with seqsift): the striped lazy-F loop assumes that an
    open costs more than an extension. The caller counts the differences.
    """
    letters = np.frombuffer(b"ACGT", dtype=np.uint8)
    xs = [letters[row].tobytes().decode() for row in x_host[:pairs]]
    ys = [letters[row].tobytes().decode() for row in y_host[:pairs]]
    chunks = [(function, xs[a::cores], ys[a::cores]) for a in range(cores)]
    with ProcessPoolExecutor(cores) as pool:
        list(pool.map(_parasail_chunk, [(f, c[:1], d[:1]) for f, c, d in chunks]))   # start the workers
        began = time.perf_counter()
        results = list(pool.map(_parasail_chunk, chunks))
        wall = time.perf_counter() - began
    scores = np.zeros(pairs, np.int64)
    for a, (chunk_scores, _) in enumerate(results):
        scores[a::cores] = chunk_scores
    return pairs * x_host.shape[1] * y_host.shape[1] / wall, scores, wall


# --------------------------------------------------------------------------

def main() -> None:
    import cupy

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="4,096 pairs, n = 1,024 and 4,096 (a smoke test)")
    parser.add_argument("--pairs", type=int, default=32768)
    parser.add_argument("--repeats", type=int, default=10, help="timed runs at n = 1,024 (fewer as n grows)")
    parser.add_argument("--max-n", type=int, default=8192,
                        help="largest n of Table IV to run (65,536 runs the whole table: ~10 minutes on an H100)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    pairs = min(4096, args.pairs) if args.quick else args.pairs
    ns = [1024, 4096] if args.quick else [n for n in PAPER_NS if n <= args.max_n]
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    cores = os.cpu_count() or 1

    sass_counts = {}
    reach_width = sw.cuda.gpu_score_width(sw.reach_bits(SCORING, THRESHOLD))
    kernels = {"sw_bpbc32_s9_paper": 9, "sw_bpbc64_s9_paper": 9, f"sw_reach32_s{reach_width}_paper": reach_width,
               f"sw_reach64_s{reach_width}_paper": reach_width}
    for kernel, width in kernels.items():
        try:
            text = sass_of(kernel, width)
        except (subprocess.CalledProcessError, OSError) as err:
            print(f"SASS of {kernel} unavailable: {err}")
            text = None
        sass_counts[kernel] = step_loop_counts(text) if text else SASS_FALLBACK.get(kernel, {})
        print(f"SASS {kernel}: {sass_counts[kernel]}")

    records, table = [], []
    rng = cupy.random.default_rng(9)
    warm = False
    for k, n in enumerate(ns):
        # The same cells per timing whatever n: one run at n >= 1,024 * repeats (~1 s each on an H100).
        repeats = max(1, (3 if args.quick else args.repeats) * 1024 // n)
        x = rng.integers(0, 4, (pairs, M), dtype=cupy.uint8)
        y = rng.integers(0, 4, (pairs, n), dtype=cupy.uint8)
        x_host, y_host = x.get(), y.get()
        cells = pairs * M * n
        paper_k = PAPER_NS.index(n) if n in PAPER_NS else None
        results = {}
        if not warm:   # compile and touch every kernel once before anything is timed
            xw, yw = cupy.ascontiguousarray(x[:64]), cupy.ascontiguousarray(y[:64, :1024])
            for word_bits in (32, 64):
                run_bpbc(xw, yw, xw.get(), yw.get(), word_bits, 1)
                run_reach(xw, yw, word_bits, THRESHOLD, 1)
            run_wordwise(xw, yw, xw.get(), yw.get(), 1)
            warm = True
        for name in ("sw-bpbc32", "sw-bpbc64", "sw-wordwise"):
            if name == "sw-wordwise":
                times, scores = run_wordwise(x, y, x_host, y_host, repeats)
            else:
                times, scores = run_bpbc(x, y, x_host, y_host, int(name[-2:]), repeats)
            results[name] = (times, scores)
            kernel = f"sw_bpbc{name[-2:]}_s9_paper"
            counts = sass_counts.get(kernel, {}) if name != "sw-wordwise" else {}
            roof = None
            if counts.get("alu_per_step"):
                # A thread's step is one bit-sliced cell: word_bits pair cells for alu_per_step
                # ALU instructions (64-bit words: the SASS already has two LOP3 per operation).
                roof = INT_ROOF * int(name[-2:]) / counts["alu_per_step"]
            workload = f"{pairs:,} random pairs, m={M}, n={n:,}, c1=2 c2=1 g=1"
            paper = PAPER_GPU[name][paper_k] if paper_k is not None else None
            records.append(dict(algorithm=name, workload=workload, quantity="cell_updates_per_s",
                                value=cells / (times["SW"] / 1e3), roof_fraction=(cells / (times["SW"] / 1e3) / roof)
                                if roof else None,
                                paper_value=(cells_paper(n) / (paper[2] / 1e3)) if paper else None,
                                paper_table_v=(PAPER_GCUPS[paper_k] * 1e9
                                               if paper_k is not None and name == "sw-bpbc32" else None),
                                roof=roof, time_s=times["SW"] / 1e3,
                                times_ms=times, paper_times_ms=paper, sass=counts or None,
                                goal="10e12 (sw-bpbc, n >= 4096)" if name.startswith("sw-bpbc") else None))
            records.append(dict(algorithm=f"{name} end to end (H2G..G2H)", workload=workload,
                                quantity="cell_updates_per_s", value=cells / (times["Total"] / 1e3),
                                roof_fraction=None, paper_value=(cells_paper(n) / (paper[5] / 1e3)) if paper else None,
                                time_s=times["Total"] / 1e3))
        reference = results["sw-bpbc32"][1]
        for name, (_, scores) in results.items():
            assert (scores == reference).all(), f"{name} differs from sw-bpbc32 at n={n}"
        for word_bits in (32, 64):   # screening: only whether score >= THRESHOLD
            name = f"sw-bpbc{word_bits} threshold {THRESHOLD}"
            times, flags = run_reach(x, y, word_bits, THRESHOLD, repeats)
            assert (flags == (reference >= THRESHOLD)).all(), f"{name} differs from the scores at n={n}"
            results[name] = (times, None)
            counts = sass_counts.get(f"sw_reach{word_bits}_s{reach_width}_paper", {})
            roof = INT_ROOF * word_bits / counts["alu_per_step"] if counts.get("alu_per_step") else None
            rate = cells / (times["SW"] / 1e3)
            records.append(dict(algorithm=name, workload=f"{pairs:,} random pairs, m={M}, n={n:,}, c1=2 c2=1 g=1, "
                                                         f"flag score >= {THRESHOLD} ({reach_width}-bit numbers)",
                                quantity="cell_updates_per_s", value=rate,
                                roof_fraction=rate / roof if roof else None, paper_value=None, roof=roof,
                                time_s=times["SW"] / 1e3, times_ms=times, sass=counts or None,
                                pairs_reaching=int(flags.sum())))
        rates = {}
        for function, sample in (("sw_striped_sat", 512 * cores * 1024 // n), ("sw_scan_sat", 64 * cores * 1024 // n)):
            sample = min(sample if not args.quick else 2 * cores, pairs)
            rate, parasail_scores, wall = parasail_rate(function, x_host, y_host, sample, cores)
            lower = int((parasail_scores != reference[:sample]).sum())
            if function == "sw_scan_sat":
                assert lower == 0, f"parasail {function} differs from seqsift at n={n}"
            rates[function] = rate
            records.append(dict(algorithm=f"parasail {function} ({cores} CPU processes)",
                                workload=f"{sample:,} of the pairs, m={M}, n={n:,}",
                                quantity="cell_updates_per_s", value=rate, roof_fraction=None, paper_value=None,
                                time_s=wall, pairs_scored_differently=lower))
            print(f"n={n:,}: parasail {function}: {rate / 1e9:.1f} GCUPS on {cores} processes; "
                  f"{lower} of {sample} scores differ from seqsift's")
        rate = rates["sw_striped_sat"]
        paper_ratio = (PAPER_GCUPS[paper_k] * 1e9 / (cells_paper(n) / (PAPER_GPU["sw-bpbc32"][paper_k][2] / 1e3))
                       if paper_k is not None else None)
        table.append((n, results, rate, paper_k, paper_ratio))
        del x, y, x_host, y_host
        cupy.get_default_memory_pool().free_all_blocks()

    print_tables(table, pairs, cores)
    commit = source_commit()
    result = {"device": device, "date": datetime.date.today().isoformat(), "commit": commit or "unknown",
              "records": records}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sw_gpu_issue9.json").write_text(json.dumps(result, indent=1, default=float) + "\n")
    roofs = {r["algorithm"]: r["roof"] for r in records if r.get("roof")}
    plot(table, pairs, args.out / "sw_gpu_issue9.png", device, cores, roofs)


def cells_paper(n: int) -> float:
    return 32768 * M * n


def print_tables(table, pairs: int, cores: int) -> None:
    print(f"\nTable IV workload: {pairs:,} pairs, m = {M}; milliseconds (paper: GTX TITAN X, 32K pairs)")
    print("| n | algorithm | H2G | W2B / layout | SW | B2W | G2H | total | paper SW | paper total |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, results, _, paper_k, _ in table:
        for name, (t, _) in results.items():
            if name not in PAPER_GPU:   # the threshold flag kernels
                print(f"| {n:,} | {name} | | {t['W2B']:.2f} | {t['SW']:.2f} | | | | | |")
                continue
            paper = PAPER_GPU[name][paper_k] if paper_k is not None else (None,) * 6
            middle = t.get("W2B", t.get("layout"))
            print(f"| {n:,} | {name} | {t['H2G']:.2f} | {middle:.2f} | {t['SW']:.2f} | {t.get('B2W', 0):.3f} | "
                  f"{t['G2H']:.2f} | {t['Total']:.2f} | {paper[2]} | {paper[5]} |")
    print(f"\nCell updates per second, SW kernel (pairs x m x n / SW time); Table V beside it")
    print(f"| n | sw-bpbc32 | sw-bpbc64 | sw-wordwise | bpbc / wordwise | threshold {THRESHOLD}: bpbc32 | bpbc64 "
          f"| flag / wordwise | parasail ({cores} cores) | paper Table V GPU | paper: pairs*m*n / its SWA "
          f"| Table V / that |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n, results, rate, paper_k, ratio in table:
        cells = pairs * M * n
        v = {name: cells / (t["SW"] / 1e3) for name, (t, _) in results.items()}
        paper_v = PAPER_GCUPS[paper_k] * 1e9 if paper_k is not None else None
        paper_own = cells_paper(n) / (PAPER_GPU["sw-bpbc32"][paper_k][2] / 1e3) if paper_k is not None else None
        nan = float("nan")
        flag32, flag64 = v[f"sw-bpbc32 threshold {THRESHOLD}"], v[f"sw-bpbc64 threshold {THRESHOLD}"]
        best, best_flag = max(v["sw-bpbc32"], v["sw-bpbc64"]), max(flag32, flag64)
        print(f"| {n:,} | {v['sw-bpbc32'] / 1e12:.2f} T | {v['sw-bpbc64'] / 1e12:.2f} T | "
              f"{v['sw-wordwise'] / 1e12:.2f} T | {best / v['sw-wordwise']:.2f}x | {flag32 / 1e12:.2f} T | "
              f"{flag64 / 1e12:.2f} T | {best_flag / v['sw-wordwise']:.2f}x | {rate / 1e9:.1f} G | "
              f"{paper_v / 1e9 if paper_v else nan:.0f} G | {paper_own / 1e9 if paper_own else nan:.0f} G"
              f" | {ratio if ratio else nan:.2f} |")


def plot(table, pairs: int, path: Path, device: str, cores: int, roofs: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4))
    ns = [row[0] for row in table]
    for name, color in (("sw-bpbc32", "tab:green"), ("sw-bpbc64", "tab:olive"), ("sw-wordwise", "tab:blue"),
                        (f"sw-bpbc32 threshold {THRESHOLD}", "tab:purple"),
                        (f"sw-bpbc64 threshold {THRESHOLD}", "tab:pink")):
        values = [pairs * M * n / (row[1][name][0]["SW"] / 1e3) for n, row in zip(ns, table)]
        ax.plot(ns, values, marker="o", color=color, label=name)
    ax.plot(ns, [row[2] for row in table], marker="s", color="grey", label=f"parasail striped_sat, {cores} cores")
    paper = [PAPER_GCUPS[PAPER_NS.index(n)] * 1e9 for n in ns if n in PAPER_NS]
    if len(paper) == len(ns):
        ax.plot(ns, paper, linestyle=":", color="black", label="paper Table V (TITAN X, as printed)")
    ax.axhline(GOAL, color="red", linestyle="--", linewidth=1, label="goal 10 TCUPS")
    if roofs.get("sw-bpbc32"):
        ax.axhline(roofs["sw-bpbc32"], color="tab:green", linestyle="--", linewidth=1,
                   label="sw-bpbc32 ALU roof (SASS count)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (m = 128)")
    ax.set_ylabel("cell updates / s (SW kernel)")
    ax.set_title(f"Smith-Waterman screening, {pairs:,} pairs — {device}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
