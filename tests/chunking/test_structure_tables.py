"""Table header context: the header rows of a split table, found in one pass over the table."""

from __future__ import annotations

from typing import SupportsIndex

from hypothesis import given, settings
from hypothesis import strategies as st

import chunkwise
from chunkwise.chunking import get_chunker
from chunkwise.chunking.tables import TableHeaders, table_header


def _reference(text: str, start: int) -> str:
    """The rule, by whole lines: the first two rows of the run of ``|`` lines holding ``start``'s line,
    when that line is the third row of the run or later."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    index = max(i for i in range(len(lines)) if offsets[i] <= start)
    if not lines[index].startswith("|"):
        return ""
    first = index
    while first > 0 and lines[first - 1].startswith("|"):
        first -= 1
    if index - first < 2:
        return ""
    return "\n".join(lines[first : first + 2])


_LINES = st.lists(st.sampled_from(["| h | v |", "|---|---|", "| r |", "|", "text", "", " | x"]), max_size=30)


@settings(max_examples=200, deadline=None)
@given(lines=_LINES, data=st.data())
def test_headers_match_the_rule_for_offsets_in_any_order(lines: list[str], data: st.DataObject) -> None:
    text = "\n".join(lines)
    offsets = data.draw(st.lists(st.integers(0, len(text)), max_size=20))
    if data.draw(st.booleans()):
        offsets.sort()
    headers = TableHeaders(text)
    for offset in offsets:
        expected = _reference(text, offset)
        assert headers.header(offset) == expected
        assert table_header(text, offset) == expected


@settings(max_examples=200, deadline=None)
@given(lines=_LINES, data=st.data())
def test_lone_carriage_returns_end_table_rows_too(lines: list[str], data: st.DataObject) -> None:
    """An old Mac OS file's rows end in a lone ``\\r``: its tables have the headers the same rows ending
    in ``\\n`` have (the offsets are the same, one character per line break)."""
    text = "\n".join(lines)
    old_mac = text.replace("\n", "\r")
    headers = TableHeaders(old_mac)
    for offset in data.draw(st.lists(st.integers(0, len(text)), max_size=20)):
        expected = _reference(text, offset).replace("\n", "\r")
        assert headers.header(offset) == expected
        assert table_header(old_mac, offset) == expected


def test_crlf_table_rows_keep_their_carriage_return() -> None:
    """With ``\\r\\n`` endings the ``\\r`` is inside the row (lines.py): the header keeps the one ending its
    delimiter row, as the ``\\n`` version's header has none."""
    text = "Intro.\r\n| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n| 3 | 4 |"
    for row in ("| 1", "| 3"):
        assert table_header(text, text.index(row)) == "| a | b |\r\n|---|---|\r"
    assert table_header(text, text.index("|---")) == ""


class _CountingText(str):
    """A text that counts the backward line searches made on it."""

    searches = 0

    def rfind(self, sub: str, start: SupportsIndex | None = None, end: SupportsIndex | None = None) -> int:
        type(self).searches += 1
        return super().rfind(sub, start, end)


def test_rows_asked_in_order_walk_the_table_once() -> None:
    rows = 5_000
    text = _CountingText("Intro.\n\n| a | b |\n|---|---|\n" + "".join(f"| {i} | x |\n" for i in range(rows)))
    headers = TableHeaders(text)
    starts = [i + 1 for i, ch in enumerate(text) if ch == "\n" and text.startswith("| ", i + 1)]
    assert all(headers.header(s) == "| a | b |\n|---|---|" for s in starts[1:])
    # Two searches (the last \\n, then a lone \\r after it) per asked row and per row walked over, not
    # per row per question.
    assert _CountingText.searches <= 5 * rows


def test_every_chunk_of_a_long_split_table_carries_its_header() -> None:
    body = "".join(f"| row {i} | value {i} |\n" for i in range(3_000))
    doc = chunkwise.parse("# Prices\n\n| Name | Value |\n|---|---|\n" + body, format="markdown")
    chunks = get_chunker("structure", max_size=300).chunk(doc)
    assert len(chunks) > 100
    assert chunks[0].context == ""
    assert all(c.context == "| Name | Value |\n|---|---|" for c in chunks[1:])
