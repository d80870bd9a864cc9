"""DOCX text extraction: which text of a paragraph is shown, and which is not.

Each test writes a real package with python-docx and puts the WordprocessingML that Word itself
writes for the feature into its body (tracked moves, text boxes with their VML fallback, custom XML
blocks, footnotes and endnotes), then parses the file.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest

from chunkwise.errors import CorruptFileError, UnsafeContentError
from chunkwise.parsing import parse_file
from chunkwise.parsing.markdown import parse_markdown
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


def test_a_deleted_paragraph_mark_joins_the_paragraph_to_the_next(tmp_path: Path) -> None:
    """Accepted, a deleted mark runs the paragraph on into the next one, which keeps its own style;
    with no paragraph to join (a table follows) the text stands alone."""
    deleted = f'<w:pPr><w:rPr><w:del w:id="5" {_REVISION}/></w:rPr></w:pPr>'
    moved = f'<w:pPr><w:rPr><w:moveFrom w:id="6" {_REVISION}/></w:rPr></w:pPr>'
    heading = '<w:pPr><w:pStyle w:val="Heading1"/></w:pPr>'
    table = f"<w:tbl><w:tr><w:tc><w:p>{run('cell')}</w:p></w:tc></w:tr></w:tbl>"
    body = (
        f"<w:p>{deleted}{run('Joined ')}</w:p><w:p>{moved}{run('on ')}</w:p>"
        f"<w:p>{heading}{run('title')}</w:p>"
        f"<w:p>{run('Kept apart.')}</w:p><w:p>{deleted}{run('Before a table.')}</w:p>{table}"
    )
    doc = parse_file(docx_with_body(tmp_path, body))
    assert doc.text == "# Joined on title\n\nKept apart.\n\nBefore a table.\n\n| cell |\n|---|"


def test_a_deleted_paragraph_mark_joins_across_markup_and_inside_table_cells(tmp_path: Path) -> None:
    """The join does not stop at markup between the paragraphs (a bookmark's end), and a table cell's
    paragraphs, otherwise joined with a space, join the same way as the body's."""
    deleted = f'<w:pPr><w:rPr><w:del w:id="5" {_REVISION}/></w:rPr></w:pPr>'
    cell = f"<w:tc><w:p>{deleted}{run('in')}</w:p><w:p>{run('side')}</w:p><w:p>{run('apart')}</w:p></w:tc>"
    body = (
        f'<w:p>{deleted}{run("run")}</w:p><w:bookmarkEnd w:id="0"/><w:p>{run("on")}</w:p>'
        f"<w:tbl><w:tr>{cell}</w:tr></w:tbl>"
    )
    assert parse_file(docx_with_body(tmp_path, body)).text == "runon\n\n| inside apart |\n|---|"


def content_control(inner: str) -> str:
    return f'<w:sdt><w:sdtPr><w:id w:val="1"/></w:sdtPr><w:sdtContent>{inner}</w:sdtContent></w:sdt>'


def test_a_deleted_paragraph_mark_joins_into_a_following_content_control(tmp_path: Path) -> None:
    """A content control or custom XML block after the paragraph does not stop the join: its first
    paragraph is the next one, in the body as in a table cell. A paragraph ending a control stands
    alone, and so does one before a control whose first block is a table; nothing is lost or doubled."""
    deleted = f'<w:pPr><w:rPr><w:del w:id="5" {_REVISION}/></w:rPr></w:pPr>'

    def paragraph(text: str, properties: str = "") -> str:
        return f"<w:p>{properties}{run(text)}</w:p>"

    heading = paragraph("title", '<w:pPr><w:pStyle w:val="Heading1"/></w:pPr>')
    table = f"<w:tbl><w:tr><w:tc>{paragraph('cell')}</w:tc></w:tr></w:tbl>"
    cell = paragraph("in", deleted) + content_control(paragraph("side")) + paragraph("out")
    body = (
        paragraph("Joined ", deleted)
        + content_control(heading + paragraph("next"))
        + paragraph("Custom ", deleted)
        + f'<w:customXml w:element="x">{content_control(paragraph("nested"))}</w:customXml>'
        + content_control(paragraph("Ends it.", deleted))
        + paragraph("After.")
        + paragraph("Before a table.", deleted)
        + content_control(table)
        + f"<w:tbl><w:tr><w:tc>{cell}</w:tc></w:tr></w:tbl>"
    )
    doc = parse_file(docx_with_body(tmp_path, body))
    assert doc.text == (
        "# Joined title\n\nnext\n\nCustom nested\n\nEnds it.\n\nAfter.\n\nBefore a table.\n\n"
        "| cell |\n|---|\n\n| inside out |\n|---|"
    )


def test_a_row_whose_deletion_is_tracked_is_left_out(tmp_path: Path) -> None:
    """A tracked deleted row (``w:trPr/w:del``) is not part of the revised table."""
    deleted = f'<w:trPr><w:del w:id="6" {_REVISION}/></w:trPr>'
    rows = "".join(
        f"<w:tr>{props}<w:tc><w:p>{run(text)}</w:p></w:tc></w:tr>"
        for props, text in (("", "head"), (deleted, "gone"), ("", "kept"))
    )
    assert parse_file(docx_with_body(tmp_path, f"<w:tbl>{rows}</w:tbl>")).text == "| head |\n|---|\n| kept |"


_NOTE_PARTS = {
    "footnote": "http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes",
    "endnote": "http://schemas.openxmlformats.org/officeDocument/2006/relationships/endnotes",
}
_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def note(kind: str, note_id: int, *paragraphs: str, note_type: str = "") -> str:
    """A note as Word writes it: its own reference mark, then the text (one ``w:p`` per paragraph)."""
    kind_type = f' w:type="{note_type}"' if note_type else ""
    mark = f"<w:r><w:{kind}Ref/></w:r>"
    body = "".join(
        f"<w:p>{mark if i == 0 else ''}{run(' ' + text)}</w:p>" for i, text in enumerate(paragraphs)
    )
    return f'<w:{kind} w:id="{note_id}"{kind_type}>{body}</w:{kind}>'


def docx_with_notes(tmp_path: Path, body: str, notes: dict[str, str], prolog: str = "") -> Path:
    """A package whose body holds ``body`` and, for each kind in ``notes``, a ``word/<kind>s.xml`` part
    holding that XML, related to the main part and typed as Word types it."""
    path = docx_with_body(tmp_path, body)
    members: dict[str, bytes] = {}
    with zipfile.ZipFile(path) as package:
        for name in package.namelist():
            members[name] = package.read(name)
    rels = members["word/_rels/document.xml.rels"].decode("utf-8")
    types = members["[Content_Types].xml"].decode("utf-8")
    for kind, xml in notes.items():
        members[f"word/{kind}s.xml"] = f'{prolog}<w:{kind}s xmlns:w="{_W_NS}">{xml}</w:{kind}s>'.encode()
        rels = rels.replace(
            "</Relationships>",
            f'<Relationship Id="rIdNotes{kind}" Type="{_NOTE_PARTS[kind]}" Target="{kind}s.xml"/>'
            "</Relationships>",
        )
        content_type = f"application/vnd.openxmlformats-officedocument.wordprocessingml.{kind}s+xml"
        types = types.replace(
            "</Types>", f'<Override PartName="/word/{kind}s.xml" ContentType="{content_type}"/></Types>'
        )
    members["word/_rels/document.xml.rels"] = rels.encode("utf-8")
    members["[Content_Types].xml"] = types.encode("utf-8")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        for name, data in members.items():
            package.writestr(name, data)
    return path


def footnote_reference(note_id: int, kind: str = "footnote") -> str:
    return f'<w:r><w:{kind}Reference w:id="{note_id}"/></w:r>'


_SEPARATORS = (
    '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
    '<w:footnote w:type="continuationNotice" w:id="0"><w:p>'
    f"{run('Continued overleaf')}</w:p></w:footnote>"
)


def test_footnotes_and_endnotes_become_markdown_footnotes_in_reference_order(tmp_path: Path) -> None:
    body = (
        f"<w:p>{run('Fees apply')}{footnote_reference(7, 'endnote')}{run(' to bags')}{footnote_reference(2)}"
        f"{run('.')}</w:p><w:p>{run('See again')}{footnote_reference(2)}"
        f'<w:del w:id="9" {_REVISION}>{footnote_reference(3)}</w:del>{footnote_reference(0)}</w:p>'
    )
    footnotes = (
        _SEPARATORS
        + note("footnote", 2, "Per bag,", "each way.")
        + note("footnote", 3, "Deleted with its reference.")
        + note("footnote", 4, "Never referenced.")
    )
    endnotes = note("endnote", 7, "Since 2024.")
    doc = parse_file(docx_with_notes(tmp_path, body, {"footnote": footnotes, "endnote": endnotes}))
    assert doc.text == (
        "Fees apply[^1] to bags[^2].\n\nSee again[^2]\n\n[^1]: Since 2024.\n\n[^2]: Per bag, each way."
    )


@pytest.mark.parametrize("text", ["At the counter.", "https://example.com/fees"])
def test_a_docx_with_footnotes_parses_like_its_markdown_original(tmp_path: Path, text: str) -> None:
    """A note whose text is only a URL too: the Markdown parser keeps ``[^1]: https://...`` as a note."""
    markdown = parse_markdown(f"Bags are weighed.[^1]\n\n[^1]: {text}\n", "original.md")
    body = f"<w:p>{run('Bags are weighed.')}{footnote_reference(1)}</w:p>"
    doc = parse_file(docx_with_notes(tmp_path, body, {"footnote": note("footnote", 1, text)}))
    assert [(u.kind, u.text) for u in doc.units] == [(u.kind, u.text) for u in markdown.units]


def test_a_reference_without_an_id_attaches_no_note(tmp_path: Path) -> None:
    """``w:id`` is required on a note reference and on a note: a reference without one does not name
    the note without one (both invalid), so nothing is attached and that note is left out."""
    body = f"<w:p>{run('Bags are weighed.')}<w:r><w:footnoteReference/></w:r>{footnote_reference(1)}</w:p>"
    footnotes = note("footnote", 1, "At the counter.") + note("footnote", 2, "No id.").replace(
        ' w:id="2"', ""
    )
    doc = parse_file(docx_with_notes(tmp_path, body, {"footnote": footnotes}))
    assert doc.text == "Bags are weighed.[^1]\n\n[^1]: At the counter."


def test_a_notes_part_declaring_entities_is_refused(tmp_path: Path) -> None:
    prolog = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">]>'
    body = f"<w:p>{run('Text')}{footnote_reference(1)}</w:p>"
    path = docx_with_notes(tmp_path, body, {"footnote": note("footnote", 1, "&a;")}, prolog)
    with pytest.raises(UnsafeContentError, match=r"footnotes\.xml"):
        parse_file(path)


def test_a_notes_part_that_is_not_xml_is_corrupt(tmp_path: Path) -> None:
    body = f"<w:p>{run('Text')}{footnote_reference(1)}</w:p>"
    path = docx_with_notes(tmp_path, body, {"footnote": "<w:footnote w:id='1'><w:p>"})
    with pytest.raises(CorruptFileError, match="cannot read as DOCX"):
        parse_file(path)


def test_the_body_walk_does_not_recurse_per_nesting_level() -> None:
    """python-docx's XML parser stops at 256 levels of nesting (such a file is refused as corrupt), but
    the walk through content controls and custom XML must not rely on that: a body 1,800 levels deep,
    as a parser without the limit builds it, is walked without exhausting the stack."""
    from lxml import etree

    from chunkwise.parsing import docx as docx_parser

    levels = 600
    body = (
        f'<w:body xmlns:w="{_W_NS}">'
        + "<w:sdt><w:sdtContent><w:customXml>" * levels
        + f"<w:p>{run('Deep')}</w:p>"
        + "</w:customXml></w:sdtContent></w:sdt>" * levels
        + "</w:body>"
    )
    walker = docx_parser._BodyWalker(docx.Document(), docx_parser._Notes())
    walker.walk(etree.fromstring(body.encode("utf-8"), etree.XMLParser(huge_tree=True)))
    assert walker.builder.build("deep.docx").text == "Deep"
