"""Opening a reference of many small records (issue 27, goal 5): index and genome cache at disk speed?

    python benchmarks/bench_record_table.py --work /tmp/records --records 10000,100000,1000000

For each record count N, a plain FASTA of N records of ``--record-bp`` random
bases (60-column lines, headers with a description, as RefSeq's) is written
once; then, each in a fresh process (imports not timed):

* ``read``: reading the file's bytes from the page cache (``os.readv`` into
  one buffer): what "disk speed" means on a warm machine;
* ``first open``: ``open_reference`` with no genome cache and no ``.fai``
  (one pass: the scan, the ``.fai`` beside the file, the genome cache);
* ``second open``: ``open_reference`` again (the cache's record table read
  and verified);
* ``pickled``: the bytes a Reference pickles to (what a Dask job sends its
  workers).

Each time is the best of ``--repeats`` runs. Results: JSON in DESIGN.md's
shape (quantity ``wall_s``; ``pickled`` as ``bytes``) and a PNG.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

_CHILD = r"""
import os, pickle, sys, time
path, what = sys.argv[1], sys.argv[2]
if what == "read":
    size = os.path.getsize(path)
    buffer = bytearray(size)
    began = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        f.readinto(buffer)
    print(time.perf_counter() - began)
else:
    from seqsift.io.reference import open_reference
    began = time.perf_counter()
    reference = open_reference(path)
    seconds = time.perf_counter() - began
    print(seconds if what == "open" else len(pickle.dumps(reference)))
"""


def write_genome(path: Path, records: int, record_bp: int, seed: int = 27) -> None:
    rng = np.random.default_rng(seed)
    bases = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, records * record_bp)].tobytes()
    with open(path, "wb") as out:
        for first in range(0, records, 100_000):
            block = []
            for r in range(first, min(records, first + 100_000)):
                sequence = bases[r * record_bp:(r + 1) * record_bp]
                block.append(b">contig_%d len=%d some description\n" % (r, record_bp))
                block.extend(sequence[i:i + 60] + b"\n" for i in range(0, record_bp, 60))
            out.write(b"".join(block))


def child(path: Path, what: str, cache: Path) -> float:
    env = {**os.environ, "SEQSIFT_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path), what], env=env, check=True,
                          capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def measure(path: Path, cache: Path, repeats: int) -> dict:
    index = Path(f"{path}.fai")
    reads, firsts, seconds = [], [], []
    for _ in range(repeats):
        reads.append(child(path, "read", cache))
        shutil.rmtree(cache, ignore_errors=True)
        index.unlink(missing_ok=True)
        firsts.append(child(path, "open", cache))
        seconds.append(child(path, "open", cache))
    return {"read": min(reads), "first open": min(firsts), "second open": min(seconds),
            "pickled": child(path, "pickle", cache)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="where the genomes and caches go (local disk)")
    parser.add_argument("--records", default="10000,100000,1000000")
    parser.add_argument("--record-bp", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from seqsift.bench import device_name, source_commit

    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for records in (int(n) for n in args.records.split(",")):
        path = args.work / f"records_{records}x{args.record_bp}.fa"
        if not path.exists():
            write_genome(path, records, args.record_bp)
        times = measure(path, args.work / f"cache_{records}", args.repeats)
        size_mb = path.stat().st_size / 1e6
        rows.append((records, size_mb, times))
        print(f"{records:>9,} records ({size_mb:,.0f} MB): read {times['read']:.3f} s, first open "
              f"{times['first open']:.2f} s, second open {times['second open']:.3f} s, pickled "
              f"{times['pickled']:,.0f} bytes", flush=True)

    workload = "{n:,} records x {bp} bp, 60-column lines, headers with descriptions ({mb:,.0f} MB plain FASTA)"
    records_out = []
    for records, size_mb, times in rows:
        described = workload.format(n=records, bp=args.record_bp, mb=size_mb)
        for stage in ("read", "first open", "second open"):
            records_out.append({"algorithm": f"reference-{stage.replace(' ', '-')}", "workload": described,
                                "quantity": "wall_s", "value": times[stage], "roof_fraction": None,
                                "paper_value": None, "time_s": times[stage]})
        records_out.append({"algorithm": "reference-pickled", "workload": described, "quantity": "bytes",
                            "value": times["pickled"], "roof_fraction": None, "paper_value": None, "time_s": None})
    result = {"device": device_name("cpu"), "date": datetime.date.today().isoformat(), "commit": source_commit(),
              "records": records_out}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "record_table_cpu.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(rows, args.out / "record_table_cpu.png", result["device"])
    return 0


def plot(rows, path: Path, device: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    stages = ("read", "first open", "second open")
    width = 0.27
    for k, stage in enumerate(stages):
        axes.bar([i + (k - 1) * width for i in range(len(rows))], [times[stage] for _, _, times in rows], width,
                 label=stage)
    axes.set_xticks(range(len(rows)), [f"{records:,} records\n({mb:,.0f} MB)" for records, mb, _ in rows])
    axes.set_ylabel("seconds (best of runs)")
    axes.set_title(f"Opening a reference of many records\n{device}", fontsize=10)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
