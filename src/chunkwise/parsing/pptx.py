"""PPTX parser: slide titles as headings, bullets with their levels, text frames, tables, optional notes.

The package is first checked by :func:`~chunkwise.parsing.ooxml.check_package` (zip bomb, DTD/entity
declarations, text volume) and only then loaded with python-pptx. Every unit carries its slide number
as ``page``.

Mapping, decided from the decks of ``data/formats/`` (rendered from Markdown originals):

* The title is the slide's title placeholder (found with the shapes, so alternate content counts).
  The first slide's title is the presentation title (heading level 1); later slide titles are level 2
  under it (level 1 when the first slide has no title).
* Inside a text frame, a paragraph that is entirely bold, has no bullet and has extra space before it
  is a sub-heading, one level below the slide's title (one more when it directly follows another
  sub-heading, as a section opening with a subsection does). This is how in-slide section headings
  are drawn; bold text without the added space before it stays a paragraph.
* In body placeholders, which inherit bullets from the slide master, every paragraph without
  ``buNone`` is a list item; in other shapes only paragraphs with an explicit ``buChar``/``buAutoNum``
  are. The depth is the paragraph level; ``buAutoNum`` items are numbered (``startAt`` honoured),
  each number clamped to +-``MAX_LIST_NUMBER`` as HTML and Markdown list numbers are.
* Other paragraphs become paragraphs; tables become Markdown tables; group shapes are descended into.
* Alternate content (``mc:AlternateContent``, which python-pptx skips) is read once: the first
  ``mc:Choice`` whose required namespaces are all understood (see :data:`UNDERSTOOD_NAMESPACES`),
  else the ``mc:Fallback``, as the Markup Compatibility rules have a reader choose; never both, since
  the branches hold the same content drawn two ways.
* Speaker notes are left out by default (they are for the presenter, not the audience); pass
  ``include_notes=True`` to :func:`parse_presentation` to add them as paragraphs after each slide
  (the notes page's body placeholder, alternate content resolved as on the slides).

Shapes are read in z-order (the order of the slide's shape tree), which is also authoring order.
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Iterator
from typing import Any

from chunkwise.document import Document
from chunkwise.errors import CorruptFileError, EmptyDocumentError
from chunkwise.parsing.blocks import clamp_list_number
from chunkwise.parsing.builder import DocumentBuilder
from chunkwise.parsing.limits import ParseLimits
from chunkwise.parsing.ooxml import TextMarkup, check_package, list_number, unreadable

_A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
_A = f"{{{_A_NS}}}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
#: The elements of a shape tree that are shapes and may hold text (python-pptx's list, less
#: ``p:contentPart``: ink and 3-D models, whose own non-visual properties are in PowerPoint 2010's
#: namespace and which hold no text).
_SHAPE_TAGS = frozenset(f"{_P}{name}" for name in ("sp", "grpSp", "graphicFrame", "cxnSp", "pic"))
#: Namespaces an ``mc:Choice`` may require and still be read: PowerPoint 2010 and 2013 extensions
#: (``p14``, ``p15``) and DrawingML 2010 ones (``a14``). They add properties to the shapes this parser
#: reads (``p:sp`` with ``a:t`` runs), so the Choice's text is all found; a Choice requiring anything
#: else (a 2016 chart) gives way to the Fallback, drawn with the shapes of the base schema. Ink is drawn
#: in a ``p14`` Choice as a ``p:contentPart``, which holds no text and is passed over.
UNDERSTOOD_NAMESPACES = frozenset(
    {
        "http://schemas.microsoft.com/office/powerpoint/2010/main",
        "http://schemas.microsoft.com/office/powerpoint/2012/main",
        "http://schemas.microsoft.com/office/drawing/2010/main",
    }
)
#: Text runs and line breaks (python-pptx reads a break as a vertical tab) of the slides, and of the
#: notes when they are read, for the text-volume check.
_TEXT = TextMarkup(re.compile(r"ppt/slides/slide\d+\.xml"), f"{_A_NS} t", frozenset({f"{_A_NS} br"}))
_TEXT_WITH_NOTES = dataclasses.replace(
    _TEXT, parts=re.compile(r"ppt/(?:slides/slide|notesSlides/notesSlide)\d+\.xml")
)

#: The deepest paragraph level DrawingML defines (``lvl`` runs 0-8); python-pptx does not check it, so
#: a hostile ``lvl="99999999999"`` is clamped rather than asking for that many spaces of indentation.
_MAX_LEVEL = 8


def parse(data: bytes, source: str, limits: ParseLimits) -> Document:
    """Parse PPTX bytes into a :class:`Document`, speaker notes left out."""
    return parse_presentation(data, source, limits)


def parse_presentation(
    data: bytes, source: str, limits: ParseLimits, *, include_notes: bool = False
) -> Document:
    """Parse PPTX bytes; ``include_notes`` adds each slide's speaker notes after its content."""
    check_package(data, source, limits, _TEXT_WITH_NOTES if include_notes else _TEXT)
    try:
        import pptx
        from pptx.exc import InvalidXmlError

        presentation = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:  # python-pptx reports malformed packages with many exception types
        raise unreadable(source, "pptx", exc) from exc
    builder = DocumentBuilder()
    try:
        _add_slides(builder, presentation, include_notes, source)
    # A malformed value in the XML (a paragraph level, a numbering start, a bold flag reading "abc"),
    # or a slide list naming a relationship the package lacks: python-pptx reads both lazily.
    except (ValueError, KeyError, InvalidXmlError) as exc:
        raise unreadable(source, "pptx", exc) from exc
    if builder.unit_count == 0:
        raise EmptyDocumentError(source, "the PPTX presentation holds no text")
    return builder.build(source, source=source, fmt="pptx")


