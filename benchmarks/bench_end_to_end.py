"""From a FASTA file to written hits, stage by stage, beside the kernel alone and sassy-rs (issue 17).

    python benchmarks/bench_end_to_end.py --genome-dir /tmp/e2e --gbp 3.1            # the H100 run
    python benchmarks/bench_end_to_end.py --genome-dir /tmp/e2e --gbp 0.02 --backend cpu   # a small CPU run

Writes a random genome into ``--genome-dir`` (``--records`` records, 60-column
lines, uniform ACGT, and its plain-gzip copy; reused while the size asks for
the same; flushed to disk, still in the page cache), then runs the issue's
jobs, each through the CLI in a fresh process as a user would, with seqsift's
stage timers on (``SEQSIFT_STAGE_TIMES=1``, ``seqsift.runtime.stages``):

=========================== =====================================================================
e2e-edit-312x23-cold        312 x 23-nt guides, edit k = 3, both strands, best + CIGAR, to Parquet;
                            no .fai, empty seqsift cache
e2e-edit-312x23-warm        the same job again (index and caches as the first run left them)
e2e-hamming-1000x20-warm    1,000 x 20-nt guides, Hamming k = 4, both strands, to Parquet
e2e-api-second-call         the edit job from Python, second call on one long-lived client, to a DataFrame
e2e-edit-312x23-gz-cold     the edit job on genome.fa.gz (plain gzip), empty cache
e2e-edit-312x23-bgzf-cold   with ``--bgzf``: the edit job on genome.fa.bgz (BGZF, written here from
                            genome.fa on every core), empty cache
sassy-rs-312x23             sassy-rs 0.3 (CPU SIMD, every core), the same guides at k = 3, both strands,
                            on the first records (``--sassy-fraction``), scaled to the genome
=========================== =====================================================================

Then every job but the API call again through ``seqsift serve`` (``<name>-served``: the
server started beforehand, the cold jobs cold for their file; see ``served_jobs``).

Beside each seqsift job: ``kernel_s``, the job's kernel alone (``find_ends``
over each record's codes, on the device for CUDA, in the same run), and the
stage seconds (open/index, read, transfer, encode, kernel, merge,
locate/align, write; worker stages are summed over task threads). Also the
time to decompress the gzip file with the fastest decompressor importable
here (for BGZF: its blocks inflated on every core, and the fastest gzip reader
on the file as one stream). Writes ``end_to_end_gpu.json`` (``end_to_end_cpu.json`` with
``--backend cpu``) and a stacked-bar PNG of the stages into ``--out``; ``--bgzf-only``
runs the kernel alone and the BGZF jobs only, into ``end_to_end_gpu_bgzf.json``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
LINE = 60
STAGES = ("open", "read", "transfer", "encode", "kernel", "merge", "locate", "write")


# -- the genome ---------------------------------------------------------------------

def write_genome(folder: Path, bases: int, records: int, seed: int = 17) -> tuple[Path, Path]:
    """genome.fa (``records`` records of about equal length, 60-column lines) and genome.fa.gz.

    NumPy makes each 60 MB block (random bytes -> ACGT, a newline column);
    the gzip copy is made of independently compressed members, one per
    block, compressed on every core (a valid plain-gzip file, as ``gzip -c a
    b`` makes). Both are kept while ``genome.json`` says the same size.
    """
    folder.mkdir(parents=True, exist_ok=True)
    fasta, gz, stamp = folder / "genome.fa", folder / "genome.fa.gz", folder / "genome.json"
    wanted = {"bases": bases, "records": records, "seed": seed, "line": LINE}
    if fasta.exists() and gz.exists() and stamp.exists() and json.loads(stamp.read_text()).get("made") == wanted:
        return fasta, gz
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACGT", np.uint8)
    lengths = np.full(records, bases // records, np.int64)
    lengths[: bases % records] += 1
    block_lines = 1_000_000  # 60 Mbp per block
    pool = ThreadPoolExecutor(os.cpu_count() or 1)
    starts = []   # byte offset of each record's first base
    with open(fasta, "wb") as plain, open(gz, "wb") as packed:
        pending = []

        def emit(data: bytes) -> None:
            plain.write(data)
            pending.append(pool.submit(_gzip_member, data))
            while len(pending) > 2 * (os.cpu_count() or 1):
                packed.write(pending.pop(0).result())

        for r, length in enumerate(lengths):
            emit(f">chr{r + 1} random {length} bp\n".encode())
            starts.append(plain.tell())
            for first in range(0, int(length), block_lines * LINE):
                size = min(block_lines * LINE, int(length) - first)
                seq = letters[np.frombuffer(rng.bytes(size), np.uint8) & 3]
                full = size // LINE * LINE
                body = np.empty((full // LINE, LINE + 1), np.uint8)
                body[:, :LINE] = seq[:full].reshape(-1, LINE)
                body[:, LINE] = ord("\n")
                tail = seq[full:].tobytes() + b"\n" if size > full else b""
                emit(body.tobytes() + tail)
        for future in pending:
            packed.write(future.result())
    pool.shutdown()
    stamp.write_text(json.dumps({"made": wanted, "lengths": lengths.tolist(), "starts": starts}))
    return fasta, gz


def _gzip_member(data: bytes) -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)  # wbits 31: a gzip member
    return compressor.compress(data) + compressor.flush()


BGZF_BLOCK_INPUT = 65280  # bytes of FASTA per BGZF block (bgzip's choice: the block stays under 64 KiB)
BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")


def _bgzf_block(data: bytes) -> bytes:
    """One BGZF block (SAM spec 4.1): a gzip member whose extra field 'BC' holds the block's size - 1."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, -15)  # raw deflate
    body = compressor.compress(data) + compressor.flush()
    size = 18 + len(body) + 8
    header = (b"\x1f\x8b\x08\x04" + b"\x00" * 4 + b"\x00\xff" + (6).to_bytes(2, "little") + b"BC"
              + (2).to_bytes(2, "little") + (size - 1).to_bytes(2, "little"))
    return header + body + zlib.crc32(data).to_bytes(4, "little") + len(data).to_bytes(4, "little")


