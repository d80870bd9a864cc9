"""A deterministic slice of ``bench/fuzz.py`` and the regressions its longer runs found.

The slice runs a few dozen seeded inputs per format through parse -> chunk with the fuzzer's oracle
(runs of one character capped at 20,000, to stay quick): any exception that is not a
``ChunkwiseError``, a broken invariant or a hang fails the test. Each
crash found by the long runs (``bench/results/fuzz.json``) has its input rebuilt here, beside its fix.
"""

from __future__ import annotations

import importlib.util
import io
import re
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from chunkwise.chunking import get_chunker
from chunkwise.document import Document
from chunkwise.errors import CorruptFileError
from chunkwise.parsing import parse_bytes
from tests.support.packages import edited_package

REPO = Path(__file__).parent.parent
FORMATS = REPO / "tests" / "data" / "formats"


@pytest.fixture(scope="module")
def fuzz() -> ModuleType:
    """``bench/fuzz.py``, imported as a module."""
    spec = importlib.util.spec_from_file_location("fuzz", REPO / "bench" / "fuzz.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("fmt", ["txt", "md", "html", "pdf", "docx", "pptx"])
def test_fuzz_slice_finds_no_crash(fuzz: ModuleType, fmt: str) -> None:
    campaign = fuzz.run_format(fmt, seed=7, executions=40, timeout=120, long_line=20_000)
    assert campaign.executions == 40
    assert [crash.to_dict() for crash in campaign.crashes.values()] == []
    assert campaign.outcomes["ok"] > 0  # the mutations leave some inputs readable: parsing is exercised


def _repack(fixture: str, member: str, method: int, damage: bytes | None = None, flag: int = 0) -> bytes:
    """``fixture`` rewritten with every member compressed by ``method``; then ``member``'s compressed
    bytes partly overwritten with ``damage``, or its general-purpose flags (in the local and the
    central header) set to ``flag``."""
    out = io.BytesIO()
    with zipfile.ZipFile(FORMATS / fixture) as original, zipfile.ZipFile(out, "w") as package:
        for info in original.infolist():
            package.writestr(info.filename, original.read(info), compress_type=method)
    data = bytearray(out.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as package:
        local = package.getinfo(member).header_offset
    name = member.encode()
    central = data.index(b"PK\x01\x02")  # the central directory: one header per member, in order
    while data[central + 46 : central + 46 + len(name)] != name:
        central = data.index(b"PK\x01\x02", central + 4)
    if damage is not None:
        start = local + 30 + int.from_bytes(data[local + 26 : local + 28], "little")
        start += int.from_bytes(data[local + 28 : local + 30], "little")
        data[start + 16 : start + 16 + len(damage)] = damage
    if flag:
        data[local + 6 : local + 8] = flag.to_bytes(2, "little")
        data[central + 8 : central + 10] = flag.to_bytes(2, "little")
    return bytes(data)


@pytest.mark.parametrize(
    ("fixture", "member", "method"),
    [
        ("accessories.pptx", "ppt/slides/slide1.xml", zipfile.ZIP_DEFLATED),
        ("accessories.docx", "word/document.xml", zipfile.ZIP_DEFLATED),
        ("accessories.docx", "word/document.xml", zipfile.ZIP_LZMA),
    ],
)
def test_a_member_whose_compressed_data_is_damaged_is_corrupt(fixture: str, member: str, method: int) -> None:
    # found by fuzzing: zlib.error ("invalid distance too far back") escaped the member scan untyped
    data = _repack(fixture, member, method, damage=b"\xff" * 64)
    with pytest.raises(CorruptFileError, match=rf"damaged archive member {re.escape(member)} "):
        parse_bytes(data, f"damaged{Path(fixture).suffix}")


def test_an_encrypted_member_is_corrupt() -> None:
    data = _repack("accessories.docx", "word/document.xml", zipfile.ZIP_DEFLATED, flag=0x1)
    with pytest.raises(CorruptFileError, match=r"damaged archive member word/document\.xml \(File"):
        parse_bytes(data, "encrypted.docx")


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".zip"])
def test_an_archive_of_an_unsupported_zip_version_is_corrupt(suffix: str) -> None:
    # found by fuzzing: zipfile raises NotImplementedError for a "version needed to extract" it does
    # not know, both where the format is detected and where the package is checked
    data = bytearray(
        (FORMATS / "accessories").with_suffix(".pptx" if suffix == ".pptx" else ".docx").read_bytes()
    )
    central = data.index(b"PK\x01\x02")
    data[central + 6 : central + 8] = (173).to_bytes(2, "little")  # version 17.3
    with pytest.raises(CorruptFileError, match=r"not a valid zip archive \(zip file version 17\.3\)"):
        parse_bytes(bytes(data), f"version{suffix}")


