"""Client memory when a ``best`` run never ends: a low-complexity pattern at a large k.

Such a run spans the whole record; while it is open the merge cannot emit any
row after its locus. A run at distance 0 cannot improve, so its locus is
final at once and holds nothing back; rows must still come out exactly as an
unchunked scan gives them.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import seqsift
import seqsift.runtime.run
from naive_search import expected_rows
from seqsift.searching.merge import SPILL_ROWS, OrderedMerger
from seqsift.runtime.run import EarlyTasks
from seqsift.runtime.store import SpillFolder
from test_engine import engine_frame, write_fasta

NEVER_ENDING = "NNNNNNNNNNNN"   # distance 0 at every end of an A/C/G/T record: one run, the whole record
NEVER_BELOW_ONE = "NNNNNNNNNNNA"   # in a record without A: distance 1 at every end, never less


def random_genome(length: int, seed: int, letters: str = "ACGT") -> str:
    return "".join(np.random.default_rng(seed).choice(list(letters), size=length))


def test_never_ending_run_gives_the_contract_and_holds_nothing_back(tmp_path, client, monkeypatch):
    text = random_genome(12_000, 1)
    reference = write_fasta(tmp_path / "ref.fa", [("chrA", text)])
    patterns = [("never_ending", NEVER_ENDING), ("ordinary", "ACGTACGTAC")]
    held_back = [0]   # rows the merge has taken in and not yet emitted, after each group
    real_add_group = OrderedMerger.add_group

    def counting_add_group(self, group, rows):
        held_back.append(held_back[-1] + len(rows))
        for final in real_add_group(self, group, rows):
            held_back[-1] -= len(final)
            yield final

    monkeypatch.setattr(OrderedMerger, "add_group", counting_add_group)
    got = seqsift.search(reference, patterns, 3, metric="edit", align=False, client=client, chunk_size=1_000)
    expected = expected_rows([("chrA", text)], patterns, 3, "edit")
    assert engine_frame(got).values.tolist() == expected.values.tolist()
    # Before the fix every row after the never-ending run's locus (at the record's start)
    # waited for the end of the record; now only a chunk's neighbourhood waits.
    assert max(held_back) < len(got) // 4, (max(held_back), len(got))


def test_run_that_never_improves_holds_rows_on_disk_and_gives_the_contract(tmp_path, client, monkeypatch):
    """A run at distance 1 for the whole record must hold back every later row (its locus could
    still move past them); with a small spill budget they wait on disk and come out in order."""
    text = random_genome(12_000, 2, "CGT")
    reference = write_fasta(tmp_path / "ref.fa", [("chrA", text)])
    patterns = [("never_below_one", NEVER_BELOW_ONE), ("ordinary", "CGTCGGTCTC")]
    spilled = []
    real_write = SpillFolder.write

    def counting_write(self, name, rows):
        spilled.append(name)
        return real_write(self, name, rows)

    unchunked = seqsift.search(reference, patterns, 3, metric="edit", client=client, chunk_size=1_000_000)
    monkeypatch.setattr(seqsift.runtime.run, "SPILL_ROWS", 20)
    monkeypatch.setattr(SpillFolder, "write", counting_write)
    got = seqsift.search(reference, patterns, 3, metric="edit", client=client, chunk_size=1_000)
    assert any(name.startswith("held-") for name in spilled), "the held rows never went to disk"
    pd.testing.assert_frame_equal(got, unchunked)
    expected = expected_rows([("chrA", text)], patterns, 3, "edit")
    assert engine_frame(got).values.tolist() == expected.values.tolist()


def test_tasks_of_an_unfinished_group_count_against_the_spill_budget():
    early = EarlyTasks(spill_rows=10)
    first = pd.DataFrame({"record": np.zeros(8, dtype=np.int32), "end": np.arange(8, dtype=np.int64)})
    second = pd.DataFrame({"record": np.zeros(8, dtype=np.int32), "end": np.arange(8, 16, dtype=np.int64)})
    early.put((0, 0), first)          # group 0, batch 0 of 2: the group is not complete
    early.put((0, 1), second)         # past the budget: to disk, although group 0 is still partial
    assert early.rows_in_memory == 8 and list(early.on_disk) == [(0, 1)]
    assert early.on_disk[(0, 1)].read_bytes()[:6] == b"ARROW1"     # Arrow IPC, not a pickle
    pd.testing.assert_frame_equal(early.pop((0, 1)), second)
    pd.testing.assert_frame_equal(early.pop((0, 0)), first)
    early.close()


PEAK_SCRIPT = textwrap.dedent('''
    import sys

    import numpy as np

    def peak_mib():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024

    if __name__ == "__main__":
        import seqsift
        import seqsift.runtime.run
        from distributed import Client
        from seqsift.cluster import local_cluster

        path, never_ending, letters, spill_rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
        seqsift.runtime.run.SPILL_ROWS = spill_rows
        rng = np.random.default_rng(3)
        patterns = [never_ending] + ["".join(rng.choice(list(letters), size=10)) for _ in range(16)]
        cluster = local_cluster("cpu", workers=2)
        with Client(cluster) as client:
            before = peak_mib()
            rows = seqsift.search(path, patterns, 3, metric="edit", align=False, client=client, output="-",
                                  chunk_size=50_000)
            print(rows, before, peak_mib(), file=sys.stderr)
        cluster.close()
''')


def client_peak_growth(tmp_path, length: int, never_ending: str, letters: str, spill_rows: int) -> tuple[int, float]:
    """Rows and the growth of the client's peak RSS (MiB) over a search streamed to stdout."""
    script = tmp_path / "peak.py"
    script.write_text(PEAK_SCRIPT)
    reference = write_fasta(tmp_path / f"ref-{length}.fa", [("chr1", random_genome(length, 7, letters))], width=80)
    result = subprocess.run([sys.executable, str(script), str(reference), never_ending, letters, str(spill_rows)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    rows, before, after = result.stderr.strip().splitlines()[-1].split()
    return int(rows), float(after) - float(before)


@pytest.mark.parametrize("never_ending,letters,spill_rows", [
    (NEVER_ENDING, "ACGT", SPILL_ROWS),        # distance 0: emitted at once, nothing held
    (NEVER_BELOW_ONE, "CGT", 50_000),          # distance 1: rows held, past the budget on disk
])
def test_client_memory_stays_flat_under_a_never_ending_run(tmp_path, never_ending, letters, spill_rows):
    """1 and 2 Mbp, one never-ending run and ~300k loci per Mbp: the client's peak must not
    grow with the record (holding the second Mbp's rows in memory costs ~90 MiB)."""
    small_rows, small = client_peak_growth(tmp_path, 1_000_000, never_ending, letters, spill_rows)
    large_rows, large = client_peak_growth(tmp_path, 2_000_000, never_ending, letters, spill_rows)
    assert large_rows > 1.8 * small_rows > 400_000
    assert large < small + 30, f"client peak grew by {small:.0f} MiB at 1 Mbp and {large:.0f} MiB at 2 Mbp"
