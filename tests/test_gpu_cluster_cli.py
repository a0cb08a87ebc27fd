"""The local CUDA cluster as users start it: the ``seqsift`` console script with ``--gpus`` (one worker
process per GPU, dask-cuda's LocalCUDACluster) and a user's script that starts its own LocalCUDACluster
and hands seqsift the client. Each must write what the one-GPU, in-process run writes (the path every
other GPU test checks against the oracles), on a reference of many small soft-masked records with N gaps,
cut into enough tasks that every GPU gets some.

Each run is a fresh process with an empty NUMBA_CACHE_DIR and an empty seqsift cache: the workers' first
compiles and the genome cache's first build happen inside the job, where worker set-up bugs hide.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import pytest

from console import seqsift_command

pytestmark = pytest.mark.gpu

CHUNK = "60000"   # reference bases per task: about 25 tasks for the reference below


def _gpu_indices() -> str:
    from seqsift.cluster import count_gpus

    return ",".join(str(g) for g in range(max(1, count_gpus())))


def _fresh_env(tmp_path, name: str, **extra) -> dict:
    folder = tmp_path / name
    folder.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "CUDA_VISIBLE_DEVICES"}
    env.update(NUMBA_CACHE_DIR=str(folder / "numba"), SEQSIFT_CACHE=str(folder / "cache"), **extra)
    return env


COMPLEMENT = str.maketrans("ACGTacgt", "TGCAtgca")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A reference of 400 records (40 bp to 12 kbp, soft-masked runs, N gaps, a few IUPAC letters) with 16
    guides (each before an AGG) planted in it 6 more times each, changed by 0-3 substitutions or an
    indel, on either strand, some at a record's first or last base; and reads and targets for the screen."""
    folder = tmp_path_factory.mktemp("cluster_cli")
    rng = random.Random(2611)
    records = []
    for _ in range(400):
        bases = [rng.choice("ACGT") for _ in range(rng.choice((40, 300, 2_000, 6_000, 12_000)))]
        for _ in range(len(bases) // 1_500):   # soft-masked runs and N gaps
            start = rng.randrange(len(bases))
            run = bases[start:start + rng.randrange(50, 600)]
            bases[start:start + len(run)] = ["N"] * len(run) if rng.random() < 0.2 else [b.lower() for b in run]
        if len(bases) > 100:
            bases[rng.randrange(len(bases))] = rng.choice("RYKMSWN")
        records.append(bases)
    guides = ["".join(rng.choice("ACGT") for _ in range(20)) for _ in range(16)]
    for guide in guides:
        for copy in range(7):
            site = list(guide)
            for _ in range(0 if copy == 0 else rng.randrange(4)):
                site[rng.randrange(20)] = rng.choice("ACGT")
            if copy == 6:   # an indel: found by the edit metric and the bulge search
                if rng.random() < 0.5:
                    del site[rng.randrange(1, 19)]
                else:
                    site.insert(rng.randrange(1, 19), "A")
            text = "".join(site) + "AGG"
            if copy % 2:
                text = text.translate(COMPLEMENT)[::-1]
            bases = rng.choice([r for r in records if len(r) >= 300])
            where = (0, len(bases) - len(text), rng.randrange(len(bases) - len(text)))[copy % 3]
            bases[where:where + len(text)] = list(text.lower() if copy == 4 else text)
    reference = folder / "ref.fa"
    reference.write_text("".join(f">contig{i} sample description {i}\n{''.join(b)}\n" for i, b in enumerate(records)))
    (folder / "guides.txt").write_text("".join(f"{g}\n" for g in guides))
    long_records = ["".join(r).upper() for r in records if len(r) >= 6_000]
    targets = [rng.choice(long_records)[:2_000].replace("N", "A") for _ in range(12)]
    reads = []
    for index in range(150):
        source = targets[index % len(targets)]
        start = rng.randrange(len(source) - 150)
        read = list(source[start:start + 150])
        for _ in range(3):
            read[rng.randrange(150)] = rng.choice("ACGT")
        reads.append("".join(read) if index % 3 else "".join(rng.choice("ACGT") for _ in range(150)))
    (folder / "reads.fa").write_text("".join(f">read{i}\n{r}\n" for i, r in enumerate(reads)))
    (folder / "targets.fa").write_text("".join(f">target{i}\n{t}\n" for i, t in enumerate(targets)))
    return folder


JOBS = {
    "search-hamming": ["search", "{ref}", "{guides}", "-k", "3", "--chunk-size", CHUNK],
    "search-edit": ["search", "{ref}", "{guides}", "-k", "3", "--metric", "edit", "--chunk-size", CHUNK],
    "search-edit-ends": ["search", "{ref}", "{guides}", "-k", "2", "--metric", "edit", "--mode", "ends",
                         "--chunk-size", CHUNK],
    "crispr": ["crispr", "{ref}", "{guides}", "--pam", "NRG", "-k", "3", "--chunk-size", CHUNK],
    "crispr-bulges": ["crispr", "{ref}", "{guides}", "-k", "3", "--dna-bulge", "1", "--rna-bulge", "1",
                      "--chunk-size", CHUNK],
    "screen": ["screen", "{reads}", "{targets}", "--all-vs-all", "-t", "200", "--batch-pairs", "300"],
    "screen-affine": ["screen", "{reads}", "{targets}", "--all-vs-all", "-t", "150", "--gap-open", "5",
                      "--gap-extend", "2", "--mismatch", "3", "--batch-pairs", "300"],
}


def _argv(job: str, folder, output) -> list[str]:
    names = {"ref": folder / "ref.fa", "guides": folder / "guides.txt", "reads": folder / "reads.fa",
             "targets": folder / "targets.fa"}
    return [part.format(**names) for part in JOBS[job]] + ["-o", str(output), "--backend", "cuda", "--no-progress"]


def _run(argv, env) -> None:
    result = subprocess.run(seqsift_command(*argv), capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]


def _rows(path) -> tuple[str, list[str]]:
    header, *rows = path.read_text().splitlines()
    return header, sorted(rows)


@pytest.fixture(scope="module")
def in_process(inputs, tmp_path_factory):
    """Each job's output from the one-GPU run in the command's own process (CUDA_VISIBLE_DEVICES=0)."""
    folder = tmp_path_factory.mktemp("in_process")
    outputs = {}
    for job in JOBS:
        output = folder / f"{job}.tsv"
        _run(_argv(job, inputs, output), _fresh_env(folder, job, CUDA_VISIBLE_DEVICES="0"))
        outputs[job] = _rows(output)
        assert outputs[job][1], f"{job}: no rows; the comparison below would prove nothing"
    return outputs


@pytest.mark.parametrize("job", list(JOBS))
def test_the_console_script_on_every_gpu_writes_what_one_gpu_writes(inputs, in_process, tmp_path, job):
    output = tmp_path / f"{job}.tsv"
    _run(_argv(job, inputs, output) + ["--gpus", _gpu_indices()], _fresh_env(tmp_path, "run"))
    assert _rows(output) == in_process[job]


USER_SCRIPT = """
    import sys

    from dask.distributed import Client
    from dask_cuda import LocalCUDACluster

    import seqsift

    if __name__ == "__main__":
        folder, out = sys.argv[1], sys.argv[2]
        with LocalCUDACluster(threads_per_worker=2) as cluster, Client(cluster) as client:
            seqsift.search(f"{folder}/ref.fa", f"{folder}/guides.txt", 3, metric="edit", chunk_size=60000,
                           output=f"{out}/search-edit.tsv", backend="cuda", client=client)
            seqsift.crispr(f"{folder}/ref.fa", f"{folder}/guides.txt", pam="NRG", mismatches=3,
                           chunk_size=60000, output=f"{out}/crispr.tsv", backend="cuda", client=client)
            seqsift.screen(f"{folder}/reads.fa", f"{folder}/targets.fa", threshold=200, all_vs_all=True,
                           batch_pairs=300, output=f"{out}/screen.tsv", backend="cuda", client=client)
            print("workers", len(client.scheduler_info(n_workers=-1)["workers"]))
"""


def test_a_users_script_with_its_own_local_cuda_cluster_gets_the_same_rows(inputs, in_process, tmp_path):
    script = tmp_path / "user_job.py"
    script.write_text(textwrap.dedent(USER_SCRIPT))
    result = subprocess.run([sys.executable, str(script), str(inputs), str(tmp_path)], capture_output=True,
                            text=True, env=_fresh_env(tmp_path, "script"), timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["workers", str(len(_gpu_indices().split(",")))]
    for job in ("search-edit", "crispr", "screen"):
        assert _rows(tmp_path / f"{job}.tsv") == in_process[job], job


def test_a_gpu_index_the_machine_lacks_is_a_one_line_error(inputs, tmp_path):
    missing = len(_gpu_indices().split(","))
    result = subprocess.run(seqsift_command(*_argv("search-hamming", inputs, tmp_path / "hits.tsv"),
                                            "--gpus", f"0,{missing}"),
                            capture_output=True, text=True, env=_fresh_env(tmp_path, "run"), timeout=300)
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("seqsift: error: ") and str(missing) in lines[0], result.stderr
    assert not (tmp_path / "hits.tsv").exists()