@pytest.mark.timeout(300)
def test_a_200k_character_run_chunks_in_tokens_without_rescanning_the_run(fuzz: ModuleType) -> None:
    # found by fuzzing: a 200,000-character run without a space, chunked at 8 tokens, ran past the
    # fuzzer's 60 s limit; every chunk boundary inside the run sliced and hashed the whole run again
    doc = Document(id="run", text="Heading words. " + "-" * 200_000 + " tail")
    spec = fuzz.ChunkSpec("recursive", {"max_size": 8, "min_size": 0, "overlap": 0.0, "unit": "minilm"})
    chunks = get_chunker(spec.name, **spec.params).chunk(doc)
    assert fuzz.chunk_problems(doc, chunks, spec) == []
    assert len(chunks) > 200_000 // 8


def _with_member(fixture: str, member: str, edit: Callable[[bytes], bytes]) -> bytes:
    """``fixture`` with ``member`` rewritten by ``edit``."""
    return edited_package((FORMATS / fixture).read_bytes(), member, edit)


def test_a_slide_list_naming_a_missing_relationship_is_corrupt() -> None:
    # found by fuzzing: python-pptx resolves slides lazily, and a sldId whose r:id has no relationship
    # raised KeyError while the slides were walked
    data = _with_member(
        "accessories.pptx", "ppt/presentation.xml", lambda xml: xml.replace(b'r:id="rId2"', b'r:id="rId999"')
    )
    with pytest.raises(CorruptFileError, match="cannot read as PPTX: \"no relationship with key 'rId999'\""):
        parse_bytes(data, "dangling.pptx")


def test_a_slide_part_holding_other_xml_is_corrupt() -> None:
    # found by fuzzing: a slide part replaced by a relationships part has no shape tree, and
    # python-pptx's AttributeError escaped while the title placeholder was looked up
    rels = b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>'
    data = _with_member("accessories.pptx", "ppt/slides/slide1.xml", lambda _: rels)
    with pytest.raises(CorruptFileError, match="cannot read as PPTX: slide 1 has no shape tree"):
        parse_bytes(data, "not-a-slide.pptx")


def test_a_pptx_attribute_of_an_invalid_value_is_corrupt() -> None:
    # found by fuzzing: python-pptx raised its own InvalidXmlError for b="abc" on a run of a
    # paragraph that may be a sub-heading (its boldness is read)
    data = _with_member(
        "accessories.pptx",
        "ppt/slides/slide3.xml",
        lambda xml: xml.replace(b'<a:rPr b="1" />', b'<a:rPr b="abc" />'),
    )
    with pytest.raises(CorruptFileError, match="value must be one of '1', '0', 'true' or 'false', got 'abc'"):
        parse_bytes(data, "bold.pptx")


