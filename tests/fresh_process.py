"""What a fresh interpreter imports: the tests that keep heavy modules (Numba, pandas, Dask) off a
command's path run their code there, since the test session itself has long imported everything."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def python(code: str, *, env=None) -> subprocess.CompletedProcess:
    """``code`` (dedented) run by a fresh interpreter."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=300)


def loaded_after(code: str, modules) -> list[str]:
    """Those of ``modules`` that are in ``sys.modules`` once ``code`` has run in a fresh interpreter."""
    result = python(textwrap.dedent(code) + f"\nimport sys\nprint([m for m in {tuple(modules)!r} if m in sys.modules])")
    assert result.returncode == 0, result.stderr
    return eval(result.stdout.strip().splitlines()[-1])


def cuda_launchers(names: str) -> str:
    """Code that imports the CUDA launcher of every algorithm in ``names`` (an expression), as a job does."""
    return (f"from seqsift import kernels\n"
            f"for name in {names}:\n"
            f"    family, launcher = kernels.ALGORITHMS[name].backends['cuda'].split(':')\n"
            f"    getattr(__import__(f'seqsift.kernels.{{family}}', fromlist=[launcher]), launcher)\n")
