"""Host side of the GPU upload: filling the staging buffer from the genome cache file.

Compares the two ways ``kernels.cuda.upload_and_encode`` can get a window of
the genome cache into its 32 MiB staging buffer (pinned on a GPU machine; a
plain pre-touched array here, so no GPU is needed):

* ``copyto-mmap``: ``np.copyto`` from a slice of a fresh memory map of the
  file (what a task did before: the map is new per process, so every 4 KiB
  page faults on first touch), and
* ``preadv``: ``os.preadv`` straight from the file into the buffer (what a
  task does now for a window in the cache file).

The file is read once first, so both run from the page cache (the second-run
case). With ``--threads 2`` two threads each fill their own buffer from their
own half, as a GPU worker's two task threads do. Prints GB/s per method.

    python3 benchmarks/bench_stage_read.py --gbytes 1 --threads 1
"""
from __future__ import annotations

import argparse
import mmap
import os
import tempfile
import threading
import time

import numpy as np

STAGE = 32 << 20


def make_file(path: str, size: int) -> None:
    rng = np.random.default_rng(0)
    with open(path, "wb") as f:
        for first in range(0, size, 64 << 20):
            f.write(np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, min(64 << 20, size - first))].tobytes())
    with open(path, "rb") as f:  # into the page cache
        while f.read(64 << 20):
            pass


def fill_by_copy(path: str, first: int, stop: int, buffer: np.ndarray) -> None:
    with open(path, "rb") as f:
        mapped = np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), np.uint8)
    for at in range(first, stop, STAGE):
        part = mapped[at:min(stop, at + STAGE)]
        np.copyto(buffer[:part.size], part)


def fill_by_preadv(path: str, first: int, stop: int, buffer: np.ndarray) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        for at in range(first, stop, STAGE):
            count = min(stop, at + STAGE) - at
            view = memoryview(buffer[:count])
            done = 0
            while done < count:
                done += os.preadv(fd, [view[done:]], at + done)
    finally:
        os.close(fd)


def timed(fill, path: str, size: int, threads: int) -> float:
    buffers = [np.ones(STAGE, np.uint8) for _ in range(threads)]  # touched, as pinned memory is
    share = size // threads
    workers = [threading.Thread(target=fill, args=(path, t * share, (t + 1) * share, buffers[t]))
               for t in range(threads)]
    began = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gbytes", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    size = int(args.gbytes * (1 << 30))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "genome.cache")
        make_file(path, size)
        for name, fill in (("copyto-mmap", fill_by_copy), ("preadv", fill_by_preadv)):
            seconds = min(timed(fill, path, size, args.threads) for _ in range(args.repeats))
            print(f"{name:12s} threads={args.threads} {size / 1e9:.2f} GB in {seconds:.3f} s: "
                  f"{size / 1e9 / seconds:.2f} GB/s")


if __name__ == "__main__":
    main()
