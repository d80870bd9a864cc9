"""HTML parsing: golden units, boilerplate filters, agreement with the Markdown originals."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.errors import EmptyDocumentError, UnsafeContentError
from chunkwise.parsing import ParseLimits, parse_bytes, parse_file
from chunkwise.parsing.blocks import MAX_LIST_NUMBER
from chunkwise.parsing.consistency import compare
from chunkwise.parsing.html import parse_html
from chunkwise.parsing.markdown import parse_markdown

PAGE = """<!doctype html><html><head><title>Sample page</title><style>p{}</style>
<script>var x = "<div>";</script></head>
<body>
<header class="site"><a href="/">Home</a></header>
<nav><ul><li>Menu</li></ul></nav>
<div id="cookie-banner">We use cookies <button>OK</button></div>
<div class="logistics">Shipping info</div>
<main>
<h1>Guide</h1>
<p>Intro with <em>emphasis</em>, <strong>bold</strong>, <code>code</code> and a <a href="x">link</a>
<img src="x.png" alt="img">.
Second line.</p>
<h2 id="sign-in">Setup</h2>
<ol>
<li><strong>First:</strong><br>Install it.</li>
<li>Second<ul><li>nested a</li><li><p>nested b</p><ol><li>deep</li></ol></li></ul></li>
<li>Third</li>
</ol>
<blockquote><p><strong>Note:</strong> keep it.</p><ul><li>quoted item</li></ul>
<blockquote><p>inner</p></blockquote></blockquote>
<hr>
<table><caption>Prices</caption><thead><tr><th>Key</th><th><strong>Value</strong></th></tr></thead>
<tbody><tr><td>a</td><td><code>1</code></td></tr><tr><td>b | c</td><td></td></tr></tbody></table>
<pre><code class="language-python">def f():
    return 1
