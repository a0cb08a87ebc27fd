"""Where a reference's first open goes (issue 27, goal 5): one ``open_reference`` of FASTA, timed by step.

Removes the file's ``.fai`` and uses an empty genome cache (``SEQSIFT_CACHE`` is set to ``CACHE``, whose
``reference`` folder is deleted first; its ``native`` folder, the compiled scan built once per machine, is
kept), then opens the file once in this process (imports not timed) and prints one line: the
open's wall and peak RSS, how many blocks were scanned and when the last one ended, and for each later
step when it began and how long it took (seconds from the open's start, ``began+took``):

* ``join``: the blocks' runs of lines joined; ``names``: their names and header lines joined;
* ``layout``: the records' ``.fai`` columns (``join`` and ``names`` included);
* ``check``: the duplicate-name check; ``finish``: the genome cache's record table and header written;
* ``fai``: the ``.fai`` text, formatted beside ``check`` and ``finish``; ``index``: the ``.fai`` written.

Run it in a fresh process per open, alternating the code compared (``PYTHONPATH``)::

    PYTHONPATH=src python benchmarks/open_phases.py records.fa /tmp/open-cache
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fasta")
    parser.add_argument("cache", help="a genome cache folder of its own (deleted first)")
    args = parser.parse_args()
    os.environ["SEQSIFT_CACHE"] = args.cache
    from seqsift.cache import REFERENCE_FOLDER, cache_directory
    shutil.rmtree(cache_directory(create=False) / REFERENCE_FOLDER, ignore_errors=True)   # (native/ kept)
    if os.path.exists(args.fasta + ".fai"):
        os.remove(args.fasta + ".fai")

    from scan_threads import timed   # (benchmarks/, this script's folder, is on sys.path)
    from seqsift.io import fasta_scan, reference

    spans: list[tuple[str, float, float]] = []
    for owner, name, label in ((fasta_scan, "_scan_block", "block"), (fasta_scan, "_layout", "layout"),
                               (fasta_scan, "_names_of", "names"), (fasta_scan, "_join_lines", "join"),
                               (reference, "_check_records", "check"), (reference._SafeWriter, "finish", "finish"),
                               (reference, "_write_index", "index"), (fasta_scan.FastaLayout, "fai_bytes", "fai")):
        setattr(owner, name, timed(spans, label, getattr(owner, name)))

    began = time.perf_counter()
    reference.open_reference(args.fasta)
    wall = time.perf_counter() - began
    blocks = [end for label, _, end in spans if label == "block"]
    steps = " ".join(f"{label}={start - began:.3f}+{end - start:.3f}" for label, start, end in spans if label != "block")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"open {wall:.3f} s, peak RSS {peak_mb:.0f} MB; {len(blocks)} blocks, the last ended at "
          f"{max(blocks, default=began) - began:.3f} s; {steps}", flush=True)


if __name__ == "__main__":
    main()
