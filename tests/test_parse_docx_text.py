"""DOCX text extraction: which text of a paragraph is shown, and which is not.

Each test writes a real package with python-docx and puts the WordprocessingML that Word itself
writes for the feature into its body (tracked moves, text boxes with their VML fallback, custom XML
blocks), then parses the file.
"""

from __future__ import annotations

import io
from pathlib import Path

import docx

from chunkwise.parsing import parse_file
from tests.support.packages import edited_package

_REVISION = 'w:author="A" w:date="2024-01-01T00:00:00Z"'


def docx_with_body(tmp_path: Path, body: str) -> Path:
    """A python-docx package whose body holds ``body`` (WordprocessingML) before the section; its
    template declares the ``w``, ``mc``, ``wps`` and ``v`` prefixes used here."""
    made = docx.Document()
    buffer = io.BytesIO()
    made.save(buffer)
    path = tmp_path / "made.docx"
    path.write_bytes(
        edited_package(
            buffer.getvalue(),
            "word/document.xml",
            lambda xml: xml.decode("utf-8").replace("<w:body>", f"<w:body>{body}", 1).encode("utf-8"),
        )
    )
    return path


def run(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{text}</w:t></w:r>'


def text_box(text: str) -> str:
    """A text box as Word writes it: the shape, then the same text again as a VML fallback."""
    content = f"<w:txbxContent><w:p>{run(text)}</w:p></w:txbxContent>"
    return (
        "<w:r><mc:AlternateContent>"
        f'<mc:Choice Requires="wps"><w:drawing><wps:wsp><wps:txbx>{content}</wps:txbx></wps:wsp></w:drawing>'
        "</mc:Choice>"
        f"<mc:Fallback><w:pict><v:shape><v:textbox>{content}</v:textbox></v:shape></w:pict></mc:Fallback>"
        "</mc:AlternateContent></w:r>"
    )


def test_tracked_changes_show_the_document_as_revised(tmp_path: Path) -> None:
    body = (
        f"<w:p>{run('Kept ')}"
        f'<w:del w:id="1" {_REVISION}><w:r><w:delText>deleted </w:delText></w:r></w:del>'
        f'<w:ins w:id="2" {_REVISION}>{run("inserted.")}</w:ins></w:p>'
        f'<w:p><w:moveFrom w:id="3" {_REVISION}>{run("Moved sentence. ")}</w:moveFrom>'
        f"{run('Staying sentence. ')}"
        f'<w:moveTo w:id="4" {_REVISION}>{run("Moved sentence.")}</w:moveTo></w:p>'
    )
    doc = parse_file(docx_with_body(tmp_path, body))
    assert doc.text == "Kept inserted.\n\nStaying sentence. Moved sentence."


def test_text_box_text_is_read_once_and_apart_from_its_anchor(tmp_path: Path) -> None:
    body = f"<w:p>{run('Anchor paragraph.')}{text_box('Boxed note')}</w:p>"
    doc = parse_file(docx_with_body(tmp_path, body))
    assert doc.text == "Anchor paragraph. Boxed note"


def test_text_box_in_a_table_cell_is_read_once(tmp_path: Path) -> None:
    cell = f"<w:tc><w:p>{run('Cell')}{text_box('boxed')}</w:p></w:tc>"
    body = f"<w:tbl><w:tr>{cell}<w:tc><w:p>{run('other')}</w:p></w:tc></w:tr></w:tbl>"
    doc = parse_file(docx_with_body(tmp_path, body))
    assert doc.text == "| Cell boxed | other |\n|---|---|"


def test_custom_xml_blocks_are_read(tmp_path: Path) -> None:
    body = f'<w:customXml w:element="clause"><w:p>{run("Inside a custom XML block.")}</w:p></w:customXml>'
    doc = parse_file(docx_with_body(tmp_path, body + f"<w:p>{run('After it.')}</w:p>"))
    assert doc.text == "Inside a custom XML block.\n\nAfter it."


def docx_with_replaced(tmp_path: Path, member: str, old: bytes, new: bytes) -> Path:
    """A python-docx package (a heading, then a paragraph) with ``old`` replaced by ``new`` in ``member``."""
    made = docx.Document()
    made.add_heading("Scope", 1)
    made.add_paragraph("Body text.")
    buffer = io.BytesIO()
    made.save(buffer)
    path = tmp_path / "edited.docx"

    def replaced(data: bytes) -> bytes:
        assert old in data
        return data.replace(old, new)

    path.write_bytes(edited_package(buffer.getvalue(), member, replaced))
    return path


def test_a_style_without_a_type_is_a_paragraph_style(tmp_path: Path) -> None:
    """``w:type`` is optional and defaults to a paragraph style; python-docx's style objects raise a
    ``KeyError`` for such a style, so the parser reads the styles part itself."""
    typed = b'<w:style w:type="paragraph" w:styleId="Heading1">'
    path = docx_with_replaced(tmp_path, "word/styles.xml", typed, b'<w:style w:styleId="Heading1">')
    assert parse_file(path).text == "# Scope\n\nBody text."


def test_a_styles_part_of_another_content_type_is_read_without_styles(tmp_path: Path) -> None:
    """Styles are optional: when the package types them as plain XML, python-docx's styles object
    lacks its element (an ``AttributeError``), and the text is read without styles."""
    styles_type = b"application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"
    path = docx_with_replaced(tmp_path, "[Content_Types].xml", styles_type, b"application/xml")
    assert parse_file(path).text == "Scope\n\nBody text."