def write_bgzf(fasta: Path) -> Path:
    """genome.fa.bgz beside ``fasta``: its bytes as BGZF blocks compressed on every core (kept while newer)."""
    bgz = fasta.with_name(fasta.name + ".bgz")
    if bgz.exists() and bgz.stat().st_mtime >= fasta.stat().st_mtime:
        return bgz
    threads = os.cpu_count() or 1
    with open(fasta, "rb") as source, open(bgz, "wb") as out, ThreadPoolExecutor(threads) as pool:
        pending = []
        while True:
            piece = source.read(BGZF_BLOCK_INPUT * 256)
            if not piece:
                break
            blocks = [piece[i:i + BGZF_BLOCK_INPUT] for i in range(0, len(piece), BGZF_BLOCK_INPUT)]
            pending.append(pool.submit(lambda parts: b"".join(_bgzf_block(b) for b in parts), blocks))
            while len(pending) > 2 * threads:
                out.write(pending.pop(0).result())
        for future in pending:
            out.write(future.result())
        out.write(BGZF_EOF)
    return bgz


def fastest_bgzf_decompression(bgz: Path) -> dict:
    """Seconds to inflate ``bgz`` to nowhere: its blocks on every core (seqsift.io.decompress, the only
    parallel BGZF inflater importable here), and as one gzip stream by the fastest reader (isal)."""
    from seqsift.io import decompress

    timings = {}
    began = time.perf_counter()
    threads = os.cpu_count() or 1
    buffers = threading.local()

    def inflate(bgzf: decompress.BgzfFile, first: int, stop: int) -> None:
        end = bgzf.total if stop == len(bgzf.starts) else int(bgzf.starts[stop])
        size = end - int(bgzf.starts[first])
        if getattr(buffers, "out", None) is None or len(buffers.out) < size:
            buffers.out = np.empty(size, dtype=np.uint8)
        bgzf.read_into(first, stop, buffers.out[:size])

    with decompress.BgzfFile(str(bgz), decompress.bgzf_blocks(str(bgz))) as bgzf, \
            ThreadPoolExecutor(threads) as pool:
        blocks = len(bgzf.starts)  # batches of 128 blocks (8 MiB), into a buffer per thread
        for done in [pool.submit(inflate, bgzf, first, min(first + 128, blocks)) for first in range(0, blocks, 128)]:
            done.result()
    timings[f"BGZF blocks on {threads} threads (python-isal inflate)"] = time.perf_counter() - began
    timings.update(fastest_decompression(bgz)["all"])
    best = min(timings, key=timings.get)
    return {"fastest": best, "seconds": timings[best], "all": timings}


