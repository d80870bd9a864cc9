"""PDF, DOCX and PPTX parsers: golden structure on the committed fixtures, and hostile input.

Hostile files (random bytes, truncated, encrypted and image-only PDFs, zip bombs, XML entity attacks)
are generated here in ``tmp_path``, never committed.
"""

from __future__ import annotations

import io
import random
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from chunkwise.document import Document, UnitKind
from chunkwise.errors import (
    CorruptFileError,
    EncryptedFileError,
    FileTooLargeError,
    NoTextError,
    ParseError,
    UnsafeContentError,
)
from chunkwise.parsing import ParseLimits, parse_file
from chunkwise.parsing.pptx import parse_presentation

FORMATS_DIR = Path(__file__).parent / "data" / "formats"
OFFICE_AND_PDF = sorted(p for p in FORMATS_DIR.iterdir() if p.suffix in {".pdf", ".docx", ".pptx"})


def titles(doc: Document) -> list[str]:
    return [u.title for u in doc.headings()]


# -- golden structure ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", OFFICE_AND_PDF, ids=lambda p: p.name)
def test_offsets_and_round_trip_hold_for_every_unit(path: Path) -> None:
    doc = parse_file(path)
    assert doc.units
    for unit in doc.units:
        assert doc.text[unit.start : unit.end] == unit.text
    assert Document.from_json(doc.to_json()) == doc
    if path.suffix in {".pdf", ".pptx"}:
        assert all(unit.page is not None and unit.page >= 1 for unit in doc.units)
    else:
        assert all(unit.page is None for unit in doc.units)


def test_pdf_headings_tables_lists_and_pages() -> None:
    doc = parse_file(FORMATS_DIR / "Baggage Allowance.pdf")
    assert doc.format == "pdf"
    assert doc.metadata == {"pages": 2}
    assert titles(doc) == [
        "CloudWay 24 Baggage Allowance Policy",
        "Cabin Baggage Allowance",
        "Checked Baggage Allowance",
        "Excess Baggage Policy",
        "Special Baggage",
        "Important Guidelines",
    ]
    assert [u.level for u in doc.headings()] == [1, 2, 2, 2, 2, 2]
    tables = [u for u in doc.units if u.kind is UnitKind.TABLE]
    assert [t.page for t in tables] == [1, 1]
    assert tables[0].text.splitlines()[0] == (
        "| Class | Number of Bags | Max Weight (per bag) | Maximum Dimensions (L x W x H) |"
    )
    assert tables[1].text.splitlines()[-1] == "| CloudSaver (Economy) | 1 | 23 kg | 23 kg |"
    items = [u for u in doc.units if u.kind is UnitKind.LIST_ITEM]
    assert len(items) == 8
    assert {u.page for u in items} == {2}
    assert items[0].text.startswith("- Excess Baggage: Can be pre-purchased")
    # the hyphenated "passen-ger" is rejoined; the running page numbers are gone
    assert "per passenger is permitted" in doc.text
    assert not any(u.text.strip() in {"1", "2"} for u in doc.units)


def test_pdf_nested_lists_and_numbered_headings() -> None:
    doc = parse_file(FORMATS_DIR / "Boarding Process.pdf")
    assert titles(doc)[:3] == ["Boarding Process with CloudWay 24", "1. Check-In", "2. Baggage Drop"]
    items = [u for u in doc.units if u.kind is UnitKind.LIST_ITEM]
    assert items[0].text.startswith("- Online Check-In: Available 48 to 2 hours")
    nested = [u for u in items if u.level == 1]
    assert nested[0].text == "  - CloudLux / CloudElite: Dedicated Priority Counters"
    assert nested[0].parent == doc.headings()[2].id


