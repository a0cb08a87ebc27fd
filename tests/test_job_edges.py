"""Where a job meets the user's files and keys, one test per way it went wrong before (issue 28, section 3).

Each runs the installed console script in a fresh process where the user
would, or the Python API where the case is the API's.
"""
from __future__ import annotations

import os
import random
import stat
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from console import one_line_error, run_seqsift, seqsift_command
from test_engine import write_fasta

OTHER_UID = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder of another user")


@pytest.fixture
def job(tmp_path):
    """A reference with guides that have sites, as files."""
    rng = random.Random(3)
    genome = "".join(rng.choice("ACGT") for _ in range(20_000))
    reference = write_fasta(tmp_path / "ref.fa", [("chr1", genome[:12_000]), ("chr2", genome[12_000:])])
    guides = tmp_path / "guides.txt"
    starts = [genome.find("GG", s) - 21 for s in range(500, 19_000, 2_500)]
    guides.write_text("".join(f"{genome[s:s + 20]}\n" for s in starts if s > 0))
    return reference, guides


# -- 2. the chunk cache never empties a window a task holds ------------------------------------

def test_a_cache_smaller_than_one_window_still_hands_the_window_whole(tmp_path, monkeypatch):
    from seqsift.io.reference import open_reference
    from seqsift.partitioning import plan_chunks
    from seqsift.runtime import windows

    text = "".join(random.Random(1).choice("ACGT") for _ in range(6_000))
    reference = open_reference(write_fasta(tmp_path / "ref.fa", [("r", text)]))
    monkeypatch.setenv("SEQSIFT_CHUNK_CACHE_BYTES", "10")  # smaller than any window
    chunks = [g.chunks[0] for g in plan_chunks(reference.lengths, 2_000, 10, gap=1)]
    held = windows.read_chunk(reference, chunks[0], need_raw=True)
    for chunk in chunks[1:]:  # each insert evicts the windows before it
        windows.read_chunk(reference, chunk, need_raw=True)
    assert held.raw is not None and held.codes is not None
    assert held.raw.tobytes() == text[chunks[0].read_start:chunks[0].owned_end].encode()


