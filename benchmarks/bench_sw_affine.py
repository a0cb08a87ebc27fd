"""Issue 26: affine gaps and the DPX kernels on the GPU, beside GASAL2 and parasail.

    python benchmarks/bench_sw_affine.py --out DIR [--gasal2 PATH/test_prog.out] [--pairs 32768]

Workload: ``--pairs`` random DNA pairs of m = 128 x n = 8,192 (issue 26's),
codes already on the device, CUDA events, median of ``--repeats`` after a
warm-up. Scorings: linear c1 = 2, c2 = 1, g = 1 (the paper's); affine
c1 = 2, c2 = 3, O = 5, E = 2 (a gap of length L: -(O + (L - 1) E)).

* every kernel variant: sw-dpx (rows per thread R = 4, 8, 16), sw-dpx-affine
  (likewise), sw-gotoh, and sw-bpbc's SW stage (64 pairs per word) in the
  same run; all GPU kernels of a scoring must give identical scores;
* threshold mode (T = 64, linear): the exact composition-bound filter over
  all pairs (host, Numba, as the screen task runs it) plus the DP of the
  pairs it keeps, counted as pairs x m x n over the whole;
* parasail 1.3 ``sw_scan_32`` on ``--check`` pairs (scores must equal), and
  ``sw_striped_16`` (affine; its fastest) on 16 processes for the rate;
* GASAL2 (``--gasal2``: its test_prog, built with nvcc for sm_90) on the
  first ``--gasal2-pairs`` pairs, local, affine (its -q is O - E: it charges
  q + L r), its total time against seqsift's from host codes to host scores
  on the same pairs; its scores checked against seqsift's on a sample;
* the SASS of dpx.cu (nvcc -arch=sm_90, cuobjdump) saved for the roof count.

Writes DIR/sw_affine.json (DESIGN.md's shape) and prints a table.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from seqsift.bench import source_commit
from seqsift.kernels import sw
from seqsift.kernels.sw import cuda as sw_cuda

M, N = 128, 8192
LINEAR = sw.Scoring(2, 1, 1)
AFFINE = sw.Scoring(2, 3, gap_open=5, gap_extend=2)
THRESHOLD = 64
LOG = []


def log(*parts):
    line = " ".join(str(p) for p in parts)
    LOG.append(line)
    print(line, flush=True)


def cuda_time(fn, repeats: int) -> float:
    """Median seconds of fn() by CUDA events, after one warm-up call."""
    import cupy

    fn()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times))


def record(algorithm, workload, value, seconds, quantity="cell_updates", **extra):
    rec = {"algorithm": algorithm, "workload": workload, "quantity": quantity, "value": value,
           "roof_fraction": extra.pop("roof_fraction", None), "paper_value": extra.pop("paper_value", None),
           "time_s": seconds}
    rec.update(extra)
    log(f"{algorithm:24s} {value:12.4g} {quantity:14s} {seconds * 1e3:10.2f} ms  {workload}")
    return rec


# ----------------------------------------------------------------------------------------------
# parasail
# ----------------------------------------------------------------------------------------------

def _parasail_matrix(scoring):
    import parasail

    table = parasail.matrix_create("ACGTN", scoring.match, -scoring.mismatch)
    for i in range(5):
        table.set_value(4, i, -scoring.mismatch)
        table.set_value(i, 4, -scoring.mismatch)
    return table


def _parasail_chunk(args):
    import parasail

    xs, ys, values, function = args
    scoring = sw.Scoring(*values)
    table = _parasail_matrix(scoring)
    fn = getattr(parasail, function)
    began = time.perf_counter()
    scores = [fn(a, b, scoring.open, scoring.extend, table).score for a, b in zip(xs, ys)]
    return scores, time.perf_counter() - began


def parasail_scores(xs, ys, scoring, function, processes=16):
    values = (scoring.match, scoring.mismatch, scoring.gap, scoring.gap_open, scoring.gap_extend)
    step = -(-len(xs) // processes)
    chunks = [(xs[a:a + step], ys[a:a + step], values, function) for a in range(0, len(xs), step)]
    with ProcessPoolExecutor(processes) as pool:
        list(pool.map(_parasail_chunk, [(a[:1], b[:1], v, f) for a, b, v, f in chunks]))   # workers started
        parts = list(pool.map(_parasail_chunk, chunks))
    # the slowest worker's own compute time: process start-up and transfers left out
    return np.array([s for part, _ in parts for s in part]), max(t for _, t in parts)


def texts(codes):
    letters = np.frombuffer(b"ACGTN", np.uint8)
    return [letters[row].tobytes().decode() for row in codes]


# ----------------------------------------------------------------------------------------------
# GASAL2
# ----------------------------------------------------------------------------------------------

def run_gasal2(binary, xs, ys, scoring, workdir: Path, timeout: float, print_scores: bool):
    q, t = workdir / "q.fa", workdir / "t.fa"
    q.write_text("".join(f">q{i}\n{s}\n" for i, s in enumerate(xs)))
    t.write_text("".join(f">t{i}\n{s}\n" for i, s in enumerate(ys)))
    cmd = [str(binary), "-a", str(scoring.match), "-b", str(scoring.mismatch), "-q",
           str(scoring.open - scoring.extend), "-r", str(scoring.extend), "-n", "8", "-y", "local"]
    if print_scores:
        cmd.append("-p")
    began = time.perf_counter()
    out = subprocess.run(cmd + [str(q), str(t)], capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - began
    found = re.search(r"Total execution time \(in milliseconds\): ([0-9.]+)", out.stderr)
    total = float(found.group(1)) / 1e3 if found else None
    scores = None
    if print_scores:
        found_scores = {int(q): int(v) for q, v in re.findall(r"query_name=q(\d+)\s.*?score=(-?\d+)", out.stdout)}
        scores = [found_scores.get(i, -1) for i in range(len(xs))]
    if out.returncode != 0:
        log("GASAL2 failed:", out.returncode, out.stderr[-2000:])
    return total, wall, scores


# ----------------------------------------------------------------------------------------------

def sass(out: Path):
    nvcc, cuobjdump = shutil.which("nvcc"), shutil.which("cuobjdump")
    if not nvcc or not cuobjdump:
        log("no nvcc/cuobjdump: SASS not saved")
        return
    source = Path(sw.__file__).with_name("dpx.cu")
    with tempfile.TemporaryDirectory() as tmp:
        for rows in (8, 16):
            obj = Path(tmp) / f"dpx{rows}.o"
            subprocess.run([nvcc, "-arch=sm_90", f"-DDPX_ROWS={rows}", "-c", str(source), "-o", str(obj)], check=True)
            text = subprocess.run([cuobjdump, "-sass", str(obj)], check=True, capture_output=True, text=True).stdout
            (out / f"dpx_r{rows}.sass").write_text(text)
    log("SASS saved")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pairs", type=int, default=32768)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--check", type=int, default=10000, help="pairs checked against parasail sw_scan_32")
    ap.add_argument("--gasal2", type=Path)
    ap.add_argument("--gasal2-pairs", type=int, default=8192)
    ap.add_argument("--gasal2-timeout", type=float, default=120)
    ap.add_argument("--parasail-pairs", type=int, default=1024)
    ap.add_argument("--sections", default="sass,kernels,threshold,parasail,gasal2")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sections = set(args.sections.split(","))
    import cupy

    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    log("device", device)
    if "sass" in sections:
        try:
            sass(args.out)
        except Exception as err:  # noqa: BLE001
            log("SASS failed:", err)
    rng = np.random.default_rng(26)
    pairs = args.pairs
    x = rng.integers(0, 4, (pairs, M), dtype=np.uint8)
    y = rng.integers(0, 4, (pairs, N), dtype=np.uint8)
    began = time.perf_counter()
    xd, yd = cupy.asarray(x), cupy.asarray(y)
    cupy.cuda.Device().synchronize()
    log(f"H2G of the codes: {time.perf_counter() - began:.3f} s")
    cells = pairs * M * N
    records, scores = [], {}
    workload = f"{pairs:,} random pairs of {M} x {N:,}"

    if "kernels" in sections:
        ysh = sw_cuda.y_shifts(yd, N)
        t_prep = cuda_time(lambda: sw_cuda.y_shifts(yd, N), args.repeats)
        log(f"y_shifts (target format of dpx.cu): {t_prep * 1e3:.2f} ms")
        for affine, scoring, name in ((False, LINEAR, "sw-dpx"), (True, AFFINE, "sw-dpx-affine"),
                                      (True, LINEAR, "sw-dpx-affine")):
            for rows in (4, 8, 16):
                try:
                    out = {}
                    fn = lambda: out.__setitem__("s", sw_cuda.cuda_dpx_device(xd, ysh, N, scoring, affine, rows))  # noqa: E731
                    seconds = cuda_time(fn, args.repeats)
                    got = out["s"].get()
                    key = (name, scoring.affine)
                    scores.setdefault(("ref", scoring.affine), got)
                    same = bool(np.array_equal(got, scores[("ref", scoring.affine)]))
                    _, group, _ = sw_cuda.dpx_geometry(M, rows)
                    records.append(record(name, f"{workload}, {scoring.describe()}, R={rows} rows x G={group} "
                                                f"threads per pair group", cells / seconds, seconds,
                                          rows=rows, group=group, same_scores=same, saturated=int((got < 0).sum())))
                    scores[key] = got
                except Exception as err:  # noqa: BLE001
                    log(name, rows, "failed:", repr(err))
        for scoring in (AFFINE, LINEAR):   # one pair per thread: 32,768 threads fill little of the GPU, slow
            try:
                gn = 512
                xt, yt = cupy.ascontiguousarray(xd.T), cupy.ascontiguousarray(yd[:, :gn].T)
                sw_cuda.cuda_gotoh_device(xt[:, :64], yt[:, :64], 64, scoring)   # compiles
                cupy.cuda.Device().synchronize()
                start, stop = cupy.cuda.Event(), cupy.cuda.Event()
                start.record()
                got = sw_cuda.cuda_gotoh_device(xt, yt, pairs, scoring)
                stop.record()
                stop.synchronize()
                seconds = cupy.cuda.get_elapsed_time(start, stop) / 1e3
                ref = sw.pair_scores("sw-dpx-affine", "cuda", xd[:256], yd[:256, :gn], scoring)
                same = bool(np.array_equal(got.get()[:256], ref))
                records.append(record("sw-gotoh", f"{pairs:,} random pairs of {M} x {gn}, {scoring.describe()} "
                                      f"(one timed run)", pairs * M * gn / seconds, seconds, same_scores=same))
                del xt, yt
            except Exception as err:  # noqa: BLE001
                log("sw-gotoh failed:", repr(err))
        try:   # sw-bpbc's SW stage, 64 pairs per word (issue 9's best), the same run
            planes = sw_cuda._cuda_planes(xd, yd, 64)
            width = sw_cuda.gpu_score_width(sw.score_bits(LINEAR, M))
            out = {}
            seconds = cuda_time(lambda: out.__setitem__("s", sw_cuda.cuda_sw_bpbc(*planes, LINEAR, width, 64)),
                                args.repeats)
            got = sw_cuda.cuda_b2w(out["s"], pairs, 64).get()
            same = bool(np.array_equal(got, scores.get(("ref", False))))
            records.append(record("sw-bpbc", f"{workload}, {LINEAR.describe()}, 64 pairs per word (SW stage)",
                                  cells / seconds, seconds, same_scores=same))
            del planes
        except Exception as err:  # noqa: BLE001
            log("sw-bpbc failed:", repr(err))
        # whole calls from host codes to host scores (what GASAL2's total is compared with)
        for name, scoring in (("sw-dpx", LINEAR), ("sw-dpx-affine", AFFINE)):
            began = time.perf_counter()
            sw.pair_scores(name, "cuda", x, y, scoring)
            seconds = time.perf_counter() - began
            records.append(record(name + " (host to host)", f"{workload}, {scoring.describe()}, pair_scores from "
                                  f"host codes to host scores", cells / seconds, seconds))

    if "table" in sections:   # seqsift bench's screen part: the rows auto uses (planner.plan_sw)
        from seqsift.bench import run_sw_bench

        sw_records, rows = run_sw_bench("cuda", log=log)
        (args.out / "sw_table_rows.json").write_text(json.dumps({"device": device, "rows": rows,
                                                                 "records": sw_records}, indent=1) + "\n")

    if "threshold" in sections:
        try:
            def device_bound():
                xc = cupy.stack([(xd == b).sum(axis=1, dtype=cupy.int32) for b in range(4)], axis=1)
                yc = cupy.stack([(yd == b).sum(axis=1, dtype=cupy.int32) for b in range(4)], axis=1)
                return LINEAR.match * cupy.minimum(xc, yc).sum(axis=1)
            out_b = {}
            t_filter = cuda_time(lambda: out_b.__setitem__("b", device_bound()), args.repeats)
            keep = np.flatnonzero(out_b["b"].get() >= THRESHOLD)
            ysh = sw_cuda.y_shifts(yd, N)
            out = {}
            keep_d = cupy.asarray(keep)
            xk, yk = xd[keep_d], ysh[keep_d]
            t_dp = cuda_time(lambda: out.__setitem__("s", sw_cuda.cuda_dpx_device(xk, yk, N, LINEAR, False, 8)),
                             args.repeats)
            passing = int((out["s"].get() >= THRESHOLD).sum())
            total = t_filter + t_dp
            records.append(record("sw-dpx (threshold)", f"{workload}, {LINEAR.describe()}, T={THRESHOLD}: "
                                  f"composition filter kept {keep.size:,} pairs ({t_filter * 1e3:.1f} ms, device), "
                                  f"then sw-dpx; {passing:,} pairs pass", cells / total, total,
                                  filter_s=t_filter, dp_s=t_dp, kept=int(keep.size), passing=passing))
        except Exception as err:  # noqa: BLE001
            log("threshold failed:", repr(err))

    if "parasail" in sections:
        try:
            k = min(args.check, pairs)
            xs, ys = texts(x[:k]), texts(y[:k])
            ref, wall = parasail_scores(xs, ys, AFFINE, "sw_scan_32")
            ours = scores.get(("sw-dpx-affine", True))
            ours = ours[:k] if ours is not None else sw.pair_scores("sw-dpx-affine", "cuda", x[:k], y[:k], AFFINE)
            log(f"parasail sw_scan_32 affine check: {k:,} pairs, {int((ref != ours).sum())} differences ({wall:.1f} s)")
            records.append(record("parasail-affine-check", f"parasail sw_scan_32 on {k:,} of the pairs, "
                                  f"{AFFINE.describe()}: differences from seqsift", int((ref != ours).sum()), wall,
                                  quantity="differences"))
            kl = min(1000, k)
            ref_l, _ = parasail_scores(xs[:kl], ys[:kl], LINEAR, "sw_scan_32")
            ours_l = scores.get(("sw-dpx", False))
            if ours_l is not None:
                log(f"parasail sw_scan_32 linear check: {kl:,} pairs, {int((ref_l != ours_l[:kl]).sum())} differences")
            kp = min(args.parasail_pairs, pairs)
            for function in ("sw_striped_16", "sw_scan_32"):
                _, wall = parasail_scores(xs[:kp], ys[:kp], AFFINE, function)
                records.append(record("parasail-affine-16t" if function == "sw_striped_16" else
                                      "parasail-affine-16t-scan32",
                                      f"{kp:,} of the pairs, {AFFINE.describe()}, parasail {function}, 16 processes",
                                      kp * M * N / wall, wall))
        except Exception as err:  # noqa: BLE001
            log("parasail failed:", repr(err))

    if "gasal2" in sections and args.gasal2:
        try:
            k = min(args.gasal2_pairs, pairs)
            xs, ys = texts(x[:k]), texts(y[:k])
            with tempfile.TemporaryDirectory() as tmp:
                small = min(512, k)
                _, _, g_scores = run_gasal2(args.gasal2, xs[:small], ys[:small], AFFINE, Path(tmp), 120, True)
                ours = sw.pair_scores("sw-dpx-affine", "cuda", x[:small], y[:small], AFFINE)
                if g_scores:
                    g = np.array(g_scores[:small])
                    diff = int((g != ours).sum())
                    log(f"GASAL2 scores: {int((g >= 0).sum())} printed, {diff} differ from seqsift "
                        f"(first: {list(zip(g[:6].tolist(), ours[:6].tolist()))})")
                    for go in range(2, 9):   # which convention do its scores follow?
                        for ge in (1, 2, 3):
                            if go >= ge:
                                alt = sw.pair_scores("sw-dpx-affine", "cuda", x[:small], y[:small],
                                                     sw.Scoring(AFFINE.match, AFFINE.mismatch, gap_open=go,
                                                                gap_extend=ge))
                                if int((alt == g).sum()) > small // 2:
                                    log(f"  GASAL2 agrees with seqsift O={go}, E={ge} on {int((alt == g).sum())}")
                total, wall, _ = run_gasal2(args.gasal2, xs, ys, AFFINE, Path(tmp), args.gasal2_timeout, False)
            began = time.perf_counter()
            sw.pair_scores("sw-dpx-affine", "cuda", x[:k], y[:k], AFFINE)
            ours_s = time.perf_counter() - began
            g_cells = k * M * N
            if total:
                records.append(record("gasal2-affine", f"GASAL2 test_prog (local, -q {AFFINE.open - AFFINE.extend} "
                                      f"-r {AFFINE.extend}) on {k:,} of the pairs: its total time (batches, "
                                      f"transfers, kernels)", g_cells / total, total, process_wall_s=wall))
                records.append(record("sw-dpx-affine (same pairs as GASAL2)", f"{k:,} of the pairs, host codes to "
                                      f"host scores", g_cells / ours_s, ours_s, ratio_to_gasal2=total / ours_s))
                log(f"seqsift / GASAL2 on {k:,} pairs: {total / ours_s:.2f}x")
        except Exception as err:  # noqa: BLE001
            log("GASAL2 failed:", repr(err))

    result = {"device": device, "date": datetime.date.today().isoformat(),
              "commit": os.environ.get("SEQSIFT_COMMIT") or source_commit(), "records": records}
    (args.out / "sw_affine.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "bench_sw_affine.log").write_text("\n".join(LOG) + "\n")


if __name__ == "__main__":
    sys.exit(main())
