"""Device run: correctness of the bit-sliced hamming-packed kernel, then its benchmarks.

    PYTHONPATH=src:.helper python3 .helper/check_bench.py OUT_DIR [ecoli.fa.gz]
"""
from __future__ import annotations

import datetime
import gzip
import json
import random
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import bitsliced
from seqsift.alphabet import encode_text
from seqsift.kernels import find_ends
from seqsift.kernels.hamming import scan_cpu
from seqsift.pattern_set import PatternSet

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
import oracle  # noqa: E402  (the tests' naive references)

OUT = Path(sys.argv[1])
ECOLI = Path(sys.argv[2]) if len(sys.argv) > 2 else None
HBM_ROOF, INT_ROOF = 3.03e12, 16.7e12
failures = 0
records = []


def log(*a):
    print(*a, flush=True)


def hs(h):
    return set(zip(h.row.tolist(), h.end.tolist(), h.distance.tolist()))


def batch_of(seqs, strands=(0, 1)):
    return PatternSet(tuple(f"p{i}" for i in range(len(seqs))), tuple(seqs)).oriented(range(len(seqs)), strands)


def check(label, codes, seqs, k, lo, hi, use_oracle=True):
    global failures
    batch = batch_of(seqs)
    expected = hs(scan_cpu(codes, batch, k, lo, hi))
    if use_oracle:
        ref = hs(oracle.hamming_ends(codes, batch, k, lo, hi))
        if ref != expected:
            log(f"  NOTE scan_cpu != oracle in {label}")
            expected = ref
    got = hs(bitsliced.packed(codes, batch, k, lo, hi))
    if got != expected:
        failures += 1
        log(f"FAIL {label}: {len(got)} vs {len(expected)}; missing {sorted(expected - got)[:5]} extra {sorted(got - expected)[:5]}")
    return len(expected)


def rand_dna(rng, n, letters="ACGT"):
    return "".join(rng.choice(letters) for _ in range(n))


def mutate(rng, s, e):
    s = list(s)
    for _ in range(e):
        s[rng.randrange(len(s))] = rng.choice("ACGT")
    return "".join(s)


