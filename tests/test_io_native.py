"""seqsift.io.native: fasta_scan.c, built on first use, against the NumPy scan it stands in for.

tests/test_io_scan.py runs the whole reader with each (its ``sequence_path`` fixture); here one block
of FASTA-like bytes at a time is scanned both ways and every field compared, and the library's
building is checked: once, into a folder only this user may write, and never where a compiler or a
private folder is missing (the NumPy scan reads then).
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from seqsift.io import fasta_scan, native
from test_io_scan import genome_text, scan


def fasta_like_bytes(rng: random.Random, size: int) -> bytes:
    """Bytes drawn mostly from FASTA's own (bases, '>', spaces, tabs, '\\r', '\\n'), with some that no
    FASTA should hold (bytes >= 0x80, other control bytes), in lines of every width and names past
    the 64 bytes that are hashed."""
    pieces = []
    while sum(map(len, pieces)) < size:
        kind = rng.random()
        if kind < 0.25:
            blank = rng.choice(["", " ", "  ", "\t", "\x1c"])
            name = "".join(rng.choice("ACGTxyz_.|0123") for _ in range(rng.choice([0, 1, 5, 20, 64, 65, 90])))
            rest = rng.choice(["", " d", "\tmore words", " \x0b", "\r", " \xe9"])
            pieces.append(">" + blank + name + rest)
        else:
            pieces.append("".join(rng.choice("ACGTNacgtn") for _ in range(rng.choice([0, 1, 59, 60, 61, 200]))))
        if rng.random() < 0.1:
            pieces[-1] += rng.choice(["\x80", "\xff", ">", "\r", "\r\r", "\x00"])
        pieces.append(rng.choice(["\n", "\n", "\n", "\r\n", "\n\n"]))
    return "".join(pieces).encode("latin-1")[:size]


@pytest.mark.parametrize("seed", range(200))
def test_compiled_scan_of_a_block_is_the_numpy_scans(seed):
    """fasta_scan.c against the NumPy scan (run by runs and through masks) on one block of FASTA-like
    bytes: the runs, the header text, the names and their hashes (or None where the NumPy scan leaves
    them to the one decode), the bases, and the flags, every field equal."""
    functions = native.library()
    if functions is None:
        pytest.skip("fasta_scan.c could not be compiled here (no C compiler?)")
    rng = random.Random(seed)
    cut = fasta_like_bytes(rng, rng.choice([0, 1, 2, 17, 300, 5000]))
    lines = "".join(rng.choice(["ACGT" * 15 + "\n", ">n d\n", "ACG\n"]) for _ in range(rng.randint(1, 9))).encode()
    for data, continues_line in ((cut, False), (cut, True), (lines, False), (lines, True)):   # ends cut, ends in '\n'
        block = fasta_scan._Block(np.frombuffer(data, np.uint8), continues_line)
        compiled = fasta_scan._scan_block_compiled(block, functions)
        for few_runs in (10 ** 9, -1):
            fasta_scan._FEW_RUNS, saved = few_runs, fasta_scan._FEW_RUNS
            try:
                expected = fasta_scan._scan_block_numpy(block)
            finally:
                fasta_scan._FEW_RUNS = saved
            for field in ("length", "carriage", "newline", "header", "count", "sequence"):
                got, want = getattr(compiled, field), getattr(expected, field)
                assert got.dtype == want.dtype and np.array_equal(got, want), (field, data)
            for field in ("header_text", "before_first_header", "non_ascii", "continues_line"):
                assert getattr(compiled, field) == getattr(expected, field), (field, data)
            if expected.names is None:
                assert compiled.names is None and compiled.name_hashes is None, data
                continue
            for got, want in zip(compiled.names, expected.names):
                assert got.text == want.text and np.array_equal(got.ends, want.ends), data
            assert (compiled.names[0] is compiled.names[1]) == (expected.names[0] is expected.names[1]), data
            if expected.name_hashes is None:
                assert compiled.name_hashes is None, data
            else:
                assert np.array_equal(compiled.name_hashes, expected.name_hashes), data


@pytest.fixture
def fresh_native(monkeypatch, tmp_path):
    """seqsift.io.native as a new process finds it: nothing loaded yet, an empty cache directory."""
    monkeypatch.setattr(native, "_loaded", [])
    monkeypatch.setenv("SEQSIFT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SEQSIFT_NATIVE", raising=False)
    return tmp_path / "cache" / "native"


def test_the_compiled_scan_is_built_once_into_a_private_folder(fresh_native):
    if native.library() is None:
        pytest.skip("fasta_scan.c could not be compiled here (no C compiler?)")
    built = list(fresh_native.iterdir())
    assert len(built) == 1 and built[0].suffix == ".so", built
    assert fresh_native.stat().st_mode & 0o777 == 0o700
    assert not built[0].stat().st_mode & 0o022


def test_a_cache_folder_others_may_write_gets_no_library_loaded_from_it(fresh_native):
    """The library is code this process runs: from a folder another user could write into, it is not
    loaded (nor built), and the NumPy scan reads the file, to the same index."""
    fresh_native.mkdir(parents=True)
    fresh_native.chmod(0o777)
    assert native.library() is None
    assert list(fresh_native.iterdir()) == []


@pytest.mark.parametrize("compiler", ["false", "/nonexistent/cc", "cc 'unclosed"])
def test_without_a_working_compiler_the_numpy_scan_reads(fresh_native, monkeypatch, tmp_path, compiler):
    monkeypatch.setenv("CC", compiler)
    assert native.library() is None
    text, records = genome_text(3)
    path = tmp_path / "g.fa"
    path.write_text(text)
    layout, bases = scan(path, 1000)
    assert list(layout.names) == list(records)
    assert bases.decode() == "".join(records.values())


def test_seqsift_native_0_turns_the_compiled_scan_off(fresh_native, monkeypatch):
    monkeypatch.setenv("SEQSIFT_NATIVE", "0")
    assert native.library() is None
    assert not fresh_native.exists()


@pytest.mark.parametrize("seed", range(60))
def test_compiled_layout_of_records_is_the_numpy_layouts(seed):
    """fasta_scan.c's lay_out_records against fasta_scan._records_of_runs on the runs of many records
    (regular and not: lines of several widths, longer last lines, blank lines inside and after a
    record, records without bases, lines before the first header), as a whole and in parts that start
    at a header: every column and the first bad line equal."""
    functions = native.library()
    if functions is None:
        pytest.skip("fasta_scan.c could not be compiled here (no C compiler?)")
    rng = random.Random(seed)
    text = rng.choice(["", "\n", "ACGT\n"])
    for r in range(rng.randint(1, 300)):
        width = rng.choice([1, 3, 60])
        lines = [width] * rng.randint(0, 4) + rng.choice([[], [rng.randint(1, width)], [width + 1], [0], [0, 0]])
        if rng.random() < 0.1 and lines:
            lines.insert(rng.randrange(len(lines)), rng.choice([0, width - 1, width + 2]))
        text += f">r{r}\n" + "".join("A" * n + rng.choice(["\n", "\n", "\r\n"][:2 + (seed % 2)]) for n in lines)
    lines_of = fasta_scan._scan_block_numpy(fasta_scan._Block(np.frombuffer(text.encode(), np.uint8), False))
    runs = fasta_scan._join_lines([lines_of])
    heads = np.flatnonzero(runs.header)
    cuts = sorted({0, *rng.sample(range(len(heads)), min(3, len(heads)))})
    first_runs = [0] + [int(heads[c]) for c in cuts[1:]]
    for k, (first_run, stop_run) in enumerate(zip(first_runs, first_runs[1:] + [len(runs.length)])):
        lines_before = int(runs.count[:first_run].sum())
        bytes_before = int(runs.bytes[:first_run].sum())
        expected = fasta_scan._records_of_runs(runs, first_run, stop_run, lines_before, bytes_before)
        records = len(expected.lengths)
        columns = [np.full(records, -7, np.int64) for _ in range(5)]
        first_bad = np.full(2, -1, np.int64)
        written = functions.lay_out_records(
            *(a.ctypes.data for a in (runs.length, runs.carriage, runs.newline, runs.header, runs.count)),
            first_run, stop_run, lines_before, bytes_before, *(c.ctypes.data for c in columns), first_bad.ctypes.data)
        assert written == records
        for name, got in zip(fasta_scan._PartLayout._fields, columns):
            assert np.array_equal(got, getattr(expected, name)), (name, k, text)
        assert (None if first_bad[0] < 0 else tuple(first_bad.tolist())) == expected.first_bad, (k, text)


def test_a_library_that_others_may_write_or_a_link_is_not_loaded(fresh_native):
    """The library file itself is checked where it is opened: group-writable, or a link in its
    place (to a library that would load), and the NumPy scan reads instead."""
    if native.library() is None:
        pytest.skip("fasta_scan.c could not be compiled here (no C compiler?)")
    built = next(fresh_native.iterdir())
    built.chmod(0o775)
    native._loaded.clear()
    assert native.library() is None
    built.chmod(0o755)
    native._loaded.clear()
    assert native.library() is not None
    moved = built.with_name("elsewhere.so")
    built.rename(moved)
    built.symlink_to(moved)
    native._loaded.clear()
    assert native.library() is None


def test_fasta_scan_c_compiles_without_a_warning(tmp_path):
    """The C source stays clean under the compiler's common warnings (``-Wall -Wextra``, as errors)."""
    import shutil
    import subprocess

    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) here")
    done = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o",
                           str(tmp_path / "scan.so"), str(native.SOURCE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
