"""Fuzz parse -> chunk with hostile variants of real documents of every format.

Each input is a fixture of ``tests/data/formats/`` (the Markdown files stand in for plain text) changed
by a list of drawn mutations, or for Markdown and HTML a randomly generated document structure:

* bytes: flips, interesting bytes, inserted snippets (byte-order marks, invalid UTF-8, NUL, lone CR),
  deletions, truncation, duplicated runs, splices of two fixtures;
* text formats: re-encoding (UTF-16/32 with and without a byte-order mark, cp1252, Shift-JIS,
  GB18030...), inserted Unicode of any category, lines of up to 200,000 characters without a space,
  element nesting around the limit, generated Markdown (nested lists and quotes, ragged tables,
  unclosed fences, raw HTML, front matter) and HTML (boilerplate attributes, omitted end tags, tables
  in tables, comments, entities);
* PDF: content streams inflated, edited (numbers replaced by extremes, operators inserted, lines
  duplicated or deleted, bytes flipped), deflated and put back with a corrected ``/Length``;
* DOCX and PPTX: zip members edited as XML (numbers and attribute values replaced by extremes,
  elements duplicated, deleted or nested, text runs filled with control characters), deleted,
  renamed, duplicated, and the archive recompressed (stored, deflate, bzip2, LZMA).

Every input goes through :func:`chunkwise.parsing.parse_bytes`, the document invariants (unit offsets
exact, in order, parents earlier headings), then each chunker that needs no model (``fixed``,
``recursive``, ``sentence``, ``structure``) with drawn sizes, overlap and unit, and the chunk invariants
(offsets exact, trimmed, recorded size exact and within ``max_size``, no text lost or, with overlap,
overlap bounded). A :class:`~chunkwise.errors.ChunkwiseError` is the typed refusal hostile input must
get; any other exception, a broken invariant, or a step (the parse, or one chunker) running past
``--timeout`` seconds is a crash. Crashes are told apart by kind, exception type and the innermost
frame of the package; the smallest input of each is written to ``--crashes``, and so are the three
slowest inputs past ``--slow`` seconds (listed, not counted as crashes). The process runs under a 4 GB
address-space limit (``ulimit -v 4000000``), so runaway memory is a ``MemoryError`` crash, not a dead machine.

Engine: hypothesis (generate phase only: no shrinking, no example database), seeded, so a run is
reproducible from ``--seed``; it runs in batches until ``--seconds`` have passed or ``--executions``
inputs have run. Results per format are merged into ``bench/results/fuzz.json``.

    python bench/fuzz.py --format docx --seconds 600
    python bench/fuzz.py --format all --executions 50 --seed 3
"""

from __future__ import annotations

import argparse
import hashlib
import io
import itertools
import json
import re
import resource
import signal
import sys
import time
import traceback
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from chunkwise.chunking import Chunk, get_chunker, get_counter
from chunkwise.document import Document, UnitKind
from chunkwise.errors import ChunkwiseError
from chunkwise.parsing import parse_bytes

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "data" / "formats"
RESULTS = REPO / "bench" / "results" / "fuzz.json"
CRASHES = REPO / "bench" / "results" / "fuzz_crashes"

#: Format -> (extension of the generated input, extension of the fixtures it starts from).
FORMATS: dict[str, tuple[str, str]] = {
    "txt": (".txt", ".md"),
    "md": (".md", ".md"),
    "html": (".html", ".html"),
    "pdf": (".pdf", ".pdf"),
    "docx": (".docx", ".docx"),
    "pptx": (".pptx", ".pptx"),
}
CHUNKERS = ("fixed", "recursive", "sentence", "structure")
#: Address-space limit of the fuzzing process, as ``ulimit -v 4000000``.
ADDRESS_SPACE = 4_000_000 * 1024
#: Hypothesis examples per batch; the time limit is checked between batches and before each input.
BATCH = 50
#: How many of the slowest inputs (past ``--slow`` seconds, not crashes) are kept per format.
SLOWEST = 3


# -- mutations ---------------------------------------------------------------------------------------

# fmt: off
INTERESTING_BYTES = (0x00, 0x01, 0x0A, 0x0D, 0x1B, 0x20, 0x3C, 0x3E, 0x7F, 0x80, 0xC0, 0xC3, 0xEF, 0xFE, 0xFF)
SNIPPETS: tuple[bytes, ...] = (
    b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00", b"\xc3\x28", b"\xe2\x82",
    b"\xf4\x90\x80\x80", b"\x00", b"\r", b"\r\n\r\n", b"\x1b[31m", b"\x85", b"\xe2\x80\xa8", b"\xe2\x80\xae",
    b"\t\x0b\x0c", b"<", b">", b"&", b"&#0;", b"&#x110000;", b"&amp;", b"]]>", b"<!--", b"-->", b"<![CDATA[",
    b"<?xml ", b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"%PDF-1.7\n", b"%%EOF", b"endstream", b"PK\x03\x04", b"\\",
    b"# ", b"- ", b"1. ", b"> ", b"```", b"| a | b |\n|---|\n", b"    ", b"<table><tr><td>", b"</td>",
)
TEXT_SNIPPETS: tuple[str, ...] = (
    "\u0301\u0301\u0301", "\u200b\u200d\ufeff", "\u202e\u2066", "\u3000。「」！", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "\U0001f469\u200d\U0001f4bb", "Dr. Mr. e.g. 3.14", "...!?", "\r\n\r", "\x0c\x0b\x1c\x1d\x1e\x1f\x85",
    "ﬁﬂ", "İı", "\ufffd",
)
ENCODINGS = (
    "utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be", "cp1252", "latin-1",
    "cp1251", "shift_jis", "gb18030", "koi8-r", "mac-roman",
)
# fmt: on

