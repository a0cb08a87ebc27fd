"""A random genome and guide files for the GPU benchmarks: ``python benchmarks/random_genome.py FOLDER GBP``.

FOLDER/genome.fa: GBP x 10^9 uniform A/C/G/T bases in 24 records of 60-column
lines (NumPy on 16 threads: 18 s for 3.1 Gbp on the H100 machine). Guides
copied from the first 20 Mbp of random records: edit312.fa (312 x 23 nt),
ham1000.fa and ham10000.fa (20 nt), and crispr100/1000/10000.txt (20 nt, one
per line, each followed by an NGG in the genome). Used for
``bench_crispr.py --guides-file`` and the profiles in README.md.
"""
import os, sys, numpy as np
from concurrent.futures import ThreadPoolExecutor
out = sys.argv[1]; gbp = float(sys.argv[2]); os.makedirs(out, exist_ok=True)
bases = int(gbp * 1e9); records = 24; L = 60
rng = np.random.default_rng(17)
letters = np.frombuffer(b"ACGT", np.uint8)
lengths = [bases // records] * records
samples = {}
def block(seed, n):
    r = np.random.default_rng(seed)
    return letters[r.integers(0, 4, n, dtype=np.uint8)]
with open(f"{out}/genome.fa", "wb") as f, ThreadPoolExecutor(16) as pool:
    for rec, length in enumerate(lengths):
        f.write(f">chr{rec+1}\n".encode())
        step = 60_000_000
        futs = [pool.submit(block, rec * 1000 + i, min(step, length - s)) for i, s in enumerate(range(0, length, step))]
        seq = np.concatenate([x.result() for x in futs])
        samples[rec] = seq[:20_000_000].copy()
        full = length // L
        body = np.empty((full, L + 1), np.uint8); body[:, :L] = seq[:full * L].reshape(full, L); body[:, L] = 10
        f.write(body.tobytes())
        if length % L: f.write(seq[full * L:].tobytes() + b"\n")
rng = np.random.default_rng(3)
def pick(count, length, ngg=False):
    got = []
    while len(got) < count:
        rec = int(rng.integers(records)); s = int(rng.integers(0, len(samples[rec]) - 30))
        w = samples[rec][s:s + length + 3].tobytes().decode()
        if ngg and w[length + 1:length + 3] != "GG": continue
        got.append(w[:length])
    return got
for name, (c, l) in {"edit312": (312, 23), "ham1000": (1000, 20), "ham10000": (10000, 20)}.items():
    open(f"{out}/{name}.fa", "w").write("".join(f">g{i}\n{g}\n" for i, g in enumerate(pick(c, l))))
g = pick(10000, 20, ngg=True)
for n in (100, 1000, 10000):
    open(f"{out}/crispr{n}.txt", "w").write("".join(f"{x}\n" for x in g[:n]))
print("genome done")