def _add_slides(builder: DocumentBuilder, presentation: Any, include_notes: bool, source: str) -> None:
    """Add every slide's title, shapes and (optionally) notes, each unit tagged with its slide number.

    The notes are the paragraphs of the notes page's body placeholder, found with the same shape walk
    as the slide's (:func:`_shapes`), so notes drawn inside alternate content are read, once.
    """
    from pptx.enum.shapes import PP_PLACEHOLDER

    deck_title = False
    try:
        slides = list(presentation.slides)  # python-pptx resolves each slide's relationship here
    except AttributeError as exc:  # a relationship that leads to some other part, not a slide
        raise unreadable(source, "pptx", exc) from exc
    for number, slide in enumerate(slides, start=1):
        _require_shape_tree(slide, f"slide {number}", source)
        shapes = list(_shapes(slide.shapes.element, slide.shapes, f"slide {number}", source))
        title_shape = _placeholder(shapes, PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE)
        title_level = 1 if number == 1 or not deck_title else 2
        title_text = title_shape.text_frame.text if title_shape is not None else ""
        if title_text.strip():
            deck_title = deck_title or number == 1
            builder.heading(title_text, title_level, page=number)
            sub_level = title_level + 1
        else:
            sub_level = 2 if deck_title else 1
        for shape in shapes:
            if shape is title_shape:
                continue
            if getattr(shape, "has_table", False):
                rows = [
                    ["" if cell.is_spanned else cell.text for cell in row.cells] for row in shape.table.rows
                ]
                builder.table(rows, page=number)
            elif getattr(shape, "has_text_frame", False):
                _text_frame(builder, shape, sub_level, number)
        if include_notes and slide.has_notes_slide:
            notes_slide, where = slide.notes_slide, f"the notes of slide {number}"
            _require_shape_tree(notes_slide, where, source)
            notes_shapes = list(_shapes(notes_slide.shapes.element, notes_slide.shapes, where, source))
            notes = _placeholder(notes_shapes, PP_PLACEHOLDER.BODY)
            for paragraph in notes.text_frame.paragraphs if notes is not None else ():
                builder.paragraph(paragraph.text, page=number)


def _require_shape_tree(slide: Any, what: str, source: str) -> None:
    """Refuse a slide (or notes) part that holds other XML: python-pptx would fail on its first shape
    with an ``AttributeError``, the same as for a bug, so the shape tree is checked first."""
    if slide.element.find(f"{_P}cSld/{_P}spTree") is None:
        raise CorruptFileError(source, f"cannot read as PPTX: {what} has no shape tree")


def _placeholder(shapes: list[Any], *kinds: Any) -> Any:
    """The first text placeholder of one of ``kinds`` (``PP_PLACEHOLDER`` members) among ``shapes`` (a
    slide's or notes page's :func:`_shapes`), or ``None``: a slide's title, a notes page's body.

    Looked for in the shapes the parser reads rather than in python-pptx's ``placeholders`` (or its
    ``notes_text_frame``), which skip alternate content: a title or notes drawn inside
    ``mc:AlternateContent`` are still the title or the notes. As there, a group's shapes are not
    placeholders; a picture or graphic frame that claims the placeholder has no text and is passed over.
    """
    from pptx.shapes.placeholder import SlidePlaceholder

    for shape in shapes:
        if isinstance(shape, SlidePlaceholder) and shape.placeholder_format.type in kinds:
            return shape
    return None


