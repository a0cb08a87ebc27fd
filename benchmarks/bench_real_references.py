"""Real-shaped references end to end (issue 27): uniform beside hg38-shaped beside a million records.

    python benchmarks/bench_real_references.py --work /tmp/refs --gbp 3.1                     # the H100 run
    python benchmarks/bench_real_references.py --work /tmp/refs --gbp 0.02 --million 20000 --backend cpu

Writes three genomes with ``benchmarks/random_genome.py`` (reused while their
arguments are the same): ``uniform`` (24 records), ``hg38`` (GRCh38's shape:
24 chromosomes, 3,000 contigs, half soft-masked, N gaps, IUPAC letters,
headers with descriptions) and ``records`` (``--million`` records of equal
length: 10^6 x 3.1 kbp at 3.1 Gbp). On each it runs, through the command
line in a fresh process (``bench_end_to_end.run_cli``: stage timers on, the
count of kernel calls), a first run (the genome's index and cache built)
then a second run, then the best of two plain runs (no stage timers, as a
user runs it: the record's ``value``), of:

* ``crispr-1000``: 1,000 guides of 20 nt, NGG, k = 4, to a TSV;
* ``edit-312x23``: 312 x 23-nt patterns, edit k = 3, both strands, best +
  CIGAR, to Parquet;

(``--jobs all``: also the rest of goal 1's list, below); then on each genome
the same jobs through ``seqsift serve`` (``-served``); then on the
hg38-shaped genome the edit job on a fresh machine (empty Numba, CuPy and
seqsift caches: ``-fresh``), and Cas-OFFinder 2.4 (``--cas-offinder BINARY``, its ``G``
device) on the same guides, whose sites are checked to equal seqsift's.
Records go to ``--out/real_references_<backend>.json`` in DESIGN.md's shape
(quantity ``wall_s``, the stage seconds, ``kernel_calls``) with the names
the issue asks for (``e2e-hg38-crispr-1000``, ``e2e-records-1e6-edit-312x23``,
``cas-offinder-hg38-1000``, ...), plus a stacked-bar PNG.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_end_to_end import STAGES, run_cli  # noqa: E402  (the CLI harness: stage timers, fresh process)

JOBS = {
    "crispr-1000": lambda work, genome, out: ["crispr", str(genome), str(work / "crispr1000.txt"), "--pam", "NGG",
                                              "-k", "4", "-o", str(out / "sites.tsv")],
    "edit-312x23": lambda work, genome, out: ["search", str(genome), str(work / "edit312.fa"), "-k", "3",
                                              "--metric", "edit", "-o", str(out / "hits.parquet")],
}
MORE_JOBS = {  # --jobs all: the rest of goal 1's list (Hamming, edit ends, crispr with bulges)
    "hamming-1000x20": lambda work, genome, out: ["search", str(genome), str(work / "ham1000.fa"), "-k", "2",
                                                  "-o", str(out / "hits.parquet")],
    "edit-ends-312x23": lambda work, genome, out: ["search", str(genome), str(work / "edit312.fa"), "-k", "3",
                                                   "--metric", "edit", "--mode", "ends",
                                                   "-o", str(out / "ends.parquet")],
    "crispr-100-bulges": lambda work, genome, out: ["crispr", str(genome), str(work / "crispr100.txt"), "--pam",
                                                    "NGG", "-k", "3", "--dna-bulge", "1", "--rna-bulge", "1",
                                                    "-o", str(out / "bulges.tsv")],
}
SHAPES = {"uniform": "e2e-uniform", "one": "e2e-one-record", "hg38": "e2e-hg38", "records": "e2e-records-1e6"}


def make_genome(folder: Path, gbp: float, *options: str) -> Path:
    """``random_genome.py`` into ``folder`` unless it holds that genome already."""
    stamp = folder / "made.json"
    wanted = {"gbp": gbp, "options": list(options)}
    if not (stamp.exists() and json.loads(stamp.read_text()) == wanted):
        shutil.rmtree(folder, ignore_errors=True)
        began = time.perf_counter()
        subprocess.run([sys.executable, str(HERE / "random_genome.py"), str(folder), str(gbp), *options], check=True)
        stamp.write_text(json.dumps(wanted))
        print(f"{folder.name}: written in {time.perf_counter() - began:.1f} s", flush=True)
    return folder / "genome.fa"


def _seconds(value: float | None) -> str:
    """A time for the log line; "n/a" where it was not measured (tasks in worker processes)."""
    return "n/a" if value is None else f"{value:.2f} s"


def fresh_machine(env: dict) -> dict:
    """``env`` with empty Numba, CuPy and seqsift caches of its own, as on a new cluster node."""
    fresh = Path(tempfile.mkdtemp(prefix="seqsift-fresh-"))
    return dict(env, SEQSIFT_CACHE=str(fresh / "seqsift"), NUMBA_CACHE_DIR=str(fresh / "numba"),
                CUPY_CACHE_DIR=str(fresh / "cupy"))


def plain_wall(argv: list[str], env: dict) -> float:
    """Seconds of one ``python -m seqsift`` run as a user starts it: no stage timers (which wait for the
    device at every stage's end)."""
    env = {key: value for key, value in env.items() if key != "SEQSIFT_STAGE_TIMES"}
    began = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "seqsift", *argv], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if result.returncode != 0:
        raise SystemExit(f"seqsift {' '.join(argv)} failed:\n{result.stderr[-3000:]}")
    return wall


