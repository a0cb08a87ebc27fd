"""Without the cross-check libraries (edlib, parasail), only the cross-checks skip.

A module-level ``pytest.importorskip`` once skipped whole modules, oracle
tests included. Here the libraries are hidden from a pytest run in a fresh
process (a folder whose ``edlib.py`` and ``parasail.py`` raise ImportError
comes first on ``PYTHONPATH``), and a few tests of each module are run.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent

ORACLE_TESTS = ["test_align.py::test_hamming_cigar_example", "test_kernels_cpu.py::test_large_k_and_negative_k",
                "test_screen.py::test_mismatch_flag_every_code_pair", "test_pipeline.py::test_gather_spans_equals_slicing"]
CROSS_CHECKS = {"test_align.py::test_edit_long_patterns[127]": "edlib",
                "test_kernels_cpu.py::test_myers_against_edlib[1]": "edlib",
                "test_screen.py::test_pair_counts_around_word_sizes": "parasail",
                "test_pipeline.py::test_edit_best_rows_agree_with_edlib": "edlib"}


def test_only_the_cross_checks_skip_without_their_libraries(tmp_path):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    for name in ("edlib", "parasail"):
        (hidden / f"{name}.py").write_text(f"raise ImportError('{name} hidden for this test')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(hidden), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-q",
                             *(str(TESTS / t) for t in ORACLE_TESTS + list(CROSS_CHECKS))],
                            capture_output=True, text=True, env=env, cwd=TESTS.parent, timeout=600)
    report = result.stdout
    assert result.returncode == 0, report + result.stderr
    for test in ORACLE_TESTS:
        assert f"PASSED tests/{test}" in report, report
    for library in set(CROSS_CHECKS.values()):
        assert f"{library} is not installed: this cross-check against it is skipped" in report, report
    assert f"{len(ORACLE_TESTS)} passed, {len(CROSS_CHECKS)} skipped" in report, report
