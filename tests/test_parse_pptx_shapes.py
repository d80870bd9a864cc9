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
from chunkwise.parsing import ParseLimits, parse_file
from chunkwise.parsing import pptx as pptx_parser
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


#: Ink as PowerPoint writes it: a content part (no text) in a ``p14`` Choice, a picture as Fallback.
_INK = (
    f'<mc:AlternateContent xmlns:mc="{_MC_NS}"><mc:Choice {_P14} Requires="p14">'
    '<p:contentPart p14:bwMode="auto" r:id="rId9"><p14:nvContentPartPr><p14:cNvPr id="7" name="Ink 6"/>'
    "<p14:cNvContentPartPr/><p14:nvPr/></p14:nvContentPartPr></p:contentPart></mc:Choice><mc:Fallback>"
    '<p:pic><p:nvPicPr><p:cNvPr id="7" name="Ink 6"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr><p:blipFill/>'
    "<p:spPr/></p:pic></mc:Fallback></mc:AlternateContent>"
)


@pytest.mark.parametrize("content", [_INK, _INK.replace("Requires", "Ignored")], ids=["choice", "fallback"])
def test_ink_is_passed_over(tmp_path: Path, content: str) -> None:
    """Ink holds no text: its content part (read from the ``p14`` Choice; its properties are in
    PowerPoint 2010's namespace) no longer stops the deck with a raw XPath error."""
    path = deck_with_slide_edit(tmp_path, {"</p:spTree>": f"{content}</p:spTree>"})
    assert parse_file(path).text == "# Plan\n\nPack light"


#: The title placeholder of the deck of :func:`deck_with_slide_edit`, as python-pptx writes it.
_TITLE = (
    '<p:sp><p:nvSpPr><p:cNvPr id="2" name="Title 1"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr>'
    '<p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/>'
    "<a:p><a:r><a:t>Plan</a:t></a:r></a:p></p:txBody></p:sp>"
)
#: A picture and a graphic frame that claim the title placeholder: neither holds text.
_TITLE_PICTURE = (
    '<p:pic><p:nvPicPr><p:cNvPr id="7" name="Picture"/><p:cNvPicPr/><p:nvPr><p:ph type="title"/></p:nvPr>'
    "</p:nvPicPr><p:blipFill/><p:spPr/></p:pic>"
)
_TITLE_FRAME = (
    '<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="8" name="Frame"/><p:cNvGraphicFramePr/><p:nvPr>'
    '<p:ph type="title"/></p:nvPr></p:nvGraphicFramePr><p:xfrm/><a:graphic><a:graphicData uri="x"/>'
    "</a:graphic></p:graphicFrame>"
)


@pytest.mark.parametrize(
    "edits",
    [
        pytest.param(
            {
                _TITLE: f'<mc:AlternateContent xmlns:mc="{_MC_NS}" {_P14}><mc:Choice Requires="p14">'
                f"{_TITLE}</mc:Choice><mc:Fallback>{_TITLE}</mc:Fallback></mc:AlternateContent>"
            },
            id="title in alternate content",
        ),
        pytest.param(
            {'id="3" name="TextBox 2"': 'id="2" name="TextBox 2"'}, id="a shape with the title's id"
        ),
        pytest.param({_TITLE: _TITLE_PICTURE + _TITLE}, id="a picture as title placeholder"),
        pytest.param({_TITLE: _TITLE_FRAME + _TITLE}, id="a graphic frame as title placeholder"),
    ],
)
def test_the_title_is_the_text_placeholder_found_by_the_shape_walk(
    tmp_path: Path, edits: dict[str, str]
) -> None:
    """The title is looked for among the shapes the parser reads, alternate content included, and only
    that one shape is left out of the body: a title wrapped in ``mc:AlternateContent`` was read as a
    paragraph, a shape sharing the title's id was dropped, and a title placeholder without text (a
    picture, a graphic frame) raised a bare ``AttributeError``."""
    doc = parse_file(deck_with_slide_edit(tmp_path, edits))
    assert [(unit.kind, unit.text) for unit in doc.units] == [
        (UnitKind.HEADING, "# Plan"),
        (UnitKind.PARAGRAPH, "Pack light"),
    ]


def test_the_shape_walk_does_not_recurse_per_nesting_level() -> None:
    """python-pptx's XML parser stops at 256 levels of nesting (such a deck is refused as corrupt), but
    the walk through groups and alternate content must not rely on that: a shape tree 1,800 levels
    deep, as a parser without the limit builds it, is walked without exhausting the stack."""
    from lxml import etree
    from pptx.oxml import element_class_lookup

    group = '<p:grpSp><p:nvGrpSpPr><p:cNvPr id="5" name="Group"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
    choice = f'<mc:AlternateContent xmlns:mc="{_MC_NS}" {_P14}><mc:Choice Requires="p14">'
    levels = 600
    xml = (
        '<p:spTree xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">'
        + (group + choice) * levels
        + text_shape(9, "Deep")
        + "</mc:Choice></mc:AlternateContent></p:grpSp>" * levels
        + "</p:spTree>"
    )
    parser = etree.XMLParser(huge_tree=True)
    parser.set_element_class_lookup(element_class_lookup)
    tree = etree.fromstring(xml.encode("utf-8"), parser)
    shapes = list(pptx_parser._shapes(tree, None, "slide 1", "deep.pptx"))
    assert [shape.text_frame.text for shape in shapes] == ["Deep"]


#: The notes placeholder python-pptx writes on a notes page, up to its text.
_NOTES_SHAPE = (
    '<p:sp><p:nvSpPr><p:cNvPr id="3" name="Notes Placeholder 2"/><p:cNvSpPr><a:spLocks noGrp="1"/>'
    '</p:cNvSpPr><p:nvPr><p:ph type="body" idx="3" sz="quarter"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody>'
    "<a:bodyPr/><a:lstStyle/><a:p><a:r><a:t>{text}</a:t></a:r></a:p></p:txBody></p:sp>"
)


@pytest.mark.parametrize(
    ("requires", "read"),
    [("p14", "Notes the new way"), ("cx1", "Notes the old way")],
    ids=["choice", "fallback"],
)
def test_notes_inside_alternate_content_are_read_once_like_a_slide(
    tmp_path: Path, requires: str, read: str
) -> None:
    """python-pptx's notes text frame skips ``mc:AlternateContent``: notes drawn there were lost. They
    are read with the slide's shape walk: the understood Choice, else the Fallback, never both."""
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Plan"
    slide.notes_slide.notes_text_frame.text = "Mention the lounge."
    buffer = io.BytesIO()
    deck.save(buffer)
    alternate_notes = (
        f'<mc:AlternateContent xmlns:mc="{_MC_NS}" {_P14} {_CX1}><mc:Choice Requires="{requires}">'
        f"{_NOTES_SHAPE.format(text='Notes the new way')}</mc:Choice>"
        f"<mc:Fallback>{_NOTES_SHAPE.format(text='Notes the old way')}</mc:Fallback></mc:AlternateContent>"
    )

    def edited(data: bytes) -> bytes:
        xml = data.decode("utf-8")
        original = _NOTES_SHAPE.format(text="Mention the lounge.")
        assert xml.count(original) == 1
        return xml.replace(original, alternate_notes).encode("utf-8")

    package = edited_package(buffer.getvalue(), "ppt/notesSlides/notesSlide1.xml", edited)
    doc = pptx_parser.parse_presentation(package, "notes.pptx", ParseLimits(), include_notes=True)
    assert doc.text == f"# Plan\n\n{read}"
    assert doc.units[-1].page == 1
