"""Opening a reference of many small records (issue 27, goal 5): index and genome cache at disk speed?

    python benchmarks/bench_record_table.py --work /tmp/records --records 10000,100000,1000000

For each record count N, a plain FASTA of N records of ``--record-bp`` random
bases (60-column lines, headers with a description, as RefSeq's) is written
once; then, each in a fresh process (imports not timed):

* ``read``: reading the file's bytes from the page cache (``os.readv`` into
  one buffer): what "disk speed" means on a warm machine;
* ``disk read``: reading them past the page cache (``O_DIRECT``), from the disk itself (not
  measured where the file system has no ``O_DIRECT``: tmpfs);
* ``disk write``: writing as many bytes as the first open writes (the genome cache and the ``.fai``)
  past the page cache (``O_DIRECT``, then ``fsync``), to the disk itself. A build that reads the
  file and writes those bytes runs "at disk speed" (goal 5) when it takes no longer than
  ``disk read`` + ``disk write``: the first open's ``roof_fraction`` is that sum over its time
  (its ``read_roof_fraction``: the disk read alone over it);
* ``native build``: compiling the scan's C (``seqsift.io.native``) into an empty cache folder, which
  happens once per machine (and version of the file); it is done before the opens below;
* ``first open``: ``open_reference`` with no genome cache and no ``.fai``
  (one pass: the scan, the ``.fai`` beside the file, the genome cache);
* ``second open``: ``open_reference`` again (the cache's record table read
  and verified);
* ``pickled``: the bytes a Reference pickles to (what a Dask job sends its
  workers);
* the opens' peak RSS (``VmHWM`` of their processes, imports included; not ``ru_maxrss``, which
  Linux carries across ``exec`` from the parent that wrote the genome);
* peers, which build the index only (no genome cache): ``samtools faidx``
  (where it is on PATH; its ``.fai`` is compared with seqsift's byte for
  byte) and ``pyfaidx.Fasta`` (where it is installed); ``--no-peers`` skips them.

Each time is the best of ``--repeats`` runs. Results: JSON in DESIGN.md's
shape (quantity ``wall_s``; ``pickled`` as ``bytes``, peaks as ``megabytes``)
and a PNG.
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

_CHILD = r"""
import os, pickle, resource, sys, time
path, what = sys.argv[1], sys.argv[2]


