"""Random genomes and guide files for the benchmarks.

    python benchmarks/random_genome.py FOLDER GBP [--shape uniform|hg38] [--records N] [--threads T]

FOLDER/genome.fa holds about GBP x 10^9 bases in 60-column lines, of one of
these shapes:

* ``uniform`` (default): 24 records of equal length, uniform A/C/G/T, or with
  ``--records N`` N records of equal length (10^6 x 3 kbp: a microbial or
  metagenomic database's shape);
* ``hg38``: shaped like GRCh38's analysis set. GRCh38's published sizes of
  chr1-22, X and Y (scaled to GBP when GBP is not 3.1), then 3,000 small
  contigs of 0.5-400 kbp (log-normal, like its unplaced, alt and decoy
  records); about half of the bases soft-masked (lower-case runs of 50-600 bp,
  repeats' share in the real genome); each chromosome with a centromere-like
  N gap of 3 Mbp and 20 N gaps of up to 50 kbp (about 150 Mbp of N in all)
  and 200 IUPAC letters; headers with descriptions in the analysis set's
  style (``>chr1  AC:CM000663.2  LN:248956422  rl:Chromosome  AS:GRCh38``).

Guides are copied from the genome's upper- or lower-case bases (never over
an N): edit312.fa (312 x 23 nt), ham1000.fa and ham10000.fa (20 nt), and
crispr100/1000/10000.txt (20 nt, one per line, each followed by an NGG in
the genome, so every guide has its on-target site). The sequence is made on
``--threads`` threads (NumPy), each block from its own seed: the same
arguments give the same files.
"""
from __future__ import annotations

import argparse
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

LINE = 60
GRCH38_CHROMOSOMES = [
    ("chr1", 248_956_422, "CM000663.2"), ("chr2", 242_193_529, "CM000664.2"), ("chr3", 198_295_559, "CM000665.2"),
    ("chr4", 190_214_555, "CM000666.2"), ("chr5", 181_538_259, "CM000667.2"), ("chr6", 170_805_979, "CM000668.2"),
    ("chr7", 159_345_973, "CM000669.2"), ("chr8", 145_138_636, "CM000670.2"), ("chr9", 138_394_717, "CM000671.2"),
    ("chr10", 133_797_422, "CM000672.2"), ("chr11", 135_086_622, "CM000673.2"), ("chr12", 133_275_309, "CM000674.2"),
    ("chr13", 114_364_328, "CM000675.2"), ("chr14", 107_043_718, "CM000676.2"), ("chr15", 101_991_189, "CM000677.2"),
    ("chr16", 90_338_345, "CM000678.2"), ("chr17", 83_257_441, "CM000679.2"), ("chr18", 80_373_285, "CM000680.2"),
    ("chr19", 58_617_616, "CM000681.2"), ("chr20", 64_444_167, "CM000682.2"), ("chr21", 46_709_983, "CM000683.2"),
    ("chr22", 50_818_468, "CM000684.2"), ("chrX", 156_040_895, "CM000685.2"), ("chrY", 57_227_415, "CM000686.2"),
]
"""GRCh38's primary chromosomes: name, length, GenBank accession (the analysis set's headers)."""
GRCH38_BASES = sum(length for _, length, _ in GRCH38_CHROMOSOMES)
SMALL_CONTIGS = 3_000
IUPAC_LETTERS = np.frombuffer(b"RYKMSWBDHV", np.uint8)
BASES = np.frombuffer(b"ACGT", np.uint8)