def job_record(name: str, workload: str, result: dict, backend: str) -> dict:
    """``value``: the plain run's wall where there is one (``plain_wall_s``), else the stage-timed run's."""
    stages = result.get("stages", {})
    wall = result.get("plain_wall_s", result["wall_s"])
    return {"algorithm": name, "workload": workload, "quantity": "wall_s", "value": wall,
            "stage_timed_wall_s": result["wall_s"] if "stages" in result else None,
            "roof_fraction": None, "paper_value": None, "time_s": wall,
            "stages_s": {s: stages.get(s, 0.0) for s in STAGES}, "kernel_calls": int(stages.get("kernel_calls", 0)),
            "startup_s": result.get("startup_s"), "first_kernel_s": result.get("first_kernel_s"), "backend": backend}


def served(genome: Path, work: Path, env: dict, backend: str, jobs: dict) -> dict[str, float]:
    """Each of ``jobs``' second run through ``seqsift serve`` (the server started and warmed beforehand)."""
    socket = Path(tempfile.mkdtemp(prefix="seqsift-bench-")) / "server.sock"
    served_env = dict(env, SEQSIFT_SERVER_SOCKET=str(socket))
    server = subprocess.Popen([sys.executable, "-m", "seqsift", "serve", "--backend", backend], env=served_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if "listening" not in server.stdout.readline():
        raise SystemExit(f"seqsift serve did not start: {server.stderr.read()[-2000:]}")
    walls = {}
    try:
        for name, argv in jobs.items():
            command = [sys.executable, "-m", "seqsift", *argv(work, genome, work), "--backend", backend,
                       "--no-progress"]
            for run in ("first", "second"):
                began = time.perf_counter()
                result = subprocess.run(command, env=served_env, capture_output=True, text=True)
                if result.returncode != 0:
                    raise SystemExit(f"served {name} failed: {result.stderr[-2000:]}")
                walls[name] = time.perf_counter() - began
    finally:
        subprocess.run([sys.executable, "-m", "seqsift", "serve", "--stop"], env=served_env, capture_output=True)
        server.wait(timeout=120)
    return walls


def cas_offinder(binary: str, device: str, genome: Path, guides: list[str], out: Path) -> tuple[float, list[str]]:
    spec = out / "cof_in.txt"
    spec.write_text(f"{genome}\nNNNNNNNNNNNNNNNNNNNNNGG\n" + "".join(f"{g}NNN 4\n" for g in guides))
    result_file = out / "cof_out.txt"
    result_file.unlink(missing_ok=True)
    began = time.perf_counter()
    subprocess.run([binary, str(spec), device, str(result_file)], check=True, capture_output=True)
    return time.perf_counter() - began, result_file.read_text().splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="where the genomes and outputs go (local disk)")
    parser.add_argument("--gbp", type=float, default=3.1)
    parser.add_argument("--million", type=int, default=1_000_000, help="records of the many-record genome")
    parser.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--cas-offinder", help="Cas-OFFinder 2.4's binary, run beside seqsift")
    parser.add_argument("--cas-offinder-device", default="G", choices=["G", "C"],
                        help="Cas-OFFinder's device: G (the GPU, default) or C (CPU cores, through pocl)")
    parser.add_argument("--shapes", default="uniform,hg38,records",
                        help="of uniform (24 records), one (the same bases as one record), hg38, records")
    parser.add_argument("--jobs", default="issue", choices=["issue", "all"],
                        help="issue: crispr-1000 and edit-312x23; all: also Hamming, edit ends, crispr with bulges")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    shapes = args.shapes.split(",")
    genomes = {}
    for shape in shapes:
        options = {"uniform": [], "one": ["--records", "1"], "hg38": ["--shape", "hg38"],
                   "records": ["--records", str(args.million)]}[shape]
        genomes[shape] = make_genome(args.work / shape, args.gbp, *options)
    records = []
    common = ["--backend", args.backend, "--no-progress"]
    for shape, genome in genomes.items():
        work = genome.parent
        cache = work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        env = dict(os.environ, SEQSIFT_CACHE=str(cache), SEQSIFT_BENCH_STAGES=str(work / "stages.json"))
        jobs = JOBS | MORE_JOBS if args.jobs == "all" else JOBS
        label = SHAPES[shape]
        if shape == "records" and args.million != 1_000_000:
            label = f"e2e-records-{args.million}"
        for name, argv in jobs.items():
            first = run_cli([*argv(work, genome, work), *common], env)
            second = run_cli([*argv(work, genome, work), *common], env)
            second["plain_wall_s"] = min(plain_wall([*argv(work, genome, work), *common], env) for _ in range(2))
            workload = f"{name} on {genome.stat().st_size / 1e9:.2f} GB {shape} genome ({args.gbp} Gbp), second run"
            records.append(job_record(f"{label}-{name}", workload, second, args.backend))
            records.append(job_record(f"{label}-{name}-first", workload.replace("second", "first"), first,
                                      args.backend))
            print(f"{label}-{name}: first {first['wall_s']:.2f} s, second {second['wall_s']:.2f} s "
                  f"(plain {second['plain_wall_s']:.2f} s; first kernel ended at "
                  f"{_seconds(second['first_kernel_s'])}), "
                  f"{int(second['stages'].get('kernel_calls', 0))} kernel calls", flush=True)
        for name, wall in served(genome, work, env, args.backend, jobs).items():
            records.append(job_record(f"{label}-{name}-served", f"{name}, {shape} genome, through seqsift serve",
                                      {"wall_s": wall}, args.backend))
            print(f"{label}-{name}-served: {wall:.2f} s", flush=True)
        if shape == "hg38":
            result = run_cli([*JOBS["edit-312x23"](work, genome, work), *common], fresh_machine(env))
            result["plain_wall_s"] = plain_wall([*JOBS["edit-312x23"](work, genome, work), *common],
                                                fresh_machine(env))
            records.append(job_record("e2e-hg38-edit-312x23-fresh", "edit-312x23, hg38-shaped, a fresh machine "
                                      "(empty Numba, CuPy and genome caches)", result, args.backend))
            print(f"e2e-hg38-edit-312x23-fresh: {result['wall_s']:.2f} s (plain {result['plain_wall_s']:.2f} s)",
                  flush=True)
            if args.cas_offinder:
                guides = (work / "crispr1000.txt").read_text().split()
                seconds, lines = cas_offinder(args.cas_offinder, args.cas_offinder_device, genome, guides, work)
                ours = subprocess.run([sys.executable, "-m", "seqsift", "crispr", "--cas-offinder",
                                       str(work / "cof_in.txt"), "--format", "cas-offinder", *common],
                                      env=env, capture_output=True, text=True, check=True).stdout.splitlines()
                same = sorted(ours) == sorted(lines)
                records.append({"algorithm": f"cas-offinder-hg38-{len(guides)}", "quantity": "wall_s",
                                "workload": f"Cas-OFFinder 2.4 on device {args.cas_offinder_device}, {len(guides)} "
                                            f"guides, NGG, k = 4, "
                                            f"hg38-shaped; its sites {'equal' if same else 'DIFFER from'} seqsift's",
                                "value": seconds, "time_s": seconds, "roof_fraction": None, "paper_value": None,
                                "sites": len(lines), "identical_to_seqsift": same})
                print(f"cas-offinder-hg38-{len(guides)}: {seconds:.2f} s, {len(lines)} sites, identical: {same}",
                      flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    device = f"{_cpu_model()} ({os.cpu_count()} cores)"
    if args.backend == "cuda":
        import cupy

        device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    result = {"device": device, "date": datetime.date.today().isoformat(),
              "commit": os.environ.get("SEQSIFT_COMMIT") or _commit(), "records": records}
    path = args.out / f"real_references_{args.backend}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    plot(records, path.with_suffix(".png"), f"seqsift on real-shaped references, {device}, {args.gbp} Gbp")
    print(f"wrote {path}")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        return "CPU"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=HERE).stdout.strip()
    except OSError:
        return "unknown"


def plot(records: list[dict], path: Path, title: str) -> None:
    """Stacked bars of the stage seconds of each second run, beside its wall time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in records if "stages_s" in r and not r["algorithm"].endswith("-first")]
    fig, ax = plt.subplots(figsize=(max(6, len(runs) * 0.7), 4.5))
    bottoms = [0.0] * len(runs)
    for stage in STAGES:
        heights = [r["stages_s"].get(stage, 0.0) for r in runs]
        ax.bar(range(len(runs)), heights, bottom=bottoms, label=stage)
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    ax.plot(range(len(runs)), [r["value"] for r in runs], "k_", markersize=18, label="wall (command)")
    ax.set_xticks(range(len(runs)), [r["algorithm"].removeprefix("e2e-") for r in runs], rotation=60, ha="right",
                  fontsize=7)
    ax.set_ylabel("seconds (stages summed over task threads)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
