"""Kernels: one call shape for every algorithm on every backend.

Every search kernel is a function

    kernel(text, batch, k, owned_lo, owned_hi) -> EndHits

text      uint8 text codes of one chunk's read window (seqsift.alphabet)
batch     seqsift.pattern_set.PatternBatch: the oriented patterns (rows)
k         mismatches (Hamming) or differences (edit distance) allowed
owned_lo, owned_hi
          the chunk's core, relative to text[0]: report an end e (exclusive)
          only when its last character e - 1 lies in [owned_lo, owned_hi)

and returns every (row, end, distance) with distance <= k, in any order:
for Hamming the distance of P to text[e - m:e]; for edit distance
d(e) = min over s of ED(P, text[s:e]) (DESIGN.md, "What a hit is").

Kernels live one family per package, ``kernels/<family>/``: ``__init__.py``
holds the launchers (the family's one public face), ``cpu.py`` the Numba
code, ``cuda.py`` the CuPy launchers of ``<family>.cu``. The registry below
names each kernel ``"<family>:<launcher>"`` (tests/test_registry.py resolves
them all). Shared pieces: ``driver.py`` (the CPU launchers' parallel tasks),
``threads.py`` (a worker's Numba thread share), ``cuda.py`` and ``hits.cuh``
(the CuPy backend), ``planner.py`` (what ``auto`` runs). The ``locate``
family (starts and CIGARs of hits, on either backend) has a face of its
own. The jobs only call :func:`find_ends`, by algorithm name,
:func:`locate_packed` and :func:`gather_spans`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np

from .locate import gather_spans, locate_packed  # noqa: F401  (the jobs' face: kernels/locate)
from .threads import use_worker_share

METRICS = ("hamming", "edit")
"""The search job's metrics. The registry also holds the screen job's kernels (metric ``sw``) and the
crispr job's (metric ``crispr``), each family with its own call shape (its face's docstring)."""
BACKENDS = ("cpu", "cuda")


@dataclass(frozen=True)
class EndHits:
    """Kernel output: parallel arrays, one entry per qualifying end."""

    row: np.ndarray       # int32, row of the PatternBatch
    end: np.ndarray       # int64, exclusive end relative to text[0]
    distance: np.ndarray  # int16

    @classmethod
    def empty(cls) -> "EndHits":
        return cls(np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int16))

    def __len__(self) -> int:
        return int(self.row.shape[0])

    def sorted(self) -> "EndHits":
        """The same hits ordered by (row, end), ties kept in their order.

        Where (row, end) packs into one non-negative int64 (the usual case:
        ends within a chunk window, rows within a batch) one stable argsort
        of that key replaces the two-key lexsort, about 1.7x faster for the
        50,000 to 1,000,000 hits of a GPU task.
        """
        if len(self) == 0:
            return self
        end_bits = int(self.end.max()).bit_length()
        if int(self.end.min()) >= 0 and int(self.row.min()) >= 0 and int(self.row.max()) >> (62 - end_bits) == 0:
            order = np.argsort((self.row.astype(np.int64) << end_bits) | self.end, kind="stable")
        else:
            order = np.lexsort((self.end, self.row))
        return EndHits(self.row[order], self.end[order], self.distance[order])


@dataclass(frozen=True)
class Algorithm:
    name: str
    metric: str | tuple[str, ...]  # the metric it serves, or several (exact matching: both at k = 0)
    backends: dict[str, str]  # backend -> "family:launcher", a launcher of seqsift.kernels.<family>
    summary: str
    max_m: int | None = None  # longest pattern it handles (None: any)
    max_k: int | None = None  # largest k it handles (None: any below m)
    alphabets: tuple[str, ...] = ("dna",)  # "bytes": also raw byte text (--alphabet bytes)
    threshold_backends: dict[str, str] | None = None  # screen: backend -> its flag kernel ("score >= T?")
    buffer_backends: dict[str, str] | None = None  # screen: backend -> its kernel on one code buffer (sw face)
    affine_gaps: bool = False  # screen: its kernels also score affine gaps (gap open != gap extend)

    def serves(self, metric: str) -> bool:
        return metric == self.metric if isinstance(self.metric, str) else metric in self.metric

    def admits(self, backend: str, m_max: int, k: int, alphabet: str = "dna") -> bool:
        return (backend in self.backends
                and (self.max_m is None or m_max <= self.max_m)
                and (self.max_k is None or k <= self.max_k)
                and alphabet in self.alphabets)


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm(
            "hamming-pigeonhole", "hamming",
            {"cpu": "hamming:pigeonhole_cpu"},
            "k-mismatch search for many patterns: exact seeds of k+1 pattern pieces, then verification",
        ),
        Algorithm(
            "hamming-scan", "hamming",
            {"cpu": "hamming:scan_cpu"},
            "k-mismatch search comparing every pattern at every text position (early exit past k)",
        ),
        # Liu et al. 2012 (papers/liu2012-k-mismatch-cuda.txt) and seqsift's packed kernel.
        # Their CPU path is the plain scan: the same hits, computed the same way.
        Algorithm(
            "hamming-thread", "hamming",
            {"cpu": "hamming:scan_cpu", "cuda": "hamming:thread_cuda"},
            "one GPU thread per text position (Liu et al., Algorithms 1-2)",
        ),
        Algorithm(
            "hamming-block", "hamming",
            {"cpu": "hamming:scan_cpu", "cuda": "hamming:block_cuda"},
            "one GPU block per text position, shared-memory reduction (Liu et al., Algorithms 3-4)",
        ),
        Algorithm(
            "hamming-tiled", "hamming",
            {"cpu": "hamming:scan_cpu", "cuda": "hamming:tiled_cuda"},
            "pattern and text tile in shared memory (Liu et al., OPT-block-thread, Algorithms 5-6)",
        ),
        Algorithm(
            "hamming-packed", "hamming",
            {"cpu": "hamming:pigeonhole_cpu", "cuda": "hamming:packed_cuda"},
            "many patterns per launch over 2-bit packed text, popcount of XOR masks",
        ),
        Algorithm(
            "edit-myers", "edit",
            {"cpu": "edit:myers_cpu", "cuda": "edit:myers_cuda"},
            "k-differences by Myers/Hyyro bit-vector search, multi-word past 64 characters",
        ),
        # Mitani, Ino & Hagihara 2017 (papers/mitani2017-shift-or-inclusive-scan.txt): Shift-Or and
        # Wu-Manber as inclusive scans in the tribrid scheme, and the GBPR segmentation baseline. The
        # CPU paths emulate the GPU kernels' formulation (shiftor/cpu.py). Exact matching serves both
        # metrics at k = 0; all three also search raw byte text (--alphabet bytes).
        Algorithm(
            "exact-shiftor-scan", ("hamming", "edit"),
            {"cpu": "shiftor:exact_scan_cpu", "cuda": "shiftor:exact_scan_cuda"},
            "exact matching (k = 0) by Shift-Or as an inclusive scan, tribrid scheme (Mitani et al., Algorithms 1, 3)",
            max_m=64, max_k=0, alphabets=("dna", "bytes"),
        ),
        Algorithm(
            "edit-wm-scan", "edit",
            {"cpu": "shiftor:wm_scan_cpu", "cuda": "shiftor:wm_scan_cuda"},
            "k-differences by Wu-Manber as inclusive scans, tribrid scheme (Mitani et al., Algorithm 2)",
            max_m=64, max_k=63, alphabets=("dna", "bytes"),
        ),
        Algorithm(
            "edit-wm-segmented", "edit",
            {"cpu": "shiftor:segmented_cpu", "cuda": "shiftor:segmented_cuda"},
            "k-differences by sequential Wu-Manber per thread segment plus halo (GBPR, Mitani et al.'s baseline)",
            max_m=64, max_k=8, alphabets=("dna", "bytes"),
        ),
        # Onsjo & Watanabe 2009 (papers/onsjo2009-bit-parallel-nfa.txt): the Baeza-Yates-Navarro
        # NFA in Hyyro's packing, one block per NFA; the CPU path runs the same word updates (nfa/cpu.py).
        Algorithm(
            "edit-nfa", "edit",
            {"cpu": "nfa:nfa_cpu", "cuda": "nfa:nfa_cuda"},
            "k-differences by the diagonal bit-parallel NFA, one GPU block per pattern (Onsjo & Watanabe 2009)",
            max_k=31,
        ),
        # Ho, Oh & Kim 2017 (papers/ho2017-levenshtein-warp-shuffle.txt): the row-parallel
        # X-matrix DP; the CPU path is a Numba emulation of the same recurrence (rowdp/cpu.py).
        Algorithm(
            "edit-rowdp", "edit",
            {"cpu": "rowdp:rowdp_cpu", "cuda": "rowdp:rowdp_global"},
            "k-differences by the row-parallel X-matrix DP, one thread per text position (Ho et al., PASM_GPU, Algorithm 1)",
        ),
        Algorithm(
            "edit-rowdp-shfl", "edit",
            {"cpu": "rowdp:rowdp_cpu", "cuda": "rowdp:rowdp_shfl"},
            "the row-parallel X-matrix DP with warp shuffles and shared memory (Ho et al., WsPASM_GPUshared, Algorithm 2)",
        ),
        # Nishimura et al. (papers/nishimura-bpbc-smith-waterman.txt): Smith-Waterman scores of many pairs,
        # the screen job's kernels (call shape: kernels/sw/__init__.py).
        Algorithm(
            "sw-bpbc", "sw",
            {"cpu": "sw:bpbc_cpu", "cuda": "sw:bpbc_cuda"},
            "bit-sliced bulk Smith-Waterman, 32/64 pairs per word (Nishimura et al., BPBC)",
            threshold_backends={"cpu": "sw:bpbc_reach_cpu", "cuda": "sw:bpbc_reach_cuda"},
        ),
        Algorithm(
            "sw-wordwise", "sw",
            {"cpu": "sw:wordwise_cpu", "cuda": "sw:wordwise_cuda"},
            "conventional Smith-Waterman, one pair per thread (the paper's wordwise baseline)",
        ),
        # Beyond the paper (issue 26): affine gaps (Gotoh) and Hopper's DPX instructions (sw/dpx.cu).
        Algorithm(
            "sw-gotoh", "sw",
            {"cpu": "sw:gotoh_cpu", "cuda": "sw:gotoh_cuda"},
            "Gotoh's affine-gap Smith-Waterman, one pair per thread, 32-bit cells (linear gaps as O = E)",
            affine_gaps=True,
        ),
        Algorithm(
            "sw-dpx", "sw",
            {"cpu": "sw:dpx_cpu", "cuda": "sw:dpx_cuda"},
            "linear-gap Smith-Waterman on DPX instructions: two pairs per register in 16-bit lanes (on Hopper "
            "half-precision lanes where scores stay under 2,048), query rows in registers, a warp-shuffle "
            "pipeline along the target; saturating pairs rescored by sw-gotoh",
            buffer_backends={"cpu": "sw:dpx_buffer_cpu", "cuda": "sw:dpx_buffer_cuda"},
        ),
        Algorithm(
            "sw-dpx-affine", "sw",
            {"cpu": "sw:dpx_affine_cpu", "cuda": "sw:dpx_affine_cuda"},
            "affine-gap (Gotoh) Smith-Waterman on DPX instructions, 16-bit lanes as sw-dpx (all-vs-all tiles: "
            "E floored at 0, three DPX maxima a cell pair); saturating pairs rescored by sw-gotoh",
            affine_gaps=True,
            buffer_backends={"cpu": "sw:dpx_affine_buffer_cpu", "cuda": "sw:dpx_affine_buffer_cuda"},
        ),
        Algorithm(
            "sw-lanes", "sw",
            {"cpu": "sw:lanes_cpu"},
            "Smith-Waterman across pairs on CPU cores: 32 pairs at once, one per SIMD lane, int16 where the scores "
            "fit (Rognes 2011, SWIPE); linear and affine gaps",
            affine_gaps=True,
            buffer_backends={"cpu": "sw:lanes_buffer_cpu"},
        ),
        # CRISPR off-target sites, PAM candidates first (the crispr job's kernels; call shape:
        # kernels/crispr/__init__.py).
        Algorithm(
            "crispr-pam-first", "crispr",
            {"cpu": "crispr:pam_first_cpu", "cuda": "crispr:pam_first_cuda"},
            "PAM candidates found once per chunk, then every guide checked there (mismatches and bulges)",
        ),
        Algorithm(
            "crispr-vectorized", "crispr",
            {"cpu": "crispr:vectorized_cpu"},
            "bulge-free PAM-first check in NumPy, for small CPU jobs (no Numba start-up)",
            max_m=32,
        ),
    )
}

DEFAULT_ALGORITHM = {
    ("hamming", "cpu"): "hamming-pigeonhole",
    ("edit", "cpu"): "edit-myers",
    ("hamming", "cuda"): "hamming-packed",
    ("edit", "cuda"): "edit-myers",
}
"""What ``auto`` runs when no measured algorithm table is found (planner.py)."""


def choose_algorithm(metric: str, backend: str, algorithm: str = "auto", *, m_max: int = 1, k: int = 0,
                     patterns: int = 1, alphabet: str = "dna") -> tuple[str, str]:
    """The algorithm to run and why: ``algorithm`` checked, or the planner's pick for ``auto``.

    Raises ValueError (one line, for the user) for an unknown algorithm, one
    of another metric or alphabet, or one whose limits the job exceeds.
    """
    if algorithm == "auto":
        from .planner import plan

        choice = plan(metric, backend, m_max, k, patterns,
                      lambda name: name in ALGORITHMS and ALGORITHMS[name].admits(backend, m_max, k, alphabet))
        if choice is not None:
            return choice.algorithm, choice.reason
        if alphabet != "dna":
            return _first_for_alphabet(metric, backend, m_max, k, alphabet)
        fallback = DEFAULT_ALGORITHM[(metric, backend)]
        return fallback, f"{fallback}: the default for {metric} on {backend} (no measured table)"
    known = ALGORITHMS.get(algorithm)
    if known is None:
        raise ValueError(f"unknown algorithm {algorithm!r} (known: auto, {', '.join(search_algorithms())})")
    if not known.serves(metric):
        served = known.metric if isinstance(known.metric, str) else " or ".join(known.metric)
        raise ValueError(f"algorithm {algorithm!r} is for --metric {served}, not {metric}")
    if alphabet not in known.alphabets:
        raise ValueError(f"algorithm {algorithm!r} does not search --alphabet {alphabet} "
                         f"(those that do: {', '.join(_supporting(alphabet))})")
    if backend not in known.backends and "cpu" not in known.backends:
        raise ValueError(f"algorithm {algorithm!r} has no {backend} backend "
                         f"(it has: {', '.join(known.backends)})")
    if not known.admits(backend if backend in known.backends else "cpu", m_max, k, alphabet):
        raise ValueError(f"algorithm {algorithm!r} handles {_limits_text(known)}; this job has m={m_max}, k={k}")
    return algorithm, f"{algorithm}: chosen with --algorithm"


def _limits_text(algorithm: Algorithm) -> str:
    """'patterns up to 64 long and k up to 8' (only the limits it has)."""
    limits = [f"patterns up to {algorithm.max_m} long" if algorithm.max_m is not None else "",
              f"k up to {algorithm.max_k}" if algorithm.max_k is not None else ""]
    return " and ".join(part for part in limits if part) or "any pattern length and k"


def _supporting(alphabet: str) -> list[str]:
    return [name for name, a in ALGORITHMS.items() if alphabet in a.alphabets]


def _first_for_alphabet(metric: str, backend: str, m_max: int, k: int, alphabet: str) -> tuple[str, str]:
    """``auto`` for a non-DNA alphabet without measurements: the first algorithm that can run the job."""
    for prefer_backend in (backend, "cpu"):
        for name, a in ALGORITHMS.items():
            if a.serves(metric) and a.admits(prefer_backend, m_max, k, alphabet):
                return name, f"{name}: the first algorithm for --alphabet {alphabet} that admits the job"
    raise ValueError(f"no algorithm searches --alphabet {alphabet} with --metric {metric}, k={k}, "
                     f"patterns up to {m_max} long (those for {alphabet}: {', '.join(_supporting(alphabet))})")


def search_algorithms() -> list[str]:
    """Names of the search job's algorithms (metric hamming or edit), in registry order."""
    return [name for name, a in ALGORITHMS.items() if any(a.serves(metric) for metric in METRICS)]


