"""Where a seqsift command spends its wall time: a sampling profile of every thread.

    python benchmarks/profile_cli.py [--interval-ms 2] [--top 25] -- search genome.fa guides.txt -k 3 ...

Runs ``seqsift.cli.main(argv)`` in this process while a sampler thread reads
every thread's stack (``sys._current_frames``) each interval, so time in
worker threads (Dask's in-process worker, kernel launches, readers) is seen
too, not only the main thread's as with cProfile. Prints the import time of
``seqsift.cli``, the wall time of ``main``, and per thread the functions that
were on top of the stack (self) and anywhere on it (inclusive) most often,
as seconds of wall time. Native code (CUDA, NumPy, Numba) shows as the Python
line that called it. For finding the host's costs, not for reporting speed:
benchmarks measure that (bench_end_to_end.py, bench_crispr.py).
"""
from __future__ import annotations

import argparse
import collections
import sys
import threading
import time


def _frame_name(frame) -> str:
    code = frame.f_code
    path = code.co_filename
    for marker in ("site-packages/", "src/", "lib/python"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{path}:{code.co_name}:{frame.f_lineno}"


def _function_name(frame) -> str:
    return _frame_name(frame).rsplit(":", 1)[0]


class Sampler(threading.Thread):
    def __init__(self, interval: float):
        super().__init__(daemon=True, name="profile-sampler")
        self.interval = interval
        self.stop = threading.Event()
        self.self_counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.inclusive: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.samples: collections.Counter = collections.Counter()

    def run(self) -> None:
        me = threading.get_ident()
        while not self.stop.wait(self.interval):
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                thread = names.get(ident, str(ident))
                self.samples[thread] += 1
                self.self_counts[thread][_frame_name(frame)] += 1
                seen = set()
                while frame is not None:
                    name = _function_name(frame)
                    if name not in seen:
                        self.inclusive[thread][name] += 1
                        seen.add(name)
                    frame = frame.f_back


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval-ms", type=float, default=2.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="seqsift's arguments, after --")
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    began = time.perf_counter()
    from seqsift import cli

    imported = time.perf_counter()
    sampler = Sampler(args.interval_ms / 1000)
    sampler.start()
    code = cli.main(argv)
    ended = time.perf_counter()
    sampler.stop.set()
    sampler.join()
    out = sys.stderr
    print(f"import seqsift.cli: {imported - began:.2f} s; main: {ended - imported:.2f} s; exit code {code}", file=out)
    seconds = args.interval_ms / 1000
    for thread, total in sampler.samples.most_common():
        if total * seconds < 0.05:
            continue
        print(f"\n== thread {thread}: {total * seconds:.2f} s sampled", file=out)
        print("   self:", file=out)
        for name, count in sampler.self_counts[thread].most_common(args.top):
            print(f"   {count * seconds:7.2f}  {name}", file=out)
        print("   inclusive:", file=out)
        for name, count in sampler.inclusive[thread].most_common(args.top):
            print(f"   {count * seconds:7.2f}  {name}", file=out)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
