"""DNA encodings shared by every kernel and backend.

Reference text is encoded one byte per base into *text codes*::

    A/a -> 0   C/c -> 1   G/g -> 2   T/t -> 3   anything else -> 4 (NEVER)

Code 4 (``NEVER``) stands for N, IUPAC codes, gaps and any other byte: by the
hit contract (DESIGN.md) such a reference base matches nothing.

Pattern bases are encoded into 4-bit *masks* of the text codes they match::

    A=0b0001  C=0b0010  G=0b0100  T=0b1000  R=A|G ... N=0b1111

A pattern position with mask ``mask`` matches a text code ``c`` exactly when
``(mask >> c) & 1``; since masks never have bit 4 set, ``NEVER`` matches no
pattern base, ``N`` in a pattern included.
"""
from __future__ import annotations

import numpy as np

NEVER = 4
"""Text code of every reference byte that is not A, C, G or T."""

_A, _C, _G, _T = 1, 2, 4, 8
IUPAC_MASKS: dict[str, int] = {
    "A": _A, "C": _C, "G": _G, "T": _T, "U": _T,
    "R": _A | _G, "Y": _C | _T, "S": _C | _G, "W": _A | _T,
    "K": _G | _T, "M": _A | _C,
    "B": _C | _G | _T, "D": _A | _G | _T, "H": _A | _C | _T, "V": _A | _C | _G,
    "N": _A | _C | _G | _T,
}
"""Pattern letter -> mask of matching text codes (upper case; lower case is the same)."""

_TEXT_CODES = np.full(256, NEVER, dtype=np.uint8)
for _i, _base in enumerate("ACGT"):
    _TEXT_CODES[ord(_base)] = _i
    _TEXT_CODES[ord(_base.lower())] = _i

_PATTERN_MASKS = np.zeros(256, dtype=np.uint8)  # 0 = not an IUPAC letter
for _letter, _mask in IUPAC_MASKS.items():
    _PATTERN_MASKS[ord(_letter)] = _mask
    _PATTERN_MASKS[ord(_letter.lower())] = _mask

# Complement of a mask swaps A<->T and C<->G, i.e. reverses its four bits.
_COMPLEMENT_MASK = np.array(
    [((m & 1) << 3) | ((m & 2) << 1) | ((m & 4) >> 1) | ((m & 8) >> 3) for m in range(16)],
    dtype=np.uint8,
)


TEXT_CODE_TABLE = _TEXT_CODES.tobytes()
"""The same mapping as a ``bytes.translate`` table: ``raw.translate(TEXT_CODE_TABLE, b"\\r\\n")``
encodes and drops line breaks in one pass, several times faster than NumPy indexing."""


TEXT_CODE_ARRAY = _TEXT_CODES
"""The same mapping as a uint8 array of 256 codes (read-only use): for kernels that encode as they read."""

IDENTITY_CODES = np.arange(256, dtype=np.uint8)
"""A code table that keeps every byte: for a text that is already text codes, or raw bytes matched as
bytes (``--alphabet bytes``)."""


def encode_text(sequence: bytes | str | np.ndarray) -> np.ndarray:
    """Reference bases -> text codes (uint8, one per base; read-only for bytes or text). Bytes and
    one-dimensional byte arrays go through ``bytes.translate``, about 4x NumPy's table lookup."""
    if isinstance(sequence, str):
        sequence = sequence.encode("ascii", errors="replace")
    if isinstance(sequence, np.ndarray) and sequence.dtype == np.uint8 and sequence.ndim == 1:   # writable, as given
        return np.frombuffer(bytearray(np.ascontiguousarray(sequence).data).translate(TEXT_CODE_TABLE), dtype=np.uint8)
    if isinstance(sequence, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(sequence).translate(TEXT_CODE_TABLE), dtype=np.uint8)
    return _TEXT_CODES[sequence]


def pattern_masks(sequence: str) -> np.ndarray:
    """Pattern letters -> IUPAC masks (uint8). A byte that is no IUPAC letter gives 0."""
    return _PATTERN_MASKS[np.frombuffer(sequence.encode("ascii", errors="replace"), dtype=np.uint8)]