</code></pre>
<figure><img src="a.png"><figcaption>Figure 1: a chart</figcaption></figure>
<div>Loose <span>text</span> in a div<div>inner block</div>tail</div>
<form class="login-form"><label>User</label><input name="u"><input type="password"></form>
<aside>Related links</aside>
</main>
<footer role="contentinfo">Copyright</footer>
<div class="has-sidebar">Kept modifier</div>
<div class="sidebar">Dropped sidebar</div>
<div hidden>Hidden</div>
</body></html>"""

EXPECTED = [
    ("u1", "paragraph", 0, None, "Shipping info"),
    ("u2", "heading", 1, None, "# Guide"),
    ("u3", "paragraph", 0, "u2", "Intro with emphasis, bold, code and a link . Second line."),
    ("u4", "heading", 2, "u2", "## Setup"),
    ("u5", "list_item", 0, "u4", "1. First: Install it."),
    ("u6", "list_item", 0, "u4", "2. Second"),
    ("u7", "list_item", 1, "u4", "  - nested a"),
    ("u8", "list_item", 1, "u4", "  - nested b"),
    ("u9", "list_item", 2, "u4", "    1. deep"),
    ("u10", "list_item", 0, "u4", "3. Third"),
    ("u11", "quote", 0, "u4", "> Note: keep it.\n> - quoted item\n> inner"),
    ("u12", "caption", 0, "u4", "Prices"),
    ("u13", "table", 0, "u4", "| Key | Value |\n|---|---|\n| a | 1 |\n| b \\| c |  |"),
    ("u14", "code", 0, "u4", "```python\ndef f():\n    return 1\n```"),
    ("u15", "caption", 0, "u4", "Figure 1: a chart"),
    ("u16", "paragraph", 0, "u4", "Loose text in a div"),
    ("u17", "paragraph", 0, "u4", "inner block"),
    ("u18", "paragraph", 0, "u4", "tail"),
    ("u19", "paragraph", 0, "u4", "Kept modifier"),
]


def _rows(markup: str) -> list[tuple[str, str, int, str | None, str]]:
    doc = parse_html(markup, "s.html")
    return [(u.id, u.kind.value, u.level, u.parent, u.text) for u in doc.units]


def test_page_units_are_exact_and_boilerplate_is_gone() -> None:
    doc = parse_html(PAGE, "s.html")
    assert [(u.id, u.kind.value, u.level, u.parent, u.text) for u in doc.units] == EXPECTED
    assert doc.title == "Sample page"
    assert doc.format == "html"
    for gone in ("Home", "Menu", "cookies", "User", "Related", "Copyright", "sidebar", "Hidden", "var x"):
        assert gone not in doc.text


def test_title_falls_back_to_the_first_h1() -> None:
    assert parse_html("<h2>Intro</h2><p>x</p><h1>Main</h1>", "t.html").title == "Main"
    assert parse_html("<h2>Intro</h2><p>x</p>", "t.html").title == "Intro"


@pytest.mark.parametrize(
    ("markup", "kept"),
    [
        ('<div class="logistics">Freight</div>', True),
        ('<div class="cookie-notice">Freight</div>', False),
        ('<div id="gdprConsent">Freight</div>', False),
        ('<div class="sign-in">Freight</div>', False),
        ('<div class="signinghouse">Freight</div>', True),
        ('<div class="is-logged-in">Freight</div>', True),
        ('<section id="log-in"><h2>Log in</h2><p>Freight</p></section>', True),
        ('<div role="navigation">Freight</div>', False),
        ('<div style="display: none">Freight</div>', False),
        ("<article><header><h1>Freight</h1></header></article>", True),
        ("<header><h1>Freight</h1></header>", False),
        ('<form action="/search"><p>Freight</p></form>', True),
        ('<form><p>Freight</p><input type="PASSWORD"></form>', False),
    ],
)
def test_boilerplate_filter_matches_words_not_substrings(markup: str, kept: bool) -> None:
    doc = parse_html(f"<p>Body</p>{markup}", "b.html")
    assert ("Freight" in doc.text) is kept


def test_table_header_rows_come_first_and_nested_tables_stay_in_their_cell() -> None:
    markup = (
        "<table><tbody><tr><td>1</td><td><table><tr><td>in</td><td>ner</td></tr></table></td></tr></tbody>"
        "<thead><tr><th>a</th><th>b</th></tr></thead></table>"
    )
    assert _rows(markup)[0][4] == "| a | b |\n|---|---|\n| 1 | in ner |"


@pytest.mark.parametrize(
    ("markup", "numbers"),
    [
        ('<ol start="5"><li>a</li><li>b</li></ol>', ["5.", "6."]),
        ('<ol><li>a</li><li value="9">b</li><li>c</li></ol>', ["1.", "9.", "10."]),
        ("<ol reversed><li>a</li><li>b<ol><li>x</li></ol></li><li>c</li></ol>", ["3.", "2.", "1.", "1."]),
        ('<ol reversed start="10"><li>a</li><li>b</li></ol>', ["10.", "9."]),
        ("<ol reversed><div><li>a</li><li>b</li></div><li>c</li></ol>", ["3.", "2.", "1."]),
        ("<ol reversed><li>a</li><li>b</li><nav><li>n</li></nav><li hidden>h</li></ol>", ["2.", "1."]),
        ('<ol start=" 7th"><li>a</li></ol>', ["7."]),
        ('<ol start="-2"><li>a</li><li>b</li></ol>', ["-2.", "-1."]),
        ('<ol start="x"><li>a</li><li value="">b</li></ol>', ["1.", "2."]),
        ('<ol start="\u00b2"><li>a</li></ol>', ["1."]),
        ('<ol start="99999999999999999999"><li>a</li></ol>', ["999999999."]),
        (f'<ol><li value="-{"9" * 5000}">a</li></ol>', ["-999999999."]),
        ('<ol start="999999999"><li>a<li>b</ol>', ["999999999.", "999999999."]),
        ('<ol><li value="999999998">a<li>b<li>c</ol>', ["999999998.", "999999999.", "999999999."]),
        ('<ol reversed start="-999999999"><li>a<li>b</ol>', ["-999999999.", "-999999999."]),
        ('<ol reversed><li value="-999999998">a<li>b<li>c</ol>', ["-999999998.", *["-999999999."] * 2]),
        ('<ul><li value="4">a</li></ul>', ["-"]),
    ],
)
def test_list_numbers_follow_start_value_and_reversed(markup: str, numbers: list[str]) -> None:
    """Numbers as a browser shows them; non-numbers are ignored and huge values clamped to nine digits
    (a CommonMark list marker), so no value crashes the conversion or bloats the text, and a list
    counting on past the bound, up or down, stays at it."""
    doc = parse_html(markup, "list.html")
    assert [unit.text.split()[0] for unit in doc.units] == numbers


@given(
    st.lists(
        st.sampled_from(["<li>x</li>", "<div><li>x</li></div>", "<li>x<ol><li>y</li></ol></li>"]), min_size=1
    )
)
def test_a_reversed_list_counts_down_to_one(items: list[str]) -> None:
    """Whatever wraps its items (a ``div``) or nests in them (a list of their own), a reversed list
    without ``start`` numbers its own items from their count down to 1, as a browser does."""
    doc = parse_html(f"<ol reversed>{''.join(items)}</ol>", "list.html")
    numbers = [unit.text.split()[0] for unit in doc.units if unit.level == 0]
    assert numbers == [f"{n}." for n in range(len(items), 0, -1)]


@given(
    start=st.integers(-(10**10), 10**10),
    values=st.lists(st.one_of(st.none(), st.integers(-(10**10), 10**10)), min_size=1, max_size=6),
    reversed_list=st.booleans(),
)
def test_every_list_number_stays_within_nine_digits(
    start: int, values: list[int | None], reversed_list: bool
) -> None:
    """Whatever ``start``, ``value`` and direction, every number shown has at most nine digits, and an
    item without ``value`` is the one before it counted on by one, held at the bound."""
    items = "".join("<li>x</li>" if value is None else f'<li value="{value}">x</li>' for value in values)
    markup = f'<ol start="{start}"{" reversed" if reversed_list else ""}>{items}</ol>'
    numbers = [int(unit.text.split()[0].rstrip(".")) for unit in parse_html(markup, "list.html").units]
    assert all(abs(number) <= MAX_LIST_NUMBER for number in numbers)
    step = -1 if reversed_list else 1
    for before, number, value in zip(numbers, numbers[1:], values[1:], strict=False):
        if value is None:
            assert number == max(-MAX_LIST_NUMBER, min(MAX_LIST_NUMBER, before + step))


def test_a_markdown_list_counting_past_the_bound_matches_its_html() -> None:
    """CommonMark allows a nine-digit start; the items after it are held at the bound in Markdown as in
    the HTML it renders to, so the two parse to the same units."""
    markdown = parse_markdown("999999999. a\n1. b\n", "list.md")
    html = parse_html('<ol start="999999999"><li>a</li><li>b</li></ol>', "list.html")
    assert [unit.text for unit in markdown.units] == ["999999999. a", "999999999. b"]
    assert [unit.text for unit in html.units] == [unit.text for unit in markdown.units]


def test_pandoc_code_blocks_keep_their_language() -> None:
    markup = '<div class="sourceCode"><pre class="sourceCode python"><code>x = 1\n</code></pre></div>'
    assert _rows(markup)[0][1:] == ("code", 0, None, "```python\nx = 1\n```")


def test_line_breaks_inside_pre_end_code_lines() -> None:
    markup = '<pre><code><span class="k">if</span> x:<br>    y()<br/>z()</code></pre>'
    assert _rows(markup)[0][1:] == ("code", 0, None, "```\nif x:\n    y()\nz()\n```")


def test_meta_charset_decodes_legacy_pages() -> None:
    page = '<html><head><meta charset="windows-1251"></head><body><p>Привет, мир</p></body></html>'
    doc = parse_bytes(page.encode("cp1251"), "ru.html")
    assert doc.text == "Привет, мир"
    assert doc.metadata["encoding"] == "cp1251"


def test_hostile_nesting_is_refused_before_tree_building() -> None:
    with pytest.raises(UnsafeContentError, match=r"deep\.html: elements nested deeper than 512 levels"):
        parse_bytes(b"<div>" * 100_000 + b"x", "deep.html")
    with pytest.raises(UnsafeContentError, match="nested deeper than 512"):
        parse_bytes(b"<ul><li>" * 100_000 + b"x", "deep.html")


def test_the_walk_enforces_the_depth_limit_too() -> None:
    """Implied nesting the tag scan does not count (``<p>`` in ``<li>`` in ``<ul>``) still meets the bound."""
    markup = "<ul><li><p>" * 30 + "x"
    with pytest.raises(UnsafeContentError, match="nested deeper than 40"):
        parse_html(markup, "t.html", ParseLimits(max_depth=40))
    assert "x" in parse_html(markup, "t.html").text


def test_a_page_of_only_boilerplate_is_empty() -> None:
    with pytest.raises(EmptyDocumentError, match=r"nav\.html: no text in the HTML"):
        parse_bytes(b"<html><body><nav>Home | About</nav><script>x()</script></body></html>", "nav.html")


def test_html_fixtures_parse_like_their_markdown_originals(data_dir: Path) -> None:
    for md in sorted((data_dir / "formats").glob("*.md")):
        reference = parse_file(md)
        html = parse_file(md.with_suffix(".html"))
        agreement = compare(html, reference)
        assert agreement.f1 == 1.0, md.name
        assert agreement.headings_identical, md.name
        assert html.title == reference.title


_TAGS = [
    "<p>", "</p>", "<ul>", "</ul>", "<ol start=3>", "<li>", "</li>", "<h2>", "</h2>", "<table>", "<tr>",
    "<th>", "<td>", "</table>", "<pre>", "</pre>", "<blockquote>", "</blockquote>", "<br>", "<nav>",
    "<div class='cookie'>", "</div>", "<figcaption>", "<!--", "-->", "<script>", "&amp;",
]  # fmt: skip

_HTMLISH = st.lists(st.one_of(st.sampled_from(_TAGS), st.text(max_size=12)), max_size=60).map("".join)


@settings(max_examples=200, deadline=None)
@given(_HTMLISH)
def test_any_markup_parses_or_fails_cleanly(markup: str) -> None:
    """Arbitrary tag soup gives a valid document or a typed error, never a crash."""
    try:
        doc = parse_html(markup, "any.html")
    except (EmptyDocumentError, UnsafeContentError):
        return
    assert doc.units
    assert all(doc.text[u.start : u.end] == u.text and u.text.strip() for u in doc.units)
