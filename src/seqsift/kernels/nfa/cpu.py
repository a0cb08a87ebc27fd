"""edit-nfa on the CPU: the diagonal-packed bit-parallel NFA, word for word as the GPU runs it.

References (the numbers cited in the comments):

* R. Baeza-Yates, G. Navarro, "Faster approximate string matching",
  Algorithmica 23, 1999 ("BYN"): the NFA by diagonals.
* H. Hyyrö, "Improving the bit-parallel NFA of Baeza-Yates and Navarro for
  approximate string matching", IPL 108(5), 2008: diagonals of k + 1 bits,
  no separator bits.
* M. Onsjö, O. Watanabe, "Implementation of a bit-parallel approximate string
  matching algorithm" (../shared/papers/onsjo2009-bit-parallel-nfa.txt,
  "the paper"): Section 2 (the NFA, Fig. 1 encoding), Section 3 (one CUDA
  block per NFA, Fig. 4 outline, Fig. 5 the update of one word).

The NFA (paper, Section 2). State (r, j), r = 0..k errors, j = 0..m pattern
characters, is active after text T[..t) exactly when D[j][t] <= r, with D the
search DP matrix of ``edit/cpu.py`` (D[0][t] = 0, D[j][0] = j). One text
character moves every state at once by the four rules match / replace /
insert / delete. Active states fill every diagonal i = j - r from its first
active row down, so diagonal i is one k+1-bit unary number (BYN); diagonals
i <= 0 are always fully active (D[j][t] <= j).

Exact d(e) needs the whole last column. BYN keep diagonals 1..m-k only, which
says "some match <= k ends here" but loses the states (r, m), r < k, of the
upper right triangle, and with them ends reached by an insertion after a
better match. We keep diagonals 1..m: the standard (m' - k)(k + 1)-state NFA
of the pattern padded with k characters that match nothing (m' = m + k).
Padded columns j > m never feed a column <= m (no rule decreases j), so every
state of columns <= m is exact, and

    d(e) = min { r <= k : state (r, m) active } ,  (r, m) on diagonal m - r,

with diagonal 0 standing for r = m (so every end has d <= m: rows m <= k
report every end, as the oracle does).

Packing (paper, Section 4): D = floor(32 / (k + 1)) whole diagonals per
32-bit word ("k in [8, 9]: three diagonals per word, [10, 15]: two"). We give
each diagonal a slot of S = floor(32 / D) >= k + 1 bits: the spare bits are
rows k+1..S-1 of an NFA with more rows, which cost nothing (rows only ever
feed rows below them, so rows <= k are unchanged) and leave no unused bits
when D divides 32. Slot widths: k = 0: 1, k = 1: 2, 2: 3, 3: 4, 4: 5, 5: 6,
6-7: 8, 8-9: 10, 10-15: 16; k = 16..31 (past the paper's k < 16) one diagonal
of S = 32 bits per word. Words: ceil(m / D).

Layout of a word (0 = active, as in the paper): slot s holds bits
[sS, sS + S), bit sS + r = row r. The TOP slot (s = D - 1) holds the word's
first diagonal: word w holds diagonals 1 + wD .. wD + D, slot s diagonal
1 + wD + (D - 1 - s). Reading all words as one number with word 0 most
significant, a diagonal's predecessor i - 1 sits S bits higher, as in the
paper's Fig. 1 (``NFA >> (k + 1)`` is the match rule).

The update of one word (paper, Fig. 5; our constants, 0 = active):

    match  x1 = (cw >> S) | (up << (D-1)S) | M[c]      diagonal i-1, same row, if P[i+r-1] ~ c
    close     = (((x1 & ~TOP) + ROW0) ^ (x1 & ~TOP)) & x1
                                                       delete rule inside the diagonal: every row
                                                       below a match turns active (Hyyrö's carry
                                                       trick; clearing each slot's last row keeps
                                                       the carry inside the slot, so no separators)
    replace   = (cw << 1) | ROW0                       same diagonal, row r -> r+1
    insert    = (cw << (S+1)) | (low >> ((D-1)S - 1)) | ROW0
                                                       diagonal i+1 row r -> diagonal i row r+1
    new       = close & replace & insert & USED

with ``up`` the word before (diagonal 0 for word 0: all active, 0) and
``low`` the word after (past the last: all inactive). With D = 1 the shifts
across slots become ``up`` and ``low << 1``. BYN's recurrence in these terms:
f'_i = min(f_i + 1, f_{i+1} + 1, g(f_{i-1}, c)).

Warm-up: a scan may start anywhere with every diagonal inactive (the column
D[j] = j) as long as it starts m + k characters before its first reported
end: an alignment of cost <= k spans at most m + k characters (as in
``edit/cpu.py``).

This module holds the pattern compiler used by both backends
(:func:`compile_rows`) and the Numba scan (:func:`nfa_tasks`), which runs the
same word updates as ``nfa.cu`` one word after the other.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

WORD_BITS = 32
MAX_K = 31
"""Largest k: one diagonal of 32 rows per word."""

MASK32 = np.uint64(0xFFFFFFFF)
U0 = np.uint64(0)
U1 = np.uint64(1)


def slot_bits(k: int) -> int:
    """Bits per diagonal slot S for k: D = floor(32 / (k + 1)) diagonals per word, S = floor(32 / D)."""
    if not 0 <= k <= MAX_K:
        raise ValueError(f"edit-nfa handles 0 <= k <= {MAX_K}, not k = {k}")
    diagonals = WORD_BITS // (k + 1)
    return WORD_BITS // diagonals


def diagonals_per_word(k: int) -> int:
    return WORD_BITS // slot_bits(k)


def words_needed(m, k: int):
    """State words of a row of length m (diagonals 1..m, D per word); works on arrays."""
    d = diagonals_per_word(k)
    return (np.maximum(m, 1) + d - 1) // d


def layout_constants(slot: int) -> tuple[int, int, int]:
    """(ROW0, TOP, USED): the row-0 bit of every slot, the last-row bit of every slot, the used bits."""
    per_word = WORD_BITS // slot
    row0 = sum(1 << (s * slot) for s in range(per_word))
    top = row0 << (slot - 1)
    used = (1 << (per_word * slot)) - 1
    return row0, top, used


def compile_rows(masks: np.ndarray, lengths: np.ndarray, k: int, words: int) -> tuple[np.ndarray, np.ndarray]:
    """The compiled pattern of every row, ``words`` state words each (rows may need fewer).

    Returns ``peq`` (rows, 5, words) uint32: the paper's M[x] per text code
    x, a 1 bit (no match) at row r of diagonal i unless column j = i + r <= m
    and pattern position j - 1 matches x; code 4 (N) is all ones: it matches
    nothing. Unused bits are 0. And ``final`` (rows, words) uint32: the bits
    of the last-column states (r, m), r = 0..min(k, m - 1), on diagonal m - r.
    """
    slot = slot_bits(k)
    per_word = WORD_BITS // slot
    _, _, used = layout_constants(slot)
    rows = masks.shape[0]
    lengths = np.asarray(lengths, dtype=np.int64)
    w = np.arange(words)[:, None, None]
    s = np.arange(per_word)[None, :, None]
    r = np.arange(slot)[None, None, :]
    column = (1 + w * per_word + (per_word - 1 - s) + r).reshape(-1)  # j = i + r of each bit, 1-based
    bit = np.broadcast_to(s * slot + r, (words, per_word, slot)).reshape(-1).astype(np.uint64)
    peq = np.zeros((rows, 5, words), dtype=np.uint32)
    final = np.zeros((rows, words), dtype=np.uint32)
    # padded[:, j] = mask of pattern position j - 1 (0, matching nothing, past the row's end)
    padded = np.zeros((rows, int(column.max()) + 1), dtype=np.uint8)
    copied = min(masks.shape[1], padded.shape[1] - 1)
    padded[:, 1:copied + 1] = masks[:, :copied]
    chunk = max(1, (1 << 22) // column.size)
    for first in range(0, rows, chunk):
        part = slice(first, min(rows, first + chunk))
        inside = column[None, :] <= lengths[part, None]
        for code in range(4):
            match = inside & (((padded[part][:, column] >> code) & 1) == 1)
            no_match_bits = np.where(match, U0, U1 << bit[None, :])
            # Bits of one word are distinct, so their sum is their OR.
            peq[part, code, :] = no_match_bits.reshape(-1, words, per_word * slot).sum(axis=2).astype(np.uint32)
    peq[:, 4, :] = used
    for row in range(rows):
        m = int(lengths[row])
        for errors in range(min(k, m - 1) + 1):
            i = m - errors                                        # diagonal of state (errors, m)
            word, position = divmod(i - 1, per_word)
            final[row, word] |= np.uint32(1 << ((per_word - 1 - position) * slot + errors))
    return peq, final


@njit(cache=True, inline="always")
def nfa_step(cw, up, low, cm, slot, per_word, row0, top, used):
    """One text character for one state word (module docstring; nfa.cu's ``nfa_step``)."""
    if per_word == 1:
        match = up | cm
        insert = ((low << U1) & MASK32) | row0
    else:
        match = (cw >> np.uint64(slot)) | ((up << np.uint64((per_word - 1) * slot)) & MASK32) | cm
        insert = (((cw << np.uint64(slot + 1)) & MASK32) | (low >> np.uint64((per_word - 1) * slot - 1))
                  | row0)
    cleared = match & ~top & MASK32
    close = (((cleared + row0) & MASK32) ^ cleared) & match
    replace = ((cw << U1) & MASK32) | row0
    return close & replace & insert & used


@njit(cache=True)
def _scan(text, peq, final, words, slot, m, k, first_end, stop, row, out_row, out_end, out_dist, base, cap):
    """Ends e - 1 in [first_end, stop) of one row; returns the hit count (buffered protocol)."""
    per_word = 32 // slot
    row0 = U0
    for s in range(per_word):
        row0 |= U1 << np.uint64(s * slot)
    top = row0 << np.uint64(slot - 1)
    used = MASK32 if per_word * slot == 32 else (U1 << np.uint64(per_word * slot)) - U1
    # state[1 + w] = word w; state[0] = diagonal 0 (always active), state[words + 1] = past the end.
    state = np.empty(words + 2, np.uint64)
    new = np.empty(words + 2, np.uint64)
    state[0] = U0
    new[0] = U0
    state[words + 1] = used
    new[words + 1] = used
    for w in range(words):
        state[w + 1] = used                   # every diagonal inactive: the column D[j] = j
    none = np.int64(m) if m <= k else k + 1   # diagonal 0 always gives d <= m
    found = 0
    for p in range(max(np.int64(0), first_end - m - k), stop):
        c = text[p]
        best = none
        for w in range(words):
            word = nfa_step(state[w + 1], state[w], state[w + 2], np.uint64(peq[c, w]),
                            slot, per_word, row0, top, used)
            new[w + 1] = word
            active_final = ~word & np.uint64(final[w]) & MASK32
            if active_final != U0:
                # The lowest active final bit is the word's highest diagonal, i.e. its smallest r.
                low_bit = np.int64(0)
                while ((active_final >> np.uint64(low_bit)) & U1) == U0:
                    low_bit += 1
                diagonal = 1 + w * per_word + (per_word - 1 - low_bit // slot)
                best = min(best, np.int64(m) - diagonal)
        state, new = new, state
        if best <= k and p >= first_end:
            if found < cap:
                out_row[base + found] = row
                out_end[base + found] = p + 1
                out_dist[base + found] = best
            found += 1
    return found


@njit(parallel=True, cache=True)
def nfa_tasks(task_ids, out_offsets, caps, out_row, out_end, out_dist,
              text, peq, final, words, slot, lengths, rows, k, task_index, task_lo, task_hi):
    """Buffered-task kernel (driver.run_buffered_tasks): task t scans compiled row
    ``task_index[t]`` (batch row ``rows[...]``) for the ends e with e - 1 in [task_lo[t], task_hi[t])."""
    counts = np.zeros(task_ids.shape[0], np.int64)
    for i in prange(task_ids.shape[0]):
        t = task_ids[i]
        j = task_index[t]
        counts[i] = _scan(text, peq[j], final[j], words[j], slot, np.int64(lengths[j]), k,
                          task_lo[t], task_hi[t], rows[j], out_row, out_end, out_dist,
                          out_offsets[i], caps[i])
    return counts
