"""The README's Python example of one cluster reused for several calls, run as a user runs it:
copied out of the README into a script file, in a fresh process, on files it names."""
from __future__ import annotations

import io
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from naive_search import expected_rows
from test_engine import CORE_COLUMNS, mutate, write_fasta
from test_fresh_workers import _local_alignment_score

README = Path(__file__).parent.parent / "README.md"


def readme_example_reusing_a_client() -> str:
    """The README's Python code block that passes ``client=`` to its calls."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    reusing = [block for block in blocks if "client=client" in block]
    assert len(reusing) == 1, "the README should have one example reusing a client"
    return reusing[0]


def read_tsv(path: Path) -> pd.DataFrame:
    """seqsift's TSV, its header line's leading ``#`` (or a lone ``#`` line above it) dropped."""
    lines = [line for line in path.read_text().splitlines() if line != "#"]
    lines[0] = lines[0].lstrip("#")
    return pd.read_csv(io.StringIO("\n".join(lines) + "\n"), sep="\t")


def test_readme_example_reuses_one_client_for_two_searches_and_a_screen(tmp_path):
    rng = random.Random(15)
    guides = [("g1", "GACGCATAAAGATGAGACGC"), ("g2", "ACGTTGCAAGGCTAGCTAGG")]
    primers = [("p1", "TTGCAAGGCTAGCTAGGATC")]
    parts = []
    for _ in range(12):
        parts.append("".join(rng.choice("ACGT") for _ in range(rng.randint(100, 400))))
        parts.append(mutate(rng, rng.choice(guides + primers)[1], rng.randint(0, 3)))
    records = [("chr1", "".join(parts[:12])), ("chr2", "".join(parts[12:]))]
    write_fasta(tmp_path / "genome.fa", records)
    (tmp_path / "guides.txt").write_text("".join(f">{name}\n{seq}\n" for name, seq in guides))
    (tmp_path / "primers.txt").write_text("".join(f">{name}\n{seq}\n" for name, seq in primers))
    pairs = [("ACGTTGCAAGGCTAC", "TTACGTTGCTAGGCTACTT"), ("GGATCCATGGGATCC", "CCCCCCCCCC")]
    (tmp_path / "reads.fa").write_text("".join(f">r{i}\n{q}\n" for i, (q, _) in enumerate(pairs)))
    (tmp_path / "windows.fa").write_text("".join(f">w{i}\n{t}\n" for i, (_, t) in enumerate(pairs)))
    script = tmp_path / "offtargets.py"
    script.write_text(readme_example_reusing_a_client())

    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr

    guide_hits = pd.read_csv(tmp_path / "guides.tsv", sep="\t")
    expected_guides = expected_rows(records, guides, 3, "hamming")
    assert len(expected_guides) > 0
    np.testing.assert_array_equal(guide_hits[CORE_COLUMNS].to_numpy(), expected_guides[CORE_COLUMNS].to_numpy())
    primer_hits = read_tsv(tmp_path / "primers.tsv")
    expected_primers = expected_rows(records, primers, 2, "edit")
    assert len(expected_primers) > 0
    np.testing.assert_array_equal(primer_hits[CORE_COLUMNS].to_numpy(), expected_primers[CORE_COLUMNS].to_numpy())
    scores = [_local_alignment_score(q, t) for q, t in pairs]
    assert result.stdout.strip() == (f"{len(expected_guides)} guide hits, {len(expected_primers)} primer hits, "
                                     f"scores {scores}")


def test_readme_screen_example_runs_as_a_script(tmp_path):
    """The screen section's example, saved as a script and run as one (issue 28: without the
    ``__main__`` guard it died in 310 lines of Dask traceback)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    examples = [block for block in blocks if "seqsift.screen(queries, targets)" in block]
    assert len(examples) == 1, "the README's screen section should have one Python example"
    assert 'if __name__ == "__main__":' in examples[0]
    script = tmp_path / "screen_example.py"
    script.write_text(examples[0])
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "query_index" in result.stdout  # the thresholded DataFrame was printed
