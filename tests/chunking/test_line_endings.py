"""A lone ``\\r`` (old Mac OS line endings) breaks lines as ``\\n`` does, in every chunker that cuts at
lines, with and without the compiled helper; offsets stay offsets into the text as given."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.chunking import get_chunker, speedups
from chunkwise.chunking.lines import first_line
from chunkwise.chunking.sentences import last_sentence_end, sentence_ends, split_sentences
from chunkwise.document import Document
from tests.support.contract import hostile_text

LINE_CHUNKERS = ("recursive", "sentence", "structure")
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NATIVE = speedups.native


@contextmanager
def compiled(native: bool) -> Iterator[None]:
    """Run the block with the compiled helper (where it is built) or without it."""
    speedups.native = NATIVE if native else None
    try:
        yield
    finally:
        speedups.native = NATIVE


def spans(name: str, text: str, max_size: int) -> list[tuple[int, int]]:
    chunks = get_chunker(name, max_size=max_size).chunk(Document(id="d", text=text))
    assert all(text[c.start : c.end] == c.text for c in chunks)
    return [(c.start, c.end) for c in chunks]


@pytest.mark.parametrize(
    ("name", "text", "max_size", "expected"),
    [
        ("sentence", "Title\r\rBody text here. More.", 20, ["Title", "Body text here.", "More."]),
        ("sentence", "Steps\r- Open it\r- Close it", 12, ["Steps", "- Open it", "- Close it"]),
        ("recursive", "Some words here\rmore words. Other", 30, ["Some words here", "more words. Other"]),
        ("recursive", "Para one is here.\r\rPara two, x.\ry", 32, ["Para one is here.", "Para two, x.\ry"]),
        ("structure", "Para one\r \rPara two", 12, ["Para one", "Para two"]),
    ],
)
@pytest.mark.parametrize("native", [True, False], ids=["compiled", "python"])
def test_a_lone_carriage_return_breaks_the_line(
    name: str, text: str, max_size: int, expected: list[str], native: bool
) -> None:
    with compiled(native):
        assert [text[a:b] for a, b in spans(name, text, max_size)] == expected


_NO_CR = hostile_text.filter(lambda text: "\r" not in text)


@pytest.mark.parametrize("name", LINE_CHUNKERS)
@pytest.mark.parametrize("native", [True, False], ids=["compiled", "python"])
@PROPERTY
@given(text=_NO_CR, max_size=st.integers(1, 300))
def test_lone_carriage_returns_cut_where_line_feeds_cut(
    name: str, native: bool, text: str, max_size: int
) -> None:
    with compiled(native):
        assert spans(name, text.replace("\n", "\r"), max_size) == spans(name, text, max_size)


@PROPERTY
@given(text=_NO_CR)
def test_sentences_end_at_lone_carriage_returns_as_at_line_feeds(text: str) -> None:
    mac = text.replace("\n", "\r")
    assert split_sentences(mac) == split_sentences(text)
    assert sentence_ends(mac) == sentence_ends(text)
    for limit in range(0, len(text) + 1, max(1, len(text) // 20)):
        assert last_sentence_end(mac, 0, limit) == last_sentence_end(text, 0, limit)


@PROPERTY
@given(st.lists(st.text(st.characters(blacklist_characters="\r\n"), max_size=8), min_size=1, max_size=4))
def test_first_line_is_the_same_line_whatever_ends_it(lines: list[str]) -> None:
    """The first line comes without its break, ``\\n``, ``\\r\\n`` or a lone ``\\r`` alike."""
    for eol in ("\n", "\r\n", "\r"):
        assert first_line(eol.join(lines)) == lines[0]
