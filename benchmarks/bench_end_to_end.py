"""End to end on the GPU (issue 3): FASTA file to written hits through a dask-cuda cluster.

    SEQSIFT_TEST_DATA=... python benchmarks/bench_end_to_end.py [--gbp 1.0] [--out benchmarks/results]

Two jobs, 1,000 20-nt guides, k = 4, both strands, TSV output:
* E. coli 536 (the shared data's gzip FASTA, decompressed once into the cache);
* a random FASTA of ``--gbp`` Gbp written to local disk.
For each: the wall time of ``seqsift.search`` on an already started
LocalCUDACluster (one worker per GPU), and where it goes, measured
separately on the same data: building the index, reading and encoding the
whole reference (``Reference.read`` with the text-code table), the kernel alone on
the encoded text (``find_ends`` with the text on the device), and the rest
(transfer, scheduling, merge, sort, write). Cluster start-up is reported on
its own. Writes ``end_to_end_gpu.json``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from pathlib import Path

import numpy as np


def guides_from(genome_codes: np.ndarray, count: int, rng) -> list[tuple[str, str]]:
    letters = np.array(list("ACGTN"))
    starts = rng.integers(0, len(genome_codes) - 20, count)
    return [(f"g{i}", "".join(letters[genome_codes[s:s + 20]]).replace("N", "A")) for i, s in enumerate(starts)]


def measure(path: str, client, guides, label: str, out_dir: Path) -> dict:
    import cupy

    import seqsift
    from seqsift.alphabet import TEXT_CODE_TABLE
    from seqsift.kernels import find_ends
    from seqsift.patterns import PatternSet
    from seqsift.io.reference import open_reference

    began = time.perf_counter()
    reference = open_reference(path)
    index_s = time.perf_counter() - began
    began = time.perf_counter()
    # As the engine's tasks read (no aligned column): decoded and encoded in one pass.
    codes = [np.frombuffer(reference.read(i, 0, int(n), table=TEXT_CODE_TABLE), dtype=np.uint8)
             for i, n in enumerate(reference.lengths)]
    read_s = time.perf_counter() - began
    batch = PatternSet(tuple(g[0] for g in guides), tuple(g[1] for g in guides)).oriented(range(len(guides)), (0, 1))
    device_codes = [cupy.asarray(c) for c in codes]
    for text in device_codes:  # warm-up (compilation)
        find_ends("hamming-packed", "cuda", text[:100_000], batch, 4, 0, 100_000)
    cupy.cuda.Device().synchronize()
    began = time.perf_counter()
    for text in device_codes:
        find_ends("hamming-packed", "cuda", text, batch, 4, 0, int(text.size))
    cupy.cuda.Device().synchronize()
    kernel_s = time.perf_counter() - began
    del device_codes
    output = out_dir / f"{label}.tsv"
    began = time.perf_counter()
    rows = seqsift.search(path, guides, 4, client=client, output=str(output), align=False)
    wall_s = time.perf_counter() - began
    output.unlink()
    bases = int(reference.lengths.sum())
    record = dict(algorithm="hamming-packed end-to-end", workload=f"1000 guides x 20 nt, k=4, both strands, {label} ({bases:,} bp)",
                  quantity="wall_s", value=wall_s, roof_fraction=None, paper_value=None, time_s=wall_s,
                  rows=rows, index_s=index_s, read_encode_s=read_s, kernel_s=kernel_s,
                  rest_s=max(0.0, wall_s - read_s - kernel_s), wall_over_kernel=wall_s / kernel_s)
    print(f"{label}: wall {wall_s:.2f} s ({rows} rows); index {index_s:.2f} s, read+encode {read_s:.2f} s, "
          f"kernel {kernel_s:.3f} s, rest {record['rest_s']:.2f} s; wall/kernel {wall_s / kernel_s:.1f}")
    return record


def write_random_fasta(path: Path, bases: int, rng) -> None:
    line = 80
    letters = np.frombuffer(b"ACGT", dtype=np.uint8)
    with open(path, "wb") as handle:
        handle.write(b">random\n")
        block = 80_000_000
        for start in range(0, bases, block):
            size = min(block, bases - start)
            seq = letters[rng.integers(0, 4, size)]
            full = size // line * line
            body = np.concatenate([seq[:full].reshape(-1, line), np.full((full // line, 1), ord("\n"), np.uint8)],
                                  axis=1).tobytes()
            handle.write(body)
            if size > full:
                handle.write(seq[full:].tobytes() + b"\n")


def main() -> None:
    from distributed import Client

    from seqsift.cluster import local_cluster
    from seqsift.io.reference import open_reference
    from seqsift.alphabet import encode_text

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("SEQSIFT_TEST_DATA", "../shared/data")))
    parser.add_argument("--gbp", type=float, default=1.0)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/seqsift-e2e"))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    args.scratch.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    import cupy

    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    began = time.perf_counter()
    cluster = local_cluster("cuda")
    client = Client(cluster)
    startup_s = time.perf_counter() - began
    print(f"LocalCUDACluster start-up: {startup_s:.1f} s, {len(client.scheduler_info()['workers'])} worker(s)")
    records = [dict(algorithm="LocalCUDACluster start-up", workload="one worker per GPU", quantity="wall_s",
                    value=startup_s, roof_fraction=None, paper_value=None, time_s=startup_s)]
    ecoli = str(args.data / "ecoli536.fa.gz")
    ecoli_codes = encode_text(open_reference(ecoli).read(0, 0, 4_938_920))
    guides = guides_from(ecoli_codes, 1000, rng)
    records.append(measure(ecoli, client, guides, "E. coli 536", args.scratch))
    big = args.scratch / "random.fa"
    began = time.perf_counter()
    write_random_fasta(big, int(args.gbp * 1e9), rng)
    print(f"wrote {big} in {time.perf_counter() - began:.1f} s")
    records.append(measure(str(big), client, guides, f"{args.gbp:g} Gbp random FASTA", args.scratch))
    client.close()
    cluster.close()
    result = {"device": device, "date": datetime.date.today().isoformat(),
              "commit": os.environ.get("SEQSIFT_COMMIT", "unknown"), "records": records}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "end_to_end_gpu.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