def invalid_pattern_letters(sequence: str) -> list[str]:
    """Letters of ``sequence`` that are not IUPAC codes, in order of first appearance."""
    masks = pattern_masks(sequence)
    seen: dict[str, None] = {}
    for position in np.flatnonzero(masks == 0):
        seen.setdefault(sequence[position], None)
    return list(seen)


def reverse_complement_masks(masks: np.ndarray) -> np.ndarray:
    """Masks of the reverse complement of a pattern given by its masks."""
    return _COMPLEMENT_MASK[masks[::-1]]


def pattern_mask_rows(sequences: list[str] | tuple[str, ...], literal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Many patterns at once: ((rows, m_max) uint8 masks, 0 beyond each row's end; (rows,) int32 lengths).

    The same masks as :func:`pattern_masks` row by row, built from one joined
    byte string with one table lookup (no Python loop per pattern). With
    ``literal`` the rows hold the patterns' bytes as they are (byte patterns).
    """
    encoded = [s.encode("latin-1" if literal else "ascii", errors="replace") for s in sequences]
    lengths = np.fromiter(map(len, encoded), dtype=np.int32, count=len(encoded))
    joined = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    rows = np.zeros((len(encoded), int(lengths.max(initial=1))), dtype=np.uint8)
    rows[np.arange(rows.shape[1])[None, :] < lengths[:, None]] = joined if literal else _PATTERN_MASKS[joined]
    return rows, lengths


def reverse_complement_mask_rows(rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`reverse_complement_masks` of every row of ``pattern_mask_rows``'s output, 0 beyond each row's end."""
    positions = np.arange(rows.shape[1])[None, :]
    valid = positions < lengths[:, None]
    mirrored = np.take_along_axis(rows, np.where(valid, lengths[:, None] - 1 - positions, 0), axis=1)
    return np.where(valid, _COMPLEMENT_MASK[mirrored], np.uint8(0))


def holds_only(data: np.ndarray | bytes, allowed: bytes) -> bool:
    """Whether every byte of ``data`` is one of ``allowed``: nothing is left once those are deleted
    (``bytes.translate``, about 4x a NumPy table lookup and reduction over the same bytes)."""
    return not bytes(data).translate(None, allowed)


_NUCLEOTIDE_BYTES = b"ACGTUNacgtun"
_NUCLEOTIDE_LETTERS = np.zeros(256, dtype=bool)
_NUCLEOTIDE_LETTERS[np.frombuffer(_NUCLEOTIDE_BYTES, dtype=np.uint8)] = True
_LETTERS = np.zeros(256, dtype=bool)
_LETTERS[ord("A"):ord("Z") + 1] = True
_LETTERS[ord("a"):ord("z") + 1] = True


def mostly_not_nucleotides(data: np.ndarray, offsets: np.ndarray) -> int | None:
    """The first record (``data[offsets[k]:offsets[k + 1]]``) whose letters are mostly not A, C, G, T, U or N
    (case-insensitive), or None.

    This tells protein from DNA: ambiguity codes are rare in real DNA, while
    14 of the 20 amino-acid letters are IUPAC nucleotide codes too, so "mostly
    not IUPAC" would let protein through; A, C, G, T and N make up about a
    quarter of a protein's letters. Records without letters pass.
    """
    data = np.asarray(data, dtype=np.uint8)
    offsets = np.asarray(offsets, dtype=np.int64)
    if data.size == 0 or len(offsets) < 2 or holds_only(data, _NUCLEOTIDE_BYTES):   # all nucleotides: the usual case
        return None
    starts = np.minimum(offsets[:-1], data.size - 1)
    nucleotides = np.add.reduceat(_NUCLEOTIDE_LETTERS[data].astype(np.int64), starts)
    letters = np.add.reduceat(_LETTERS[data].astype(np.int64), starts)
    empty = offsets[1:] == offsets[:-1]
    bad = np.flatnonzero(~empty & (letters > 0) & (2 * nucleotides < letters))
    return int(bad[0]) if bad.size else None
