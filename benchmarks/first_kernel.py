"""A command's time to its first kernel call, as a distribution (issue 27, goal 3: <= 1.0 s).

    python benchmarks/first_kernel.py --work /tmp/refs --rounds 4                      # this checkout
    python benchmarks/first_kernel.py --work /tmp/refs --rounds 4 --trees src,/tmp/other/src   # A/B

One run of a job says little about this: on the H100 machines the interpreter's start and the imports
alone took 0.29-0.61 s from one run to the next. This writes the hg38-shaped genome of
``bench_real_references.py`` (reused while its arguments are the same), runs each of its jobs (crispr,
1,000 guides; edit, 312 x 23 nt) once per tree to build the genome cache and load the kernels, then
``--rounds`` rounds, the trees alternated within each: a stage-timed second run (``bench_end_to_end.run_cli``,
a fresh process: when the first kernel call ended, counted from the process's launch) and a plain run (no
stage timers, as a user runs it). ``--trees``: the source folders compared (``PYTHONPATH`` per tree; the
last entry of this process's ``PYTHONPATH`` is kept after it, for packages installed beside). Prints each
run, then the median, least and most per tree and job.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_end_to_end import run_cli  # noqa: E402  (a fresh process with the stage timers on)
from bench_real_references import JOBS, _seconds, make_genome, plain_wall  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="where the genome goes (local disk)")
    parser.add_argument("--gbp", type=float, default=3.1)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--trees", default=str(HERE.parent / "src"), help="comma-separated source folders")
    parser.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    args = parser.parse_args()

    genome = make_genome(args.work / "hg38", args.gbp, "--shape", "hg38")
    work = genome.parent
    beside = [p for p in os.environ.get("PYTHONPATH", "").split(":")[-1:] if p]
    common = ["--backend", args.backend, "--no-progress"]

    def environment(tree: str) -> dict:
        return dict(os.environ, PYTHONPATH=":".join([tree, *beside]), SEQSIFT_CACHE=str(work / "cache"),
                    SEQSIFT_BENCH_STAGES=str(work / "stages.json"))

    trees = args.trees.split(",")
    for tree in trees:  # the genome cache built, the kernels compiled and cached
        for job in JOBS.values():
            run_cli([*job(work, genome, work), *common], environment(tree))
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for round_ in range(args.rounds):
        for tree in trees:
            for name, job in JOBS.items():
                argv = [*job(work, genome, work), *common]
                timed = run_cli(argv, environment(tree))
                plain = plain_wall(argv, environment(tree))
                runs.setdefault((tree, name), []).append((timed["first_kernel_s"], plain))
                print(f"round {round_} {tree} {name}: first kernel ended {_seconds(timed['first_kernel_s'])} "
                      f"(interpreter and imports {timed['startup_s']:.3f} s), stage-timed {timed['wall_s']:.2f} s, "
                      f"plain {plain:.2f} s", flush=True)
    for (tree, name), pairs in runs.items():
        first = sorted(p[0] for p in pairs if p[0] is not None)   # None: tasks ran in worker processes
        plain = sorted(p[1] for p in pairs)
        ended = (f"median {statistics.median(first):.3f} s ({first[0]:.3f}-{first[-1]:.3f})" if first
                 else "not measured")
        print(f"{tree} {name}: first kernel ended, {ended}; plain wall, median {statistics.median(plain):.2f} s "
              f"({plain[0]:.2f}-{plain[-1]:.2f})")


if __name__ == "__main__":
    main()
