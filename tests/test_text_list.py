"""TextList (a reference's names as one text) against the tuple of strs it stands for, and the names
found on header bytes against Python's own ``str.split`` (issue 27, goal 5)."""
from __future__ import annotations

import pickle
import random

import numpy as np
import pyarrow as pa
import pytest

from seqsift.io.fasta_scan import HeaderProblem, first_words, names_and_headers
from seqsift.io.text_list import TextList
from seqsift.runtime.columns import name_array
from seqsift.runtime.job import records_sha256

# Every byte str.split() takes for whitespace in ASCII, and a few that it does not.
_BLANKS = " \t\x0b\x0c\r\x1c\x1d\x1e\x1f"
_WORD = "ACGTacgt_|.:=-0123456789\x01\x7f"


def _header(rng: random.Random, unicode: bool) -> str:
    pieces = []
    for _ in range(rng.randint(1, 4)):
        pieces.append("".join(rng.choice(_BLANKS) for _ in range(rng.choice([0, 0, 0, 1, 2]))))
        pieces.append("".join(rng.choice(_WORD + ("é\u00a0\u2003漢" if unicode else "")) for _ in range(rng.randint(1, 6))))
    pieces.append("".join(rng.choice(_BLANKS) for _ in range(rng.choice([0, 0, 1]))))
    return "".join(pieces)


@pytest.mark.parametrize("seed", range(40))
def test_names_are_the_first_word_python_splits(seed):
    rng = random.Random(seed)
    unicode = seed % 4 == 3
    lines = [_header(rng, unicode) for _ in range(rng.randint(1, 60))]
    expected_names = [line.split()[0] for line in lines if line.split()]
    chunks = [lines[i:i + 7] for i in range(0, len(lines), 7)]   # as the scan's blocks hand them over
    texts = ["\n".join(chunk).encode("utf-8") for chunk in chunks]
    if len(expected_names) != len(lines):
        with pytest.raises(HeaderProblem):
            names_and_headers(texts, "strict")
        return
    names, headers = names_and_headers(texts, "strict")
    assert list(names) == expected_names
    assert list(headers) == lines
    assert names == tuple(expected_names) and headers == lines


def test_a_line_without_a_word_is_no_name():
    assert first_words(b"chr1\n \t\nchr3") is None
    assert first_words(b"") is None
    assert first_words("chr1 é".encode()) is None   # not ASCII: the caller decodes it
    with pytest.raises(HeaderProblem):
        names_and_headers([b"chr1 x\n\x0b"], "strict")


def test_names_of_headers_without_descriptions_are_the_headers():
    names, headers = first_words(b"a\nbb\nccc")
    assert names is headers and list(names) == ["a", "bb", "ccc"]


def test_leading_blanks_are_not_part_of_the_name():
    names, headers = first_words(b"  chr1 desc\n\tchr2\nchr3  \n\x1cchr4\x1d x")
    assert list(names) == ["chr1", "chr2", "chr3", "chr4"]
    assert list(headers) == ["  chr1 desc", "\tchr2", "chr3  ", "\x1cchr4\x1d x"]


def test_a_leading_blank_is_not_part_of_a_name_without_description():
    """A header of its name alone after blanks ('> chr1'): the name without them, as samtools names it,
    and the header line kept (it is more than the name)."""
    names, headers = first_words(b" x3\nb")
    assert list(names) == ["x3", "b"] and list(headers) == [" x3", "b"]


def _strings(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice("acgtN_é漢 ") for _ in range(rng.randint(1, 8))) for _ in range(count)]