Op = tuple[Any, ...]

_position = st.floats(0, 1, exclude_max=True)
_length = st.one_of(st.integers(1, 16), st.integers(16, 4096))
byte_ops = st.one_of(
    st.tuples(st.just("flip"), _position, st.integers(1, 255)),
    st.tuples(st.just("set"), _position, st.sampled_from(INTERESTING_BYTES)),
    st.tuples(st.just("insert"), _position, st.sampled_from(SNIPPETS)),
    st.tuples(st.just("delete"), _position, _length),
    st.tuples(st.just("truncate"), _position),
    st.tuples(st.just("duplicate"), _position, _length, st.integers(1, 64)),
    st.tuples(st.just("splice"), st.integers(0, 63), _position, _position),
)
#: The longest run of one character a text mutation inserts (the deterministic slice in the tests
#: lowers it, to stay quick).
LONG_LINE = 200_000


def text_ops(long_line: int) -> st.SearchStrategy[Op]:
    """Text-level mutations: inserted characters, a run of one character, nesting markup."""
    return st.one_of(
        st.tuples(
            st.just("text"), _position, st.one_of(st.text(max_size=24), st.sampled_from(TEXT_SNIPPETS))
        ),
        st.tuples(
            st.just("line"),
            _position,
            st.sampled_from("x-é中 \u00a0"),
            st.one_of(st.integers(1_000, min(20_000, long_line)), st.just(long_line)),
        ),
        st.tuples(
            st.just("nest"),
            _position,
            st.sampled_from(["<div>", "<ul><li>", "> ", "- ", "<table><tr><td>"]),
            st.integers(1, 700),
        ),
    )


def _at(data: bytes | str, position: float) -> int:
    """The index a relative position (0 <= position < 1) points at in ``data``, its end included."""
    return int(position * (len(data) + 1))


def apply_byte_op(data: bytes, op: Op, others: Sequence[bytes]) -> bytes:
    """One byte-level mutation; ``others`` are the fixtures a splice may take its second half from."""
    kind = op[0]
    pos = _at(data, op[1])
    if kind == "flip" and pos < len(data):
        return data[:pos] + bytes([data[pos] ^ op[2]]) + data[pos + 1 :]
    if kind == "set" and pos < len(data):
        return data[:pos] + bytes([op[2]]) + data[pos + 1 :]
    if kind == "insert":
        return data[:pos] + op[2] + data[pos:]
    if kind == "delete":
        return data[:pos] + data[pos + op[2] :]
    if kind == "truncate":
        return data[:pos]
    if kind == "duplicate":
        run = data[pos : pos + op[2]]
        return data[:pos] + run * op[3] + data[pos:]
    if kind == "splice" and others:
        other = others[op[1] % len(others)]
        return data[:pos] + other[_at(other, op[2]) :]
    return data


def apply_text_op(text: str, op: Op) -> str:
    """One text-level mutation (characters, a long line, nesting) at a relative position."""
    kind = op[0]
    pos = _at(text, op[1])
    if kind == "text":
        return text[:pos] + op[2] + text[pos:]
    if kind == "line":
        return text[:pos] + op[2] * op[3] + text[pos:]
    if kind == "nest":
        return text[:pos] + op[2] * op[3] + "deep" + text[pos:]
    return text


# -- generated Markdown and HTML ---------------------------------------------------------------------

_word = st.text(alphabet=st.sampled_from("abcdeéxyzABΣЖ中12 .,!?"), min_size=1, max_size=12)
# fmt: off
_md_token = st.sampled_from([
    "*", "**", "_", "`", "[", "]", "(", ")", "![", "<br>", "&amp;", "\\", "|", "#", ">", "-", "1.", "<b>",
    "</b>", "~~", "<!--", "-->", "\t", "  \n", "[x]: /u", "<https://a.b>", "$", "{", "}",
])
# fmt: on
_inline = st.lists(st.one_of(_word, _word, _md_token, st.text(max_size=6)), max_size=12).map(" ".join)


def _md_table(rows: list[list[str]]) -> str:
    """A pipe table, ragged rows kept ragged."""
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * max(len(rows[0]), 1)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows[1:]])


