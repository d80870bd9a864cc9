"""Markdown parsed a piece at a time: the same document as one parse, in token lists of bounded size."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.document import Document
from chunkwise.errors import ChunkwiseError, UnsafeContentError
from chunkwise.parsing import markdown_tokens
from chunkwise.parsing.limits import ParseLimits
from chunkwise.parsing.markdown import parse_markdown

DATA = Path(__file__).parent / "data"

_WORDS = st.sampled_from(
    ["alpha", "beta", "*em*", "`code`", "[ref]", "[link](u)", "x | y", "~~gone~~", "<b>"]
)
_LINE = st.lists(_WORDS, min_size=1, max_size=4).map(" ".join)


@st.composite
def _list_block(draw: st.DrawFn) -> str:
    marker = draw(st.sampled_from(["-", "*", "1.", "3)"]))
    loose = draw(st.booleans())
    items = []
    for _ in range(draw(st.integers(1, 4))):
        item = f"{marker} {draw(_LINE)}\n"
        if draw(st.booleans()):
            item += f"  {draw(st.sampled_from(['-', '1.']))} {draw(_LINE)}\n"
        if draw(st.booleans()):
            item += f"\n   {draw(_LINE)}\n"
        items.append(item)
    return ("\n" if loose else "").join(items)


@st.composite
def _fence(draw: st.DrawFn) -> str:
    mark = draw(st.sampled_from(["```", "~~~", "````"]))
    body = "".join(
        f"{draw(st.sampled_from(['', '# not a heading', '- not an item', 'code()']))}\n" for _ in "ab"
    )
    closed = draw(st.booleans())
    return f"{mark}py\n{body}" + (f"{mark}\n" if closed else "")


_BLOCKS = st.one_of(
    _LINE.map(lambda line: line + "\n"),
    st.tuples(_LINE, _LINE).map(lambda lines: f"{lines[0]}\n{lines[1]}\n"),
    st.tuples(st.integers(1, 6), _LINE).map(lambda h: "#" * h[0] + f" {h[1]}\n"),
    st.tuples(_LINE, st.sampled_from(["===", "---"])).map(lambda s: f"{s[0]}\n{s[1]}\n"),
    _list_block(),
    _fence(),
    _LINE.map(lambda line: f"    {line}\n\n    more {line}\n"),
    st.tuples(_LINE, _LINE).map(lambda t: f"| {t[0]} | b |\n|---|:-:|\n| {t[1]} | 2 |\n| 3 |\n"),
    st.tuples(_LINE, _LINE).map(lambda q: f"> {q[0]}\n{q[1]}\n> > deeper\n"),
    st.sampled_from(["<div>\n*x*\n</div>\n", "<pre>\n\nkept\n\n</pre>\n", "<!--\n\nhidden\n-->\n"]),
    st.sampled_from(["[ref]: /target\n", "[link]: /other 'title'\n", "***\n", "   \n"]),
)

_DOCUMENTS = st.tuples(
    st.lists(st.tuples(_BLOCKS, st.sampled_from(["", "\n", "\n\n"])), min_size=1, max_size=14),
    st.booleans(),
).map(lambda d: "".join(block + gap for block, gap in d[0]).replace("\n", "\r\n" if d[1] else "\n"))


def _parse(text: str, piece_chars: int) -> Document | str:
    """The document parsed in pieces of ``piece_chars`` characters, or its error's message."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(markdown_tokens, "PIECE_CHARS", piece_chars)
        try:
            return parse_markdown(text, "p.md")
        except ChunkwiseError as error:
            return f"{type(error).__name__}: {error}"


def _same(text: str, piece_chars: int) -> None:
    whole, pieces = _parse(text, 10**9), _parse(text, piece_chars)
    if isinstance(whole, str) or isinstance(pieces, str):
        assert pieces == whole
    else:
        assert (pieces.text, pieces.units, pieces.title) == (whole.text, whole.units, whole.title)