def hg38_records(gbp: float, rng: np.random.Generator) -> list[tuple[str, int, str]]:
    """(name, length, description) of an hg38-shaped genome of about ``gbp`` x 10^9 bases."""
    scale = gbp * 1e9 / (GRCH38_BASES + 170e6)  # the contigs add about 170 Mbp, as the analysis set's do
    records = [(name, int(length * scale), f"AC:{accession}  LN:{int(length * scale)}  rl:Chromosome  AS:GRCh38")
               for name, length, accession in GRCH38_CHROMOSOMES]
    sizes = np.clip(rng.lognormal(np.log(25_000), 1.3, SMALL_CONTIGS), 500, 400_000) * scale
    kinds = ["random", "alt", "decoy", "Un"]
    for i, size in enumerate(sizes.astype(np.int64)):
        kind = kinds[i % len(kinds)]
        name = f"chrUn_KI27{i:04d}v1" if kind == "Un" else f"chr{1 + i % 22}_KI27{i:04d}v1_{kind}"
        if kind == "decoy":
            name = f"chrUn_JTFH0100{i:04d}v1_decoy"
        records.append((name, int(size), f"AC:KI27{i:04d}.1  LN:{int(size)}  rl:{kind}  AS:GRCh38"))
    return records


def uniform_records(gbp: float, count: int) -> list[tuple[str, int, str]]:
    each = int(gbp * 1e9) // count
    return [(f"chr{i + 1}" if count <= 1000 else f"contig{i + 1}", each, "") for i in range(count)]


