"""Every CUDA source compiles for Hopper with plain nvcc (no GPU needed)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

KERNEL_DIR = Path(__file__).parents[1] / "src" / "seqsift" / "kernels"
KERNELS = sorted(KERNEL_DIR.glob("**/*.cu"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("source", KERNELS, ids=[p.name for p in KERNELS])
def test_cu_file_compiles_for_sm_90(source, tmp_path):
    result = subprocess.run(["nvcc", "-arch=sm_90", f"-I{KERNEL_DIR}", "-c", str(source), "-o", str(tmp_path / "out.o")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr


def test_every_family_has_its_cuda_source_beside_it():
    """kernels/<family>/<family>.cu, the layout pyproject.toml ships (kernels/*/*.cu)."""
    families = {"hamming", "edit", "nfa", "rowdp", "shiftor", "sw"}
    assert {(p.parent.name, p.name) for p in KERNELS} >= {(f, f"{f}.cu") for f in families}
    assert all(p.parent.parent == KERNEL_DIR for p in KERNELS)