def correctness():
    rng = random.Random(1)
    t0 = time.time()
    total = 0
    # every length class, k from 0 to beyond m, whole text and inner owned windows
    for m in (1, 2, 5, 20, 31, 32, 33, 63, 64, 65, 100, 256):
        pattern = rand_dna(rng, m)
        pieces = []
        for _ in range(10):
            pieces.append(rand_dna(rng, rng.randint(0, 200)))
            pieces.append(mutate(rng, pattern, rng.randint(0, max(1, m // 4))))
        text = "".join(pieces) + rand_dna(rng, 50)
        codes = encode_text(text)
        n = len(codes)
        for k in sorted({0, 2, m // 4, m - 1, m, m + 3}):
            for lo, hi in ((0, n), (rng.randint(0, n // 2), rng.randint(n // 2, n)), (37, 38)):
                total += check(f"m={m} k={k} [{lo},{hi})", codes, [pattern, rand_dna(rng, m)], k, lo, hi)
    # adversarial text and IUPAC patterns
    text = ("N" * 300 + "A" * 500 + rand_dna(rng, 400) + "ACGT" * 50 + "nnnRYSW" + rand_dna(rng, 300).lower()
            + "A" * 40 + "N" + "A" * 40)
    codes = encode_text(text)
    pats = ["A" * 20, "N" * 12, "ACGTACGTRYKMACGT", "ACGTSWBDHVACGT", "ACGCGT", "A", rand_dna(rng, 40),
            "A" * 33, "N" * 70, "RRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRR", rand_dna(rng, 64, "ACGTRYSWKMBDHVN")]
    for k in (0, 1, 2, 5, 40):
        total += check(f"adversarial k={k}", codes, pats, k, 0, len(codes))
    # many small random cases with IUPAC patterns and N-rich text
    for case in range(150):
        n = rng.randint(1, 400)
        text = rand_dna(rng, n, "ACGT" * 6 + "N")
        codes = encode_text(text)
        seqs = [rand_dna(rng, rng.randint(1, 70), "ACGT" * 3 + "RYSWKMBDHVN") for _ in range(rng.randint(1, 6))]
        k = rng.randint(0, 12)
        lo = rng.randint(0, n)
        hi = rng.randint(lo, n + 5)
        total += check(f"random case {case}", codes, seqs, k, lo, hi)
    log(f"small cases: {total} hits compared, {failures} failures, {time.time() - t0:.1f} s")


def ecoli():
    if ECOLI is None:
        log("no E. coli file given")
        return None
    with gzip.open(ECOLI, "rt") as handle:
        genome = "".join(line.strip() for line in handle if not line.startswith(">"))
    codes = encode_text(genome)
    rng = random.Random(2)
    seqs = [mutate(rng, genome[s:s + 20], rng.randint(0, 3)) for s in rng.sample(range(len(genome) - 30), 990)]
    seqs += [mutate(rng, genome[s:s + 24], 1)[:10] + "NRY" + genome[s + 13:s + 24] for s in rng.sample(range(len(genome) - 30), 10)]
    t0 = time.time()
    hits = check("E. coli 1000 patterns k=3", codes, seqs, 3, 0, len(codes), use_oracle=False)
    log(f"E. coli 1000 patterns: {hits} hits compared with scan_cpu, {time.time() - t0:.1f} s, failures so far {failures}")
    return genome


def timed(fn, repeats=10):
    import cupy

    fn()
    times = []
    for _ in range(repeats):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cupy.cuda.get_elapsed_time(a, b) / 1e3)
    return statistics.median(times), min(times), max(times)


def benchmarks():
    import cupy

    n = 1_000_000_000
    codes = cupy.random.randint(0, 4, n, dtype=cupy.uint8)
    pack_s = timed(lambda: bitsliced.planes(codes), 5)[0]
    log(f"pack 1 Gbp codes -> planes: {pack_s * 1e3:.2f} ms = {n / pack_s:.3g} chars/s "
        f"({n * 1.375 / pack_s / HBM_ROOF:.1%} of HBM counting 1.375 B/char)")
    text_planes = bitsliced.planes(codes)
    rng = random.Random(5)
    guides = [rand_dna(rng, 20) for _ in range(1000)]
    batch = batch_of(guides)
    plan = bitsliced.prepare(batch, 4)
    hits = bitsliced.run(plan, text_planes, 0, n)
    med, lo_t, hi_t = timed(lambda: bitsliced.run(plan, text_planes, 0, n))
    rate = 1000 * n / med
    log(f"(b) bitsliced 1000 x 20 nt k=4 both strands 1 Gbp: {med:.4f} s (min {lo_t:.4f} max {hi_t:.4f}), "
        f"{len(hits)} hits, {rate:.3g} guide-positions/s, {2 * rate:.3g} row-positions/s")
    records.append(dict(algorithm="hamming-packed (bit-sliced)", workload="1000 guides x 20 nt, k=4, both strands, 1 Gbp random",
                        quantity="guide_positions_per_s", value=rate, roof_fraction=None, paper_value=None,
                        time_s=med, hits=len(hits)))
    # the current hamming-packed of the repository, same workload, fewer repeats
    try:
        t0 = time.time()
        theirs = find_ends("hamming-packed", "cuda", codes, batch, 4, 0, n)
        first = time.time() - t0
        log(f"    repo hamming-packed first call {first:.2f} s, {len(theirs)} hits (same set: {hs(theirs) == hs(hits)})")
        if first < 8:
            med2 = timed(lambda: find_ends("hamming-packed", "cuda", codes, batch, 4, 0, n), 3)[0]
            log(f"    repo hamming-packed: {med2:.4f} s = {1000 * n / med2:.3g} guide-positions/s")
            records.append(dict(algorithm="hamming-packed (repo, popcount)", workload="1000 guides x 20 nt, k=4, both strands, 1 Gbp random",
                                quantity="guide_positions_per_s", value=1000 * n / med2, roof_fraction=None,
                                paper_value=None, time_s=med2))
    except Exception:
        traceback.print_exc()
    # (c) one pattern, + strand
    for m in (20, 32):
        for k in (0, 2, 4):
            single = batch_of([rand_dna(rng, m)], (0,))
            plan1 = bitsliced.prepare(single, k)
            med = timed(lambda: bitsliced.run(plan1, text_planes, 0, n))[0]
            cps = n / med
            log(f"(c) m={m} k={k}: {med * 1e3:.2f} ms, {cps:.3g} chars/s; planes 0.375 B/char: {cps * 0.375 / HBM_ROOF:.1%} "
                f"of HBM; 1 B/char codes: {cps / HBM_ROOF:.1%}; with packing {n / (med + pack_s) / HBM_ROOF:.1%}")
            records.append(dict(algorithm="hamming-packed (bit-sliced)", workload=f"1 x {m} nt, k={k}, + strand, 1 Gbp random, planes on device",
                                quantity="text_chars_per_s", value=cps, roof_fraction=cps * 0.375 / HBM_ROOF,
                                paper_value=None, time_s=med, chars_per_s_with_packing=n / (med + pack_s)))
    del codes, text_planes
    cupy.get_default_memory_pool().free_all_blocks()


def main():
    import cupy

    OUT.mkdir(parents=True, exist_ok=True)
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    log(device)
    for section in (correctness, ecoli, benchmarks):
        try:
            section()
        except Exception:
            traceback.print_exc()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (OUT / "bitsliced.json").write_text(json.dumps({"device": device, "date": datetime.date.today().isoformat(),
                                                     "commit": commit, "records": records}, indent=1))
    log(f"FAILURES: {failures}")


if __name__ == "__main__":
    main()