def past_page_cache(target, flags, size, move):
    # Seconds to move ``size`` bytes (rounded up to 1 MiB) between ``target`` and memory past the page
    # cache (O_DIRECT), 64 MiB at a time by ``move`` (os.preadv or os.pwritev; a write ends with fsync);
    # NaN on a file system without O_DIRECT (tmpfs): no disk to measure.
    import mmap
    rounded = max(1 << 20, (size + (1 << 20) - 1) & ~((1 << 20) - 1))
    buffer = mmap.mmap(-1, rounded)   # page-aligned, as O_DIRECT wants
    buffer.write(b"ACGT" * (rounded // 4))
    try:
        fd = os.open(target, flags | os.O_DIRECT, 0o600)
    except OSError:
        return float("nan")
    writing = move is os.pwritev
    stop = rounded if writing else size   # (O_DIRECT writes whole blocks; a read ends at the file's end)
    began = time.perf_counter()
    done = 0
    while done < stop:
        moved = move(fd, [memoryview(buffer)[done:done + (64 << 20)]], done)
        if not moved:
            break
        done += moved
    if writing:
        os.fsync(fd)
    seconds = time.perf_counter() - began
    os.close(fd)
    return seconds


if what == "read":
    size = os.path.getsize(path)
    buffer = bytearray(size)
    began = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        f.readinto(buffer)
    print(time.perf_counter() - began)
elif what == "disk read":
    print(past_page_cache(path, os.O_RDONLY, os.path.getsize(path), os.preadv))
elif what == "disk write":
    target = path + ".disk-write"   # as many bytes as a first open wrote: the genome cache and the .fai
    print(past_page_cache(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, int(sys.argv[3]), os.pwritev))
    if os.path.exists(target):
        os.unlink(target)
elif what == "native build":
    import shutil
    from seqsift.cache import NATIVE_FOLDER, cache_directory
    shutil.rmtree(cache_directory() / NATIVE_FOLDER, ignore_errors=True)
    from seqsift.io import native
    began = time.perf_counter()
    built = native.library() is not None
    print(time.perf_counter() - began if built else "nan")
elif what == "pyfaidx":
    import pyfaidx
    began = time.perf_counter()
    pyfaidx.Fasta(path, rebuild=True).close()
    print(time.perf_counter() - began)
else:
    from seqsift.io.reference import open_reference
    began = time.perf_counter()
    reference = open_reference(path)
    seconds = time.perf_counter() - began
    # VmHWM, this process's own peak: ru_maxrss would also hold the parent's RSS at the fork (Linux
    # carries it across exec), the parent having just written the genome.
    with open("/proc/self/status") as status:
        peak_kb = [int(line.split()[1]) for line in status if line.startswith("VmHWM:")]
    peak_mb = (peak_kb[0] if peak_kb else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024
    print(peak_mb, seconds if what == "open" else len(pickle.dumps(reference)))
"""


PEERS = ("samtools faidx", "pyfaidx")
SAME_FAI = "fai equals samtools'"


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


def child(path: Path, what: str, cache: Path, *more: str) -> tuple[float, float | None]:
    """(peak RSS in MB or NaN, the child's one number or None where it could not measure) of one step
    in a fresh process."""
    env = {**os.environ, "SEQSIFT_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path), what, *more], env=env, check=True,
                          capture_output=True, text=True)
    numbers = [float(word) for word in done.stdout.split()]
    last = None if numbers[-1] != numbers[-1] else numbers[-1]   # NaN: not measured
    return (numbers[0] if len(numbers) == 2 else float("nan")), last


def samtools_faidx(path: Path, index: Path) -> float | None:
    """Seconds ``samtools faidx`` takes to index ``path`` into ``index`` (None: no samtools on PATH)."""
    if shutil.which("samtools") is None:
        return None
    began = time.perf_counter()
    subprocess.run(["samtools", "faidx", str(path), "--fai-idx", str(index)], check=True)
    return time.perf_counter() - began


def measure(path: Path, cache: Path, repeats: int, peers: bool) -> dict:
    from seqsift.cache import REFERENCE_FOLDER   # (main put src/ on sys.path)

    index = Path(f"{path}.fai")
    peer_index = path.with_name(path.name + ".samtools.fai")
    times: dict[str, list] = {"read": [], "disk read": [], "disk write": [], "first open": [], "second open": [],
                              "samtools faidx": [], "pyfaidx": []}
    peaks: dict[str, list] = {"first open": [], "second open": []}
    same_fai: list[bool] = []  # seqsift's .fai equals samtools', run by run
    times["native build"] = [child(path, "native build", cache)[1]]
    for _ in range(repeats):
        times["read"].append(child(path, "read", cache)[1])
        times["disk read"].append(child(path, "disk read", cache)[1])
        shutil.rmtree(cache / REFERENCE_FOLDER, ignore_errors=True)   # (native/ kept: built once per machine)
        index.unlink(missing_ok=True)
        for stage in ("first open", "second open"):
            peak, seconds = child(path, "open", cache)
            times[stage].append(seconds)
            peaks[stage].append(peak)
        written = index.stat().st_size + sum(f.stat().st_size for f in (cache / REFERENCE_FOLDER).rglob("*")
                                             if f.is_file())
        times["disk write"].append(child(path, "disk write", cache, str(written))[1])
    seqsift_fai = index.read_bytes()
    # The peers after every seqsift run, not between them: pyfaidx's large heap, freed just before a
    # first open, had made that open 0.3-0.6 s slower at 10^6 records (the kernel reclaiming it).
    for _ in range(repeats if peers else 0):
        times["samtools faidx"].append(samtools_faidx(path, peer_index))
        if peer_index.exists():
            same_fai.append(peer_index.read_bytes() == seqsift_fai)
            peer_index.unlink()
        index.unlink(missing_ok=True)
        times["pyfaidx"].append(child(path, "pyfaidx", cache)[1])
    index.write_bytes(seqsift_fai)
    best = {stage: min(values) for stage, values in times.items() if values and None not in values}
    best.update({f"{stage} peak MB": max(values) for stage, values in peaks.items()})
    best["pickled"] = child(path, "pickle", cache)[1]
    if same_fai:
        best[SAME_FAI] = all(same_fai)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="where the genomes and caches go (local disk)")
    parser.add_argument("--records", default="10000,100000,1000000")
    parser.add_argument("--record-bp", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--no-peers", action="store_true", help="skip samtools faidx and pyfaidx")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from seqsift.bench import device_name, source_commit

    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for records in (int(n) for n in args.records.split(",")):
        path = args.work / f"records_{records}x{args.record_bp}.fa"
        if not path.exists():
            write_genome(path, records, args.record_bp)
        times = measure(path, args.work / f"cache_{records}", args.repeats, not args.no_peers)
        size_mb = path.stat().st_size / 1e6
        rows.append((records, size_mb, times))
        peers = "".join(f", {peer} {times[peer]:.2f} s" for peer in PEERS if peer in times)
        disk = (f"{times['disk read']:.3f} s; the first open's output written to it "
                f"{times.get('disk write', float('nan')):.3f} s" if "disk read" in times
                else "not measured: no O_DIRECT here")
        print(f"{records:>9,} records ({size_mb:,.0f} MB): read {times['read']:.3f} s (from the disk "
              f"{disk}), first open "
              f"{times['first open']:.2f} s (peak {times['first open peak MB']:,.0f} MB), second open "
              f"{times['second open']:.3f} s (peak {times['second open peak MB']:,.0f} MB), pickled "
              f"{times['pickled']:,.0f} bytes{peers}; the compiled scan built in "
              f"{times.get('native build', float('nan')):.2f} s; .fai equals samtools': "
              f"{times.get(SAME_FAI, 'not checked')}", flush=True)

    workload = "{n:,} records x {bp} bp, 60-column lines, headers with descriptions ({mb:,.0f} MB plain FASTA)"
    records_out = []
    for records, size_mb, times in rows:
        described = workload.format(n=records, bp=args.record_bp, mb=size_mb)
        for stage in ("native build", "read", "disk read", "disk write", "first open", "second open"):
            if stage not in times:
                continue
            record = {"algorithm": f"reference-{stage.replace(' ', '-')}", "workload": described,
                      "quantity": "wall_s", "value": times[stage], "roof_fraction": None,
                      "paper_value": None, "time_s": times[stage]}
            if stage == "first open" and "disk read" in times:
                # Goal 5's "disk speed": the file read from the disk and the build's output written to it,
                # nothing else done; beside it, the read alone.
                record["roof_fraction"] = (times["disk read"] + times.get("disk write", 0.0)) / times[stage]
                record["read_roof_fraction"] = times["disk read"] / times[stage]
            records_out.append(record)
        for stage in ("first open", "second open"):
            records_out.append({"algorithm": f"reference-{stage.replace(' ', '-')}-peak-rss", "workload": described,
                                "quantity": "megabytes", "value": times[f"{stage} peak MB"], "roof_fraction": None,
                                "paper_value": None, "time_s": None})
        records_out.append({"algorithm": "reference-pickled", "workload": described, "quantity": "bytes",
                            "value": times["pickled"], "roof_fraction": None, "paper_value": None, "time_s": None})
        for peer in PEERS:
            if peer in times:
                records_out.append({"algorithm": peer.replace(" ", "-"), "workload": described, "quantity": "wall_s",
                                    "value": times[peer], "roof_fraction": None, "paper_value": None,
                                    "time_s": times[peer], "note": "index only, no genome cache; its "
                                    ".fai equals seqsift's byte for byte" if times.get(SAME_FAI)
                                    and peer == "samtools faidx" else "index only, no genome cache"})
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
    stages = [stage for stage in ("read", "disk read", "disk write", "first open", "second open", *PEERS)
              if all(stage in times for _, _, times in rows)]
    width = 0.8 / len(stages)
    for k, stage in enumerate(stages):
        label = f"{stage} (index only)" if stage in PEERS else stage
        axes.bar([i + (k - (len(stages) - 1) / 2) * width for i in range(len(rows))],
                 [times[stage] for _, _, times in rows], width, label=label)
    axes.set_yscale("log")
    axes.set_xticks(range(len(rows)), [f"{records:,} records\n({mb:,.0f} MB)" for records, mb, _ in rows])
    axes.set_ylabel("seconds (best of runs)")
    axes.set_title(f"Opening a reference of many records\n{device}", fontsize=10)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
