"""Opening a reference, end of the host pipeline's first stage: seqsift.io against pyfaidx.

    PYTHONPATH=src python3 benchmarks/bench_reading.py --genome /tmp/g1.fa [--gbp 1 --records 24]

Generates the genome if it is missing (random bases, N runs, lowercase,
60-column lines), puts it in the page cache, and times, each in a fresh
process (wall and CPU seconds, best of --repeat):

* ``cat genome.fa > /dev/null`` and a Python read in 16 MiB blocks (the roof);
* ``pyfaidx.Faidx`` building the .fai (what open_reference did before seqsift.io);
* ``open_reference`` cold (no .fai, no cache: one pass writes both);
* ``open_reference`` second run (the genome cache is valid; nothing is read);
* the same cold open from plain gzip and BGZF copies (--compressed), beside
  decompressing the gzip file alone with isal, zlib-ng and zlib.

Prints one line per measurement and writes benchmarks/results/reading.json
(the project's results shape). Needs about 3x the genome's size of free disk.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

MAKE_GENOME = r"""
import sys, numpy as np
path, total, records = sys.argv[1], int(float(sys.argv[2])), int(sys.argv[3])
rng = np.random.default_rng(0)
letters = np.frombuffer(b"ACGTacgtNN", dtype=np.uint8)
with open(path, "wb") as out:
    for r in range(records):
        n = total // records + r
        seq = letters[rng.integers(0, 8, n, dtype=np.uint8)]
        seq[n // 3: n // 3 + 10000] = ord("N")
        full = n // 60
        body = np.full((full, 61), 10, dtype=np.uint8)
        body[:, :60] = seq[:full * 60].reshape(full, 60)
        out.write(f">chr{r + 1} random\n".encode())
        out.write(body.tobytes())
        if n % 60:
            out.write(seq[full * 60:].tobytes() + b"\n")
"""

TIMED = r"""
import json, resource, sys, time
what, path = sys.argv[1], sys.argv[2]
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
if what == "pyfaidx":
    import pyfaidx
elif what == "open":
    from seqsift.io.reference import open_reference
w0, c0 = time.perf_counter(), cpu()  # imports excluded: every seqsift job pays them anyway
if what == "read":
    with open(path, "rb", buffering=0) as f:
        while f.read(16 << 20):
            pass
elif what == "pyfaidx":
    pyfaidx.Faidx(path, indexname=path + ".bench.fai", rebuild=True).close()
elif what == "open":
    ref = open_reference(path)
elif what.startswith("gunzip-"):
    library = what.split("-", 1)[1]
    if library == "isal":
        from isal import igzip as module
    elif library == "zlib-ng":
        from zlib_ng import gzip_ng as module
    else:
        import gzip as module
    with module.open(path, "rb") as f:
        while f.read(16 << 20):
            pass
print(json.dumps({"wall_s": time.perf_counter() - w0, "cpu_s": cpu() - c0}))
"""


def run_timed(what: str, path: Path, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", TIMED, what, str(path)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def best(what: str, path: Path, env: dict, repeat: int, before=None) -> dict:
    results = []
    for _ in range(repeat):
        if before:
            before()
        results.append(run_timed(what, path, env))
    return min(results, key=lambda r: r["wall_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--genome", default="/tmp/seqsift-bench-genome.fa")
    parser.add_argument("--gbp", type=float, default=1.0)
    parser.add_argument("--records", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compressed", action="store_true", help="also gzip and BGZF copies")
    parser.add_argument("--only-compressed", action="store_true", help="skip the plain-file measurements")
    args = parser.parse_args()

    genome = Path(args.genome)
    if not genome.exists():
        subprocess.run([sys.executable, "-c", MAKE_GENOME, str(genome), str(args.gbp * 1e9), str(args.records)],
                       check=True)
    cache = Path(tempfile.mkdtemp(prefix="seqsift-bench-cache-"))
    env = dict(os.environ, SEQSIFT_CACHE=str(cache))
    size = genome.stat().st_size
    records = []

    gz, bg = genome.with_suffix(".fa.gz"), genome.with_suffix(".bgzf.fa.gz")

    def clear():
        """No index, no cache: the next open is cold."""
        shutil.rmtree(cache / "reference", ignore_errors=True)
        for path in (genome, gz, bg):
            for suffix in (".fai", ".gzi", ".bench.fai"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)

    def record(label, result, path=genome):
        cpu = "      -" if result["cpu_s"] is None else f"{result['cpu_s']:7.2f}"
        print(f"{label:46s} wall {result['wall_s']:7.2f} s   cpu {cpu} s", flush=True)
        records.append({"algorithm": label, "workload": f"{path.name}, {size / 1e9:.2f} GB FASTA, "
                        f"{args.records} records, 60-column lines, in the page cache",
                        "quantity": "wall_s", "value": result["wall_s"], "cpu_s": result["cpu_s"],
                        "roof_fraction": None, "paper_value": None, "time_s": result["wall_s"]})

    subprocess.run(["cat", str(genome)], stdout=subprocess.DEVNULL, check=True)  # into the page cache
    if not args.only_compressed:
        t0 = time.perf_counter()
        subprocess.run(f"cat '{genome}' > /dev/null", shell=True, check=True)
        record("cat > /dev/null", {"wall_s": time.perf_counter() - t0, "cpu_s": None})
        record("python read, 16 MiB blocks", best("read", genome, env, args.repeat))
        record("pyfaidx.Faidx index build", best("pyfaidx", genome, env, args.repeat, clear))
        record("open_reference cold (.fai + genome cache)", best("open", genome, env, args.repeat, clear))
        record("open_reference second run (cache valid)", best("open", genome, env, args.repeat))

    if args.compressed or args.only_compressed:
        if not gz.exists():
            subprocess.run(f"gzip -1 -c '{genome}' > '{gz}'", shell=True, check=True)
        if not bg.exists():
            subprocess.run([sys.executable, "-c", "import sys; from Bio import bgzf\n"
                            "with open(sys.argv[1], 'rb') as f, bgzf.BgzfWriter(sys.argv[2], 'wb', compresslevel=1) as o:\n"
                            "    [o.write(b) for b in iter(lambda: f.read(1 << 20), b'')]", str(genome), str(bg)],
                           check=True)
        subprocess.run(["cat", str(gz), str(bg)], stdout=subprocess.DEVNULL, check=True)
        for library in ("isal", "zlib-ng", "zlib"):
            record(f"decompress gzip alone ({library})", best(f"gunzip-{library}", gz, env, args.repeat), gz)
        record("open_reference cold, plain gzip", best("open", gz, env, args.repeat, clear), gz)
        record("open_reference cold, BGZF", best("open", bg, env, args.repeat, clear), bg)

    clear()
    shutil.rmtree(cache, ignore_errors=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    out = HERE / "results" / ("reading_compressed.json" if args.only_compressed else "reading.json")
    out.write_text(json.dumps({"device": f"host CPU, {os.cpu_count()} cores (no GPU)",
                               "date": time.strftime("%Y-%m-%d"), "commit": commit, "records": records}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
