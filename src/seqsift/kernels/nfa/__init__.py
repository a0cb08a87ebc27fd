"""edit-nfa: the diagonal bit-parallel NFA (Baeza-Yates–Navarro, Hyyrö's packing), one GPU block per NFA.

    nfa_cuda(text, batch, k, owned_lo, owned_hi) -> EndHits   (kernels/__init__.py call shape)
    nfa_cpu(text, batch, k, owned_lo, owned_hi)  -> EndHits

Onsjö & Watanabe 2009 (../shared/papers/onsjo2009-bit-parallel-nfa.txt):
the NFA of one pattern row is spread over the 32-bit words of one thread
block, each block scans its own text segment (re-reading m + k characters
before it), the compiled pattern masks sit in shared memory, and the text is
2-bit packed (plus a bit plane for N). Each thread keeps 1, 2 or 4 of the
NFA's words in registers (:func:`words_per_thread`) and exchanges its edge
words through shared memory, one barrier per text character. The algorithm
and its word layout are described in ``cpu.py``; the CUDA kernel is
``nfa.cu``, launched by ``cuda.py``; bench_nfa.py measures it on the paper's experiment.

Limits, and what happens outside them (every row gets exact hits):

* k <= 31 (``MAX_K``; the paper stops at k < 16, two diagonals per word; we
  also run one 32-row diagonal per word). The registry declares
  ``max_k = 31``, so ``choose_algorithm`` refuses a larger k with a clear
  message; called directly with k > 31, both launchers raise ValueError.
* m: any length on the CPU. On the GPU a row needs ceil(m / D) words, D =
  floor(32 / (k + 1)) diagonals per word, on at most ``MAX_THREADS`` threads
  of at most 4 words: up to ``MAX_WORDS`` = 4,096 words (m <= 8,192 at k =
  10..15, more at smaller k, 4,096 at k = 16..31). Longer rows are routed to
  the edit family's ``myers_cuda`` inside :func:`nfa_cuda` (so ``max_m`` is not declared).
  Rows shorter than 64 (down to m = 1) and rows with m <= k run in the NFA
  like any other.
"""
from __future__ import annotations

import numpy as np

from .. import EndHits
from . import cpu as _cpu
from ..driver import (prepare_inputs, run_buffered_tasks,
                      split_rows_over_text)

MAX_K = _cpu.MAX_K


# ---------------------------------------------------------------------------
# CPU: the Numba emulation (cpu.py)
# ---------------------------------------------------------------------------

def nfa_cpu(text, batch, k, owned_lo, owned_hi) -> EndHits:
    """Every (row, end, d(end)) with d(end) <= k and end - 1 in [owned_lo, owned_hi), by the NFA."""
    text, masks, lengths, lo, hi = prepare_inputs(text, batch, owned_lo, owned_hi)
    if k < 0 or hi <= lo:
        return EndHits.empty()
    rows = np.arange(lengths.size, dtype=np.int64)  # every row: empty patterns are refused when read
    row_lengths = lengths.astype(np.int64)
    words = _cpu.words_needed(row_lengths, k).astype(np.int64)
    peq, final = _cpu.compile_rows(masks, row_lengths, k, int(words.max()))
    overlap = int(row_lengths.max()) + k
    task_index, task_lo, task_hi = split_rows_over_text(rows, lo, hi, min_span=max(4096, 8 * overlap))
    return run_buffered_tasks(
        _cpu.nfa_tasks, len(task_index),
        (text, peq, final, words, np.int64(_cpu.slot_bits(k)), row_lengths, rows,
         np.int64(k), task_index, task_lo, task_hi))


# The CUDA launcher (cuda.py; CuPy is imported only when it runs).
from .cuda import nfa_cuda  # noqa: E402