def read_codes(fasta: Path, max_bases: int | None = None) -> list[np.ndarray]:
    """Each record's text codes (or the first records' up to ``max_bases``), by the layout
    ``write_genome`` wrote: no index is built, so the cold jobs stay cold."""
    from seqsift.alphabet import TEXT_CODE_ARRAY

    layout = json.loads((fasta.parent / "genome.json").read_text())
    whole = np.memmap(fasta, np.uint8, mode="r")
    codes, total = [], 0
    for start, length in zip(layout["starts"], layout["lengths"]):
        if max_bases is not None and total >= max_bases:
            break
        full = length // LINE
        lines = whole[start:start + full * (LINE + 1)].reshape(full, LINE + 1)[:, :LINE]
        tail = whole[start + full * (LINE + 1):start + full * (LINE + 1) + length % LINE]
        codes.append(TEXT_CODE_ARRAY[np.concatenate([lines.reshape(-1), tail])])
        total += length
    return codes


def sample_guides(codes: list[np.ndarray], count: int, length: int, seed: int) -> list[str]:
    """``count`` guides copied from random places of the genome (each has a hit)."""
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACGTA", np.uint8)  # an N (code 4) would become A
    guides = []
    for _ in range(count):
        record = codes[int(rng.integers(len(codes)))]
        start = int(rng.integers(0, len(record) - length))
        guides.append(letters[record[start:start + length]].tobytes().decode())
    return guides


# -- running a job ----------------------------------------------------------------

