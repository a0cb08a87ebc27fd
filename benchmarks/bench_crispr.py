"""seqsift crispr beside Cas-OFFinder 2.4 on the same genome and guides (issue 16).

    python benchmarks/bench_crispr.py --genome /work/shared/data/ecoli536.fa.gz --guides 100 --backend cpu \\
        --cas-offinder /tmp/cas-offinder-src/build/cas-offinder --device C
    # on the H100: --genome hg38.fa --guides 1000 --backend cuda --cas-offinder build/cas-offinder --device G

Guides: ``--guides`` 20-mers that precede an NGG in the genome, evenly spaced
(the same for both tools). One Cas-OFFinder input file drives both:
``cas-offinder INPUT DEVICE OUT`` and ``seqsift crispr --cas-offinder INPUT
--format cas-offinder -o OUT --backend BACKEND``. Each runs ``--runs`` times
(default 3), the two tools alternating so that both see the same machine
load; the figure is the median of the runs after the first (the issue's
"second run": index built, file in the page cache); every time is wall time
of the whole command. The two outputs
are compared line by line (record names aside: Cas-OFFinder prints the whole
FASTA header) and the lines Cas-OFFinder reports with a genome N under a PAM
N are counted apart (tests/test_crispr_casoffinder.py documents that case).
Also timed: the seqsift job alone on an already started cluster.

With ``--served`` every seqsift command also runs through ``seqsift serve``
(the opt-in warm server, started once beforehand and not counted), records
``...-served``. ``--bulge-job`` adds the same guides with ``--dna-bulge 1
--rna-bulge 1`` and ``--many-guides-file`` a job with that file's guides
(10,000 in issue 16), both seqsift only (Cas-OFFinder 2.4 has no bulges),
two runs each, the second reported.

Writes ``--out`` (default benchmarks/results/crispr_<backend>.json) in DESIGN.md's
results shape: records ``crispr-<backend>`` (end to end), ``crispr-<backend>-job``
(started cluster), ``cas-offinder-2.4-<device>``, and the optional ones above.
"""
from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path


def plain_fasta(path: Path, work: Path) -> Path:
    """Cas-OFFinder reads plain FASTA only: a gzip file is decompressed into ``work``."""
    with open(path, "rb") as handle:
        if handle.read(2) != b"\x1f\x8b":
            return path
    target = work / path.name.removesuffix(".gz")
    if not target.exists():
        with gzip.open(path, "rb") as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out, 1 << 24)
    return target


