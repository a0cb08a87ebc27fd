"""Locating hits on the GPU (kernels/locate/locate.cu): hits and band cells per second, kernel alone, beside
seqsift's CPU backend and edlib on the same hits.

    python benchmarks/bench_locate_gpu.py [--mbp 100] [--hits 1000000] [--out benchmarks/results]

Workload: the hg38 edit job's shape, 312 random patterns of 23 nt on both
strands (624 rows), k = 3, over a random text of ``--mbp`` Mbp into which
``--hits`` / 4 copies of patterns with 0-3 random edits are written (one per
64-base slot). The edit search (edit-myers) finds their ends, as a job's
task does; the first ``--hits`` of them (each with its distance d(end)) are
located: the smallest start and a CIGAR each, on the text codes already on
the device. Time: CUDA events around ``kernels.locate.cuda.locate_ops``
(launch, scratch, copies of the answers to the host), median of
``--repeats`` after a warm-up. A hit's band is (m + 1) x (2 d + 1) cells,
each written once (4 bytes) and read by its three neighbours and the
traceback: the roof is the band's bytes (one write, one read) at DESIGN.md's
3.03 TB/s, the byte roof the kernel can reach if its scratch misses L2.

Beside it, on the same hits: seqsift's CPU backend (Numba, one thread: the
CPU path's locate) on a sample, and edlib (HW mode, task "path", one hit's
window at a time: end - m - d to end) on a sample, per hit on one core.
Their starts are compared with the GPU's on the sample (edlib's on hits where
its start is the smallest, as it need not be).

Writes ``locate_gpu.json`` (DESIGN.md's shape) and ``locate_gpu.png``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

import numpy as np

from gpu_timing import event_seconds  # benchmarks/gpu_timing.py, beside this script
from seqsift.bench import source_commit
from seqsift.pattern_set import STRAND_MINUS, STRAND_PLUS, PatternSet

COPY_ROOF = 3.03e12  # bytes/s, H100 device copy, read + written (DESIGN.md)
M, K, PATTERNS = 23, 3, 312
SLOT = 64


def planted_text(rng, mbp: float, patterns: list[str], copies: int) -> np.ndarray:
    """Random text codes with ``copies`` patterns (either strand, 0-K edits) written one per slot."""
    n = int(mbp * 1e6)
    text = rng.integers(0, 4, n).astype(np.uint8)
    codes = [np.frombuffer(p.encode(), np.uint8) for p in patterns]
    table = np.full(256, 4, np.uint8)
    table[list(b"ACGT")] = [0, 1, 2, 3]
    slots = rng.choice(n // SLOT - 1, size=min(copies, n // SLOT - 1), replace=False)
    for slot in slots:
        copy = list(table[codes[rng.integers(len(codes))]])
        if rng.integers(2):
            copy = [3 - c for c in reversed(copy)]
        for _ in range(int(rng.integers(0, K + 1))):
            at, kind = int(rng.integers(len(copy))), int(rng.integers(3))
            if kind == 0:
                copy[at] = (copy[at] + 1 + int(rng.integers(3))) % 4
            elif kind == 1:
                del copy[at]
            else:
                copy.insert(at, int(rng.integers(4)))
        text[slot * SLOT + 8: slot * SLOT + 8 + len(copy)] = copy
    return text


def edlib_seconds(text: np.ndarray, patterns: list[str], rows: np.ndarray, ends: np.ndarray,
                  distances: np.ndarray, gpu_starts: np.ndarray) -> tuple[float, int, int]:
    """edlib HW with a path, one hit's window at a time, on this core: seconds per hit, and how many of
    the sample's starts equal the GPU's (of those whose window edlib aligns at the hit's end)."""
    import edlib

    letters = np.frombuffer(b"ACGTN", np.uint8)
    same = compared = 0
    began = time.perf_counter()
    for h in range(len(rows)):
        lo = max(0, int(ends[h]) - M - int(distances[h]))
        window = letters[text[lo:int(ends[h])]].tobytes().decode()
        result = edlib.align(patterns[int(rows[h])], window, mode="HW", task="path", k=int(distances[h]))
        if result["editDistance"] == int(distances[h]) and result["locations"][-1][1] == len(window) - 1:
            compared += 1
            same += lo + result["locations"][-1][0] == int(gpu_starts[h])
    return (time.perf_counter() - began) / len(rows), same, compared


def main() -> None:
    import cupy

    from seqsift.kernels import find_ends
    from seqsift.kernels.locate import cpu as locate_cpu
    from seqsift.kernels.locate import cuda as locate_cuda

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mbp", type=float, default=100.0)
    parser.add_argument("--hits", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--sample", type=int, default=20_000, help="hits located by the CPU and edlib")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()

    rng = np.random.default_rng(8)
    letters = np.array(list("ACGT"))
    sequences = ["".join(letters[rng.integers(0, 4, M)]) for _ in range(PATTERNS)]
    batch = PatternSet(tuple(f"p{i}" for i in range(PATTERNS)), tuple(sequences)).oriented(
        range(PATTERNS), (STRAND_PLUS, STRAND_MINUS))
    oriented = _row_sequences(batch, sequences)
    text = planted_text(rng, args.mbp, sequences, args.hits // 4)
    text_d = cupy.asarray(text)
    found = find_ends("edit-myers", "cuda", text_d, batch, K, 0, int(text.size))
    take = np.sort(rng.permutation(len(found))[:args.hits])
    row, end, distance = found.row[take], found.end[take], found.distance[take]
    hits = len(row)
    lowest = np.zeros(hits, np.int64)
    print(f"{len(found):,} ends found; locating {hits:,}", flush=True)

    answer = {}

    def locate():
        answer["ops"] = locate_cuda._locate_ops("edit", text_d, batch, row, end, distance, lowest)

    seconds = event_seconds(locate, args.repeats)
    starts, status = answer["ops"][0], answer["ops"][1]
    assert not status.any(), "a hit did not locate"
    widths = 2 * distance.astype(np.int64) + 1
    cells = int(((batch.lengths[row].astype(np.int64) + 1) * widths).sum())
    band_bytes = 2 * 4 * cells
    print(f"GPU: {seconds * 1e3:.2f} ms, {hits / seconds:.3g} hits/s, {cells / seconds:.3g} cells/s, "
          f"band bytes {band_bytes / seconds / 1e12:.2f} TB/s = {band_bytes / seconds / COPY_ROOF:.0%} of the copy roof",
          flush=True)

    sample = np.sort(rng.permutation(hits)[:args.sample])
    locate_cpu.locate_ops("edit", text, batch.masks, batch.lengths, row[:10], end[:10], distance[:10],
                          exact_bytes=False, code_of=None, lowest=lowest[:10])   # compile / load
    began = time.perf_counter()
    cpu_starts = locate_cpu.locate_ops("edit", text, batch.masks, batch.lengths, row[sample], end[sample],
                                       distance[sample], exact_bytes=False, code_of=None,
                                       lowest=lowest[sample])[0]
    cpu_per_hit = (time.perf_counter() - began) / len(sample)
    assert np.array_equal(cpu_starts, starts[sample]), "the CPU's starts differ from the GPU's"
    edlib_per_hit, same, compared = edlib_seconds(text, oriented, row[sample], end[sample], distance[sample],
                                                  starts[sample])
    print(f"CPU (seqsift, 1 thread): {1 / cpu_per_hit:.3g} hits/s; edlib (1 core): {1 / edlib_per_hit:.3g} hits/s, "
          f"starts equal the GPU's on {same:,} of {compared:,} comparable hits", flush=True)

    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    workload = (f"{hits:,} edit hits of {PATTERNS} x {M} nt patterns (both strands), k = {K}, "
                f"{args.mbp:g} Mbp random text with planted copies")
    records = [
        {"algorithm": "locate-edit-cuda", "workload": workload, "quantity": "hits_per_s", "value": hits / seconds,
         "roof_fraction": band_bytes / seconds / COPY_ROOF, "paper_value": None, "time_s": seconds,
         "band_cells_per_s": cells / seconds},
        {"algorithm": "locate-edit-cpu-1thread", "workload": workload + f", a sample of {len(sample):,}",
         "quantity": "hits_per_s", "value": 1 / cpu_per_hit, "roof_fraction": None, "paper_value": None,
         "time_s": cpu_per_hit * len(sample)},
        {"algorithm": "edlib-hw-path-1core", "workload": workload + f", a sample of {len(sample):,}",
         "quantity": "hits_per_s", "value": 1 / edlib_per_hit, "roof_fraction": None, "paper_value": None,
         "time_s": edlib_per_hit * len(sample), "starts_equal_gpu": same, "starts_compared": compared},
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"device": device, "date": datetime.date.today().isoformat(), "commit": source_commit(),
              "records": records}
    (args.out / "locate_gpu.json").write_text(json.dumps(result, indent=1) + "\n")
    _plot(records, device, args.out / "locate_gpu.png")


def _row_sequences(batch, sequences: list[str]) -> list[str]:
    """Each batch row's pattern as edlib reads it: as given on the + strand, reverse-complemented on -."""
    complement = str.maketrans("ACGT", "TGCA")
    return [sequences[p] if strand == STRAND_PLUS else sequences[p].translate(complement)[::-1]
            for p, strand in zip(batch.pattern_index.tolist(), batch.strand.tolist())]


def _plot(records, device: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    names = [r["algorithm"] for r in records]
    ax.barh(names, [r["value"] for r in records], color=["tab:green", "tab:blue", "tab:gray"])
    ax.set_xscale("log")
    ax.set_xlabel("hits located per second (start + CIGAR)")
    ax.set_title(f"Locating edit hits, {device}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