def run_cli(argv: list[str], env: dict) -> dict:
    """One CLI run in a fresh process (this script's ``--as-cli`` harness): wall and stage seconds."""
    stages_file = Path(env["SEQSIFT_BENCH_STAGES"])
    stages_file.unlink(missing_ok=True)
    launched = time.time()
    began = time.perf_counter()
    result = subprocess.run([sys.executable, __file__, "--as-cli", *argv], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - began
    ended = time.time()
    if result.returncode != 0:
        raise SystemExit(f"seqsift {' '.join(argv)} failed:\n{result.stderr[-3000:]}")
    child = json.loads(stages_file.read_text())
    # Interpreter start + imports before the CLI's main, and what follows it (teardown, exit).
    return {"wall_s": wall, "stages": child["stages"], "cli_main_s": child["cli_main_s"],
            "startup_s": child["main_began"] - launched, "exit_s": ended - child["main_ended"],
            "first_kernel_s": child["first_kernel_end"] and child["first_kernel_end"] - launched}


def as_cli(argv: list[str]) -> int:
    """The child side of :func:`run_cli`: seqsift's CLI with the stage timers on.

    Nothing more is imported before the CLI's main than the ``seqsift`` command
    imports: the engine's own imports (Dask, pandas, Numba) load while the job
    reads its reference, as they do for a user."""
    os.environ["SEQSIFT_STAGE_TIMES"] = "1"  # before seqsift is imported: workers inherit it
    from seqsift import cli
    from seqsift.runtime import stages

    main_began = time.time()
    began = time.perf_counter()
    code = cli.main(argv)
    in_process = time.perf_counter() - began
    taken = stages.take()
    Path(os.environ["SEQSIFT_BENCH_STAGES"]).write_text(json.dumps(
        {"stages": {s: taken.get(s, 0.0) for s in (*STAGES, "kernel_calls")}, "cli_main_s": in_process,
         "main_began": main_began, "main_ended": time.time(), "first_kernel_end": stages.first_kernel_end()}))
    return code


def kernel_alone(codes: list[np.ndarray], guides: list[str], metric: str, k: int, backend: str) -> tuple[float, str]:
    """Seconds of the job's kernel over every record (text already encoded, on the device for CUDA)."""
    from seqsift import kernels
    from seqsift.pattern_set import PatternSet

    names = tuple(f"g{i}" for i in range(len(guides)))
    batch = PatternSet(names, tuple(guides)).oriented(range(len(guides)), (0, 1))
    algorithm, _ = kernels.choose_algorithm(metric, backend, m_max=len(guides[0]), k=k, patterns=len(guides))
    if backend == "cuda":
        import cupy

        texts = [cupy.asarray(c) for c in codes]
        sync = cupy.cuda.Device().synchronize
    else:
        texts, sync = codes, (lambda: None)
    kernels.find_ends(algorithm, backend, texts[0][:200_000], batch, k, 0, 200_000)  # compile, allocate
    sync()
    began = time.perf_counter()
    for text in texts:
        kernels.find_ends(algorithm, backend, text, batch, k, 0, int(text.size))
    sync()
    seconds = time.perf_counter() - began
    del texts
    if backend == "cuda":
        from seqsift.kernels.cuda import release_cached_memory

        release_cached_memory()
    return seconds, algorithm


def api_second_call(fasta: Path, guides: list[str], backend: str, workers: int | None) -> dict:
    """The edit job twice from Python on one client; stage seconds of the second call."""
    import seqsift
    from seqsift.cluster import connect
    from seqsift.runtime import stages

    named = {f"g{i}": g for i, g in enumerate(guides)}
    with connect(backend, workers=workers) as client:
        client.run(stages.enable)
        stages.enable()
        seqsift.search(str(fasta), named, 3, metric="edit", client=client, backend=backend)
        client.run(stages.take)
        stages.take()
        began = time.perf_counter()
        rows = seqsift.search(str(fasta), named, 3, metric="edit", client=client, backend=backend)
        wall = time.perf_counter() - began
        taken = stages.take()
        client.run(stages.enable, False)
        stages.enable(False)
    return {"wall_s": wall, "rows": len(rows), "stages": {s: taken.get(s, 0.0) for s in STAGES}}


def served_jobs(args, work: Path, env: dict, fresh, jobs: list, size: str) -> list[dict]:
    """The same jobs through ``seqsift serve`` (the opt-in warm server): wall seconds of the console script.

    The server is started once, as a user would before a session of runs; its start is not counted
    (it is reported as ``server_start_s``). The cold job is cold for the genome: no index, no cache,
    not on the GPU (the server has never read it: it starts after ``fresh()``).
    """
    socket = work / "server" / "server.sock"
    served_env = dict(env, SEQSIFT_SERVER_SOCKET=str(socket))
    fresh()
    began = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "seqsift", "serve", "--backend", args.backend],
                              env=served_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first_line = server.stdout.readline()
    server_start = time.perf_counter() - began
    if "listening" not in first_line:
        raise SystemExit(f"seqsift serve did not start: {first_line}{server.stderr.read()[-3000:]}")
    records = []
    try:
        for name, reference, job, guides_file, _cold, kernel_s, workload in jobs:
            argv = [sys.executable, "-m", "seqsift", "search", str(reference), str(work / guides_file), *job]
            began = time.perf_counter()
            result = subprocess.run(argv, env=served_env, capture_output=True, text=True)
            wall = time.perf_counter() - began
            if result.returncode != 0:
                raise SystemExit(f"served {name} failed:\n{result.stderr[-3000:]}")
            served_name = f"{name}-served"
            records.append(record(served_name, f"{workload}; through seqsift serve (started beforehand)",
                                  {"wall_s": wall}, kernel_s, server_start_s=server_start))
            print(f"{served_name}: {wall:.2f} s", flush=True)
    finally:
        subprocess.run([sys.executable, "-m", "seqsift", "serve", "--stop"], env=served_env, capture_output=True)
        server.wait(timeout=120)
    return records