def test_one_threads_insert_never_empties_the_window_another_reads(tmp_path, monkeypatch):
    from seqsift.io.reference import open_reference
    from seqsift.partitioning import plan_chunks
    from seqsift.runtime import windows

    text = "".join(random.Random(2).choice("ACGT") for _ in range(40_000))
    reference = open_reference(write_fasta(tmp_path / "ref.fa", [("r", text)]))
    monkeypatch.setenv("SEQSIFT_CHUNK_CACHE_BYTES", "5000")  # about one window: every insert evicts
    chunks = [g.chunks[0] for g in plan_chunks(reference.lengths, 2_000, 10, gap=1)]
    failures = []

    def read_all(order):
        for chunk in order:
            window = windows.read_chunk(reference, chunk, need_raw=True)
            for _ in range(3):  # the other thread inserts meanwhile
                expected = text[chunk.read_start:chunk.owned_end].encode()
                if window.raw is None or window.codes is None or window.raw.tobytes() != expected:
                    failures.append(chunk)

    threads = [threading.Thread(target=read_all, args=(chunks,)), threading.Thread(target=read_all,
                                                                                  args=(chunks[::-1],))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


# -- 3. crispr and screen: the output lock, --wait-for-lock, --summary checked like -o -----------

def test_crispr_on_a_locked_output_stops_with_a_hint_it_accepts_and_leaves_no_part_file(job, tmp_path):
    from seqsift.runtime.lock import OutputLock

    reference, guides = job
    out = tmp_path / "sites.tsv"
    holder = OutputLock(os.path.realpath(out))
    try:
        result = run_seqsift("crispr", reference, guides, "-k", "3", "--backend", "cpu", "-o", out)
    finally:
        holder.release()
    line = one_line_error(result, "another seqsift job is writing this output", "--wait-for-lock")
    assert "--wait-for-lock" in line
    assert [p.name for p in tmp_path.iterdir() if ".part" in p.name] == []
    waited = run_seqsift("crispr", reference, guides, "-k", "3", "--backend", "cpu", "-o", out, "--wait-for-lock",
                         "--no-progress")
    assert waited.returncode == 0, waited.stderr


@pytest.mark.parametrize("problem", ["is the reference", "directory", "locked", "a folder"])
def test_the_summary_is_checked_like_the_output_before_the_job(job, tmp_path, problem):
    from seqsift.runtime.lock import OutputLock

    reference, guides = job
    summary = {"is the reference": reference, "directory": tmp_path / "no" / "summary.tsv",
               "locked": tmp_path / "summary.tsv", "a folder": tmp_path / "empty"}[problem]
    if problem == "a folder":
        summary.mkdir()
    holder = OutputLock(os.path.realpath(summary)) if problem == "locked" else None
    try:
        result = run_seqsift("crispr", reference, guides, "-k", "3", "--backend", "cpu", "-o", tmp_path / "s.tsv",
                             "--summary", summary)
    finally:
        if holder is not None:
            holder.release()
    expected = {"is the reference": "this is the reference", "directory": "does not exist",
                "locked": "another seqsift job is writing this output", "a folder": "a folder; this output is a file"}
    one_line_error(result, expected[problem])
    assert not (tmp_path / "s.tsv").exists()
    assert [p.name for p in tmp_path.rglob("*.part")] == []


def test_screen_takes_the_output_lock_and_waits_for_it_when_asked(tmp_path):
    from seqsift.runtime.lock import OutputLock

    queries = tmp_path / "q.fa"
    queries.write_text(">a\nACGTACGTAAGG\n>b\nTTGGCCAATTGG\n")
    out = tmp_path / "scores.tsv"
    holder = OutputLock(os.path.realpath(out))
    try:
        result = run_seqsift("screen", queries, queries, "--backend", "cpu", "-o", out)
    finally:
        holder.release()
    one_line_error(result, "another seqsift job is writing this output")
    done = run_seqsift("screen", queries, queries, "--backend", "cpu", "-o", out, "--wait-for-lock", "--no-progress")
    assert done.returncode == 0 and out.read_text().count("\n") == 3


# -- 4. every file the job writes follows the umask and writes through a symbolic link -----------

@pytest.mark.parametrize("which", ["summary", "cas-offinder", "gzip"])
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664)])
def test_side_files_follow_the_umask_and_write_through_a_link(job, tmp_path, which, umask, mode):
    reference, guides = job
    real = tmp_path / "real" / "file.txt"
    real.parent.mkdir()
    link = tmp_path / ("link.tsv.gz" if which == "gzip" else "link.txt")
    real_target = real.with_suffix(".tsv.gz") if which == "gzip" else real
    link.symlink_to(real_target)
    args = ["crispr", reference, guides, "-k", "3", "--backend", "cpu", "--no-progress"]
    if which == "summary":
        args += ["-o", tmp_path / "sites.tsv", "--summary", link]
    elif which == "cas-offinder":
        args += ["--format", "cas-offinder", "-o", link]
    else:
        args += ["-o", link]
    result = run_seqsift(*args, umask=umask)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and real_target.is_file()
    assert stat.S_IMODE(real_target.stat().st_mode) == mode
    if which == "gzip":
        import gzip

        assert gzip.decompress(real_target.read_bytes()).decode().startswith("guide\trecord\tstart")


# -- 5. Ctrl-C stops a crispr job whose task is stuck in a kernel --------------------------------