def _md_leaf() -> st.SearchStrategy[str]:
    """Markdown blocks without children: headings (levels 1-8), paragraphs, fences, tables, raw HTML."""
    rows = st.lists(st.lists(_inline, min_size=0, max_size=5), min_size=1, max_size=5)
    return st.one_of(
        st.tuples(st.integers(1, 8), _inline).map(lambda t: "#" * t[0] + " " + t[1]),
        _inline,
        st.tuples(
            st.sampled_from(["```", "~~~", "````"]),
            st.sampled_from(["", "python", "x y"]),
            _inline,
            st.booleans(),
        ).map(lambda t: f"{t[0]}{t[1]}\n{t[2]}\n" + (t[0] if t[3] else "")),
        rows.map(_md_table),
        st.sampled_from(
            [
                "---",
                "***",
                "<div>\n<p>raw *html*</p>\n</div>",
                "<table><tr><td>x</td></tr></table>",
                "    indented code",
                "Title\n=====",
                "Sub\n---",
                "<script>alert(1)</script>",
            ]
        ),
    )


def _md_container(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Lists (ordered or not, odd indents) and block quotes around generated blocks."""

    def as_list(parts: tuple[bool, str, list[str]]) -> str:
        ordered, indent, items = parts
        lines = []
        for number, item in enumerate(items, start=1):
            marker = f"{number}." if ordered else "-"
            body = item.replace("\n", "\n" + indent)
            lines.append(f"{marker} {body}")
        return "\n".join(lines)

    return st.one_of(
        st.tuples(
            st.booleans(), st.sampled_from(["  ", "   ", "    ", "\t"]), st.lists(children, max_size=4)
        ).map(as_list),
        children.map(lambda c: "\n".join("> " + line for line in c.split("\n"))),
    )


markdown_documents = st.tuples(
    st.one_of(st.just(""), st.just("---\ntitle: x\nkey: [1, 2\n---\n")),
    st.lists(st.recursive(_md_leaf(), _md_container, max_leaves=25), max_size=12),
    st.sampled_from(["\n\n", "\n", "\r\n\r\n"]),
).map(lambda t: t[0] + t[2].join(t[1]))

# fmt: off
_html_tags = st.sampled_from([
    "div", "p", "span", "ul", "ol", "li", "table", "thead", "tbody", "tr", "td", "th", "pre", "code",
    "blockquote", "h1", "h2", "h3", "h7", "section", "article", "main", "header", "footer", "nav", "aside",
    "figure", "figcaption", "caption", "form", "input", "script", "style", "br", "hr", "dl", "dt", "dd",
    "template", "svg", "math", "details", "summary", "b", "a", "select", "option",
])
_html_attrs = st.sampled_from([
    "", " hidden", ' class="sidebar"', ' id="cookie-banner"', ' style="display:none"', ' role="navigation"',
    ' aria-hidden="true"', ' start="-5"', ' start="99999999999999999999"', ' class="language-py"',
    ' type="password"', ' class="has-sidebar"', ' id="log-in-to-your-account"', " colspan=0",
])
# fmt: on


def _html_node(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """An element of a drawn tag and attribute around generated children, its end tag sometimes left out."""

    def element(parts: tuple[str, str, list[str], bool]) -> str:
        tag, attrs, inner, closed = parts
        return f"<{tag}{attrs}>" + "".join(inner) + (f"</{tag}>" if closed else "")

    return st.tuples(_html_tags, _html_attrs, st.lists(children, max_size=4), st.booleans()).map(element)


html_documents = st.tuples(
    st.sampled_from(
        [
            "",
            "<!doctype html>",
            '<meta charset="cp1251">',
            '<meta charset="bogus">',
            "<html><head><title>T &amp; t</title></head><body>",
        ]
    ),
    st.lists(
        st.recursive(
            st.one_of(_inline, st.sampled_from(["<!-- c -->", "&nbsp;", "&#x1F600;", "&bogus;"])),
            _html_node,
            max_leaves=30,
        ),
        max_size=8,
    ),
).map(lambda t: t[0] + "\n".join(t[1]))


# -- PDF content streams -----------------------------------------------------------------------------

_STREAM = re.compile(rb"<<([^<>]*(?:<<[^<>]*>>[^<>]*)*)>>\s*stream\r?\n", re.S)
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?")
_EXTREMES = (b"0", b"-0", b"-1", b"0.0001", b"1e30", b"-99999999", b"99999999999999999999", b"NaN", b".")
# fmt: off
_OPERATORS = (
    b"BT /F1 0 Tf 0 0 Td (zero size) Tj ET", b"BT /F1 9999 Tf 1 0 0 1 0 0 Tm (huge) Tj ET",
    b"BT /F1 10 Tf -1 0 0 -1 300 300 Tm (mirrored) Tj ET", b"0 0 600 0.5 re f", b"0 0 0 0 re f",
    b"1e30 0 0 1e30 0 0 cm", b"BT (\\377\\376\\000\\000) Tj ET", b"q q q q q", b"Q Q Q Q", b"BT ET ET",
    b"BT /F1 10 Tf 0 Tz 0 0 Td (no width) Tj ET", b"BT /F1 10 Tf 3 Tr 72 700 Td (- item) Tj ET",
)
# fmt: on
content_ops = st.one_of(
    st.tuples(st.just("number"), _position, st.sampled_from(_EXTREMES)),
    st.tuples(st.just("operator"), _position, st.sampled_from(_OPERATORS)),
    st.tuples(st.just("lines"), _position, st.integers(1, 40), st.integers(0, 20)),
    byte_ops,
)
pdf_ops = st.one_of(
    st.tuples(st.just("stream"), st.integers(0, 63), st.lists(content_ops, min_size=1, max_size=6)),
    byte_ops,
)


def _edit_content(content: bytes, op: Op) -> bytes:
    """One edit of an inflated PDF content stream (see :data:`content_ops`)."""
    kind = op[0]
    if kind == "number":
        numbers = list(_NUMBER.finditer(content))
        if not numbers:
            return content
        match = numbers[min(int(op[1] * len(numbers)), len(numbers) - 1)]
        return content[: match.start()] + op[2] + content[match.end() :]
    if kind == "operator":
        pos = _at(content, op[1])
        return content[:pos] + b"\n" + op[2] + b"\n" + content[pos:]
    if kind == "lines":
        lines = content.split(b"\n")
        start = min(int(op[1] * len(lines)), len(lines))
        block = lines[start : start + op[2]]
        return b"\n".join(lines[:start] + block * op[3] + lines[start + op[2] :])
    return apply_byte_op(content, op, ())


def mutate_pdf_stream(data: bytes, index: int, ops: Sequence[Op]) -> bytes:
    """Inflate the ``index``-th FlateDecode stream, apply ``ops``, deflate it and fix its ``/Length``."""
    streams = [m for m in _STREAM.finditer(data) if b"/FlateDecode" in m.group(1)]
    if not streams:
        return data
    match = streams[index % len(streams)]
    end = data.find(b"endstream", match.end())
    if end < 0:
        return data
    try:
        content = zlib.decompressobj().decompress(data[match.end() : end])
    except zlib.error:
        return data
    for op in ops:
        content = _edit_content(content, op)
    packed = zlib.compress(content)
    header = re.sub(rb"/Length \d+", b"/Length %d" % len(packed), match.group(1), count=1)
    return data[: match.start()] + b"<<" + header + b">>\nstream\n" + packed + b"\n" + data[end:]


# -- Office Open XML packages ------------------------------------------------------------------------

# fmt: off
_ELEMENTS = (
    "w:p", "w:r", "w:t", "w:tbl", "w:tr", "w:tc", "w:sdt", "w:numPr", "w:pPr", "w:style", "w:abstractNum",
    "w:lvl", "a:p", "a:r", "a:t", "a:tbl", "a:tr", "a:tc", "p:sp", "p:grpSp", "a:pPr", "a:buAutoNum",
    "p:txBody",
)
_VALUES = (
    b"0", b"-1", b"9", b"10", b"99999999999", b"1" * 5000, b"abc", b"", b"Heading1", b"Title", b"ListBullet",
    b"Quote", b"true", b"x" * 300,
)
# fmt: on
_TEXTS = (b"\x1b[31mred", b"&#1;&#8;", b"a\tb", b"&#xd;&#xa;", b"\xe2\x80\xae", b"x" * 70_000, b"&lt;&gt;")
xml_ops = st.one_of(
    st.tuples(st.just("value"), _position, st.sampled_from(_VALUES)),
    st.tuples(
        st.just("element"),
        st.sampled_from(("duplicate", "delete", "wrap")),
        st.sampled_from(_ELEMENTS),
        _position,
        st.integers(1, 300),
    ),
    st.tuples(st.just("run_text"), _position, st.sampled_from(_TEXTS)),
    byte_ops,
)
zip_ops = st.one_of(
    st.tuples(st.just("member"), st.integers(0, 127), st.lists(xml_ops, min_size=1, max_size=6)),
    st.tuples(st.just("delete_member"), st.integers(0, 127)),
    st.tuples(
        st.just("rename_member"),
        st.integers(0, 127),
        st.sampled_from(
            [
                "word/document.xml",
                "ppt/slides/slide1.xml",
                "[Content_Types].xml",
                "../evil.xml",
                "a/" * 50 + "b.xml",
            ]
        ),
    ),
    st.tuples(st.just("duplicate_member"), st.integers(0, 127)),
    st.tuples(
        st.just("recompress"),
        st.sampled_from((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)),
    ),
)
_ATTRIBUTE_VALUE = re.compile(rb'="([^"]*)"')
_RUN_TEXT = re.compile(rb"<(?:w|a):t(?: [^>]*)?>([^<]*)</(?:w|a):t>")


def _element_span(xml: bytes, tag: bytes, nth: float) -> tuple[int, int] | None:
    """The extent of one ``<tag ...>...</tag>`` (or ``<tag/>``), chosen by relative position."""
    starts = [m.start() for m in re.finditer(rb"<" + re.escape(tag) + rb"[\s/>]", xml)]
    if not starts:
        return None
    start = starts[min(int(nth * len(starts)), len(starts) - 1)]
    depth = 0
    for match in re.finditer(rb"<(/?)" + re.escape(tag) + rb"([\s/>])", xml[start:]):
        close = xml.find(b">", start + match.end() - 1)
        self_closing = close > 0 and xml[close - 1 : close] == b"/"
        if match.group(1):
            depth -= 1
        elif not self_closing:
            depth += 1
        if depth == 0:
            return start, close + 1
    return None


def _edit_xml(xml: bytes, op: Op) -> bytes:
    """One edit of an OOXML part's XML (see :data:`xml_ops`)."""
    kind = op[0]
    if kind == "value":
        values = list(_ATTRIBUTE_VALUE.finditer(xml))
        if not values:
            return xml
        match = values[min(int(op[1] * len(values)), len(values) - 1)]
        return xml[: match.start(1)] + op[2] + xml[match.end(1) :]
    if kind == "run_text":
        runs = list(_RUN_TEXT.finditer(xml))
        if not runs:
            return xml
        match = runs[min(int(op[1] * len(runs)), len(runs) - 1)]
        return xml[: match.start(1)] + op[2] + xml[match.end(1) :]
    if kind == "element":
        action, tag, nth, times = op[1], op[2].encode(), op[3], op[4]
        span = _element_span(xml, tag, nth)
        if span is None:
            return xml
        start, end = span
        if action == "duplicate":
            return xml[:end] + xml[start:end] * times + xml[end:]
        if action == "delete":
            return xml[:start] + xml[end:]
        wrapper = b"w:sdt><w:sdtContent" if tag.startswith(b"w:") else b"p:grpSp"
        opening = b"<" + wrapper + b">"
        closing = b"</" + b"></".join(reversed(wrapper.split(b"><"))) + b">"
        return xml[:start] + opening * times + xml[start:end] + closing * times + xml[end:]
    return apply_byte_op(xml, op, ())


def mutate_package(data: bytes, op: Op) -> bytes:
    """Apply one member-level mutation to a zip package and write the archive again."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = [(info, archive.read(info)) for info in archive.infolist()]
    except Exception:  # an archive an earlier mutation broke: nothing to edit member-wise
        return data
    if not members:
        return data
    method = None
    kind = op[0]
    if kind == "recompress":
        method = op[1]
    else:
        index = op[1] % len(members)
        info, body = members[index]
        if kind == "member":
            for xml_op in op[2]:
                body = _edit_xml(body, xml_op)
            members[index] = (info, body)
        elif kind == "delete_member":
            del members[index]
        elif kind == "rename_member":
            members[index] = (zipfile.ZipInfo(op[2]), body)
        elif kind == "duplicate_member":
            members.insert(index, (info, body))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # duplicate member names are the point
        for info, body in members:
            copy = zipfile.ZipInfo(info.filename, info.date_time)
            copy.compress_type = method if method is not None else zipfile.ZIP_DEFLATED
            archive.writestr(copy, body)
    return out.getvalue()


# -- cases -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkSpec:
    """One chunker with the parameters drawn for it."""

    name: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One fuzz input: a file name (its extension picks the parser), the bytes, the chunkers to run."""

    name: str
    data: bytes
    chunkers: tuple[ChunkSpec, ...]


@st.composite
def chunk_specs(draw: st.DrawFn) -> tuple[ChunkSpec, ...]:
    """Sizes, overlap and unit per model-free chunker, always a valid combination."""
    specs = []
    for name in CHUNKERS:
        tokens = draw(st.integers(0, 9)) == 0
        max_size = draw(st.one_of(st.integers(1, 24), st.integers(24, 400), st.integers(400, 3000)))
        if tokens:
            max_size = max(max_size, 8)
        overlap = draw(st.one_of(st.just(0.0), st.floats(0.05, 0.45)))
        if round(overlap * max_size) >= max_size or (tokens and max_size - round(overlap * max_size) < 4):
            overlap = 0.0
        min_size = draw(st.integers(0, max_size))
        params: dict[str, Any] = {"max_size": max_size, "min_size": min_size, "overlap": overlap}
        if tokens:
            params["unit"] = "minilm"
        specs.append(ChunkSpec(name, params))
    return tuple(specs)


def fixtures(fmt: str) -> list[bytes]:
    """The fixture files a format starts from, sorted by name."""
    return [path.read_bytes() for path in sorted(FIXTURES.glob(f"*{FORMATS[fmt][1]}"))]


def _mutated_text(
    draw: st.DrawFn, seeds: Sequence[bytes], generated: st.SearchStrategy[str] | None, long_line: int
) -> bytes:
    """A text input: a fixture or generated document, edited as text, encoded, edited as bytes."""
    if generated is not None and draw(st.booleans()):
        text = draw(generated)
    else:
        text = draw(st.sampled_from(seeds)).decode("utf-8")
    for op in draw(st.lists(text_ops(long_line), max_size=3)):
        text = apply_text_op(text, op)
    data = text.encode(
        draw(st.sampled_from(ENCODINGS)) if draw(st.integers(0, 3)) == 0 else "utf-8", "replace"
    )
    for op in draw(st.lists(byte_ops, max_size=2)):
        data = apply_byte_op(data, op, seeds)
    return data


def cases(fmt: str, long_line: int = LONG_LINE) -> st.SearchStrategy[Case]:
    """The strategy of fuzz inputs for ``fmt`` (see the module docstring)."""
    seeds = fixtures(fmt)
    extension = FORMATS[fmt][0]
    generated = {"md": markdown_documents, "html": html_documents}.get(fmt)

    @st.composite
    def build(draw: st.DrawFn) -> Case:
        if fmt in ("txt", "md", "html"):
            data = _mutated_text(draw, seeds, generated, long_line)
        else:
            data = draw(st.sampled_from(seeds))
            structural = pdf_ops if fmt == "pdf" else zip_ops
            # raw byte edits mostly break the container (zip CRCs, xref offsets): one in eight inputs
            ops = draw(st.lists(structural, min_size=1, max_size=4))
            if draw(st.integers(0, 7)) == 0:
                ops.insert(draw(st.integers(0, len(ops))), draw(byte_ops))
            for op in ops:
                if op[0] == "stream":
                    data = mutate_pdf_stream(data, op[1], op[2])
                elif op[0] in ("member", "delete_member", "rename_member", "duplicate_member", "recompress"):
                    data = mutate_package(data, op)
                else:
                    data = apply_byte_op(data, op, seeds)
        return Case(f"fuzz{extension}", data, draw(chunk_specs()))

    return build()


# -- the oracle --------------------------------------------------------------------------------------


class InvariantError(Exception):
    """A parsed document or its chunks broke the contract."""


class InputTimeoutError(BaseException):
    """A step ran past the time limit (a BaseException, so that no ``except Exception`` eats it)."""


def document_problems(doc: Document) -> list[str]:
    """Broken document invariants: unit offsets, order, ids, parents."""
    problems: list[str] = []
    seen: dict[str, int] = {}
    previous_end = 0
    for index, unit in enumerate(doc.units):
        if unit.id != f"u{index + 1}":
            problems.append(f"unit id {unit.id} at position {index}")
        if not 0 <= unit.start < unit.end <= len(doc.text) or doc.text[unit.start : unit.end] != unit.text:
            problems.append(f"unit {unit.id} offsets")
        if unit.start < previous_end:
            problems.append(f"unit {unit.id} overlaps its predecessor")
        if unit.parent is not None:
            parent = doc.units[seen[unit.parent]] if unit.parent in seen else None
            if parent is None or parent.kind is not UnitKind.HEADING:
                problems.append(f"unit {unit.id} parent {unit.parent} is no earlier heading")
            elif unit.kind is UnitKind.HEADING and parent.level >= unit.level:
                problems.append(f"heading {unit.id} under heading {parent.id} of level {parent.level}")
        seen[unit.id] = index
        previous_end = unit.end
    return problems


def chunk_problems(doc: Document, chunks: list[Chunk], spec: ChunkSpec) -> list[str]:
    """Broken chunk invariants: offsets, trimming, exact size within the maximum, coverage or overlap."""
    counter = get_counter(spec.params.get("unit", "chars"))
    max_size = spec.params["max_size"]
    overlap = round(spec.params["overlap"] * max_size)
    problems: list[str] = []
    for chunk in chunks:
        if (
            doc.text[chunk.start : chunk.end] != chunk.text
            or not chunk.text
            or chunk.text != chunk.text.strip()
        ):
            problems.append(f"chunk {chunk.start}:{chunk.end} offsets or trimming")
        elif counter.count(chunk.text) != chunk.tokens or chunk.tokens > max_size:
            problems.append(f"chunk {chunk.start}:{chunk.end} size {chunk.tokens} (limit {max_size})")
    for before, after in itertools.pairwise(chunks):
        if overlap == 0 and (before.end > after.start or doc.text[before.end : after.start].strip()):
            problems.append(f"gap or overlap at {before.end}")
        if overlap and before.start >= after.start:
            problems.append(f"chunks out of order at {after.start}")
        # with overlap in characters, its extent is bounded too (in tokens, counting a piece differs)
        if overlap and "unit" not in spec.params and before.end - after.start > overlap:
            problems.append(f"overlap of {before.end - after.start} at {after.start} (limit {overlap})")
    if len({chunk.id for chunk in chunks}) != len(chunks):
        problems.append("duplicate chunk ids")
    if overlap == 0 and "".join("".join(c.text for c in chunks).split()) != "".join(doc.text.split()):
        problems.append("text lost or repeated")
    return problems


def run_case(case: Case, step: Callable[[], None] = lambda: None) -> tuple[str, str]:
    """The outcome and, for a typed error, its class: ``("rejected", "EncodingError")`` for a refused
    input, ``("chunk-error", ...)`` when a chunker refused the document, else ``("ok", "")``.

    Anything else raises: an unexpected exception, or :class:`InvariantError`. ``step`` is called before
    the parse and before each chunker (the campaign restarts its timer there).
    """
    step()
    try:
        doc = parse_bytes(case.data, case.name)
    except ChunkwiseError as exc:
        return "rejected", type(exc).__name__
    problems = document_problems(doc)
    if problems:
        raise InvariantError(f"document: {problems[0]}")
    outcome = ("ok", "")
    for spec in case.chunkers:
        step()
        try:
            chunks = get_chunker(spec.name, **spec.params).chunk(doc)
        except ChunkwiseError as exc:
            outcome = ("chunk-error", type(exc).__name__)
            continue
        problems = chunk_problems(doc, chunks, spec)
        if problems:
            raise InvariantError(f"{spec.name} {spec.params}: {problems[0]}")
    return outcome


# -- the campaign ------------------------------------------------------------------------------------


def _relative(path: str) -> str:
    """A traceback path without the machine's prefix: from the package or library directory on."""
    for marker in ("/src/chunkwise/", "/site-packages/", "/bench/", "/lib/python"):
        if marker in path:
            return marker.strip("/") + "/" + path.split(marker, 1)[1]
    return Path(path).name


def _where(tb: TracebackType | None) -> str:
    """The innermost frame inside chunkwise (else the innermost frame) as ``file:line``."""
    frames = traceback.extract_tb(tb)
    ours = [f for f in frames if "/chunkwise/" in f.filename] or frames
    return f"{_relative(ours[-1].filename)}:{ours[-1].lineno}" if ours else "?"


@dataclass
class Crash:
    """One distinct crash: its kind, the error, where it happened, how often, the first input's file."""

    kind: str
    error: str
    where: str
    count: int = 1
    first_execution: int = 0
    input: str = ""
    traceback: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (traceback paths made relative)."""
        return {
            "kind": self.kind,
            "error": self.error,
            "where": self.where,
            "count": self.count,
            "first_execution": self.first_execution,
            "input": self.input,
        }


@dataclass
class Campaign:
    """Counts and crashes of one format's run."""

    fmt: str
    seed: int
    crash_dir: Path | None
    timeout: float
    executions: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    rejections: Counter[str] = field(default_factory=Counter)
    crashes: dict[tuple[str, str, str], Crash] = field(default_factory=dict)
    seconds: float = 0.0
    slow: float = 10.0
    slowest: list[dict[str, Any]] = field(default_factory=list)

    def execute(self, case: Case) -> None:
        """Run one input and record its outcome (never raises, except on an interrupt)."""
        self.executions += 1
        previous = signal.signal(signal.SIGALRM, _alarm)
        began = time.monotonic()
        try:
            outcome, error = run_case(case, lambda: signal.setitimer(signal.ITIMER_REAL, self.timeout))
            self.outcomes[outcome] += 1
            if error:
                self.rejections[error] += 1
            self._note_time(time.monotonic() - began, case)
        except InputTimeoutError:
            self._record("timeout", f"over {self.timeout:.0f} s", sys.exc_info()[2], case)
        except InvariantError as exc:
            self._record("invariant", str(exc), sys.exc_info()[2], case)
        except MemoryError:
            self._record("memory", "MemoryError", sys.exc_info()[2], case)
        except Exception as exc:
            self._record("exception", f"{type(exc).__name__}: {exc}"[:300], sys.exc_info()[2], case)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def _note_time(self, seconds: float, case: Case) -> None:
        """Keep the :data:`SLOWEST` slowest inputs over ``slow`` seconds (written beside the crashes)."""
        if seconds < self.slow or (len(self.slowest) >= SLOWEST and seconds <= self.slowest[-1]["seconds"]):
            return
        name = f"{self.fmt}-slow-{hashlib.sha256(case.data).hexdigest()[:12]}{Path(case.name).suffix}"
        entry = {"seconds": round(seconds, 1), "bytes": len(case.data), "input": name}
        entry["chunkers"] = [[spec.name, spec.params] for spec in case.chunkers]
        self.slowest = sorted([*self.slowest, entry], key=lambda e: -e["seconds"])[:SLOWEST]
        if self.crash_dir is not None:
            self.crash_dir.mkdir(parents=True, exist_ok=True)
            (self.crash_dir / name).write_bytes(case.data)

    def _record(self, kind: str, error: str, tb: TracebackType | None, case: Case) -> None:
        """Count a crash; keep the smallest input of each distinct one, with its traceback."""
        self.outcomes["crash"] += 1
        where = _where(tb)
        label = re.sub(r"\d+", "N", error.split(":", 1)[0] if kind == "exception" else error[:40])
        key = (kind, label, where)
        if key in self.crashes:
            crash = self.crashes[key]
            crash.count += 1
            if self.crash_dir is None or len(case.data) >= _input_size(self.crash_dir / crash.input):
                return
        else:
            crash = Crash(kind, error, where, first_execution=self.executions)
            self.crashes[key] = crash
        crash.traceback = "".join(traceback.format_tb(tb))
        if self.crash_dir is not None:
            digest = hashlib.sha256("|".join(key).encode()).hexdigest()[:12]
            crash.input = f"{self.fmt}-{digest}{Path(case.name).suffix}"
            self.crash_dir.mkdir(parents=True, exist_ok=True)
            (self.crash_dir / crash.input).write_bytes(case.data)
            details = dict(crash.to_dict(), chunkers=[[s.name, s.params] for s in case.chunkers])
            details["traceback"] = [_relative(line) for line in crash.traceback.splitlines()]
            (self.crash_dir / f"{crash.input}.json").write_text(json.dumps(details, indent=1) + "\n")

    def to_dict(self) -> dict[str, Any]:
        """The per-format entry of ``bench/results/fuzz.json``."""
        return {
            "seed": self.seed,
            "seconds": round(self.seconds, 1),
            "executions": self.executions,
            "outcomes": dict(sorted(self.outcomes.items())),
            "typed_rejections": dict(self.rejections.most_common()),
            "crashes": len(self.crashes),
            "distinct_crashes": [crash.to_dict() for crash in self.crashes.values()],
            "slowest_inputs": self.slowest,
        }


def _input_size(path: Path) -> int:
    """The size of a saved input (the largest possible when there is none yet)."""
    try:
        return path.stat().st_size
    except OSError:
        return sys.maxsize


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    """The per-input timer's signal handler."""
    raise InputTimeoutError


def run_format(
    fmt: str,
    *,
    seed: int = 0,
    seconds: float | None = None,
    executions: int | None = None,
    crash_dir: Path | None = None,
    timeout: float = 60.0,
    slow: float = 10.0,
    long_line: int = LONG_LINE,
    on_batch: Callable[[Campaign], None] | None = None,
) -> Campaign:
    """Fuzz ``fmt`` until ``seconds`` have passed or ``executions`` inputs have run (whichever comes
    first; at least one must be given). Deterministic for a given ``seed``, ``executions`` and
    ``long_line`` (the longest run of one character inserted into text formats)."""
    if seconds is None and executions is None:
        raise ValueError("give seconds or executions")
    campaign = Campaign(fmt, seed, crash_dir, timeout, slow=slow)
    strategy = cases(fmt, long_line)
    began = time.monotonic()
    deadline = began + seconds if seconds is not None else float("inf")
    budget = executions if executions is not None else sys.maxsize

    def more() -> bool:
        return time.monotonic() < deadline and campaign.executions < budget

    for batch in itertools.count():
        if not more():
            break

        @hypothesis.seed(seed * 1_000_003 + batch)
        @settings(
            max_examples=min(BATCH, budget - campaign.executions),
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )
        @given(case=strategy)
        def one(case: Case) -> None:
            if more():
                campaign.execute(case)

        one()
        campaign.seconds = time.monotonic() - began
        if on_batch is not None:
            on_batch(campaign)
    campaign.seconds = time.monotonic() - began
    return campaign


def merge_results(path: Path, campaigns: Sequence[Campaign]) -> dict[str, Any]:
    """Merge the campaigns' entries into the results file: each becomes its format's entry, and the
    entry it replaces moves to ``earlier_runs`` (other formats' entries are kept)."""
    results: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    results["engine"] = f"hypothesis {hypothesis.__version__} (generate phase, seeded)"
    results["chunkers"] = list(CHUNKERS)
    formats = results.setdefault("formats", {})
    earlier = results.setdefault("earlier_runs", [])
    for campaign in campaigns:
        if campaign.fmt in formats:
            earlier.append({"format": campaign.fmt, **formats[campaign.fmt]})
        formats[campaign.fmt] = campaign.to_dict()
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return results


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", default="all", choices=[*FORMATS, "all"])
    parser.add_argument("--seconds", type=float, default=None, help="time per format")
    parser.add_argument("--executions", type=int, default=None, help="inputs per format")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds the parse or one chunker may take"
    )
    parser.add_argument("--slow", type=float, default=10.0, help="inputs slower than this are listed")
    parser.add_argument("--crashes", type=Path, default=CRASHES, help="where crashing inputs are written")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.seconds is None and args.executions is None:
        parser.error("give --seconds or --executions")
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    for fmt in FORMATS if args.format == "all" else (args.format,):

        def report(campaign: Campaign) -> None:
            print(
                f"[{campaign.fmt}] {campaign.executions} inputs, {campaign.seconds:.0f} s, "
                f"{dict(campaign.outcomes)}, {len(campaign.crashes)} distinct crashes",
                flush=True,
            )

        campaign = run_format(
            fmt,
            seed=args.seed,
            seconds=args.seconds,
            executions=args.executions,
            crash_dir=args.crashes,
            timeout=args.timeout,
            slow=args.slow,
            on_batch=report,
        )
        merge_results(args.out, [campaign])
        for crash in campaign.crashes.values():
            print(f"  {crash.kind} x{crash.count} at {crash.where}: {crash.error[:160]} ({crash.input})")


if __name__ == "__main__":
    main()