def fastest_decompression(gz: Path) -> dict:
    """Seconds to decompress ``gz`` to nowhere with each decompressor found here; the fastest first."""
    timings = {}
    readers = {}
    try:  # python-isal's reader on this thread, and with its reading on a thread of its own
        from isal import igzip, igzip_threaded

        readers["python-isal"] = lambda: igzip.open(gz, "rb")
        readers["python-isal (threaded)"] = lambda: igzip_threaded.open(gz, "rb", threads=4)
    except ImportError:  # the standard library's reader only when isal is missing (it is 2x slower)
        readers["python gzip"] = lambda: __import__("gzip").open(gz, "rb")
    try:
        from zlib_ng import gzip_ng, gzip_ng_threaded

        readers["zlib-ng"] = lambda: gzip_ng.open(gz, "rb")
        readers["zlib-ng (threaded)"] = lambda: gzip_ng_threaded.open(gz, "rb", threads=4)
    except ImportError:
        pass
    for name, opener in readers.items():
        began = time.perf_counter()
        with opener() as stream:
            while stream.read(64 << 20):
                pass
        timings[name] = time.perf_counter() - began
    for tool in ("pigz", "igzip"):
        if shutil.which(tool):
            began = time.perf_counter()
            subprocess.run([tool, "-dc", str(gz)], stdout=subprocess.DEVNULL, check=True)
            timings[f"{tool} -dc"] = time.perf_counter() - began
    best = min(timings, key=timings.get)
    return {"fastest": best, "seconds": timings[best], "all": timings}


def sassy_job(fasta: Path, guides: list[str], fraction: float, genome_bases: int) -> dict | None:
    """sassy-rs on the first records (>= ``fraction`` of the genome), every core, scaled to the genome."""
    try:
        import sassy
    except ImportError:
        print("sassy-rs is not installed (pip install sassy-rs): its record is left out")
        return None
    codes = read_codes(fasta, max_bases=int(fraction * genome_bases))
    letters = np.frombuffer(b"ACGTN", np.uint8)
    texts = [letters[c].tobytes() for c in codes]
    patterns = [g.encode() for g in guides]
    threads = os.cpu_count() or 1
    searcher = sassy.Searcher("iupac", rc=True)
    searcher.search_many(patterns[:2], [texts[0][:100_000]], 3, threads, "batch_patterns")  # warm-up
    began = time.perf_counter()
    matches = searcher.search_many(patterns, texts, 3, threads, "batch_patterns")
    seconds = time.perf_counter() - began
    searched = sum(len(t) for t in texts)
    return {"measured_s": seconds, "searched_bases": searched, "threads": threads, "matches": len(matches),
            "wall_s": seconds * genome_bases / searched}


# -- the report -----------------------------------------------------------------------

def record(name: str, workload: str, result: dict, kernel_s: float | None, **extra) -> dict:
    stages = result.get("stages", {})
    out = dict(algorithm=name, workload=workload, quantity="wall_s", value=result["wall_s"], roof_fraction=None,
               paper_value=None, time_s=result["wall_s"], kernel_s=kernel_s,
               wall_over_kernel=(result["wall_s"] / kernel_s) if kernel_s else None, **extra)
    out.update({f"stage_{s}_s": stages.get(s, 0.0) for s in STAGES})
    for key in ("cli_main_s", "startup_s", "exit_s", "rows"):
        if key in result:
            out[key] = result[key]
    return out


