"""``--algorithm auto`` and ``seqsift bench``: the choice follows measurements, never the hits."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import seqsift
from seqsift import kernels
from seqsift.bench import QUICK_GRID, random_patterns, random_text, run_bench
from seqsift.kernels.planner import _load, user_table_path
from test_engine import adversarial_genome, engine_frame, write_fasta


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQSIFT_CACHE", str(tmp_path / "cache"))
    _load.cache_clear()
    yield tmp_path / "cache"
    _load.cache_clear()


def write_table(backend, rows):
    path = user_table_path(backend)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"device": "test", "measurements": rows}))


def row(metric, m, k, patterns, algorithm, rate):
    return dict(backend="cpu", metric=metric, m=m, k=k, patterns=patterns, algorithm=algorithm,
                pattern_positions_per_s=rate)


def test_auto_picks_the_fastest_measured_at_the_nearest_shape(own_cache):
    write_table("cpu", [row("hamming", 20, 3, 1, "hamming-scan", 5e9), row("hamming", 20, 3, 1, "hamming-pigeonhole", 1e9),
                        row("hamming", 20, 3, 1000, "hamming-scan", 1e9),
                        row("hamming", 20, 3, 1000, "hamming-pigeonhole", 9e9)])
    assert kernels.choose_algorithm("hamming", "cpu", m_max=20, k=3, patterns=1)[0] == "hamming-scan"
    assert kernels.choose_algorithm("hamming", "cpu", m_max=22, k=3, patterns=800)[0] == "hamming-pigeonhole"
    algorithm, reason = kernels.choose_algorithm("hamming", "cpu", m_max=20, k=3, patterns=2000)
    assert algorithm == "hamming-pigeonhole" and "fastest measured" in reason


def test_auto_without_any_table_uses_the_fixed_default(own_cache, monkeypatch):
    monkeypatch.setattr("seqsift.kernels.planner.measurements", lambda backend: ((), "no table"))
    assert kernels.choose_algorithm("edit", "cpu")[0] == kernels.DEFAULT_ALGORITHM[("edit", "cpu")]


def test_explicit_algorithm_errors_are_one_line():
    with pytest.raises(ValueError, match="unknown algorithm"):
        kernels.choose_algorithm("edit", "cpu", "edit-magic")
    with pytest.raises(ValueError, match="for --metric hamming"):
        kernels.choose_algorithm("edit", "cpu", "hamming-scan")


@pytest.mark.parametrize("metric", kernels.METRICS)
@pytest.mark.parametrize("m,k,count", [(1, 0, 3), (12, 2, 1), (20, 4, 40), (33, 3, 5), (70, 6, 3)])
def test_auto_gives_the_hits_of_every_explicit_algorithm(metric, m, k, count):
    rng = np.random.default_rng(m * 100 + k * 10 + count)
    patterns = random_patterns(rng, m, count)
    batch = patterns.oriented(range(count), (0, 1))
    text = random_text(rng, 3_000, patterns, k)
    auto, _ = kernels.choose_algorithm(metric, "cpu", m_max=m, k=k, patterns=count)
    expected = kernels.find_ends(auto, "cpu", text, batch, k, 0, len(text)).sorted()
    assert len(expected) > 0
    for name, algorithm in kernels.ALGORITHMS.items():
        if algorithm.metric == metric and algorithm.admits("cpu", m, k):
            got = kernels.find_ends(name, "cpu", text, batch, k, 0, len(text)).sorted()
            for column in ("row", "end", "distance"):
                np.testing.assert_array_equal(getattr(got, column), getattr(expected, column), err_msg=name)


def test_search_with_auto_equals_search_with_each_algorithm(tmp_path, client):
    records, patterns = adversarial_genome(6)
    reference = write_fasta(tmp_path / "ref.fa", records)
    auto = engine_frame(seqsift.search(reference, patterns, 2, client=client))
    for name in ("hamming-scan", "hamming-pigeonhole", "hamming-packed"):
        explicit = engine_frame(seqsift.search(reference, patterns, 2, client=client, algorithm=name))
        assert explicit.equals(auto), name


def test_bench_quick_writes_only_its_report(own_cache, tmp_path):
    """A smoke test's rough numbers must not replace the table auto uses, the user's or the shipped one."""
    shipped = Path(seqsift.__file__).parent / "data" / "algorithm_table-cpu.json"
    shipped_before = shipped.read_bytes()
    write_table("cpu", [row("edit", 12, 2, 1, "edit-myers", 1e9)])
    users_before = user_table_path("cpu").read_bytes()
    result = run_bench("cpu", tmp_path / "bench", quick=True, log=lambda line: None)
    assert {p.name for p in (tmp_path / "bench").iterdir()} == {"bench.json", "bench.md", "bench.png"}
    assert all(r["value"] > 0 and r["time_s"] > 0 for r in result["records"])
    assert "| `edit-myers` |" in (tmp_path / "bench" / "bench.md").read_text()
    assert user_table_path("cpu").read_bytes() == users_before
    assert shipped.read_bytes() == shipped_before


def test_bench_full_run_saves_the_table_auto_uses(own_cache, tmp_path, monkeypatch):
    """A full run (its grid shrunk to the quick one here, for time) saves the table, and auto reads it."""
    monkeypatch.setattr("seqsift.bench.GRID", QUICK_GRID)
    monkeypatch.setattr("seqsift.bench.WORK", {"cpu": 2e6, "cuda": 1e9})
    monkeypatch.setattr("seqsift.bench.SW_GRID", [(32, 256)])
    monkeypatch.setattr("seqsift.bench.SW_CELLS", {"cpu": 3e5, "cuda": 1e9})
    run_bench("cpu", tmp_path / "bench", log=lambda line: None)
    saved = json.loads(user_table_path("cpu").read_text())["measurements"]
    shapes = {(r["metric"], r["m"], r["k"], r["patterns"]) for r in saved if r["metric"] != "sw"}
    assert shapes == set(QUICK_GRID)
    # the screen job's kernels, per length bucket and gap model (planner.plan_sw)
    assert {(r["m"], r["n"], r["gaps"]) for r in saved if r["metric"] == "sw"} == {(32, 256, "linear"),
                                                                                   (32, 256, "affine")}
    _load.cache_clear()
    assert "algorithm_table-cpu.json" in kernels.choose_algorithm("edit", "cpu", m_max=12, k=2)[1]


def test_verbose_reason_names_the_row_used_and_why_it_is_nearest(own_cache):
    write_table("cpu", [row("edit", 16, 1, 64, "edit-myers", 3e9), row("edit", 16, 1, 64, "edit-wm-scan", 1e9),
                        row("edit", 100, 4, 1024, "edit-myers", 2e9), row("edit", 16, 0, 1, "edit-myers", 1e9)])
    algorithm, reason = kernels.choose_algorithm("edit", "cpu", m_max=20, k=2, patterns=200)
    assert algorithm == "edit-myers"
    assert "measured at m=16, k=1, 64 patterns" in reason
    assert "this job (m=20, k=2, 200 patterns)" in reason
    terms = [abs(math.log2(16 / 20)), abs(1 - 2) / 2, abs(math.log10(64 / 200))]
    assert " + ".join(f"{t:.2f}" for t in terms) + f" = {sum(terms):.2f}" in reason
    assert "smallest of 3 measured shapes" in reason
    _, exact = kernels.choose_algorithm("edit", "cpu", m_max=16, k=1, patterns=64)
    assert "this job's own shape" in exact