def test_docx_headings_lists_and_quotes() -> None:
    doc = parse_file(FORMATS_DIR / "Careers at CloudWay 24.docx")
    assert doc.format == "docx"
    assert [(u.level, u.title) for u in doc.headings()[:4]] == [
        (1, "Careers at CloudWay 24"),
        (2, "Why Join CloudWay 24?"),
        (2, "Life at CloudWay 24"),
        (3, "Our Culture"),
    ]
    texts = [u.text for u in doc.units if u.kind is UnitKind.LIST_ITEM]
    assert (
        texts[texts.index("1. Visit: CloudWay24.com/careers") + 1] == "2. Sign up with your email or mobile."
    )
    assert "  - MBA or Master’s in Business Administration/Public Administration or equivalent" in texts
    quotes = [u for u in doc.units if u.kind is UnitKind.QUOTE]
    assert len(quotes) == 2
    assert quotes[0].text.startswith("> “CloudWay 24 is about growth")


def test_docx_table_is_one_markdown_unit() -> None:
    doc = parse_file(FORMATS_DIR / "Baggage Allowance.docx")
    tables = [u for u in doc.units if u.kind is UnitKind.TABLE]
    assert len(tables) == 2
    assert tables[0].text.splitlines()[2] == "| CloudLux (First) | 2 | 10 kg each | 55 x 40 x 23 cm |"
    assert doc.unit(tables[0].parent or "").title == "Cabin Baggage Allowance"


def test_pptx_titles_bullets_tables_and_slide_numbers() -> None:
    doc = parse_file(FORMATS_DIR / "Baggage Allowance.pptx")
    assert [(u.level, u.page, u.title) for u in doc.headings()[:3]] == [
        (1, 1, "CloudWay 24 Baggage Allowance Policy"),
        (2, 2, "Cabin Baggage Allowance"),
        (2, 4, "Checked Baggage Allowance"),
    ]
    assert [u.page for u in doc.units if u.kind is UnitKind.TABLE] == [2, 4]
    items = [u for u in doc.units if u.kind is UnitKind.LIST_ITEM]
    assert [u.page for u in items] == [6, 6, 6, 7, 7, 8, 8, 8]
    careers = parse_file(FORMATS_DIR / "Careers at CloudWay 24.pptx")
    numbered = [u.text for u in careers.units if u.kind is UnitKind.LIST_ITEM and u.text[0].isdigit()]
    assert numbered[:2] == ["1. Visit: CloudWay24.com/careers", "2. Sign up with your email or mobile."]
    assert any(u.level == 1 for u in careers.units if u.kind is UnitKind.LIST_ITEM)


def test_pptx_speaker_notes_are_opt_in(tmp_path: Path) -> None:
    import pptx

    deck = pptx.Presentation(str(FORMATS_DIR / "Baggage Allowance.pptx"))
    deck.slides[0].notes_slide.notes_text_frame.text = "Presenter reminder: mention the lounge offer."
    path = tmp_path / "noted.pptx"
    deck.save(str(path))
    assert "Presenter reminder" not in parse_file(path).text
    with_notes = parse_presentation(path.read_bytes(), str(path), ParseLimits(), include_notes=True)
    note = next(u for u in with_notes.units if u.text.startswith("Presenter reminder"))
    assert note.page == 1
    assert note.kind is UnitKind.PARAGRAPH


# -- bad input -------------------------------------------------------------------------------------


def expect_error(path: Path, error: type[ParseError], reason: str, limits: ParseLimits | None = None) -> None:
    with pytest.raises(error) as info:
        parse_file(path, limits=limits)
    assert info.value.source == path.as_posix()
    assert reason in info.value.reason
    assert str(info.value).startswith(path.as_posix())


@pytest.mark.parametrize(
    ("suffix", "reason"),
    [
        (".pdf", "named .pdf but does not start with a PDF header"),
        (".docx", "named .docx but is not a zip archive"),
        (".pptx", "named .pptx but is not a zip archive"),
    ],
)
def test_random_bytes_are_corrupt(tmp_path: Path, suffix: str, reason: str) -> None:
    rng = random.Random(7)
    path = tmp_path / f"noise{suffix}"
    path.write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    expect_error(path, CorruptFileError, reason)