def sequence(seed: int, length: int, shaped: bool) -> np.ndarray:
    """``length`` random upper-case bases; ``shaped``: half of them soft-masked in runs of 50-600 bp."""
    rng = np.random.default_rng(seed)
    seq = BASES[rng.integers(0, 4, length, dtype=np.uint8)]
    if shaped and length:
        # Alternating unmasked and masked runs, 50-600 bp each: about half of the bases lower case.
        runs = rng.integers(50, 601, length // 300 + 2)
        bounds = np.cumsum(runs)
        bounds = bounds[bounds < length]
        masked = np.zeros(length + 1, np.int8)
        np.add.at(masked, bounds, 1)
        lower = (np.cumsum(masked[:length]) % 2).astype(bool)
        seq[lower] += 32
    return seq


def add_gaps(seq: np.ndarray, rng: np.random.Generator, chromosome: bool, scale: float) -> None:
    """N gaps and IUPAC letters, in place: a chromosome's centromere-like gap of 3 Mbp and 20 gaps of up
    to 50 kbp (both scaled with the genome) and 200 IUPAC letters; a contig a gap of up to 1 kbp now and then."""
    n = len(seq)
    if chromosome:
        centre = int(3_000_000 * scale)
        at = int(rng.integers(n // 3, max(n // 3 + 1, 2 * n // 3 - centre)))
        seq[at:at + centre] = ord("N")
        for _ in range(20):
            width = int(rng.integers(100, 50_001) * scale)
            at = int(rng.integers(0, max(1, n - width)))
            seq[at:at + width] = ord("N")
        spots = rng.integers(0, n, 200)
        seq[spots] = IUPAC_LETTERS[rng.integers(0, len(IUPAC_LETTERS), 200)]
    elif n > 5_000 and rng.random() < 0.2:
        width = int(rng.integers(10, 1_001))
        at = int(rng.integers(0, n - width))
        seq[at:at + width] = ord("N")


def write_record(handle, name: str, description: str, seq: np.ndarray) -> None:
    handle.write(f">{name}{'  ' + description if description else ''}\n".encode())
    full = len(seq) // LINE
    body = np.empty((full, LINE + 1), np.uint8)
    body[:, :LINE] = seq[:full * LINE].reshape(full, LINE)
    body[:, LINE] = 10
    handle.write(body.tobytes())
    if len(seq) % LINE:
        handle.write(seq[full * LINE:].tobytes() + b"\n")


def write_many_equal_records(folder: str, gbp: float, count: int, threads: int) -> dict[int, np.ndarray]:
    """``count`` records of equal length, written a batch of records at a time (a million records in
    seconds: one random block, one reshape into lines, one join of headers and bodies per batch)."""
    length = int(gbp * 1e9) // count
    full, rest = divmod(length, LINE)
    batch = max(1, 30_000_000 // max(1, length))
    samples: dict[int, np.ndarray] = {}

    def batch_bytes(first: int) -> bytes:
        stop = min(count, first + batch)
        seq = sequence(first, (stop - first) * length, False).reshape(stop - first, length)
        if first < 2_000 * batch and len(samples) < 2_000:
            for row in range(min(stop - first, 2_000 - len(samples))):
                samples[first + row] = seq[row].copy()
        body = np.empty((stop - first, full, LINE + 1), np.uint8)
        body[:, :, :LINE] = seq[:, :full * LINE].reshape(stop - first, full, LINE)
        body[:, :, LINE] = 10
        tail = np.empty((stop - first, rest + 1 if rest else 0), np.uint8)
        if rest:
            tail[:, :rest] = seq[:, full * LINE:]
            tail[:, rest] = 10
        bodies = np.concatenate([body.reshape(stop - first, -1), tail], axis=1)
        return b"".join(f">contig{i + 1}\n".encode() + bodies[i - first].tobytes() for i in range(first, stop))

    with open(os.path.join(folder, "genome.fa"), "wb") as handle, ThreadPoolExecutor(threads) as pool:
        for text in pool.map(batch_bytes, range(0, count, batch)):
            handle.write(text)
    return samples


def make_genome(folder: str, gbp: float, shape: str, records: int | None, threads: int) -> dict[int, np.ndarray]:
    """Write FOLDER/genome.fa; returns up to 20 Mbp of sequence from some records (for the guides)."""
    if shape == "uniform" and (records or 24) > 1_000:
        return write_many_equal_records(folder, gbp, records, threads)
    rng = np.random.default_rng(17)
    plan = hg38_records(gbp, rng) if shape == "hg38" else uniform_records(gbp, records or 24)
    samples: dict[int, np.ndarray] = {}
    step = 60_000_000
    with open(os.path.join(folder, "genome.fa"), "wb") as handle, ThreadPoolExecutor(threads) as pool:
        for number, (name, length, description) in enumerate(plan):
            pieces = [pool.submit(sequence, number * 1000 + i, min(step, length - s), shape == "hg38")
                      for i, s in enumerate(range(0, length, step))]
            seq = np.concatenate([p.result() for p in pieces]) if pieces else np.empty(0, np.uint8)
            if shape == "hg38":
                add_gaps(seq, np.random.default_rng(number + 7), chromosome=number < len(GRCH38_CHROMOSOMES),
                         scale=gbp * 1e9 / (GRCH38_BASES + 170e6))
            if len(samples) < 24 and length >= 1_000:
                samples[number] = seq[:20_000_000].copy()
            write_record(handle, name, description, seq)
    return samples


def write_guides(folder: str, samples: dict[int, np.ndarray]) -> None:
    rng = np.random.default_rng(3)
    keys = sorted(samples)

    def pick(count: int, length: int, ngg: bool = False) -> list[str]:
        got = []
        while len(got) < count:
            record = keys[int(rng.integers(len(keys)))]
            sample = samples[record]
            s = int(rng.integers(0, len(sample) - length - 3))
            window = sample[s:s + length + 3].tobytes().decode().upper()
            if any(c not in "ACGT" for c in window):
                continue
            if ngg and window[length + 1:length + 3] != "GG":
                continue
            got.append(window[:length])
        return got

    for name, (count, length) in {"edit312": (312, 23), "ham1000": (1000, 20), "ham10000": (10000, 20)}.items():
        with open(os.path.join(folder, f"{name}.fa"), "w") as handle:
            handle.write("".join(f">g{i}\n{g}\n" for i, g in enumerate(pick(count, length))))
    guides = pick(10_000, 20, ngg=True)
    for count in (100, 1000, 10000):
        with open(os.path.join(folder, f"crispr{count}.txt"), "w") as handle:
            handle.write("".join(f"{g}\n" for g in guides[:count]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("gbp", type=float, help="about this many 10^9 bases")
    parser.add_argument("--shape", choices=["uniform", "hg38"], default="uniform")
    parser.add_argument("--records", type=int, help="uniform: this many records of equal length (default 24)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    os.makedirs(args.folder, exist_ok=True)
    samples = make_genome(args.folder, args.gbp, args.shape, args.records, args.threads)
    write_guides(args.folder, samples)
    print("genome done")


if __name__ == "__main__":
    main()
