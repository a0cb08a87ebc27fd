"""The kernel registries resolve, and CuPy stays unimported on the CPU.

``kernels.ALGORITHMS`` (search, screen and crispr kernels alike) names its kernels as
``"family:function"`` paths, resolved on a worker when a task runs. A typo
there would fail only in the middle of a user's job; here every entry, on
every backend, is resolved to a function with the common call shape. CUDA
entries resolve without a GPU: a family's ``cuda.py`` imports CuPy only
inside its functions, which the last tests check in a fresh interpreter.
"""
from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap

import pytest

from seqsift import kernels
from seqsift.kernels import sw

ENTRIES = [(name, backend, path) for name, algorithm in kernels.ALGORITHMS.items()
           for backend, path in {**algorithm.backends,
                                 **{f"{b}-threshold": p for b, p in (algorithm.threshold_backends or {}).items()},
                                 **{f"{b}-buffer": p for b, p in (algorithm.buffer_backends or {}).items()},
                                 }.items()]
CALL_SHAPES = {
    "hamming": ["text", "batch", "k", "owned_lo", "owned_hi"],
    "edit": ["text", "batch", "k", "owned_lo", "owned_hi"],
    "sw": ["x_codes", "y_codes", "scoring"],
    "sw-buffer": ["codes", "x_start", "x_len", "y_start", "y_len", "scoring"],
    "crispr": ["text", "rows", "dna_bulge", "rna_bulge", "owned_lo", "owned_hi"],
}
"""Each job's kernel call shape: the leading parameters of every launcher of that metric."""


def leading_parameters(function, count: int) -> list[str]:
    return list(inspect.signature(function).parameters)[:count]


@pytest.mark.parametrize("name,backend,path", ENTRIES, ids=[f"{n}-{b}" for n, b, _ in ENTRIES])
def test_every_entry_resolves_to_a_kernel_of_its_job(name, backend, path):
    algorithm = kernels.ALGORITHMS[name]
    assert backend.removesuffix("-threshold").removesuffix("-buffer") in kernels.BACKENDS
    family = path.split(":")[0]
    assert "." not in family, f"{name} reaches past the {family.split('.')[0]} family's face"
    kernel = kernels._resolve(path)
    assert callable(kernel)
    metrics = [algorithm.metric] if isinstance(algorithm.metric, str) else list(algorithm.metric)
    for metric in metrics:
        shape = CALL_SHAPES[metric + ("-buffer" if backend.endswith("-buffer") else "")]
        assert leading_parameters(kernel, len(shape)) == shape
    # The CUDA launcher lives in the family's cuda.py, the CPU one in its face.
    module = f"seqsift.kernels.{family}" + (".cuda" if backend.startswith("cuda") else "")
    assert kernel.__module__ == module


def test_every_job_has_kernels_in_the_one_registry():
    metrics = {m for a in kernels.ALGORITHMS.values() for m in ([a.metric] if isinstance(a.metric, str) else a.metric)}
    assert metrics == {shape.removesuffix("-buffer") for shape in CALL_SHAPES}
    assert set(sw.sw_algorithms()) == {n for n, a in kernels.ALGORITHMS.items() if a.serves("sw")}
    assert "sw-bpbc" not in kernels.search_algorithms() and "crispr-pam-first" not in kernels.search_algorithms()


def test_resolve_kernel_falls_back_to_the_cpu_path_and_knows_flag_kernels():
    assert kernels.resolve_kernel("crispr-vectorized", "cuda") is kernels._resolve("crispr:vectorized_cpu")
    assert kernels.resolve_kernel("sw-bpbc", "cpu", threshold=True) is kernels._resolve("sw:bpbc_reach_cpu")
    assert kernels.resolve_kernel("sw-wordwise", "cpu", threshold=True) is None
    assert kernels.resolve_kernel("sw-dpx", "cuda", buffer=True) is kernels._resolve("sw:dpx_buffer_cuda")
    assert kernels.resolve_kernel("sw-bpbc", "cuda", buffer=True) is None


def test_a_limit_message_names_only_the_limits_an_algorithm_has():
    with pytest.raises(ValueError) as raised:
        kernels.choose_algorithm("edit", "cpu", "edit-nfa", m_max=20, k=40)
    assert "None" not in str(raised.value) and "k up to 31" in str(raised.value)


def test_every_metric_and_backend_has_a_default_that_admits_it():
    for (metric, backend), name in kernels.DEFAULT_ALGORITHM.items():
        algorithm = kernels.ALGORITHMS[name]
        assert algorithm.serves(metric) and backend in algorithm.backends


def test_a_misspelt_entry_fails_to_resolve():
    """What the tests above rely on: a wrong path raises (it is not silently skipped)."""
    with pytest.raises(ModuleNotFoundError):
        kernels._resolve("hamming_cuda:thread")
    with pytest.raises(AttributeError):
        kernels._resolve("edit:myers_gpu")


NO_CUPY = textwrap.dedent("""
    import importlib.abc, sys

    attempts = []

    class RefuseCupy(importlib.abc.MetaPathFinder):
        # Records every attempt to import CuPy, even one whose ImportError is caught.
        def find_spec(self, name, path=None, target=None):
            if name == "cupy" or name.startswith("cupy."):
                attempts.append(name)
                raise ImportError("CuPy is refused in this test")
            return None

    sys.meta_path.insert(0, RefuseCupy())
""")


def run_without_cupy(body: str) -> None:
    script = NO_CUPY + textwrap.dedent(body) + textwrap.dedent("""
        assert not attempts, f"CuPy was imported: {attempts}"
        assert not any(m == "cupy" or m.startswith("cupy.") for m in sys.modules)
        print("no cupy")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("no cupy")


def test_resolving_every_entry_leaves_cupy_unimported():
    run_without_cupy("""
        from seqsift import kernels
        for algorithm in kernels.ALGORITHMS.values():
            for path in [*algorithm.backends.values(), *(algorithm.threshold_backends or {}).values(),
                         *(algorithm.buffer_backends or {}).values()]:
                kernels._resolve(path)
    """)


def test_a_cpu_search_and_screen_leave_cupy_unimported(tmp_path):
    """The whole job in this process (threads, not worker processes): CuPy is never imported."""
    reference = tmp_path / "ref.fa"
    reference.write_text(">chr1\n" + "ACGTTGCAAGGCTTAACCGGTTAAGCTTGACA" * 40 + "\n")
    run_without_cupy(f"""
        from distributed import Client, LocalCluster
        import seqsift

        with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \\
                Client(cluster) as client:
            hits = seqsift.search({str(reference)!r}, ["GGCTTAACCGG", "TTGACAACG"], 1, metric="edit",
                                  backend="cpu", client=client)
            assert len(hits) > 0
            scores = seqsift.screen({str(reference)!r}, {str(reference)!r}, threshold=10, backend="cpu",
                                    client=client)
            assert len(scores) == 1
    """)