def resolve_kernel(algorithm: str, backend: str, threshold: bool = False, buffer: bool = False):
    """The launcher of ``algorithm`` on ``backend`` (its CPU path where it has no kernel for ``backend``);
    with ``threshold``, its flag kernel, with ``buffer`` its kernel on one code buffer (None where it has
    none)."""
    entry = ALGORITHMS[algorithm]
    backends = entry.threshold_backends if threshold else entry.buffer_backends if buffer else entry.backends
    if backends is None:
        return None
    return _resolve(backends.get(backend) or backends["cpu"])


def _resolve(path: str):
    module_name, function_name = path.split(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    return getattr(module, function_name)


MIN_SPLIT = 1 << 16
"""Owned ranges shorter than this are not split further when the device runs out of memory."""


def find_ends(algorithm: str, backend: str, text: np.ndarray, batch, k: int,
              owned_lo: int, owned_hi: int) -> EndHits:
    """Run ``algorithm`` on ``backend`` with the common call shape (module docstring).

    A GPU kernel that runs out of device memory (its hit buffers grow with
    the hits: many patterns, large k) is run again on each half of the owned
    range, recursively: whatever the pattern count and chunk size, a task
    fits the memory the device has free. The halves' hits are exactly the
    whole range's, since a hit belongs to the range holding its last character.
    """
    use_worker_share()
    kernel = resolve_kernel(algorithm, backend)  # no kernel for this backend: its CPU path, on the worker
    return _within_device_memory(kernel, text, batch, k, int(owned_lo), int(owned_hi))


def _within_device_memory(kernel, text, batch, k: int, owned_lo: int, owned_hi: int) -> EndHits:
    try:
        return kernel(text, batch, k, owned_lo, owned_hi)
    except Exception as err:  # noqa: BLE001 (only the device's out-of-memory errors are handled)
        if not out_of_device_memory(err) or owned_hi - owned_lo < 2 * MIN_SPLIT:
            raise
    from .cuda import release_cached_memory

    release_cached_memory()
    middle = (owned_lo + owned_hi) // 2
    halves = [_within_device_memory(kernel, text, batch, k, lo, hi)
              for lo, hi in ((owned_lo, middle), (middle, owned_hi))]
    return EndHits(*(np.concatenate([getattr(h, field) for h in halves]) for field in ("row", "end", "distance")))


def out_of_device_memory(err: BaseException) -> bool:
    """Whether ``err`` is CuPy's out-of-memory error (a pool or a cudaMalloc that failed)."""
    from .cuda import is_out_of_memory

    return is_out_of_memory(err)


