"""The host side of a CRISPR task, step by step, on the CPU (issue 16: the GPU job's host work dominates).

    PYTHONPATH=src python benchmarks/bench_crispr_host.py --genome /work/shared/data/ecoli536.fa.gz
    PYTHONPATH=/work/main/src python benchmarks/bench_crispr_host.py ...   # the same steps on another tree

Steps timed (best of ``--repeat``), each as a task meets it:

* ``rows``: ``CrisprJob.rows`` of an 8,192-guide range (the CUDA batch), asked
  again as the next task of the range asks for it;
* ``guide_words``: the CUDA launcher's one-hot words of those rows (one strand);
* ``site_rows``: ``task._site_rows`` (coordinates, site and guide strings,
  scores) of the hits of 30 guides with 8 N's, 1 DNA and 1 RNA bulge, k = 3, over
  the genome's first 2 Mbp (tens of thousands of sites, most with a bulge);
* ``hits_sorted``: those hits, shuffled (a GPU kernel appends them in any
  order), back in (start, length, row) order by ``SiteHits.sorted``;
* ``sort_rows``: those rows, shuffled, back in output order;
* ``sort_rows_in_order``: those rows as a task and a one-batch group hand
  them over, already in output order (the common case: a check);
* ``write_tsv``: those rows, 8 times over, through ``SiteWriter`` to a TSV file.

Only functions that every version of the package has are used, so two trees
can be compared with the same command.
"""
from __future__ import annotations

import argparse
import gzip
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def best(step, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        step()
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--genome", required=True, help="FASTA, plain or gzip (its first record's first 2 Mbp)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from seqsift.alphabet import encode_text
    from seqsift.crispr.output import SiteWriter
    from seqsift.crispr.task import CrisprJob, _site_rows, sort_rows
    from seqsift.kernels.crispr import find_sites
    from seqsift.kernels.crispr.cuda import guide_words
    from seqsift.pattern_set import PatternSet

    opener = gzip.open if Path(args.genome).read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(args.genome, "rt") as handle:
        sequence = "".join(line.strip() for line in handle if not line.startswith(">"))[:2_000_000].upper()
    rng = random.Random(1)

    many = tuple("".join(rng.choice("ACGT") for _ in range(20)) for _ in range(10_000))
    job = CrisprJob(references=(), guides=PatternSet(tuple(f"g{i}" for i in range(len(many))), many),
                    limits=(4,) * len(many), pam="NGG", pam_side=3, dna_bulge=0, rna_bulge=0, strands=(0, 1),
                    backend="cuda")
    job.rows(range(0, 8192))
    timings = {"rows": best(lambda: job.rows(range(0, 8192)), args.repeat)}
    rows = job.rows(range(0, 8192))
    plus = np.flatnonzero(rows.strand == 0)
    timings["guide_words"] = best(lambda: guide_words(rows, plus), args.repeat)

    starts = [rng.randrange(len(sequence) - 20) for _ in range(30)]
    guides = tuple("N" * 8 + sequence[s + 8:s + 20].replace("N", "A") for s in starts)
    bulged = CrisprJob(references=(), guides=PatternSet(tuple(f"b{i}" for i in range(len(guides))), guides),
                       limits=(3,) * len(guides), pam="NGG", pam_side=3, dna_bulge=1, rna_bulge=1, strands=(0, 1),
                       backend="cpu")
    raw = np.frombuffer(sequence.encode(), dtype=np.uint8)
    bulged_rows = bulged.rows(range(len(guides)))
    hits = find_sites("cpu", encode_text(raw), bulged_rows, 1, 1, 0, len(raw)).sorted()
    record = np.zeros(len(hits), np.int32)
    record_start = np.zeros(len(hits), np.int64)
    timings["site_rows"] = best(lambda: _site_rows(bulged, bulged_rows, hits, raw, record, record_start), args.repeat)
    mixed = np.random.default_rng(1).permutation(len(hits))
    shuffled_hits = type(hits)(*(getattr(hits, name)[mixed] for name in hits.__dataclass_fields__))
    timings["hits_sorted"] = best(shuffled_hits.sorted, args.repeat)
    frame = _site_rows(bulged, bulged_rows, hits, raw, record, record_start)
    shuffled = frame.sample(frac=1, random_state=1)
    timings["sort_rows"] = best(lambda: sort_rows(shuffled), args.repeat)
    timings["sort_rows_in_order"] = best(lambda: sort_rows(frame), args.repeat)

    big = pd.concat([frame] * 8, ignore_index=True)
    with tempfile.TemporaryDirectory() as folder:
        def write():
            writer = SiteWriter(str(Path(folder) / "sites.tsv"), ["chr"], list(bulged.guides.names))
            writer.write(big)
            writer.close()
        timings["write_tsv"] = best(write, args.repeat)

    print(f"{len(hits):,} sites ({int((hits.bulge_type > 0).sum()):,} with a bulge); {len(big):,} rows written")
    for step, seconds in timings.items():
        print(f"{step:18s} {seconds * 1000:9.2f} ms")


if __name__ == "__main__":
    main()
