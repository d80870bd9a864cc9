"""Markdown parsing: golden units for hand-written snippets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.errors import EmptyDocumentError, UnsafeContentError
from chunkwise.parsing import markdown_tokens, parse_bytes
from chunkwise.parsing.markdown import parse_markdown

SNIPPET = """\
---
title: Sample
---
Guide
=====

Intro with *emphasis*, **bold**, `code` and a [link](https://example.com) ![img](x.png).
Second line.

## Setup

1. **First:**\x20\x20
   Install it.
2. Second
   - nested a
   - nested b
     1. deep
3. Third

> **Note:** keep it.
> - quoted item
>
> > inner

---

| Key | **Value** |
|-----|-------|
| a   | `1` |
| b \\| c | |

```python
def f():
    return 1
```

    indented code

Sub
---

<div class="x"><p>Raw <b>HTML</b></p></div>

- ~~old~~ new
"""

EXPECTED = [
    ("u1", "heading", 1, None, "# Guide"),
    ("u2", "paragraph", 0, "u1", "Intro with emphasis, bold, code and a link . Second line."),
    ("u3", "heading", 2, "u1", "## Setup"),
    ("u4", "list_item", 0, "u3", "1. First: Install it."),
    ("u5", "list_item", 0, "u3", "2. Second"),
    ("u6", "list_item", 1, "u3", "  - nested a"),
    ("u7", "list_item", 1, "u3", "  - nested b"),
    ("u8", "list_item", 2, "u3", "    1. deep"),
    ("u9", "list_item", 0, "u3", "3. Third"),
    ("u10", "quote", 0, "u3", "> Note: keep it.\n> - quoted item\n> inner"),
    ("u11", "table", 0, "u3", "| Key | Value |\n|---|---|\n| a | 1 |\n| b \\| c |  |"),
    ("u12", "code", 0, "u3", "```python\ndef f():\n    return 1\n```"),
    ("u13", "code", 0, "u3", "```\nindented code\n```"),
    ("u14", "heading", 2, "u1", "## Sub"),
    ("u15", "paragraph", 0, "u14", "Raw HTML"),
    ("u16", "list_item", 0, "u14", "- old new"),
]


def _rows(text: str) -> list[tuple[str, str, int, str | None, str]]:
    doc = parse_markdown(text, "s.md")
    return [(u.id, u.kind.value, u.level, u.parent, u.text) for u in doc.units]


def test_snippet_units_are_exact() -> None:
    doc = parse_markdown(SNIPPET, "s.md")
    assert [(u.id, u.kind.value, u.level, u.parent, u.text) for u in doc.units] == EXPECTED
    assert doc.title == "Guide"
    assert doc.metadata == {"front_matter": "title: Sample\n"}
    assert doc.format == "markdown"
    assert all(doc.text[u.start : u.end] == u.text for u in doc.units)


def test_ordered_lists_keep_their_start_number_and_count_on() -> None:
    assert [r[4] for r in _rows("3. a\n1. b\n1. c\n")] == ["3. a", "4. b", "5. c"]


def test_loose_list_item_paragraphs_join_and_text_after_a_nested_list_is_a_paragraph() -> None:
    rows = _rows("- one\n\n  more of one\n\n  - child\n\n  after child\n- two\n")
    assert [(r[1], r[2], r[4]) for r in rows] == [
        ("list_item", 0, "- one more of one"),
        ("list_item", 1, "  - child"),
        ("paragraph", 0, "after child"),
        ("list_item", 0, "- two"),
    ]


def test_code_inside_a_quote_splits_the_quote_in_reading_order() -> None:
    rows = _rows("> before\n>\n> ```sh\n> ls\n> ```\n>\n> after\n")
    assert [(r[1], r[4]) for r in rows] == [
        ("quote", "> before"),
        ("code", "```sh\nls\n```"),
        ("quote", "> after"),
    ]


def test_raw_html_table_stays_a_table() -> None:
    rows = _rows("# T\n\n<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>\n")
    assert rows[1][1:] == ("table", 0, "u1", "| a | b |\n|---|---|\n| 1 | 2 |")


def test_headings_set_parents_by_level() -> None:
    rows = _rows("# A\n\n### C\n\nx\n\n## B\n\ny\n")
    assert [(r[0], r[3]) for r in rows] == [
        ("u1", None),
        ("u2", "u1"),
        ("u3", "u2"),
        ("u4", "u1"),
        ("u5", "u4"),
    ]


@pytest.mark.parametrize(
    "definition",
    [
        "[^1]: See the fees page.",
        "[^1]: https://example.com/fees",
        '[^1]: https://example.com/fees "Fees"',
        "[^1]:\n    https://example.com/fees",
        "> [^1]: https://example.com/fees",
    ],
)
def test_a_footnote_definition_stays_text_whatever_its_text(definition: str) -> None:
    """A footnote definition whose text is a link destination is not read as a link reference
    definition: the note stays, and so does the ``[^1]`` that refers to it."""
    doc = parse_markdown(f"Bags are weighed.[^1]\n\n{definition}\n", "notes.md")
    assert doc.units[0].text == "Bags are weighed.[^1]"
    assert doc.units[1].text.lstrip("> ").startswith("[^1]:")
    assert ("example.com/fees" in doc.units[1].text) == ("example.com" in definition)


def test_a_link_reference_definition_is_still_one() -> None:
    assert parse_markdown("See [fees].\n\n[fees]: https://example.com/fees\n", "links.md").text == "See fees."


def test_markdown_without_text_is_empty() -> None:
    with pytest.raises(EmptyDocumentError, match=r"empty\.md"):
        parse_bytes(b"---\n\n<!-- nothing -->\n", "empty.md")


def test_nesting_beyond_the_bound_is_refused_not_truncated() -> None:
    with pytest.raises(UnsafeContentError, match=r"deep\.md: Markdown blocks nested deeper"):
        parse_bytes(b"> " * 1000 + b"lost?", "deep.md")
    assert _rows("> " * 20 + "kept")[0][4] == "> kept"


def test_table_cells_are_bounded_over_the_whole_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row counts its header's columns, short rows too; a table ends where another block opens."""
    monkeypatch.setattr(markdown_tokens, "MAX_TABLE_CELLS", 12)
    three_by_four = "| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |\n| 4 |\n| 5 | 6 |\n"
    assert _rows(three_by_four + "# After\nText | with a pipe\n")[0][4].endswith("| 5 | 6 |  |")
    with pytest.raises(
        UnsafeContentError,
        match=r"^two\.md: Markdown tables with more than 12 cells in all "
        r"\(reached with a table of 2 columns and 2 rows\)$",
    ):
        parse_markdown(three_by_four + "\n| x | y |\n|---|---|\n| z |\n", "two.md")
    with pytest.raises(UnsafeContentError, match=r"table of 3 columns and 5 rows"):
        parse_markdown(three_by_four + "| 7 |\n", "long.md")


_MARKDOWNISH = st.text(
    alphabet=st.one_of(st.sampled_from(list("#>-*_`|[]()!<>/ \n\t1.=~\\")), st.characters()), max_size=400
)


@settings(max_examples=200, deadline=None)
@given(_MARKDOWNISH)
def test_any_text_parses_or_fails_cleanly(text: str) -> None:
    """Arbitrary Markdown-flavoured text gives a valid document or a typed error, never a crash."""
    try:
        doc = parse_markdown(text, "any.md")
    except (EmptyDocumentError, UnsafeContentError):
        return
    assert doc.units
    assert all(doc.text[u.start : u.end] == u.text and u.text.strip() for u in doc.units)