def _shapes(container: Any, shapes: Any, where: str, source: str) -> Iterator[Any]:
    """Every shape under ``container`` (a shape tree) in tree order, group shapes flattened and
    alternate content resolved (:func:`_chosen_content`), as python-pptx shapes of ``shapes``.

    A shape whose first child is not its non-visual properties (with ``p:cNvPr``, the shape's id) is
    refused as corrupt: python-pptx would fail reading its id with an ``AttributeError``, the same as
    for a bug.

    Groups are told by their element (``p:grpSp``): python-pptx's ``shape_type`` fails, as for a type it
    does not know, on a text shape that has neither a geometry nor the text-box flag, a shape some
    generators write and that PowerPoint shows.

    The walk keeps its open containers on a list rather than recursing, so no depth of nested groups
    and alternate content can exhaust the stack, whatever depth the XML parser allows.
    """
    from pptx.shapes.shapetree import BaseShapeFactory, SlideShapeFactory

    # The children still to read of each open container (the tree, a group, a chosen branch), and
    # whether that container is inside a group.
    open_containers: list[tuple[Iterator[Any], bool]] = [(container.iterchildren(), False)]
    while open_containers:
        children, in_group = open_containers[-1]
        element = next(children, None)
        if element is None:
            open_containers.pop()
        elif element.tag == f"{_MC}AlternateContent":
            chosen = _chosen_content(element)
            if chosen is not None:
                open_containers.append((chosen.iterchildren(), in_group))
        elif element.tag not in _SHAPE_TAGS:
            continue
        elif not _has_identity(element):
            raise CorruptFileError(
                source, f"cannot read as PPTX: a shape of {where} has no non-visual properties"
            )
        elif element.tag == f"{_P}grpSp":
            open_containers.append((element.iterchildren(), True))
        else:  # python-pptx's own choice: a slide's placeholders are placeholders, a group's are shapes
            yield (BaseShapeFactory if in_group else SlideShapeFactory)(element, shapes)


def _has_identity(shape: Any) -> bool:
    """Whether the first child of ``shape`` (its non-visual properties) holds a ``p:cNvPr``, the shape's
    id and name: read without XPath, so that any element, of a class python-pptx registers or not, is
    checked alike."""
    first = next(shape.iterchildren(), None)
    return first is not None and first.find(f"{_P}cNvPr") is not None


def _chosen_content(alternate: Any) -> Any:
    """The branch of an ``mc:AlternateContent`` to read: the first ``mc:Choice`` whose ``Requires``
    prefixes all name :data:`UNDERSTOOD_NAMESPACES`, else the ``mc:Fallback``, else ``None``."""
    for choice in alternate.iterchildren(f"{_MC}Choice"):
        prefixes = choice.get("Requires", "").split()
        if prefixes and all(choice.nsmap.get(prefix) in UNDERSTOOD_NAMESPACES for prefix in prefixes):
            return choice
    return alternate.find(f"{_MC}Fallback")


def _text_frame(builder: DocumentBuilder, shape: Any, sub_level: int, page: int) -> None:
    """Add one shape's paragraphs as sub-headings, list items or paragraphs."""
    bulleted_by_default = _is_body_placeholder(shape)
    counters: dict[int, int] = {}
    level, after_heading = sub_level, False
    for paragraph in shape.text_frame.paragraphs:
        text = paragraph.text.replace("\v", " ")
        if not text.strip():
            continue
        ppr = paragraph._p.pPr
        bullet = _bullet_kind(ppr, bulleted_by_default)
        depth = min(max(paragraph.level, 0), _MAX_LEVEL)
        heading = bullet is None and _is_sub_heading(paragraph, ppr)
        if heading:
            level = level + 1 if after_heading else level
            builder.heading(text, level, page=page)
        elif bullet is None:
            builder.paragraph(text, page=page)
        else:
            for deeper in [level for level in counters if level > depth]:
                del counters[deeper]
            number = None
            if bullet == "number":
                start = _auto_number_start(ppr)
                counters[depth] = clamp_list_number(counters.get(depth, start - 1) + 1)
                number = counters[depth]
            builder.list_item(text, depth=depth, number=number, page=page)
        if bullet != "number":
            counters.pop(depth, None)
        after_heading = heading


def _is_body_placeholder(shape: Any) -> bool:
    """Body/content placeholders inherit bulleted levels from the slide master."""
    from pptx.enum.shapes import PP_PLACEHOLDER

    if not shape.is_placeholder:
        return False
    return shape.placeholder_format.type in (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT)


def _bullet_kind(ppr: Any, bulleted_by_default: bool) -> str | None:
    """``"number"``, ``"bullet"`` or ``None`` from the paragraph properties and the inherited default."""
    if ppr is not None:
        if ppr.find(f"{_A}buNone") is not None:
            return None
        if ppr.find(f"{_A}buAutoNum") is not None:
            return "number"
        if ppr.find(f"{_A}buChar") is not None or ppr.find(f"{_A}buBlip") is not None:
            return "bullet"
    return "bullet" if bulleted_by_default else None


def _auto_number_start(ppr: Any) -> int:
    node = ppr.find(f"{_A}buAutoNum") if ppr is not None else None
    return list_number(node.get("startAt", "1")) if node is not None else 1


def _is_sub_heading(paragraph: Any, ppr: Any) -> bool:
    """Entirely bold, with added space before: an in-slide section heading."""
    if ppr is None or ppr.find(f"{_A}spcBef") is None:
        return False
    runs = [run for run in paragraph.runs if run.text.strip()]
    return bool(runs) and all(run.font.bold for run in runs)