def pick_guides(fasta: Path, count: int) -> list[str]:
    """``count`` 20-mers of A/C/G/T followed by NGG, evenly spaced over the genome."""
    sequence = "".join(line.strip() for line in open(fasta) if not line.startswith(">")).upper()
    starts = [m.start() - 20 for m in re.finditer(r"(?=[ACGT]GG)", sequence) if m.start() >= 20]
    step = max(1, len(starts) // (count * 2))
    guides = []
    for s in starts[::step]:
        guide = sequence[s:s + 20]
        if set(guide) <= set("ACGT") and guide not in guides:
            guides.append(guide)
        if len(guides) == count:
            break
    return guides


def fasta_bases(fasta: Path) -> int:
    """Bases in a plain FASTA: its bytes less line breaks and header lines (NumPy and mmap, no line loop)."""
    import mmap

    import numpy as np

    with open(fasta, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        bases = len(data) - int(np.count_nonzero(np.frombuffer(data, np.uint8) == 10))
        header = 0 if data[:1] == b">" else data.find(b"\n>") + 1 or -1
        while header >= 0:
            end = data.find(b"\n", header)
            end = len(data) if end < 0 else end
            bases -= end - header
            following = data.find(b"\n>", end)
            header = following + 1 if following >= 0 else -1
    return bases


def timed(command: list[str], env: dict | None = None) -> float:
    began = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - began
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{result.stderr[-2000:]}")
    return elapsed


def warm(times: list[float]) -> float:
    """Median of the runs after the first (the first alone if there is one)."""
    rest = sorted(times[1:]) or times
    return rest[len(rest) // 2] if len(rest) % 2 else (rest[len(rest) // 2 - 1] + rest[len(rest) // 2]) / 2


def comparable(lines: list[str]) -> list[str]:
    """Output lines without the record column."""
    return sorted(line.split("\t", 2)[0] + "\t" + line.split("\t", 2)[2] for line in lines if line)


def optional_jobs(args, fasta: Path, guides: list[str], work: Path, main_command: list[str],
                  records: list[dict]) -> list[dict]:
    """The bulge job, the many-guides job, and every seqsift job through ``seqsift serve`` (module docstring)."""
    def crispr_command(guide_file: Path, output: str, *extra: str) -> list[str]:
        return ["seqsift", "crispr", str(fasta), str(guide_file), "-k", str(args.mismatches), "-o", str(work / output),
                "--backend", args.backend, "--no-progress", *extra]

    size = f"{fasta.name}, NGG, k={args.mismatches}, both strands"
    jobs = []  # (record name, command, runs, workload)
    if args.bulge_job:
        bulge_guides = work / "guides.txt"
        bulge_guides.write_text("".join(g + "\n" for g in guides))
        jobs.append((f"crispr-{args.backend}-bulges", crispr_command(bulge_guides, "bulges.tsv", "--dna-bulge", "1",
                                                                     "--rna-bulge", "1"), 2,
                     f"{len(guides)} guides x 20 nt, --dna-bulge 1 --rna-bulge 1, {size}, second run, end to end"))
    if args.many_guides_file:
        count = sum(1 for line in open(args.many_guides_file) if line.strip())
        jobs.append((f"crispr-{args.backend}-{count}-guides", crispr_command(Path(args.many_guides_file), "many.tsv"),
                     2, f"{count} guides x 20 nt, {size}, second run, end to end"))
    out = []

    def run(name: str, command: list[str], runs: int, workload: str, env=None) -> None:
        times = [timed(command, env) for _ in range(runs)]
        output = Path(command[command.index("-o") + 1])
        sites = sum(1 for _ in open(output)) - (0 if "cas-offinder" in command else 1)
        value = warm(times)
        out.append({"algorithm": name, "workload": workload, "quantity": "end_to_end_s", "value": value,
                    "roof_fraction": None, "paper_value": None, "time_s": value, "runs_s": times, "sites": sites})
        print(f"{name}: {times} s, {sites} sites", flush=True)

    for name, command, runs, workload in jobs:
        run(name, command, runs, workload)
    if args.served:
        env = dict(os.environ, SEQSIFT_SERVER_SOCKET=str(work / "server" / "server.sock"))
        server = subprocess.Popen(["seqsift", "serve", "--backend", args.backend], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        if "listening" not in server.stdout.readline():
            sys.exit(f"seqsift serve did not start: {server.stderr.read()[-2000:]}")
        try:
            main_workload = records[0]["workload"] + "; through seqsift serve (started beforehand)"
            run(f"crispr-{args.backend}-served", main_command, args.runs, main_workload, env)
            theirs = next((r for r in records if r["algorithm"].startswith("cas-offinder")), None)
            if theirs:
                out[-1]["cas_offinder_s"] = theirs["value"]
                out[-1]["seqsift_speedup"] = theirs["value"] / out[-1]["value"]
                print(f"served: {out[-1]['seqsift_speedup']:.1f}x Cas-OFFinder", flush=True)
            for name, command, runs, workload in jobs:
                run(f"{name}-served", command, runs, workload + "; through seqsift serve (started beforehand)", env)
        finally:
            subprocess.run(["seqsift", "serve", "--stop"], env=env, capture_output=True)
            server.wait(timeout=120)
    return out


def plot(result: dict, path: Path) -> None:
    """Every end-to-end record as a bar (log scale): seqsift's jobs, through seqsift serve, and Cas-OFFinder's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in result["records"] if r["quantity"] in ("end_to_end_s", "job_s") and r["value"]]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(shown) + 1.5))
    colors = ["tab:red" if r["algorithm"].startswith("cas-offinder") else
              "tab:green" if r["algorithm"].endswith("served") else "tab:blue" for r in shown]
    ax.barh(range(len(shown)), [r["value"] for r in shown], color=colors)
    for y, r in enumerate(shown):
        ax.text(r["value"] * 1.05, y, f"{r['value']:.2f} s" + (f", {r['sites']:,} sites" if r.get("sites") else ""),
                va="center", fontsize=8)
    ax.set_yticks(range(len(shown)), [r["algorithm"] for r in shown], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(right=max(r["value"] for r in shown) * 8)
    ax.set_xlabel("seconds, wall (log scale); blue: seqsift command, green: through seqsift serve, red: Cas-OFFinder")
    ax.set_title(f"CRISPR off-targets, {result['device']}, {result['date']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--genome", required=True, help="FASTA (plain or gzip)")
    parser.add_argument("--guides", type=int, default=100)
    parser.add_argument("-k", "--mismatches", type=int, default=4)
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--workers", type=int, help="seqsift CPU workers (default: one per core)")
    parser.add_argument("--cas-offinder", default=os.environ.get("CAS_OFFINDER") or shutil.which("cas-offinder"),
                        help="Cas-OFFinder 2.4 binary (default $CAS_OFFINDER or PATH; none: seqsift only)")
    parser.add_argument("--device", default="C", help="Cas-OFFinder device letter: C (CPUs), G (GPUs)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", default="/tmp/seqsift-bench-crispr", help="folder for inputs and outputs")
    parser.add_argument("--out", help="results JSON (default benchmarks/results/crispr_<backend>.json)")
    parser.add_argument("--guides-file", help="take the guides from this file (one per line) instead of the genome")
    parser.add_argument("--served", action="store_true", help="also run every seqsift job through seqsift serve")
    parser.add_argument("--bulge-job", action="store_true", help="also time --dna-bulge 1 --rna-bulge 1")
    parser.add_argument("--many-guides-file", help="also time a job with these guides (one per line)")
    args = parser.parse_args()

    import seqsift
    from seqsift.bench import device_name, source_commit
    from seqsift.cluster import connect

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    fasta = plain_fasta(Path(args.genome), work)
    guides = ([line.strip() for line in open(args.guides_file) if line.strip()][:args.guides] if args.guides_file
              else pick_guides(fasta, args.guides))
    spec = work / "input.txt"
    spec.write_text(f"{fasta}\nNNNNNNNNNNNNNNNNNNNNNGG\n" + "".join(f"{g}NNN {args.mismatches}\n" for g in guides))
    bases = fasta_bases(fasta)
    workload = (f"{len(guides)} guides x 20 nt, NGG, k={args.mismatches}, both strands, {fasta.name} "
                f"({bases:,} bp), median of warm runs, end to end")
    records = []

    ours_out, theirs_out = work / "seqsift.txt", work / "cas-offinder.txt"
    ours_command = ["seqsift", "crispr", "--cas-offinder", str(spec), "--format", "cas-offinder", "-o", str(ours_out),
                    "--backend", args.backend, "--no-progress"] + (["--workers", str(args.workers)] if args.workers else [])
    ours_times, theirs_times = [], []
    for _ in range(args.runs):
        ours_times.append(timed(ours_command))
        if args.cas_offinder:
            theirs_out.unlink(missing_ok=True)  # it appends
            theirs_times.append(timed([args.cas_offinder, str(spec), args.device, str(theirs_out)]))
    ours_lines = ours_out.read_text().splitlines()
    ours_s = warm(ours_times)
    print(f"seqsift crispr ({args.backend}): {ours_times} s, {len(ours_lines)} sites", flush=True)
    records.append({"algorithm": f"crispr-{args.backend}", "workload": workload, "quantity": "end_to_end_s",
                    "value": ours_s, "roof_fraction": None, "paper_value": None, "time_s": ours_s,
                    "runs_s": ours_times, "sites": len(ours_lines)})

    with connect(args.backend, workers=args.workers) as client:
        seqsift.crispr(None, cas_offinder=str(spec), client=client, backend=args.backend, output=str(work / "warm.tsv"))
        began = time.perf_counter()
        seqsift.crispr(None, cas_offinder=str(spec), client=client, backend=args.backend, output=str(work / "job.tsv"))
        job_s = time.perf_counter() - began
    print(f"seqsift job on a started cluster: {job_s:.3f} s", flush=True)
    records.append({"algorithm": f"crispr-{args.backend}-job", "workload": workload.replace("end to end",
                    "job on a started cluster"), "quantity": "job_s", "value": job_s, "roof_fraction": None,
                    "paper_value": None, "time_s": job_s})

    if args.cas_offinder:
        theirs_lines = theirs_out.read_text().splitlines()
        theirs_s = warm(theirs_times)
        n_under_pam_n = [line for line in theirs_lines if line.split("\t")[3][20].upper() not in "ACGT"]
        identical = comparable(ours_lines) == comparable(sorted(set(theirs_lines) - set(n_under_pam_n)))
        print(f"Cas-OFFinder 2.4 ({args.device}): {theirs_times} s, {len(theirs_lines)} sites "
              f"({len(n_under_pam_n)} with a genome N under the PAM's N); identical otherwise: {identical}; "
              f"seqsift speed-up {theirs_s / ours_s:.2f}x (median of warm runs)", flush=True)
        records.append({"algorithm": f"cas-offinder-2.4-{args.device}", "workload": workload,
                        "quantity": "end_to_end_s", "value": theirs_s, "roof_fraction": None,
                        "paper_value": None, "time_s": theirs_s, "runs_s": theirs_times,
                        "sites": len(theirs_lines), "sites_with_n_under_pam_n": len(n_under_pam_n),
                        "identical_to_seqsift_otherwise": identical, "seqsift_speedup": theirs_s / ours_s})

    records += optional_jobs(args, fasta, guides, work, ours_command, records)
    result = {"device": device_name(args.backend), "date": datetime.date.today().isoformat(),
              "commit": source_commit(), "records": records}
    out = Path(args.out or Path(__file__).parent / "results" / f"crispr_{args.backend}.json")
    out.write_text(json.dumps(result, indent=1) + "\n")
    plot(result, out.with_suffix(".png"))
    print(f"wrote {out}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--replot":  # redraw the PNG of a results JSON
        plot(json.loads(Path(sys.argv[2]).read_text()), Path(sys.argv[2]).with_suffix(".png"))
    else:
        main()