@pytest.mark.parametrize(
    ("suffix", "head", "reason"),
    [
        (".pdf", b"%PDF-1.7\n", "cannot read as PDF"),
        (".docx", b"PK\x03\x04", "not a valid zip archive"),
        (".pptx", b"PK\x03\x04", "not a valid zip archive"),
    ],
)
def test_random_bytes_behind_a_valid_signature_are_corrupt(
    tmp_path: Path, suffix: str, head: bytes, reason: str
) -> None:
    rng = random.Random(11)
    path = tmp_path / f"fake{suffix}"
    path.write_bytes(head + bytes(rng.randrange(256) for _ in range(4096)) + b"\n%%EOF\n")
    expect_error(path, CorruptFileError, reason)


def test_truncated_pdf(tmp_path: Path) -> None:
    data = (FORMATS_DIR / "Baggage Allowance.pdf").read_bytes()
    path = tmp_path / "half.pdf"
    path.write_bytes(data[: len(data) // 2])
    expect_error(path, CorruptFileError, "truncated")


def test_encrypted_pdf(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(FORMATS_DIR / "Baggage Allowance.pdf"))
    writer.encrypt("secret", algorithm="RC4-128")
    path = tmp_path / "locked.pdf"
    with path.open("wb") as handle:
        writer.write(handle)
    expect_error(path, EncryptedFileError, "password-protected")


def test_image_only_pdf_has_no_text(tmp_path: Path) -> None:
    import pypdfium2 as pdfium
    from pypdfium2 import raw

    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(300, 300)
    image = pdfium.PdfImage.new(pdf)
    bitmap = pdfium.PdfBitmap.new_native(16, 16, raw.FPDFBitmap_BGR)
    bitmap.fill_rect((90, 90, 90, 255), 0, 0, 16, 16)
    image.set_bitmap(bitmap)
    image.set_matrix(pdfium.PdfMatrix().scale(200, 200).translate(50, 50))
    page.insert_obj(image)
    page.gen_content()
    buffer = io.BytesIO()
    pdf.save(buffer)
    path = tmp_path / "scan.pdf"
    path.write_bytes(buffer.getvalue())
    expect_error(path, NoTextError, "no extractable text")


def rebuild(source: Path, target: Path, extra: Callable[[zipfile.ZipFile], None], skip: str = "") -> None:
    """Copy an OOXML package member by member, leaving out ``skip``, then let ``extra`` add members."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in original.infolist():
            if info.filename != skip:
                out.writestr(info, original.read(info))
        extra(out)


def zeros(name: str, size: int) -> Callable[[zipfile.ZipFile], None]:
    def write(archive: zipfile.ZipFile) -> None:
        block = bytes(1024 * 1024)
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as member:
            for _ in range(size // len(block)):
                member.write(block)

    return write


@pytest.mark.parametrize(
    ("fixture", "member"),
    [("accessories.docx", "word/media/zeros.bin"), ("accessories.pptx", "ppt/media/zeros.bin")],
)
def test_zip_bomb_is_refused(tmp_path: Path, fixture: str, member: str) -> None:
    path = tmp_path / f"bomb{Path(fixture).suffix}"
    rebuild(FORMATS_DIR / fixture, path, zeros(member, 300 * 1024 * 1024))
    assert path.stat().st_size < 2 * 1024 * 1024  # 300 MB of zeros packs into well under 2 MB
    expect_error(path, FileTooLargeError, "zip bomb refused: archive inflates to")


@pytest.mark.parametrize("fixture", ["accessories.docx", "accessories.pptx"])
def test_zip_limits_are_configurable(tmp_path: Path, fixture: str) -> None:
    original = FORMATS_DIR / fixture
    assert parse_file(original, limits=ParseLimits(max_uncompressed_bytes=2 * 1024 * 1024)).units
    expect_error(original, FileTooLargeError, "inflates to", ParseLimits(max_uncompressed_bytes=20_000))
    packed = tmp_path / f"packed{original.suffix}"
    rebuild(original, packed, zeros("docProps/padding.bin", 8 * 1024 * 1024))
    expect_error(packed, FileTooLargeError, "compresses")  # 8 MB is under the size limit, not the ratio


BILLION_LAUGHS = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n'
    + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">\n' for i in range(1, 10))
    + "]>\n"
    '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    "<w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"
)


def test_docx_entity_expansion_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "laughs.docx"

    def document_xml(archive: zipfile.ZipFile) -> None:
        archive.writestr("word/document.xml", BILLION_LAUGHS)

    rebuild(FORMATS_DIR / "accessories.docx", path, document_xml, skip="word/document.xml")
    expect_error(path, UnsafeContentError, "word/document.xml declares a DTD or entities")


def test_pptx_external_entity_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "xxe.pptx"
    slide = "ppt/slides/slide1.xml"
    original = zipfile.ZipFile(FORMATS_DIR / "accessories.pptx").read(slide).decode("utf-8")
    head, body = original.split("?>", 1)
    hostile = f'{head}?><!DOCTYPE p:sld [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>{body}'

    def slide_xml(archive: zipfile.ZipFile) -> None:
        archive.writestr(slide, hostile)

    rebuild(FORMATS_DIR / "accessories.pptx", path, slide_xml, skip=slide)
    expect_error(path, UnsafeContentError, f"{slide} declares a DTD")


def test_docx_word_builtin_styles(tmp_path: Path) -> None:
    import docx

    made = docx.Document()
    made.add_heading("Scope", 1)
    made.add_paragraph("first bullet", style="List Bullet")
    made.add_paragraph("nested bullet", style="List Bullet 2")
    made.add_paragraph("step one", style="List Number")
    made.add_paragraph("step two", style="List Number")
    made.add_paragraph("A quoted line", style="Quote")
    table = made.add_table(rows=2, cols=2)
    for (row, col), text in {(0, 0): "key", (0, 1): "value", (1, 0): "a", (1, 1): "1"}.items():
        table.cell(row, col).text = text
    made.add_paragraph("After the table.")
    path = tmp_path / "made.docx"
    made.save(str(path))
    doc = parse_file(path)
    assert doc.text == (
        "# Scope\n\n- first bullet\n  - nested bullet\n1. step one\n2. step two\n\n> A quoted line\n\n"
        "| key | value |\n|---|---|\n| a | 1 |\n\nAfter the table."
    )
    assert [u.kind for u in doc.units][-2:] == [UnitKind.TABLE, UnitKind.PARAGRAPH]


def test_docx_with_broken_xml_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "broken.docx"

    def document_xml(archive: zipfile.ZipFile) -> None:
        archive.writestr("word/document.xml", "<w:document><w:body><w:p>")

    rebuild(FORMATS_DIR / "accessories.docx", path, document_xml, skip="word/document.xml")
    expect_error(path, CorruptFileError, "cannot read as DOCX")


def test_docx_with_a_part_shaped_unlike_the_format_says_so(tmp_path: Path) -> None:
    """``[Content_Types].xml`` without its namespace parses as XML, but python-docx then fails inside its
    own code: the reason says that a part is malformed, not only which attribute its code lacked."""
    path = tmp_path / "no-namespace.docx"
    types = zipfile.ZipFile(FORMATS_DIR / "accessories.docx").read("[Content_Types].xml").decode("utf-8")

    def content_types(archive: zipfile.ZipFile) -> None:
        archive.writestr("[Content_Types].xml", types.replace(' xmlns="', ' xmlns:gone="'))

    rebuild(FORMATS_DIR / "accessories.docx", path, content_types, skip="[Content_Types].xml")
    expect_error(
        path, CorruptFileError, "cannot read as DOCX: a part of the package is not shaped as DOCX requires"
    )


def test_dtd_hidden_behind_blank_space_in_an_oddly_named_part_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "hidden.docx"

    def hidden_part(archive: zipfile.ZipFile) -> None:
        archive.writestr("word/media/image9.png", " " * 10_000 + BILLION_LAUGHS.split("\n", 1)[1])

    rebuild(FORMATS_DIR / "accessories.docx", path, hidden_part)
    expect_error(path, UnsafeContentError, "word/media/image9.png declares a DTD")
