"""Issue 26: affine gaps and the DPX kernels on the GPU, beside GASAL2 and parasail.

    python benchmarks/bench_sw_affine.py --out DIR [--gasal2 PATH/test_prog.out] [--pairs 32768]

Workload: ``--pairs`` random DNA pairs of m = 128 x n = 8,192 (issue 26's),
codes already on the device, CUDA events, median of ``--repeats`` after a
warm-up. Scorings: linear c1 = 2, c2 = 1, g = 1 (the paper's); affine
c1 = 2, c2 = 3, O = 5, E = 2 (a gap of length L: -(O + (L - 1) E)).

* every kernel variant in the same run: sw-dpx and sw-dpx-affine (dpx.cu's geometry for m = 128, and
  R x G = 16 x 8, 8 x 16), each in its two modes: pairs (x[p] against y[p], y rows gathered once with
  DPX_GAP codes of N around them; the gather timed apart) and tiles (the same number of pairs as a
  256 x 128 all-vs-all tile, one target per block); sw-gotoh, and sw-bpbc's SW stage (64 pairs per
  word); all kernels of a scoring must give identical scores, and a sample sw-gotoh's CPU path's;
* threshold mode (T = 64 and 128, linear): the exact composition-bound filter over all pairs (device)
  plus the flag kernels that stop a warp once each of its pairs reached T, counted as pairs x m x n
  over the whole, the flags checked against the full scores; and the tile flag kernel alone;
* threshold mode where a threshold screens (``qgram``: linear 2/3/5 and affine 2/3/5/2, T = 200, a
  256 x 128 tile whose targets each hold a relative of one x): the q-gram filter on the device, then the
  flag kernel on the pairs it keeps, against the flag kernel on the whole tile, both checked against the
  full scores;
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
THRESHOLDS = (64, 128)
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


STRICT = {"sw-dpx": sw.Scoring(2, 3, 5), "sw-dpx-affine": sw.Scoring(2, 3, gap_open=5, gap_extend=2)}
QGRAM_THRESHOLD = 200


def planted_tile(rng, tx: int, ty: int):
    """tx random x of M against ty random targets of N, target k holding, at a random place, a relative of
    x 2k (3% substitutions, 1% single-base insertions and deletions): codes of one host buffer, and the
    tile's (x_start, x_len, y_start, y_len)."""
    x = rng.integers(0, 4, (tx, M), dtype=np.uint8)
    y = rng.integers(0, 4, (ty, N), dtype=np.uint8)
    for k in range(min(ty, tx // 2)):
        copy = x[2 * k].copy()
        hit = rng.random(M)
        copy[hit < 0.03] = rng.integers(0, 4, int((hit < 0.03).sum()))
        copy = np.delete(copy, np.flatnonzero(hit > 0.99))
        at = int(rng.integers(0, N - 2 * M))
        y[k, at:at + copy.size] = copy
    buffer = np.concatenate([x.reshape(-1), y.reshape(-1)])
    return buffer, (np.arange(tx, dtype=np.int64) * M, np.full(tx, M, np.int64),
                    tx * M + np.arange(ty, dtype=np.int64) * N, np.full(ty, N, np.int64))


def qgram_section(rng, pairs: int, repeats: int) -> list[dict]:
    """Threshold mode where a threshold screens: buffer_scores with a threshold (the q-gram filter, qgram.cu,
    on the device, then the flag kernel on the kept pairs' windows of y; a host call timed whole, as the
    screen's task makes it, CUDA events around it, median of ``repeats`` after a warm-up) against the flag kernel alone on the
    whole tile; the same passing pairs as the full scores >= T. Counted as the issue counts it, tile pairs
    x m x n."""
    import cupy

    tx, ty = 256, pairs // 256
    host, tile = planted_tile(rng, tx, ty)
    buffer = cupy.asarray(host)
    cells = tx * ty * M * N
    records = []

    for name, scoring in STRICT.items():
        threshold = QGRAM_THRESHOLD
        full = sw.buffer_scores(name, "cuda", buffer, *tile, scoring, product=True)
        out = {}
        t_whole = cuda_time(lambda: out.__setitem__("whole", sw_cuda.dpx_launch(
            buffer, *tile, M, N, scoring, scoring.affine, product=True, threshold=threshold)), repeats)
        # whole host calls, which wait for their results: CUDA events around them time the calls
        t_filter = cuda_time(lambda: out.__setitem__("windows", sw.qgram_filter(buffer, *tile, scoring, threshold,
                                                                                 product=True)), repeats)
        t_total = cuda_time(lambda: out.__setitem__("flags", sw.buffer_scores(name, "cuda", buffer, *tile, scoring,
                                                                               product=True, threshold=threshold)),
                            repeats)
        plan = sw.qgram_filter_plan(scoring, threshold, M)
        windows = out["windows"]
        kept = int(windows.may.sum())
        y_from, y_to = windows.windows(np.nonzero(windows.may))
        columns = float((y_to - y_from).mean())
        exact = bool(np.array_equal(out["flags"], full >= threshold)
                     and np.array_equal(out["whole"].get().astype(bool), full >= threshold))
        passing = int((full >= threshold).sum())
        workload = (f"{tx} x {ty} all-vs-all tile of random sequences of {M} x {N:,}, target k holding a relative "
                    f"of x 2k, {scoring.describe()}, T={threshold}")
        records.append(record(f"{name} (threshold, tiles, no filter)", f"{workload}: the flag kernel alone on the "
                              f"whole tile (CUDA events); {passing:,} pairs pass", cells / t_whole, t_whole,
                              passing=passing, threshold=threshold, exact=exact))
        records.append(record(f"{name} (threshold + q-gram filter, tiles)", f"{workload}: buffer_scores (host call, "
                              f"as the screen's task makes it): the q-gram filter on the device (q = {plan.q}, bins "
                              f"of {1 << plan.width_shift} diagonals, need {plan.need}; {t_filter * 1e3:.2f} ms alone) "
                              f"kept {kept:,} pairs, then the flag kernel on their windows of y ({columns:.0f} "
                              f"columns on average); {passing:,} pairs pass", cells / t_total, t_total,
                              filter_s=t_filter, kept=kept, window_columns=columns, passing=passing,
                              threshold=threshold, exact=exact, q=plan.q, bin_diagonals=1 << plan.width_shift,
                              need=plan.need))
        log(f"{name}: exact {exact}; flag kernel alone {t_whole * 1e3:.2f} ms, filter {t_filter * 1e3:.2f} ms, "
            f"buffer_scores with the filter {t_total * 1e3:.2f} ms; kept {kept} of {tx * ty}, {passing} pass")
    return records


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
    ap.add_argument("--sections", default="sass,kernels,threshold,qgram,parasail,gasal2")
    ap.add_argument("--table-algorithms", help="table section: only these algorithms (comma-separated)")
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
        # The pairs mode reads y rows with DPX_GAP codes of N on both sides (dpx.cu, "The launch"): built
        # once here, as the screen task's gather would, and timed apart.
        width = N + 2 * sw_cuda.DPX_GAP
        t_rows = cuda_time(lambda: sw_cuda.gather_device(yd.reshape(-1), np.arange(pairs) * N, np.full(pairs, N),
                                                         width, sw_cuda.DPX_GAP), args.repeats)
        log(f"gather of the y rows (pairs mode's padded rows): {t_rows * 1e3:.2f} ms")
        rows_dev = sw_cuda.gather_device(yd.reshape(-1), np.arange(pairs) * N, np.full(pairs, N), width,
                                         sw_cuda.DPX_GAP)
        buffer = cupy.concatenate([xd.reshape(-1), rows_dev.reshape(-1)])
        x_start = cupy.arange(pairs, dtype=cupy.int64) * M
        x_len = cupy.full(pairs, M, dtype=cupy.int32)
        y_start = cupy.arange(pairs, dtype=cupy.int64) * width + sw_cuda.DPX_GAP + xd.size
        y_len = cupy.full(pairs, N, dtype=cupy.int32)
        # The tile mode: the same count of pairs as all-vs-all, 256 x sequences against 128 targets.
        tx, ty = 256, pairs // 256
        tile_buffer = cupy.concatenate([xd[:tx].reshape(-1), yd[:ty].reshape(-1)])
        tile_args = (cupy.arange(tx, dtype=cupy.int64) * M, cupy.full(tx, M, dtype=cupy.int32),
                     tx * M + cupy.arange(ty, dtype=cupy.int64) * N, cupy.full(ty, N, dtype=cupy.int32))
        check = 32   # pairs (and tile pairs) checked against sw-gotoh's CPU path
        reference = {s.affine: sw.gotoh_cpu(x[:check], y[:check], s) for s in (LINEAR, AFFINE)}
        tile_reference = {s.affine: sw.buffer_scores("sw-gotoh", "cpu", tile_buffer[:tx * M + 2 * N].get(),
                                                     np.arange(2) * M, np.full(2, M), tx * M + np.arange(2) * N,
                                                     np.full(2, N), s, product=True) for s in (LINEAR, AFFINE)}
        for affine, scoring, name in ((False, LINEAR, "sw-dpx"), (True, AFFINE, "sw-dpx-affine"),
                                      (True, LINEAR, "sw-dpx-affine")):
            geometries = [None] + ([(16, 8), (8, 16)] if scoring.affine == affine else [])
            for geometry in geometries:
                rows, group = geometry or (None, None)
                for mode in ("pairs", "tiles"):
                    chosen = sw_cuda.dpx_geometry(M, rows, group, affine, product=mode == "tiles")
                    try:
                        out = {}
                        if mode == "pairs":
                            fn = lambda: out.__setitem__("s", sw_cuda.dpx_launch(  # noqa: E731
                                buffer, x_start, x_len, y_start, y_len, M, N, scoring, affine, product=False,
                                rows=rows, group=group))
                        else:
                            fn = lambda: out.__setitem__("s", sw_cuda.dpx_launch(  # noqa: E731
                                tile_buffer, *tile_args, M, N, scoring, affine, product=True, rows=rows,
                                group=group))
                        seconds = cuda_time(fn, args.repeats)
                        got = out["s"].get()
                        if mode == "pairs":
                            same = bool(np.array_equal(got[:check], reference[scoring.affine]))
                            scores.setdefault(("ref", scoring.affine), got)
                            same = same and bool(np.array_equal(got, scores[("ref", scoring.affine)]))
                            scores[(name, scoring.affine)] = got
                        else:
                            same = bool(np.array_equal(got[:2, :2], tile_reference[scoring.affine]))
                        label = (f"{workload if mode == 'pairs' else f'{tx} x {ty} all-vs-all tile of random sequences of {M} x {N:,} ({tx * ty:,} pairs)'}"
                                 f", {scoring.describe()}, R={chosen[0]} rows x G={chosen[1]} threads per pair group, "
                                 f"{mode} mode")
                        records.append(record(f"{name} ({mode})", label, cells / seconds, seconds, rows=chosen[0],
                                              group=chosen[1], mode=mode, same_scores=same,
                                              saturated=int((got < 0).sum())))
                    except Exception as err:  # noqa: BLE001
                        log(name, mode, geometry, "failed:", repr(err))
        del buffer, rows_dev
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
            planes = sw_cuda._cuda_planes(xd, yd, 64)  # noqa: SLF001
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

        sw_records, rows = run_sw_bench("cuda", log=log, algorithms=args.table_algorithms.split(",")
                                        if args.table_algorithms else None)
        (args.out / "sw_table_rows.json").write_text(json.dumps({"device": device, "rows": rows,
                                                                 "records": sw_records}, indent=1) + "\n")

    if "threshold" in sections:
        # The screen's threshold mode: the exact composition bound (device), then the flag kernels that stop
        # a warp once each of its pairs reached T, checked against the full scores. Counted as the issue
        # counts it: pairs x m x n over the whole, filter included.
        try:
            def device_bound():   # the screen's own: dpx.cu's sw_count_bases, then the bound on the host
                xc = sw.base_counts(xd.reshape(-1), np.arange(pairs) * M, np.full(pairs, M))
                yc = sw.base_counts(yd.reshape(-1), np.arange(pairs) * N, np.full(pairs, N))
                return sw.composition_bound(xc, yc, LINEAR)
            full = sw.pair_scores("sw-dpx", "cuda", xd, yd, LINEAR)
            width = N + 2 * sw_cuda.DPX_GAP
            rows_dev = sw_cuda.gather_device(yd.reshape(-1), np.arange(pairs) * N, np.full(pairs, N), width,
                                             sw_cuda.DPX_GAP)
            buffer = cupy.concatenate([xd.reshape(-1), rows_dev.reshape(-1)])
            lists = (cupy.arange(pairs, dtype=cupy.int64) * M, cupy.full(pairs, M, dtype=cupy.int32),
                     cupy.arange(pairs, dtype=cupy.int64) * width + sw_cuda.DPX_GAP + xd.size,
                     cupy.full(pairs, N, dtype=cupy.int32))
            tx, ty = 256, pairs // 256
            tile_buffer = cupy.concatenate([xd[:tx].reshape(-1), yd[:ty].reshape(-1)])
            tile_args = (cupy.arange(tx, dtype=cupy.int64) * M, cupy.full(tx, M, dtype=cupy.int32),
                         tx * M + cupy.arange(ty, dtype=cupy.int64) * N, cupy.full(ty, N, dtype=cupy.int32))
            tile_full = sw.buffer_scores("sw-dpx", "cuda", tile_buffer, *[a.get() for a in tile_args], LINEAR,
                                         product=True)
            for threshold in THRESHOLDS:
                out_b = {}
                t_filter = cuda_time(lambda: out_b.__setitem__("b", device_bound()), args.repeats)
                keep = np.flatnonzero(out_b["b"] >= threshold)
                out = {}
                t_dp = cuda_time(lambda: out.__setitem__("f", sw_cuda.dpx_launch(
                    buffer, *lists, M, N, LINEAR, False, product=False, threshold=threshold)), args.repeats)
                flags = out["f"].get().astype(bool)
                exact = bool(np.array_equal(flags, full >= threshold))
                total = t_filter + t_dp
                records.append(record("sw-dpx (threshold, pairs)", f"{workload}, {LINEAR.describe()}, T={threshold}: "
                                      f"composition bound kept {keep.size:,} pairs ({t_filter * 1e3:.1f} ms, device), "
                                      f"then the flag kernel (a warp stops once its pairs reached T); "
                                      f"{int(flags.sum()):,} pairs pass", cells / total, total, filter_s=t_filter,
                                      dp_s=t_dp, kept=int(keep.size), passing=int(flags.sum()), threshold=threshold,
                                      exact=exact))
                out = {}
                t_tile = cuda_time(lambda: out.__setitem__("f", sw_cuda.dpx_launch(
                    tile_buffer, *tile_args, M, N, LINEAR, False, product=True, threshold=threshold)), args.repeats)
                flags = out["f"].get().astype(bool)
                exact = bool(np.array_equal(flags, tile_full >= threshold))
                records.append(record("sw-dpx (threshold, tiles)", f"{tx} x {ty} all-vs-all tile of random sequences "
                                      f"of {M} x {N:,}, {LINEAR.describe()}, T={threshold}: the flag kernel alone "
                                      f"(the bound keeps every random pair); {int(flags.sum()):,} pairs pass",
                                      cells / t_tile, t_tile, passing=int(flags.sum()), threshold=threshold,
                                      exact=exact))
            del buffer, rows_dev
        except Exception as err:  # noqa: BLE001
            log("threshold failed:", repr(err))

    if "qgram" in sections:
        try:
            records += qgram_section(rng, pairs, args.repeats)
        except Exception as err:  # noqa: BLE001
            log("qgram failed:", repr(err))

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
