"""How the FASTA scan of a many-record file scales with its threads (issue 27, goal 5).

For each thread count: the scan's wall (best of 3), each block's own scan time (median and max over the
blocks; a block that takes longer when more run at once waits for something they share) and the layout
after the blocks. ``--gil`` also runs each NumPy step of a block's scan on one thread and on two: a step
that holds the GIL runs no faster on two (on a machine with two free cores).

    python benchmarks/scan_threads.py FILE.fa [--threads 1,2,4,8,16] [--block-mib MIB] [--gil]
"""
from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import numpy as np

from seqsift.io import fasta_scan


def timed(events: list, kind: str, function):
    """``function`` that also appends (kind, start, end) to ``events`` at each call."""
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        result = function(*args, **kwargs)
        events.append((kind, began, time.perf_counter()))
        return result
    return wrapper


def blocks_for(path: str, threads: int, block_bytes: int | None) -> int:
    """``block_bytes``, or where None the package's choice for this file and thread count (8 MiB in
    versions before ``block_bytes_for``)."""
    if block_bytes is not None:
        return block_bytes
    choose = getattr(fasta_scan, "block_bytes_for", None)
    return choose(os.path.getsize(path), threads) if choose else fasta_scan.BLOCK_BYTES


def scaling(path: str, thread_counts: list[int], block_bytes: int | None) -> None:
    events: list = []
    scan_block, layout = fasta_scan._scan_block, fasta_scan._layout
    fasta_scan._scan_block = timed(events, "block", scan_block)
    fasta_scan._layout = timed(events, "layout", layout)
    try:
        for threads in thread_counts:
            best = None
            for _ in range(3):
                events.clear()
                began = time.perf_counter()
                with fasta_scan.PlainFile(path) as source:
                    fasta_scan.scan_fasta(fasta_scan.blocks_of_source(source, blocks_for(path, threads, block_bytes)),
                                          threads=threads)
                wall = time.perf_counter() - began
                if best is None or wall < best[0]:
                    best = (wall, list(events), began)
            wall, runs, began = best
            blocks = [end - start for kind, start, end in runs if kind == "block"]
            blocks_end = max(end for kind, _, end in runs if kind == "block") - began
            layout_s = sum(end - start for kind, start, end in runs if kind == "layout")
            print(f"threads {threads:3d}: scan {wall:.3f} s (blocks done at {blocks_end:.3f} s, layout {layout_s:.3f} s); "
                  f"{len(blocks)} blocks, one block {statistics.median(blocks) * 1e3:.1f} ms median, "
                  f"{max(blocks) * 1e3:.1f} ms max", flush=True)
    finally:
        fasta_scan._scan_block, fasta_scan._layout = scan_block, layout


def rate(step, threads: int, seconds: float = 0.6) -> float:
    """Calls of ``step`` a second, ``threads`` threads calling it at once."""
    calls = [0] * threads
    until = time.perf_counter() + seconds

    def loop(slot: int) -> None:
        while time.perf_counter() < until:
            step()
            calls[slot] += 1
    workers = [threading.Thread(target=loop, args=(slot,)) for slot in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(calls) / seconds


def gil(path: str, block_bytes: int) -> None:
    with fasta_scan.PlainFile(path) as source:
        makers = list(fasta_scan.blocks_of_source(source, block_bytes))
        block = makers[min(1, len(makers) - 1)]()
    data = block.data.copy()
    block = fasta_scan._Block(data, block.continues_line)
    line_ends = np.flatnonzero(data == 10)
    line_starts = np.concatenate(([0], line_ends[:-1] + 1))
    heads = np.flatnonzero(data[line_starts] == ord(">"))
    mask = fasta_scan.spans_mask(len(data), line_starts[heads], line_ends[heads] + 1)
    steps = {
        "np.repeat (spans_mask)": lambda: fasta_scan.spans_mask(len(data), line_starts[heads], line_ends[heads] + 1),
        "boolean indexing": lambda: data[mask],
        "flatnonzero": lambda: np.flatnonzero(mask),
        "tobytes": lambda: data.tobytes(),
        "a block's scan": lambda: fasta_scan._scan_block(block),
    }
    for name, step in steps.items():
        step()
        one = max(rate(step, 1) for _ in range(2))
        two = max(rate(step, 2) for _ in range(2))
        print(f"{name:24s} {1e3 / one:7.2f} ms a call; two threads x{two / one:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fasta")
    parser.add_argument("--threads", default="1,2,4,8,16")
    parser.add_argument("--block-mib", type=float, default=None,
                        help="bytes per block, MiB (default: the package's choice for the file and threads)")
    parser.add_argument("--gil", action="store_true", help="also: which steps of a block's scan hold the GIL")
    args = parser.parse_args()
    block_bytes = None if args.block_mib is None else int(args.block_mib * (1 << 20))
    scaling(args.fasta, [int(t) for t in args.threads.split(",")], block_bytes)
    if args.gil:
        gil(args.fasta, block_bytes or fasta_scan.BLOCK_BYTES)


if __name__ == "__main__":
    main()
