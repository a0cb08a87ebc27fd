"""A reference's record names (or header lines) held as one text, not a Python str each.

A reference of a million records had a million name strs and, where its
headers carry descriptions, a million header strs: each built on the first
open (a regular expression, a split), put in a set, joined again for the
``.fai``, the genome cache, a job's digest and every Arrow name column.
:class:`TextList` keeps them as the bytes those all start from, one UTF-8
text with each string followed by a newline, and the newlines' positions:

* ``text[:-1]`` is ``"\\n".join(strings).encode()`` (the ``.fai`` and the genome cache
  write it, :func:`seqsift.runtime.job.records_sha256` hashes it);
* :meth:`packed` is the text without its newlines plus where each string starts:
  an Arrow string array's two buffers, so a job's name column is built without a str per record;
* a name is decoded only when asked for (``names[i]``, an error message), and all
  of them at once (one ``decode`` and one ``split``) only where a caller iterates.

It is a read-only ``Sequence[str]``: ``len``, indexing, slicing (a list),
iteration, ``in``, ``index`` and ``==`` (against another TextList, a tuple or a
list) behave as on the tuple of strs it stands for. Strings hold no newline
(record names and header lines never do).
"""
from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["TextList"]

_NEWLINE = ord("\n")
_HASHED_BYTES = 64   # TextList.all_distinct hashes strings up to this long (record names are)
_MIX = np.uint64(0x9E3779B97F4A7C15)   # an odd 64-bit multiplier (2^64 / the golden ratio)