def plot(records: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # The 10,000-guide job (about 30 s) would flatten every other bar: it is in the table and the JSON.
    jobs = [r for r in records if r["algorithm"].startswith("e2e-") and "10000" not in r["algorithm"]]
    fig, ax = plt.subplots(figsize=(12, 5))
    labels = [r["algorithm"].removeprefix("e2e-") for r in jobs]
    x = np.arange(len(jobs))
    bottom = np.zeros(len(jobs))
    colors = plt.get_cmap("tab10").colors
    for i, stage in enumerate(STAGES):
        values = np.array([r[f"stage_{stage}_s"] for r in jobs])
        ax.bar(x - 0.2, values, width=0.4, bottom=bottom, label=stage, color=colors[i])
        bottom += values
    for label, key, color in (("process start + imports", "startup_s", "black"), ("exit", "exit_s", "tan")):
        values = np.array([r.get(key) or 0.0 for r in jobs])
        ax.bar(x - 0.2, values, width=0.4, bottom=bottom, label=label, color=color, alpha=0.8)
        bottom += values
    rest = np.array([max(0.0, r["value"] - b) for r, b in zip(jobs, bottom)])
    ax.bar(x - 0.2, rest, width=0.4, bottom=bottom, label="other (start-up, scheduling, results)",
           color="lightgrey")
    ax.bar(x + 0.2, [r["kernel_s"] or 0 for r in jobs], width=0.4, color="black", alpha=0.6,
           label="kernel alone")
    ax.bar(x + 0.2, [r["value"] for r in jobs], width=0.4, fill=False, edgecolor="black", label="wall", zorder=3)
    ax.set_xticks(x, labels)
    sassy = next((r for r in records if r["algorithm"].startswith("sassy")), None)
    top = max(max(bottom + rest), max(r["value"] for r in jobs)) * 1.15
    if sassy:
        if sassy["value"] <= top:
            ax.axhline(sassy["value"], color="purple", linestyle="--", label=f"sassy-rs 312x23 ({sassy['value']:.1f} s)")
        else:
            ax.text(0.99, 0.97, f"sassy-rs 312x23: {sassy['value']:.1f} s (off the scale)", ha="right", va="top",
                    transform=ax.transAxes, color="purple")
    ax.set_ylim(0, top)
    ax.set_ylabel("seconds (worker stages summed over task threads)")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    plt.xticks(rotation=25, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--replot":  # redraw the PNG of a results JSON: --replot RESULTS.json
        saved = json.loads(Path(sys.argv[2]).read_text())
        plot(saved["records"], Path(sys.argv[2]).with_suffix(".png"),
             f"seqsift end to end on {saved['device']}, {saved['genome_bases'] / 1e9:.2f} Gbp")
        raise SystemExit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "--as-cli":
        os.environ["SEQSIFT_STAGE_TIMES"] = "1"  # before seqsift.runtime.stages is imported (it reads it then)
        from seqsift.cli import exit_now

        exit_now(as_cli(sys.argv[2:]))  # ends as the seqsift command does (cli.console_main)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--genome-dir", type=Path, required=True, help="where the genome is written (local disk)")
    parser.add_argument("--gbp", type=float, default=3.1, help="genome size in Gbp (default 3.1)")
    parser.add_argument("--records", type=int, default=24)
    parser.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--workers", type=int, help="CPU workers (--backend cpu)")
    parser.add_argument("--sassy-fraction", type=float, default=0.1,
                        help="share of the genome sassy-rs searches; its time is scaled to the whole")
    parser.add_argument("--skip-gz", action="store_true", help="leave out the gzip job")
    parser.add_argument("--skip-served", action="store_true", help="leave out the jobs through seqsift serve")
    parser.add_argument("--hamming-10k", action="store_true", help="add 10,000 x 20 nt Hamming k=4 (issue 17 goal 5)")
    parser.add_argument("--bgzf", action="store_true", help="add the edit job from a BGZF copy (issue 17 goal 4)")
    parser.add_argument("--bgzf-only", action="store_true",
                        help="only the kernel alone and the BGZF jobs (into end_to_end_gpu_bgzf.json)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()

    began = time.perf_counter()
    fasta, gz = write_genome(args.genome_dir, int(args.gbp * 1e9), args.records)
    print(f"genome ready in {time.perf_counter() - began:.1f} s: {fasta} ({fasta.stat().st_size / 1e9:.2f} GB), "
          f"{gz} ({gz.stat().st_size / 1e9:.2f} GB)", flush=True)
    codes = read_codes(fasta)
    bases = sum(len(c) for c in codes)
    edit_guides = sample_guides(codes, 312, 23, seed=1)
    hamming_guides = sample_guides(codes, 1000, 20, seed=2)
    many_guides = sample_guides(codes, 10_000, 20, seed=3) if args.hamming_10k else []
    work = args.genome_dir / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    for name, guides in (("edit312.fa", edit_guides), ("hamming1000.fa", hamming_guides),
                         ("hamming10000.fa", many_guides)):
        (work / name).write_text("".join(f">g{i}\n{g}\n" for i, g in enumerate(guides)))
    cache = work / "cache"
    env = dict(os.environ, SEQSIFT_CACHE=str(cache), SEQSIFT_BENCH_STAGES=str(work / "stages.json"))
    common = ["--backend", args.backend, "--no-progress"] + (["--workers", str(args.workers)] if args.workers else [])
    edit_job = ["-k", "3", "--metric", "edit", "-o", str(work / "edit.parquet")] + common
    hamming_job = ["-k", "4", "-o", str(work / "hamming.parquet")] + common
    hamming_job_10k = ["-k", "4", "-o", str(work / "hamming10k.parquet")] + common

    # A fresh install compiles its Numba and CUDA kernels on first use (disk-cached afterwards): do
    # that on a small genome first, so that "cold" means a genome never seen, not a fresh install.
    # As many records as the genome: with 2, the merge of sorted runs (a Numba function until f333e84)
    # was first compiled in the first timed job (its merge stage took 1.4-2.3 s there, 0.4-0.6 s later).
    primer, _ = write_genome(args.genome_dir / "primer", 2_000_000, args.records)
    primer_codes = read_codes(primer)
    for job, count, length, seed in ((edit_job, 312, 23, 1), (hamming_job, 1000, 20, 2)):
        guides_file = work / f"primer-{count}x{length}.fa"
        guides_file.write_text("".join(f">g{i}\n{g}\n" for i, g in enumerate(
            sample_guides(primer_codes, count, length, seed))))
        run_cli(["search", str(primer), str(guides_file), *job], env)

    kernel_edit, edit_algorithm = kernel_alone(codes, edit_guides, "edit", 3, args.backend)
    kernel_hamming, hamming_algorithm, kernel_many = None, None, None
    if not args.bgzf_only:
        kernel_hamming, hamming_algorithm = kernel_alone(codes, hamming_guides, "hamming", 4, args.backend)
        kernel_many = kernel_alone(codes, many_guides, "hamming", 4, args.backend)[0] if many_guides else None
    del codes
    print(f"kernel alone: edit ({edit_algorithm}) {kernel_edit:.2f} s"
          + (f", hamming ({hamming_algorithm}) {kernel_hamming:.2f} s" if kernel_hamming else ""), flush=True)

    def fresh() -> None:
        """No index beside the FASTA, no seqsift cache: a first run."""
        shutil.rmtree(cache, ignore_errors=True)
        for index in args.genome_dir.glob("genome.fa*.fai"):
            index.unlink()
        for index in args.genome_dir.glob("genome.fa*.gzi"):
            index.unlink()
        for extra in args.genome_dir.glob("genome.fa.*cache*"):   # a binary genome cache beside the file
            shutil.rmtree(extra) if extra.is_dir() else extra.unlink()

    size = f"{bases / 1e9:.2f} Gbp, {args.records} records"
    edit_workload = f"312 x 23 nt, edit k=3, both strands, best + CIGAR, Parquet; {size}"
    records = []
    jobs = [("e2e-edit-312x23-cold", fasta, edit_job, "edit312.fa", True, kernel_edit, edit_workload),
            ("e2e-edit-312x23-warm", fasta, edit_job, "edit312.fa", False, kernel_edit, edit_workload),
            ("e2e-hamming-1000x20-warm", fasta, hamming_job, "hamming1000.fa", False, kernel_hamming,
             f"1,000 x 20 nt, Hamming k=4, both strands, best + CIGAR, Parquet; {size}")]
    if many_guides:
        jobs.insert(3, ("e2e-hamming-10000x20-warm", fasta, hamming_job_10k, "hamming10000.fa", False, kernel_many,
                        f"10,000 x 20 nt, Hamming k=4, both strands, best + CIGAR, Parquet; {size}"))
    if not args.skip_gz:
        jobs.append(("e2e-edit-312x23-gz-cold", gz, edit_job, "edit312.fa", True, kernel_edit,
                     f"{edit_workload}; plain gzip FASTA"))
    bgzf_job = None
    if args.bgzf or args.bgzf_only:
        began = time.perf_counter()
        bgz = write_bgzf(fasta)
        print(f"BGZF copy ready in {time.perf_counter() - began:.1f} s: {bgz} ({bgz.stat().st_size / 1e9:.2f} GB)",
              flush=True)
        bgzf_job = ("e2e-edit-312x23-bgzf-cold", bgz, edit_job, "edit312.fa", True, kernel_edit,
                    f"{edit_workload}; BGZF FASTA")
        jobs = [bgzf_job] if args.bgzf_only else jobs + [bgzf_job]
    # The genome files were just written: their dirty pages go to disk now, not in the kernel's
    # writeback during the first job (which then took 1.8-1.9 s longer, in its merge stage, than the
    # same job run later). They stay in the page cache, as a user's genome does.
    os.sync()
    for name, reference, job, guides_file, cold, kernel_s, workload in jobs:
        if cold:
            fresh()
        result = run_cli(["search", str(reference), str(work / guides_file), *job], env)
        extra = {"algorithm_used": edit_algorithm if "edit" in name else hamming_algorithm}
        if name.endswith("gz-cold"):
            extra["decompress"] = fastest_decompression(gz)
        if name.endswith("bgzf-cold"):
            extra["decompress"] = fastest_bgzf_decompression(reference)
        records.append(record(name, workload, result, kernel_s, **extra))
        print(f"{name}: {result['wall_s']:.2f} s; " + ", ".join(f"{s} {result['stages'][s]:.2f}" for s in STAGES),
              flush=True)
    if not args.skip_served:  # every job again, in the same order (a cold one from fresh())
        records += served_jobs(args, work, env, fresh, jobs, size)
    if args.bgzf_only:
        return write_results(args, records, bases, size, "_bgzf")
    os.environ["SEQSIFT_CACHE"] = str(cache)
    api = api_second_call(fasta, edit_guides, args.backend, args.workers)
    records.append(record("e2e-api-second-call", f"{edit_workload}; Python API, DataFrame, one client",
                          api, kernel_edit, algorithm_used=edit_algorithm))
    print(f"e2e-api-second-call: {api['wall_s']:.2f} s", flush=True)
    sassy = sassy_job(fasta, edit_guides, args.sassy_fraction, bases)
    if sassy is not None:
        records.append(dict(algorithm="sassy-rs-312x23", workload=f"312 x 23 nt, k=3, both strands; {size} "
                            f"(searched {sassy['searched_bases']:,} bp, scaled)", quantity="wall_s",
                            value=sassy["wall_s"], roof_fraction=None, paper_value=None, time_s=sassy["wall_s"],
                            **{k: v for k, v in sassy.items() if k != "wall_s"}))
        print(f"sassy-rs: {sassy['measured_s']:.2f} s on {sassy['searched_bases']:,} bp -> "
              f"{sassy['wall_s']:.2f} s scaled", flush=True)
    write_results(args, records, bases, size)


def write_results(args, records: list[dict], bases: int, size: str, suffix: str = "") -> None:
    """The results JSON (DESIGN.md's shape) and the stacked-bar PNG, ``end_to_end_<gpu|cpu><suffix>``."""
    device = "CPU"
    if args.backend == "cuda":
        import cupy

        device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    from seqsift.bench import source_commit

    result = {"device": device, "cpu_cores": os.cpu_count(), "date": datetime.date.today().isoformat(),
              "commit": source_commit(), "genome_bases": bases, "records": records}
    args.out.mkdir(parents=True, exist_ok=True)
    stem = ("end_to_end_gpu" if args.backend == "cuda" else "end_to_end_cpu") + suffix
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(records, args.out / f"{stem}.png", f"seqsift end to end on {device}, {size}")
    print(f"wrote {args.out / (stem + '.json')} and .png")


if __name__ == "__main__":
    main()
