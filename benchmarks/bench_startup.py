"""A seqsift command's fixed costs: interpreter start, importing the CLI, and the exit after ``main``.

    python benchmarks/bench_startup.py [--runs 5] -- search genome.fa guides.txt -k 3 --backend cpu --no-progress

Runs ``seqsift --help`` and then the given command ``--runs`` times, each in a
fresh interpreter, and prints per run the wall time, the time to import
``seqsift.cli``, ``main``'s time and the time from ``main``'s return to the
process's end (the exit: atexit handlers, the interpreter's teardown unless
``cli.exit_now`` skips it). The child ends as the console script does
(``cli.exit_now`` where the checkout has it, else ``sys.exit``), so the same
script measures an older checkout for a before/after pair: put its ``src``
first on ``PYTHONPATH``. Output goes to /dev/null.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def child(argv: list[str], report: str) -> None:
    began = time.time()
    from seqsift import cli

    imported = time.time()
    code = cli.main(argv)
    ended = time.time()
    with open(report, "w") as handle:
        json.dump({"began": began, "import_s": imported - began, "main_s": ended - imported, "main_ended": ended},
                  handle)
    exit_now = getattr(cli, "exit_now", None)
    if exit_now is None:  # a checkout from before cli.exit_now
        sys.exit(code)
    exit_now(code)


def one_run(argv: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "report.json")
        launched = time.time()
        result = subprocess.run([sys.executable, __file__, "--child", report, *argv],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ended = time.time()
        if result.returncode not in (0,):
            raise SystemExit(f"seqsift {' '.join(argv)}: status {result.returncode}\n{result.stderr[-2000:]}")
        with open(report) as handle:
            times = json.load(handle)
    return {"wall_s": ended - launched, "interpreter_s": times["began"] - launched, "import_s": times["import_s"],
            "main_s": times["main_s"], "exit_s": ended - times["main_ended"]}


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[3:], sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="seqsift's arguments, after --")
    args = parser.parse_args()
    job = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    import seqsift

    print(f"seqsift from {os.path.dirname(seqsift.__file__)}")
    for label, argv in (("--help", ["--help"]), (" ".join(job), job)) if job else (("--help", ["--help"]),):
        runs = [one_run(argv) for _ in range(args.runs)]
        print(f"seqsift {label}: median (min) of {args.runs} runs")
        for key in ("wall_s", "interpreter_s", "import_s", "main_s", "exit_s"):
            values = [run[key] for run in runs]
            print(f"  {key:14s} {statistics.median(values):7.3f}  ({min(values):.3f})")


if __name__ == "__main__":
    main()
