"""Plain text: verbatim text, paragraph units at exact offsets, encoding detection."""

from __future__ import annotations

import codecs
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.document import UnitKind
from chunkwise.errors import EmptyDocumentError, EncodingError
from chunkwise.parsing import ParseLimits, parse_bytes
from chunkwise.parsing.decoding import decode_bytes
from chunkwise.parsing.text import parse, text_document

BLANK_LINE = re.compile(r"(?:\r\n|\r|\n)[^\S\r\n]*(?:\r\n|\r|\n)")


def test_text_is_verbatim_and_units_are_paragraphs() -> None:
    text = "  Title line\r\n\r\nPara one\nstill one  \n \t\n\n\tPara two\u00a0\n\rThird\n"
    doc = parse(text.encode(), "notes.txt", ParseLimits())
    assert doc.text == text
    assert doc.format == "text"
    assert doc.metadata == {"encoding": "utf-8"}
    assert [(u.id, u.kind, u.start, u.end, u.text) for u in doc.units] == [
        ("u1", UnitKind.PARAGRAPH, 2, 12, "Title line"),
        ("u2", UnitKind.PARAGRAPH, 16, 34, "Para one\nstill one"),
        ("u3", UnitKind.PARAGRAPH, 42, 50, "Para two"),
        ("u4", UnitKind.PARAGRAPH, 53, 58, "Third"),
    ]
    assert all(u.parent is None and u.level == 0 and u.page is None for u in doc.units)


def test_text_document_keeps_title_and_metadata() -> None:
    doc = text_document("d1", "a\n\nb", title="T", source="corpus.jsonl", metadata={"k": 1})
    assert (doc.id, doc.title, doc.source, doc.metadata) == ("d1", "T", "corpus.jsonl", {"k": 1})
    assert [u.text for u in doc.units] == ["a", "b"]


def test_whitespace_only_text_is_an_empty_document() -> None:
    with pytest.raises(EmptyDocumentError, match=r"blank\.txt: no text"):
        parse_bytes(b" \n\t\r\n \xc2\xa0", "blank.txt")
    with pytest.raises(EmptyDocumentError, match="d7"):
        text_document("d7", "\u3000\n")


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        (codecs.BOM_UTF8 + "héllo\n\nwörld".encode(), "utf-8"),
        (codecs.BOM_UTF16_LE + "héllo\n\nwörld".encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + "héllo\n\nwörld".encode("utf-16-be"), "utf-16-be"),
        (codecs.BOM_UTF32_LE + "héllo\n\nwörld".encode("utf-32-le"), "utf-32-le"),
    ],
)
def test_byte_order_marks_choose_the_encoding_and_are_dropped(data: bytes, encoding: str) -> None:
    doc = parse_bytes(data, "bom.txt")
    assert doc.text == "héllo\n\nwörld"
    assert doc.metadata["encoding"] == encoding


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize(
    "text",
    ["Plain English, with a résumé.\n\nSecond paragraph.", "Привет, мир! Это проверка.\n\nВторой абзац."],
)
def test_utf16_without_a_byte_order_mark_is_recognised(text: str, encoding: str) -> None:
    """The NUL bytes of ASCII characters and spaces give UTF-16 away, even in Cyrillic text."""
    for name in ("unmarked.txt", "unmarked"):
        doc = parse_bytes(text.encode(encoding), name)
        assert (doc.text, doc.metadata["encoding"]) == (text, encoding)


@pytest.mark.parametrize("data", [b"<p>a\x00b</p>", b"<p>ab\x00</p>", b"ok\x00 fine, then"])
def test_one_stray_nul_in_short_8_bit_text_is_not_utf16(data: bytes) -> None:
    """One NUL is a tenth of the pairs of ten bytes: read as UTF-16 the text would be CJK nonsense, so
    it is read as the 8-bit text it is, whose NUL makes it binary."""
    with pytest.raises(
        EncodingError,
        match=r"short\.html: binary content, not text \(1 control characters when read as utf-8\)",
    ):
        decode_bytes(data, "short.html")


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("text", ["ok", "hi\n", "Привет, мир!"])
def test_short_utf16_without_a_byte_order_mark_is_recognised(text: str, encoding: str) -> None:
    assert decode_bytes(text.encode(encoding), "short.txt").text == text


def test_binary_with_utf16s_pattern_of_nul_bytes_is_still_binary() -> None:
    """Sixteen-bit numbers below 256 put NUL in every high byte, as ASCII in UTF-16 does; read as
    UTF-16 they are control characters and Latin-1 symbols, and refused as binary."""
    numbers = bytes(value for n in range(4096) for value in ((n * 37 + 11) % 256, 0))
    with pytest.raises(
        EncodingError,
        match=r"numbers\.bin: binary content, not text \(\d+ control characters when read as utf-16-le\)",
    ):
        decode_bytes(numbers, "numbers.bin")


def test_legacy_western_text_is_detected_as_cp1252() -> None:
    text = "Café crème, naïve façade. Über straße.\n\nLe garçon a mangé à midi."
    doc = parse_bytes(text.encode("cp1252"), "legacy.txt")
    assert doc.text == text
    assert doc.metadata["encoding"] == "cp1252"


def test_legacy_cyrillic_text_is_detected() -> None:
    text = "Привет, мир! Это проверка кодировки текста.\n\nВторой абзац «в кавычках» — и тире."
    doc = parse_bytes(text.encode("cp1251"), "legacy.txt")
    assert doc.text == text
    assert doc.metadata["encoding"] == "cp1251"


def test_damaged_utf8_is_refused_with_the_offset() -> None:
    data = "Grüße aus Köln, naïve café".encode() + b"\xff tail"
    with pytest.raises(EncodingError, match=r"damaged UTF-8: invalid byte at offset 31"):
        decode_bytes(data, "damaged.txt")


def test_a_declared_encoding_is_used_when_the_bytes_are_not_utf8() -> None:
    greek = "Ελληνικά".encode("cp1253")
    assert decode_bytes(greek, "x.html", declared="windows-1253").text == "Ελληνικά"
    western = "Café crème, naïve façade. Über straße. Le garçon a mangé à midi.".encode("cp1252")
    assert decode_bytes(western, "x.html", declared="no-such-codec").encoding == "cp1252"


_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(["\n", "\r", " ", "\t", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u3000"]),
        st.characters(),
    )
)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_text_units_tile_the_text(text: str) -> None:
    """Every non-whitespace character is in exactly one unit, offsets are exact, blocks are maximal."""
    if not text.strip():
        with pytest.raises(EmptyDocumentError):
            text_document("d", text)
        return
    doc = text_document("d", text)
    assert doc.text == text
    covered = [False] * len(text)
    previous_end = 0
    for unit in doc.units:
        assert previous_end <= unit.start < unit.end <= len(text)
        assert text[unit.start : unit.end] == unit.text
        assert not unit.text[0].isspace()
        assert not unit.text[-1].isspace()
        assert not BLANK_LINE.search(unit.text)
        if unit.id != "u1":
            assert BLANK_LINE.search(text[previous_end : unit.start])
        for i in range(unit.start, unit.end):
            covered[i] = True
        previous_end = unit.end
    assert all(covered[i] for i, char in enumerate(text) if not char.isspace())