@pytest.mark.parametrize("count", [0, 1, 2, 97])
def test_a_text_list_behaves_as_the_tuple_of_its_strings(count):
    rng = random.Random(count)
    strings = _strings(rng, count)
    listed = TextList.of(strings)
    assert len(listed) == count and bool(listed) == bool(strings)
    assert list(listed) == strings and tuple(listed) == tuple(strings)
    assert listed == tuple(strings) and listed == strings and listed == TextList.of(tuple(strings))
    assert listed != tuple(strings) + ("x",)
    for i in range(-count, count):
        assert listed[i] == strings[i]
    for i in (count, -count - 1):
        with pytest.raises(IndexError):
            listed[i]
    if count:
        assert listed[np.int64(count - 1)] == strings[-1]
        assert listed[1:5] == strings[1:5] and listed[::-3] == strings[::-3]
        probe = strings[count // 2]
        assert probe in listed and listed.index(probe) == strings.index(probe)
        assert listed.count(probe) == strings.count(probe)
        assert probe[:-1] + "\x00" not in listed and probe + "\n" not in listed and 3 not in listed
    assert list(np.asarray(listed, dtype=object)) == strings
    assert pickle.loads(pickle.dumps(listed)) == listed
    assert listed.joined() == "\n".join(strings).encode("utf-8")
    assert records_sha256(listed, np.arange(count)) == records_sha256(strings, np.arange(count))
    offsets, data = listed.packed()
    assert [data[a:b].tobytes().decode("utf-8") for a, b in zip(offsets[:-1], offsets[1:])] == strings
    for large in (True, False):
        assert name_array(listed, large).to_pylist() == strings
        assert name_array(listed, large).type == (pa.large_string() if large else pa.string())
    assert TextList.of(listed) is listed


def test_lists_concatenate_in_order():
    rng = random.Random(7)
    groups = [_strings(rng, n) for n in (3, 0, 1, 12)]
    joined = TextList.concatenate(TextList.of(g) if i % 2 else g for i, g in enumerate(groups))
    assert list(joined) == [s for g in groups for s in g]
    assert len(TextList.concatenate([])) == 0


@pytest.mark.parametrize("count", [0, 1, 2, 97])
def test_a_part_is_the_slice_of_the_strings(count):
    strings = _strings(random.Random(count + 100), count)
    listed = TextList.of(strings)
    for first in range(count + 1):
        for stop in range(first, count + 1, max(1, count // 9)):
            part = listed.part(first, stop)
            assert isinstance(part, TextList) and list(part) == strings[first:stop]
            assert part.joined() == "\n".join(strings[first:stop]).encode("utf-8")


def test_a_string_with_a_newline_is_refused():
    with pytest.raises(ValueError):
        TextList.of(["a", "b\nc"])
    with pytest.raises(ValueError):
        TextList.of_lines(b"a\nb")


@pytest.mark.parametrize("seed", range(30))
def test_all_distinct_says_what_a_set_says(seed):
    """Names with and without a repeat, of 0 to 80 bytes (past the hashed width: the set decides),
    with bytes that the hash's zero padding could confuse (a trailing NUL) and non-ASCII letters."""
    rng = random.Random(seed)
    longest = rng.choice([3, 8, 9, 64, 80])
    strings = ["".join(rng.choice("ab\x00é") for _ in range(rng.randint(0, longest))) for _ in range(rng.randint(0, 300))]
    strings = list(dict.fromkeys(strings))            # distinct
    if seed % 2 and strings:
        strings.insert(rng.randrange(len(strings) + 1), rng.choice(strings))   # one repeat
    listed = TextList.of(strings)
    assert listed.all_distinct() == (len(set(strings)) == len(strings))
    # hashed in parts of different widths, as the scan's blocks hash their own names
    cuts = sorted(rng.sample(range(len(strings) + 1), min(3, len(strings) + 1)))
    parts = [listed.part(a, b) for a, b in zip([0, *cuts], [*cuts, len(strings)])]
    hashes = [part.hashes() for part in parts]
    if all(h is not None for h in hashes):
        assert np.array_equal(np.concatenate(hashes), listed.hashes())
        assert listed.all_distinct(np.concatenate(hashes)) == (len(set(strings)) == len(strings))


def test_all_distinct_is_exact_when_every_hash_collides(monkeypatch):
    """A multiplier of 0 hashes every string alike: the set must settle it both ways."""
    from seqsift.io import text_list
    monkeypatch.setattr(text_list, "_MIX", np.uint64(0))
    assert TextList.of(["chr1", "chr2", "chr10"]).all_distinct()
    assert not TextList.of(["chr1", "chr2", "chr1"]).all_distinct()
