"""PPTX shapes and paragraph levels that python-pptx reads loosely: each test saves a real deck with
python-pptx, edits one slide's XML as other generators or hostile files write it, and parses it."""

from __future__ import annotations

import io
from pathlib import Path

import pptx
import pytest
from pptx.util import Inches

from chunkwise.document import UnitKind
from chunkwise.errors import CorruptFileError
from chunkwise.parsing import parse_file
from tests.support.packages import edited_package

#: The text box of the deck below, as python-pptx writes it: its flag, geometry and paragraph.
_TEXT_BOX_FLAG = '<p:cNvSpPr txBox="1"/>'
_TEXT_BOX_GEOMETRY = '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom>'
_TEXT_BOX_PARAGRAPH = "<a:p><a:r><a:t>Pack light</a:t>"


def deck_with_slide_edit(tmp_path: Path, edits: dict[str, str]) -> Path:
    """A one-slide deck (title "Plan", a text box "Pack light") with each key of ``edits`` replaced
    by its value in the slide's XML."""
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Plan"
    box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(4), Inches(1))
    box.text_frame.text = "Pack light"
    buffer = io.BytesIO()
    deck.save(buffer)
    path = tmp_path / "edited.pptx"

    def edited(data: bytes) -> bytes:
        xml = data.decode("utf-8")
        for old, new in edits.items():
            assert xml.count(old) == 1
            xml = xml.replace(old, new)
        return xml.encode("utf-8")

    path.write_bytes(edited_package(buffer.getvalue(), "ppt/slides/slide1.xml", edited))
    return path


def test_a_text_shape_without_geometry_is_read(tmp_path: Path) -> None:
    """A ``p:sp`` with neither a geometry nor ``txBox="1"``: python-pptx cannot name its shape type
    (``NotImplementedError``), yet it holds text that PowerPoint shows."""
    path = deck_with_slide_edit(tmp_path, {_TEXT_BOX_FLAG: "<p:cNvSpPr/>", _TEXT_BOX_GEOMETRY: ""})
    assert parse_file(path).text == "# Plan\n\nPack light"


def test_a_hostile_paragraph_level_is_clamped(tmp_path: Path) -> None:
    """A level far past DrawingML's 0-8 would ask the builder for that many spaces of indentation."""
    bulleted = '<a:p><a:pPr lvl="99999999999"><a:buChar char="-"/></a:pPr><a:r><a:t>Pack light</a:t>'
    doc = parse_file(deck_with_slide_edit(tmp_path, {_TEXT_BOX_PARAGRAPH: bulleted}))
    item = next(u for u in doc.units if u.kind is UnitKind.LIST_ITEM)
    assert (item.level, item.text) == (8, "                - Pack light")


def test_a_shape_without_its_non_visual_properties_is_corrupt(tmp_path: Path) -> None:
    """python-pptx reads a shape's id from its first child: without ``p:nvSpPr`` it would raise a bare
    ``AttributeError``."""
    properties = '<p:nvSpPr><p:cNvPr id="3" name="TextBox 2"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr>'
    path = deck_with_slide_edit(tmp_path, {properties: ""})
    with pytest.raises(CorruptFileError) as info:
        parse_file(path)
    assert info.value.reason == "cannot read as PPTX: a shape of slide 1 has no non-visual properties"


_MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_P14 = 'xmlns:p14="http://schemas.microsoft.com/office/powerpoint/2010/main"'
_CX1 = 'xmlns:cx1="http://schemas.microsoft.com/office/drawing/2015/9/8/chartex"'


def text_shape(shape_id: int, text: str) -> str:
    return (
        f'<p:sp><p:nvSpPr><p:cNvPr id="{shape_id}" name="Text {shape_id}"/><p:cNvSpPr txBox="1"/><p:nvPr/>'
        f"</p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:p><a:r><a:t>{text}</a:t></a:r></a:p></p:txBody></p:sp>"
    )


def alternate(requires: str, declared: str = "") -> str:
    """Alternate content as PowerPoint writes it: a Choice requiring ``requires``, then a Fallback."""
    return (
        f'<mc:AlternateContent xmlns:mc="{_MC_NS}" {declared}><mc:Choice Requires="{requires}">'
        f"{text_shape(10, 'Drawn the new way')}</mc:Choice>"
        f"<mc:Fallback>{text_shape(11, 'Drawn the old way')}</mc:Fallback></mc:AlternateContent>"
    )


@pytest.mark.parametrize(
    ("content", "read"),
    [
        (alternate("p14", _P14), "Drawn the new way"),
        (alternate("cx1", _CX1), "Drawn the old way"),
        (alternate("p14 zz", _P14), "Drawn the old way"),
        (alternate("undeclared"), "Drawn the old way"),
        (
            '<p:grpSp><p:nvGrpSpPr><p:cNvPr id="20" name="Group"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
            f"<p:grpSpPr/>{alternate('p14', _P14)}</p:grpSp>",
            "Drawn the new way",
        ),
    ],
)
def test_alternate_content_is_read_once_from_the_understood_branch(
    tmp_path: Path, content: str, read: str
) -> None:
    """python-pptx skips ``mc:AlternateContent``, losing its shapes' text; the parser reads the Choice
    it understands, else the Fallback, never both."""
    path = deck_with_slide_edit(tmp_path, {"</p:spTree>": f"{content}</p:spTree>"})
    assert parse_file(path).text == f"# Plan\n\nPack light\n\n{read}"
