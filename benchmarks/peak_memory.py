"""Peak memory of one command, split as issue 27 asks: its own (anonymous) memory apart from mapped files.

    python benchmarks/peak_memory.py -- python -m seqsift crispr genome.fa guides.txt -k 4 -o sites.tsv

Runs the command and reads its ``/proc/PID/status`` every 10 ms: the peaks of
``RssAnon`` (the process's own memory: arrays, Python objects), ``RssFile``
(pages of mapped files: the genome cache, shared libraries), ``RssShmem``
and ``VmRSS`` (their sum). ``getrusage``'s peak is VmRSS's, which counts a
memory-mapped 3 GB genome cache as the process's own. Linux only; a peak
shorter than the interval can be missed.
"""
from __future__ import annotations

import subprocess
import sys
import time

FIELDS = ("RssAnon", "RssFile", "RssShmem", "VmRSS")


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    began = time.perf_counter()
    child = subprocess.Popen(argv)
    peak = dict.fromkeys(FIELDS, 0)
    while child.poll() is None:
        try:
            with open(f"/proc/{child.pid}/status") as status:
                for line in status:
                    key = line.split(":", 1)[0]
                    if key in peak:
                        peak[key] = max(peak[key], int(line.split()[1]))  # kB
        except OSError:  # the process ended between poll and open
            pass
        time.sleep(0.01)
    print(f"exit {child.returncode}, wall {time.perf_counter() - began:.2f} s, peak "
          + ", ".join(f"{key} {value / 1e6:.2f} GB" for key, value in peak.items()), file=sys.stderr)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