@settings(max_examples=300, deadline=None)
@given(_DOCUMENTS, st.integers(1, 80))
def test_pieces_give_the_document_of_one_parse(text: str, piece_chars: int) -> None:
    """Wherever the pieces end (every few lines here), the units are those of the whole text parsed at
    once: lists, quotes, fences left open, HTML blocks over blank lines, tables, setext headings, link
    references defined after their use, Windows line ends."""
    _same(text, piece_chars)


def test_the_markdown_fixtures_parse_the_same_in_pieces() -> None:
    paths = sorted(DATA.rglob("*.md"))
    assert paths
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for piece_chars in (1, 60, 500):
            _same(text, piece_chars)


def test_a_reference_defined_after_a_piece_still_makes_its_link() -> None:
    text = "See [the guide].\n\n" + "Filler paragraph.\n\n" * 50 + "[the guide]: https://example.com\n"
    doc = _parse(text, 40)
    assert not isinstance(doc, str)
    assert doc.units[0].text == "See the guide."


def test_a_long_document_comes_in_bounded_token_lists() -> None:
    """One-word paragraphs make more than one token for every two characters, so the whole text would be
    one list of 130,000 tokens; the pieces hold at most one token a character of a piece."""
    text = "word\n\n" * 33_000
    lists = list(markdown_tokens.markdown_tokens(text, "long.md", ParseLimits()))
    sizes = [len(tokens) + sum(len(token.children or ()) for token in tokens) for tokens in lists]
    assert len(lists) >= 2
    assert sum(sizes) == 33_000 * 4
    assert max(sizes) <= markdown_tokens.PIECE_CHARS


def test_a_top_level_block_past_the_token_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A list of one-word items is six tokens an item; a block is parsed whole, so one too large for the
    bound is refused, naming about where it starts, while one within it parses."""
    monkeypatch.setattr(markdown_tokens, "PIECE_CHARS", 100)
    monkeypatch.setattr(markdown_tokens, "MAX_BLOCK_TOKENS", 3_000)
    head = "# Items\n\n"
    within = parse_markdown(head + "- a\n" * 300 + "\nafter\n", "within.md")
    assert [u.text for u in within.units[-2:]] == ["- a", "after"]
    assert len(within.units) == 302
    with pytest.raises(
        UnsafeContentError, match=r"^past\.md: a Markdown block .* of more than 2400 parser tokens"
    ):
        parse_markdown(head + "- a\n" * 1_000 + "\nafter\n", "past.md")


def test_a_table_parsed_again_in_the_next_piece_counts_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces end before top-level blocks and the next one parses the block again: the table-cell bound
    counts each table once, in both readings of a document that defines a link reference."""
    monkeypatch.setattr(markdown_tokens, "PIECE_CHARS", 10)
    monkeypatch.setattr(markdown_tokens, "MAX_TABLE_CELLS", 12)
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n"
    text = f"{table}\ntext\n\n{table}\n[x]: /y\n"
    assert [u.kind.value for u in parse_markdown(text, "two.md").units] == ["table", "paragraph", "table"]
    with pytest.raises(UnsafeContentError, match=r"more than 12 cells"):
        parse_markdown(text + table, "three.md")


def test_a_paragraph_whose_markup_could_pass_the_token_bound_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One line is one piece however long, so its inline run is bounded by its markup: ``*a* `` is two
    markup characters in four, each able to begin a token. Plain words on a line as long pass."""
    monkeypatch.setattr(markdown_tokens, "PIECE_CHARS", 100)
    monkeypatch.setattr(markdown_tokens, "MAX_BLOCK_TOKENS", 1_000)
    before = "# Title\n\n" + "Filler paragraph.\n\n" * 50
    assert parse_markdown(before + "*a* " * 120 + "\n", "within.md").units[-1].text.startswith("a a a")
    assert len(parse_markdown(before + "plain words " * 300 + "\n", "plain.md").units) == 52
    with pytest.raises(
        UnsafeContentError,
        match=r"^past\.md: a Markdown paragraph of 1199 characters holding 600 markup characters, "
        r"which could make more than 1000 parser tokens, near line 103$",
    ):
        parse_markdown(before + "*a* " * 300 + "\n", "past.md")