def test_a_slide_relationship_leading_to_another_part_is_corrupt() -> None:
    # found by fuzzing: a slide relationship whose target is a theme gave python-pptx a part without a
    # slide, and its AttributeError escaped while the slide list was resolved
    data = _with_member(
        "accessories.pptx",
        "ppt/_rels/presentation.xml.rels",
        lambda xml: xml.replace(b'Target="slides/slide1.xml"', b'Target="theme/theme1.xml"'),
    )
    with pytest.raises(
        CorruptFileError,
        match=r"cannot read as PPTX: a part of the package is not shaped as PPTX requires "
        r"\(AttributeError: 'Part' object has no attribute 'slide'\)",
    ):
        parse_bytes(data, "theme.pptx")


def test_a_docx_main_part_without_a_body_is_corrupt() -> None:
    # found by fuzzing: a main part holding other XML has no .body, and AttributeError escaped
    footer = b'<w:ftr xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:p/></w:ftr>'
    data = _with_member("accessories.docx", "word/document.xml", lambda _: footer)
    with pytest.raises(CorruptFileError, match="the main document part has no body"):
        parse_bytes(data, "footer.docx")


def test_a_docx_whose_core_properties_hold_other_xml_takes_its_title_from_a_heading() -> None:
    # found by fuzzing: python-docx's core properties have no title_text when docProps/core.xml holds
    # another element, and the AttributeError escaped; the title is optional: the first heading serves
    other = b'<w:ftr xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"/>'
    doc = parse_bytes(_with_member("accessories.docx", "docProps/core.xml", lambda _: other), "core.docx")
    assert doc.units
    assert doc.title == doc.headings()[0].text.lstrip("#").strip()  # the builder's fallback


def test_a_docx_style_of_an_unknown_type_is_not_a_paragraph_style() -> None:
    # found by fuzzing: python-docx raised ValueError for w:type="99999999999" while the style index
    # was built; the index now reads the w:style elements, and a style of another type than
    # "paragraph" is left out of it, so the text reads as it does with the style intact
    data = _with_member(
        "accessories.docx",
        "word/styles.xml",
        lambda xml: xml.replace(b'<w:style w:type="paragraph"', b'<w:style w:type="99999999999"', 1),
    )
    original = parse_bytes((FORMATS / "accessories.docx").read_bytes(), "style.docx")
    assert parse_bytes(data, "style.docx").text == original.text


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF of ``objects`` (numbered from 1, the first one the catalog) with a correct xref table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


#: A ToUnicode map that reads code 0x41 ("A") as U+D960, half of a surrogate pair.
_SURROGATE_CMAP = (
    b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def\n"
    b"1 begincodespacerange <00> <FF> endcodespacerange\n"
    b"2 beginbfchar <41> <D960> <42> <0042> endbfchar\n"
    b"endcmap CMapName currentdict /CMap defineresource pop end end"
)


def _one_page_pdf(kids: bytes, count: int) -> bytes:
    """One page showing ``BAB words here`` in a font whose ToUnicode map gives "A" as a lone surrogate;
    the page tree lists ``kids`` and claims ``count`` pages."""
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 300] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            _stream(b"BT /F1 12 Tf 50 250 Td (BAB words here) Tj ET"),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
            _stream(_SURROGATE_CMAP),
        ]
    )


def test_a_pdf_character_mapped_to_a_lone_surrogate_becomes_a_replacement_character() -> None:
    # found by fuzzing: PDFium reported U+D960 for a glyph, and the text could not be encoded (the
    # chunkers' content hash raised UnicodeEncodeError)
    doc = parse_bytes(_one_page_pdf(b"3 0 R", 1), "surrogate.pdf")
    assert "B\ufffdB words here" in doc.text
    assert doc.text.encode("utf-8")


def test_a_pdf_page_that_cannot_be_loaded_is_corrupt() -> None:
    # found by fuzzing: the page tree listed an object PDFium cannot load as a page, and its
    # PdfiumError escaped untyped
    with pytest.raises(CorruptFileError, match="cannot read page 2: Failed to load page"):
        parse_bytes(_one_page_pdf(b"3 0 R 5 0 R", 2), "broken-page.pdf")