def test_ctrl_c_ends_a_crispr_job_while_a_kernel_still_runs(job):
    """The CPU crispr job's tasks run in this process's threads; a task in a long Numba kernel
    (here: one that never returns) must not keep the interrupted job from ending."""
    reference, guides = job
    script = textwrap.dedent(f"""
        import os, signal, threading
        import seqsift
        import seqsift.kernels.crispr as family

        started = threading.Event()

        def stuck(*args, **kwargs):  # a kernel that never returns
            started.set()
            threading.Event().wait()

        family.pam_first_cpu = stuck
        family.vectorized_cpu = stuck

        def press_ctrl_c():
            started.wait()
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=press_ctrl_c, daemon=True).start()
        try:
            seqsift.crispr({str(reference)!r}, {str(guides)!r}, "NGG", 3, backend="cpu")
        except KeyboardInterrupt:
            print("interrupted")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == "interrupted", result.stderr


# -- 6. patterns from standard input --------------------------------------------------------------

def test_patterns_dash_are_read_from_standard_input(job, tmp_path):
    reference, guides = job
    from_file = run_seqsift("search", reference, guides, "-k", "1", "--backend", "cpu", "--no-progress")
    from_stdin = subprocess.run(seqsift_command("search", reference, "-", "-k", "1", "--backend", "cpu",
                                                "--no-progress"),
                                input=guides.read_text(), capture_output=True, text=True, timeout=300)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout and from_stdin.stdout.count("\n") > 5


# -- 7. screen | head ends as search | head does ----------------------------------------------------

def test_screen_into_a_closed_pipe_exits_141_quietly(tmp_path):
    rng = random.Random(7)
    queries = tmp_path / "q.fa"
    queries.write_text("".join(f">q{i}\n{''.join(rng.choice('ACGT') for _ in range(40))}\n" for i in range(800)))
    screen = subprocess.Popen(seqsift_command("screen", queries, queries, "--all-vs-all", "--backend", "cpu",
                                              "--no-progress"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert screen.stdout.readline().startswith(b"query\ttarget")
    screen.stdout.close()  # like `| head -1`
    assert screen.wait(timeout=300) == 141
    assert screen.stderr.read() == b""


# -- 8. protein is not searched as DNA ---------------------------------------------------------------

PROTEIN = "MKVLAAGIVGLLLAQPAMAEEKPTSRDWLVHHEFRIQNGSQWYCTKLMDEPSARGHVQLTTYDFNWISPKVL" * 3


@pytest.mark.parametrize("command", ["search", "crispr", "screen"])
def test_a_protein_fasta_is_refused_naming_the_file_and_record(tmp_path, command):
    protein = tmp_path / "proteins.fa"
    protein.write_text(">sp|P12345|EXAMPLE some protein\n" + PROTEIN + "\n")
    if command == "screen":
        result = run_seqsift("screen", protein, protein, "--backend", "cpu")
    else:
        result = run_seqsift(command, protein, "ACGTACGTACGTACGTACGT", "-k", "1", "--backend", "cpu")
    one_line_error(result, str(protein), "sp|P12345|EXAMPLE", "looks like protein")


def test_dna_with_ambiguity_codes_and_soft_masking_is_not_protein(tmp_path):
    dna = "acgtnnnnACGTRYKMACGTACGTNNNNNNNNacgtacgtacgtacgtSWACGT" * 20
    reference = tmp_path / "dna.fa"
    reference.write_text(">chrUn_masked\n" + dna + "\n")
    result = run_seqsift("search", reference, "ACGTACGTACGT", "-k", "0", "--backend", "cpu", "--no-progress")
    assert result.returncode == 0, result.stderr


# -- 9, 10. output paths that are not the caller's to replace, or not writable at all ----------------

@needs_root
def test_an_empty_output_folder_of_another_user_is_kept_and_filled(job, tmp_path):
    reference, guides = job
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chown(folder, OTHER_UID, OTHER_UID)
    folder.chmod(0o777)
    result = run_seqsift("search", reference, guides, "-k", "1", "--backend", "cpu", "--no-progress",
                         "-o", f"{folder}/")
    assert result.returncode == 0, result.stderr
    info = folder.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (OTHER_UID, 0o777)
    assert sorted(p.name for p in folder.iterdir()) == ["part-00000.parquet"]


def test_an_output_where_nothing_can_be_written_is_one_line_and_status_2(job):
    reference, guides = job
    result = run_seqsift("search", reference, guides, "-k", "1", "--backend", "cpu", "-o", "/proc/hits.tsv")
    one_line_error(result, "/proc/hits.tsv")
    assert "Errno" not in result.stderr


# -- 12. the tests leave the user's cache alone --------------------------------------------------------

def test_this_test_session_writes_into_a_cache_of_its_own():
    from seqsift.cache import cache_directory

    assert os.path.basename(str(cache_directory(create=False))).startswith("seqsift-test-cache-")
    assert not str(cache_directory(create=False)).startswith(os.path.expanduser("~/.cache"))


# -- section 4: what CRISPR users expect ------------------------------------------------------------

def naive_merge(sites, window: int):
    """The sites --merge W keeps, by a plain loop over each (record, guide, strand)'s sites in start order."""
    kept = []
    for _, group in sites.groupby(["record", "guide", "strand"], sort=False):
        group = group.sort_values("start", kind="stable")
        cluster = []
        for row in group.itertuples(index=False):
            if cluster and row.start - cluster[-1].start > window:
                kept.append(_best(cluster))
                cluster = []
            cluster.append(row)
        kept.append(_best(cluster))
    return sorted(tuple(getattr(row, c) for c in ("record", "start", "end", "guide", "strand")) for row in kept)


def _best(cluster):
    def rank(row):
        cfd = -1.0 if row.cfd != row.cfd else row.cfd  # NaN: lowest
        return (row.mismatches + row.bulge_size, -cfd, row.start, row.end - row.start)
    return min(cluster, key=rank)


@pytest.mark.parametrize("window", [0, 3, 40])
def test_merge_keeps_one_site_per_cluster_as_a_plain_loop_does(tmp_path, window, client):
    import seqsift

    rng = random.Random(window)
    unit = "".join(rng.choice("ACGT") for _ in range(23))
    # Repeats of one site with mutations, a few bases apart: clusters that cross task boundaries.
    genome = "".join(rng.choice("ACGT") for _ in range(300))
    for copy in range(60):
        mutated = list(unit)
        mutated[rng.randrange(20)] = rng.choice("ACGT")
        genome += "".join(mutated)[:20] + "AGG" + "".join(rng.choice("ACGT") for _ in range(rng.randint(0, 30)))
    reference = write_fasta(tmp_path / "ref.fa", [("chrA", genome), ("chrB", genome[::-1])])
    guides = [("g", unit[:20]), ("h", unit[2:22])]
    options = dict(backend="cpu", client=client, chunk_size=500, guide_batch_size=1, dna_bulge=1, rna_bulge=1)
    every = seqsift.crispr(str(reference), guides, "NGG", 3, **options)
    merged = seqsift.crispr(str(reference), guides, "NGG", 3, merge=window, **options)
    got = [tuple(r) for r in merged[["record", "start", "end", "guide", "strand"]].itertuples(index=False)]
    assert sorted(got) == naive_merge(every, window)
    assert len(merged) < len(every)
    # In output order, as every crispr output: the records' order, then start, end, guide, strand.
    order = [(["chrA", "chrB"].index(r), s, e, ["g", "h"].index(g), strand) for r, s, e, g, strand in got]
    assert order == sorted(order)


def test_guides_given_with_their_pam_get_one_note(job, tmp_path):
    reference, guides = job
    with_pam = tmp_path / "with_pam.txt"
    with_pam.write_text("".join(g + "AGG\n" for g in guides.read_text().split()))
    result = run_seqsift("crispr", reference, with_pam, "-k", "3", "--backend", "cpu", "--no-progress")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("give guides without their PAM") == 1
    plain = run_seqsift("crispr", reference, guides, "-k", "3", "--backend", "cpu", "--no-progress")
    assert "without their PAM" not in plain.stderr


def test_cfd_and_mit_are_written_to_six_significant_digits(job, tmp_path):
    import pandas as pd

    from seqsift.crispr.output import significant_digits

    values = np.array([0.123456789, 98.7654321, 1e-7 * 1.23456789, 0.0, np.nan, 100.0])
    rounded = significant_digits(values, 6)
    assert [f"{v:.10g}" for v in rounded[:4]] == ["0.123457", "98.7654", "1.23457e-07", "0"]
    assert np.isnan(rounded[4]) and rounded[5] == 100.0
    reference, guides = job
    out = tmp_path / "sites.tsv"
    assert run_seqsift("crispr", reference, guides, "-k", "4", "--backend", "cpu", "--no-progress",
                       "-o", out).returncode == 0
    for column in ("cfd", "mit"):
        for text in pd.read_csv(out, sep="\t", dtype=str)[column].dropna():
            assert len(text.replace(".", "").replace("-", "").lstrip("0").split("e")[0]) <= 6, text


@pytest.mark.parametrize("content, fragment", [
    ("{missing}\nNNNNNNNNNNNNNNNNNNNNNGG\nGACGCATAAAGATGAGACGCNNN 3\n", "line 1: genome"),
    ("{genome}\nNNNNNNNNNNNNNNNNNNNNNGG\nGACGCATAAAGATGAGACGCNNN 20\n", "line 3: 20 mismatches"),
])
def test_an_error_in_a_cas_offinder_input_names_the_file_and_line(job, tmp_path, content, fragment):
    reference, _ = job
    spec = tmp_path / "input.txt"
    spec.write_text(content.format(missing=tmp_path / "absent.fa", genome=reference))
    one_line_error(run_seqsift("crispr", "--cas-offinder", spec, "--backend", "cpu"), str(spec), fragment)


def test_no_score_note_with_the_cas_offinder_format(job, tmp_path):
    reference, guides = job
    short = tmp_path / "short.txt"
    short.write_text("".join(g[:18] + "\n" for g in guides.read_text().split()))
    result = run_seqsift("crispr", reference, short, "-k", "3", "--backend", "cpu", "--no-progress",
                         "--format", "cas-offinder")
    assert result.returncode == 0 and "cfd and mit" not in result.stderr


def test_cache_list_and_clear_show_and_remove_cached_references(job, tmp_path, monkeypatch):
    reference, guides = job
    copy = tmp_path / "copy.fa"
    copy.write_bytes(open(reference, "rb").read())
    cache = tmp_path / "cache"
    env = {**os.environ, "SEQSIFT_CACHE": str(cache)}

    def seqsift_with_cache(*args):
        return subprocess.run(seqsift_command(*args), env=env, capture_output=True, text=True, timeout=300)

    assert seqsift_with_cache("search", copy, guides, "-k", "0", "--backend", "cpu").returncode == 0
    listed = seqsift_with_cache("cache", "--list")
    assert listed.returncode == 0 and "copy." in listed.stdout and "in all (1 cached reference version" in \
        listed.stdout
    compiled = any((cache / "native").glob("*.so"))   # the FASTA scanner, where a C compiler built it
    assert compiled == ("compiled FASTA scanner  native/" in listed.stdout), listed.stdout
    cleared = seqsift_with_cache("cache", "--clear")
    assert cleared.returncode == 0 and "removed" in cleared.stdout
    assert not (cache / "reference").exists()
    assert compiled == any((cache / "native").glob("*.so"))   # kept: not a reference
    assert "in all (0 cached reference versions" in seqsift_with_cache("cache", "--list").stdout


def test_cache_list_keeps_apart_two_references_whose_names_hold_dots(job, tmp_path):
    reference, guides = job
    cache = tmp_path / "cache"
    env = {**os.environ, "SEQSIFT_CACHE": str(cache)}
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        copy = tmp_path / folder / "my.v1.2.fa"
        copy.write_bytes(open(reference, "rb").read())
        searched = subprocess.run(seqsift_command("search", copy, guides, "-k", "0", "--backend", "cpu"), env=env,
                                  capture_output=True, text=True, timeout=300)
        assert searched.returncode == 0, searched.stderr
    listed = subprocess.run(seqsift_command("cache", "--list"), env=env, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0 and "in all (2 cached reference versions" in listed.stdout
    assert listed.stdout.count("  my.v1.2.") == 2


@pytest.mark.parametrize("sizes", [{"chunk_size": -5}, {"guide_batch_size": 0}])
def test_the_crispr_api_refuses_a_size_below_one_in_one_line(job, sizes):
    from seqsift import crispr
    from seqsift.errors import InputError

    reference, guides = job
    with pytest.raises(InputError, match="must be a whole number of at least 1"):
        crispr(str(reference), str(guides), mismatches=2, backend="cpu", **sizes)
