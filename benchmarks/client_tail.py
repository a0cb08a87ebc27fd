"""The client's tail of one search: seconds from the last task's result to the end of ``seqsift.cli.main``.

    python benchmarks/client_tail.py -- search genome.fa guides.txt -k 3 --backend cpu -o hits.parquet

Runs the CLI in this process, noting when ``as_completed`` (engine/run.py)
hands over its last finished task and when ``main`` returns, so what the
client still does after the workers are done (merging, writing, closing the
output, removing the saved tasks; shutting down the cluster) is measured
apart from the search. Prints the wall time, the tail, and the tail less the
cluster's shutdown (the part the client's own work adds).
"""
from __future__ import annotations

import sys
import time


def main() -> int:
    argv = sys.argv[1:]
    argv = argv[1:] if argv[:1] == ["--"] else argv
    from contextlib import contextmanager

    import distributed

    from seqsift import cli
    from seqsift.runtime import run
    from seqsift.runtime.clients import JobClient

    marks = {}
    real_as_completed = distributed.as_completed

    def as_completed(futures):
        for future in real_as_completed(futures):
            marks["last_result"] = time.perf_counter()
            yield future

    real_run_tasks = run.run_tasks

    def run_tasks(*args, **kwargs):
        try:
            return real_run_tasks(*args, **kwargs)
        finally:
            marks["run_job_returned"] = time.perf_counter()

    real_running = JobClient.running

    @contextmanager
    def running(self, backend):
        with real_running(self, backend) as client:
            try:
                yield client
            finally:
                marks["cluster_shutdown_began"] = time.perf_counter()

    distributed.as_completed = as_completed  # run_tasks imports it when a job starts
    run.run_tasks = run_tasks
    JobClient.running = running
    began = time.perf_counter()
    code = cli.main(argv)
    ended = time.perf_counter()
    last = marks.get("last_result", began)
    shutdown = ended - marks.get("cluster_shutdown_began", ended)
    print(f"wall {ended - began:.2f} s; after the last task's result: {ended - last:.2f} s, of which "
          f"run_job {marks.get('run_job_returned', last) - last:.2f} s, closing the output and the store "
          f"{marks.get('cluster_shutdown_began', ended) - marks.get('run_job_returned', last):.2f} s, "
          f"cluster shutdown {shutdown:.2f} s; exit code {code}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