class TextList(Sequence):
    """Strings as one UTF-8 ``text`` (each followed by ``\\n``) and ``ends``, the int64 position of
    each string's newline in it."""

    __slots__ = ("text", "ends")

    def __init__(self, text: bytes, ends: np.ndarray):
        self.text = bytes(text)
        self.ends = np.asarray(ends, dtype=np.int64)

    @classmethod
    def of(cls, strings: Iterable[str]) -> "TextList":
        """The TextList of ``strings`` (a TextList as it is); ValueError if one holds a newline."""
        if isinstance(strings, TextList):
            return strings
        strings = list(strings)
        text = ("\n".join(strings) + "\n").encode("utf-8") if strings else b""
        made = cls.of_lines(text)
        if len(made) != len(strings):
            raise ValueError("a string of a TextList holds a newline")
        return made

    @classmethod
    def of_lines(cls, text: bytes) -> "TextList":
        """The lines of ``text``, which is empty or ends with a newline."""
        if text and text[-1] != _NEWLINE:
            raise ValueError("a TextList's text must be empty or end with a newline")
        return cls(text, np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == _NEWLINE))

    @classmethod
    def concatenate(cls, lists: Iterable[Sequence[str]]) -> "TextList":
        """The strings of every list in ``lists``, in order, as one TextList."""
        parts = [cls.of(strings) for strings in lists]
        if len(parts) == 1:
            return parts[0]
        sizes = np.cumsum([0] + [len(part.text) for part in parts[:-1]])
        ends = [part.ends + size for part, size in zip(parts, sizes)]
        return cls(b"".join(part.text for part in parts), np.concatenate(ends) if ends else np.zeros(0, np.int64))

    # --- the sequence of strs ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.strings()[index]
        i = operator.index(index)
        count = len(self.ends)
        if i < 0:
            i += count
        if not 0 <= i < count:
            raise IndexError(f"TextList index {index} out of range ({count} strings)")
        start = int(self.ends[i - 1]) + 1 if i else 0
        return self.text[start:int(self.ends[i])].decode("utf-8")

    def part(self, first: int, stop: int) -> "TextList":
        """Strings ``[first, stop)`` as a TextList (``self[first:stop]`` decodes them into a list)."""
        start = int(self.ends[first - 1]) + 1 if first else 0
        end = int(self.ends[stop - 1]) + 1 if stop > first else start
        return TextList(self.text[start:end], self.ends[first:stop] - start)

    def strings(self) -> list[str]:
        """Every string, decoded at once."""
        return self.text.decode("utf-8").split("\n")[:-1]

    def __iter__(self):
        return iter(self.strings())

    def __contains__(self, value) -> bool:
        """Whether ``value`` is one of the strings: a whole line of the text."""
        if not isinstance(value, str) or "\n" in value:
            return False
        return b"\n" + value.encode("utf-8") + b"\n" in b"\n" + self.text

    def index(self, value, start: int = 0, stop: int | None = None) -> int:
        return self.strings().index(value, start, len(self) if stop is None else stop)

    def count(self, value) -> int:
        return self.strings().count(value)

    def __array__(self, dtype=None, copy=None):
        """An object array of the strs (NumPy would otherwise index the strings one by one)."""
        array = np.empty(len(self), dtype=object)
        array[:] = self.strings()
        return array if dtype is None else array.astype(dtype)

    def __eq__(self, other) -> bool:
        if isinstance(other, TextList):
            return self.text == other.text
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and self.strings() == list(other)
        return NotImplemented

    __hash__ = None  # mutable-looking like a list: compared by value, never a dict key

    def __repr__(self) -> str:
        more = f", ... ({len(self):,} strings)" if len(self) > 3 else ""
        return f"TextList({', '.join(map(repr, self.strings()[:3]))}{more})"

    def __reduce__(self):
        return TextList, (self.text, self.ends)

    # --- the whole text, for writers --------------------------------------------------------------

    def joined(self) -> bytes:
        """``"\\n".join(self).encode()``: the strings joined by newlines, without the last one."""
        return self.text[:-1]

    def all_distinct(self, hashes: np.ndarray | None = None) -> bool:
        """Whether no string is there twice: what ``len(set(self)) == len(self)`` says, for a million
        record names in a tenth of the time, without a str or bytes object per string.

        The strings' :meth:`hashes` (or ``hashes``, theirs found beforehand, in parts) are sorted:
        distinct hashes mean distinct strings. Equal hashes (a string twice, or by chance) and strings
        longer than :data:`_HASHED_BYTES` are settled by the set of the strings' bytes, so the answer
        is always exact.
        """
        count = len(self.ends)
        if count < 2:
            return True
        if hashes is None:
            hashes = self.hashes()
        if hashes is not None:
            hashes = np.sort(hashes)
            if not (hashes[1:] == hashes[:-1]).any():
                return True
        return len(set(self.joined().split(b"\n"))) == count

    def hashes(self) -> np.ndarray | None:
        """A 64-bit hash of each string (uint64): its length, mixed with each of its 8-byte words in turn
        (the last one zero-padded); None where a string is longer than :data:`_HASHED_BYTES`. A string's
        hash depends on it alone, not on the list's other strings: the hashes of lists found apart
        (the scan's blocks) are those of the lists joined."""
        count = len(self.ends)
        if not count:
            return np.zeros(0, np.uint64)
        offsets, data = self.packed()
        widths = np.diff(offsets)
        own_words = -(-widths // 8)
        words = int(own_words.max())
        if words * 8 > _HASHED_BYTES:
            return None
        padded = np.zeros((count, words * 8), np.uint8)
        padded[np.arange(words * 8) < widths[:, None]] = data
        hashes = widths.astype(np.uint64)
        with np.errstate(over="ignore"):
            for place, word in enumerate(padded.view(np.uint64).T):
                mixed = (hashes ^ word) * _MIX
                mixed ^= mixed >> np.uint64(29)
                hashes = mixed if place < own_words.min() else np.where(own_words > place, mixed, hashes)
        return hashes

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, data): the strings' UTF-8 bytes back to back (``data``, uint8) and where each
        starts (``offsets``, int64, one more than there are strings): string i is
        ``data[offsets[i]:offsets[i + 1]]``, as an Arrow string array's buffers hold it."""
        count = len(self.ends)
        data = np.frombuffer(self.text.replace(b"\n", b""), dtype=np.uint8)
        offsets = np.empty(count + 1, dtype=np.int64)
        offsets[0] = 0
        offsets[1:] = self.ends - np.arange(count)   # string i ends where its newline was, less i newlines before
        return offsets, data
