"""Every CUDA source compiles with plain nvcc (no GPU needed): for Hopper (sm_90), and for the T4 (sm_75),
the oldest of the GPUs before Hopper that seqsift also runs on (A100, A10, L4, RTX cards: CuPy's NVRTC
compiles the same files there); what Hopper alone has in PTX fails there."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

KERNEL_DIR = Path(__file__).parents[1] / "src" / "seqsift" / "kernels"
KERNELS = sorted(KERNEL_DIR.glob("**/*.cu"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("arch", ["sm_90", "sm_75"])
@pytest.mark.parametrize("source", KERNELS, ids=[p.name for p in KERNELS])
def test_cu_file_compiles(source, arch, tmp_path):
    result = subprocess.run(["nvcc", f"-arch={arch}", f"-I{KERNEL_DIR}", "-c", str(source), "-o", str(tmp_path / "out.o")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("arch", ["sm_90", "sm_75"])
@pytest.mark.parametrize("defines", [["-DDPX_HALF=1", "-DDPX_SKEW=4", "-DDPX_ROWS=16"],
                                     ["-DDPX_HALF=1", "-DDPX_SKEW=2", "-DDPX_GAP_IS_MISMATCH=1", "-DDPX_ROWS=19"],
                                     ["-DDPX_AFFINE=1", "-DDPX_SKEW=4", "-DDPX_ROWS=16"],
                                     ["-DDPX_AFFINE=1", "-DDPX_FLOOR_E=1", "-DDPX_SKEW=4", "-DDPX_ROWS=20",
                                      "-DDPX_BEST_FROM_P=1"],
                                     ["-DDPX_AFFINE=1", "-DDPX_BEST_FROM_P=1", "-DDPX_ROWS=16"]],
                         ids=["half-skew4", "half-skew2-g=c2", "affine-skew4", "affine-floored-skew4-best-p",
                              "affine-best-p"])
def test_dpx_variants_compile(defines, arch, tmp_path):
    """dpx.cu as the launcher compiles it for half lanes, skewed steps, the floored affine cell and the running
    maximum over P (kernels/sw/cuda.py, dpx_launch)."""
    source = KERNEL_DIR / "sw" / "dpx.cu"
    result = subprocess.run(["nvcc", f"-arch={arch}", *defines, "-c", str(source), "-o", str(tmp_path / "out.o")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr


def test_every_family_has_its_cuda_source_beside_it():
    """kernels/<family>/<family>.cu, the layout pyproject.toml ships (kernels/*/*.cu)."""
    families = {"hamming", "edit", "nfa", "rowdp", "shiftor", "sw"}
    assert {(p.parent.name, p.name) for p in KERNELS} >= {(f, f"{f}.cu") for f in families}
    assert all(p.parent.parent == KERNEL_DIR for p in KERNELS)
