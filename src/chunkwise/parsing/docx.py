"""DOCX parser: the body in reading order, with heading levels, lists, quotes, code and tables.

The package is first checked by :func:`~chunkwise.parsing.ooxml.check_package` (zip bomb, DTD/entity
declarations, text volume) and only then loaded with python-docx. The body is walked element by element
so that paragraphs and tables keep their interleaving (python-docx's ``paragraphs``/``tables`` lists
lose it); content controls (``w:sdt``) and custom XML blocks (``w:customXml``) are descended into.

Paragraph roles come from the style, following the style's ``basedOn`` chain so that custom styles
derived from the built-in ones are recognised:

* ``Title`` and ``Heading 1``-``Heading 6`` (or an explicit outline level) become headings;
* a paragraph with numbering properties (its own or its style's) becomes a list item, its depth the
  numbering level (or the level a "List Bullet 2"-style name implies, whichever is deeper) and its
  number counted per list and level when the level's format is not a bullet, from the level's start
  (``w:start``, ``w:startOverride``) and clamped to +-``MAX_LIST_NUMBER`` as HTML and Markdown list
  numbers are;
* ``Quote``/``Block Text`` style paragraphs become quotes, ``Source Code``/``HTML Preformatted`` code,
  ``Caption`` captions;
* tables become Markdown tables (one row per ``w:tr``, one cell per ``w:tc``, so merged cells are
  not repeated).

Tracked changes are shown accepted (the document as revised): inserted text is read, deleted text
(``w:del``) and the old place of moved text (``w:moveFrom``) are not, and a paragraph whose mark is
deleted (``w:pPr/w:rPr/w:del`` or ``w:moveFrom``) runs on into the next paragraph, as Word shows it
once the change is accepted: its text is joined to the next paragraph's without a space (in the body,
a table cell, a text box or a note alike, across bookmark marks between the two, and into the first
paragraph of a content control or custom XML block that follows), and the joined paragraph takes the
next one's style, whose mark survives.

Footnotes and endnotes (``word/footnotes.xml``, ``word/endnotes.xml``) are content: each reference
becomes a Markdown footnote reference ``[^n]`` where it stands, ``n`` counting the notes of both kinds
in the order they are first referenced (as Pandoc writes a DOCX's notes in Markdown), and each note
becomes a paragraph ``[^n]: text`` at the end of the document, in that order, its paragraphs joined with
spaces. The Markdown parser keeps ``[^n]`` and ``[^n]: text`` as written, so a Markdown original with
footnotes numbered in reading order and defined at the end gives the same units. Separator entries
(``w:type`` other than ``normal``) and notes that nothing references, which Word does not show, are left
out. Comments, headers and footers are left out too: comments are annotations on the text, not part of
it, and headers and footers repeat page boilerplate (running titles, page numbers) on every page.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from chunkwise.document import Document
from chunkwise.errors import CorruptFileError, EmptyDocumentError
from chunkwise.parsing.blocks import clamp_list_number
from chunkwise.parsing.builder import DocumentBuilder
from chunkwise.parsing.limits import ParseLimits
from chunkwise.parsing.ooxml import TextMarkup, check_package, list_number, unreadable

_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_W = f"{{{_W_NS}}}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
#: Subtrees whose text is not part of what the document shows (see :func:`_paragraph_text`).
_NOT_SHOWN = frozenset({f"{_W}del", f"{_W}moveFrom", f"{_MC}Fallback"})
#: The marks on a paragraph's ``w:rPr`` that delete its paragraph mark (see :func:`_mark_removed`).
_MARK_REMOVED = (f"{_W}pPr/{_W}rPr/{_W}del", f"{_W}pPr/{_W}rPr/{_W}moveFrom")
#: The block-level content of a body or a table cell. Other children (bookmark, comment-range and
#: permission marks) sit between the blocks without parting them: a deleted mark joins across them.
_BLOCKS = frozenset({f"{_W}p", f"{_W}tbl", f"{_W}sdt", f"{_W}customXml"})
#: Note reference elements and the part holding each kind of note, by relationship type.
_NOTE_REFERENCES = frozenset({f"{_W}footnoteReference", f"{_W}endnoteReference"})
_NOTE_PARTS = {
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes": f"{_W}footnote",
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/endnotes": f"{_W}endnote",
}
#: The values of an on/off attribute that mean "on".
_ON = frozenset({"1", "true", "on"})
#: Empty elements that each read as one space.
_ONE_SPACE = frozenset({f"{_W}tab", f"{_W}br", f"{_W}cr"})
#: The elements :func:`_paragraph_text` reads, for the package's text-volume check.
_TEXT = TextMarkup(
    re.compile(r"word/(?:document|footnotes|endnotes)\.xml"),
    f"{_W_NS} t",
    frozenset(f"{_W_NS} {name}" for name in ("tab", "br", "cr", "noBreakHyphen")),
)

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_LIST_STYLE = re.compile(r"^list (?:bullet|number|continue|paragraph) ([2-9])$")
_QUOTE_STYLES = frozenset({"quote", "intense quote", "block text"})
_CODE_STYLES = frozenset({"source code", "html preformatted", "code", "plain text"})
_CAPTION_STYLES = frozenset({"caption", "image caption", "table caption"})
#: The deepest numbering level OOXML defines (``w:ilvl`` runs 0-8); deeper values are clamped, so a
#: hostile ``w:ilvl="999999999"`` cannot ask for a billion spaces of indentation.
_MAX_LIST_LEVEL = 8
#: Numbering formats rendered as bullets; every other format (decimal, letters, roman) is counted.
_BULLET_FORMATS = frozenset({"bullet", "none", ""})


def parse(data: bytes, source: str, limits: ParseLimits) -> Document:
    """Parse DOCX bytes into a :class:`Document` (see the module docstring for the mapping)."""
    check_package(data, source, limits, _TEXT)
    try:
        import docx

        document = docx.Document(io.BytesIO(data))
        notes = _Notes.from_document(document)
    except Exception as exc:  # python-docx reports malformed packages with many exception types
        raise unreadable(source, "docx", exc) from exc
    body = document.element.find(f"{_W}body")  # None when the main part is some other XML
    if body is None:
        raise CorruptFileError(source, "cannot read as DOCX: the main document part has no body")
    try:
        walker = _BodyWalker(document, notes)
        walker.walk(body)
        walker.add_notes()
    # A malformed number or enumeration value in the XML: numbering or outline level, style type.
    except ValueError as exc:
        raise unreadable(source, "docx", exc) from exc
    if walker.builder.unit_count == 0:
        raise EmptyDocumentError(source, "the DOCX document holds no text")
    try:
        title = (document.core_properties.title or "").strip() or None
    except AttributeError:  # the core-properties part holds other XML: the title is optional, go without
        title = None
    return walker.builder.build(source, title=title, source=source, fmt="docx")


@dataclass
class _Numbering:
    """The list formats of ``word/numbering.xml`` and running counters per (list, level)."""

    formats: dict[tuple[str, int], str] = field(default_factory=dict)
    starts: dict[tuple[str, int], int] = field(default_factory=dict)
    counters: dict[tuple[str, int], int] = field(default_factory=dict)

    @classmethod
    def from_document(cls, document: Any) -> _Numbering:
        """Read each ``w:num``'s levels (formats and start values, overrides applied)."""
        numbering = cls()
        try:
            root = document.part.numbering_part.element
        # python-docx signals a document without a numbering part by raising NotImplementedError.
        except (KeyError, NotImplementedError, AttributeError):
            return numbering
        abstract: dict[str, dict[int, tuple[str, int]]] = {}
        for node in root.iterchildren(f"{_W}abstractNum"):
            abstract[node.get(f"{_W}abstractNumId", "")] = {
                int(lvl.get(f"{_W}ilvl", "0")): _level_format(lvl) for lvl in node.iterchildren(f"{_W}lvl")
            }
        for num in root.iterchildren(f"{_W}num"):
            num_id = num.get(f"{_W}numId", "")
            ref = num.find(f"{_W}abstractNumId")
            levels = dict(abstract.get(ref.get(f"{_W}val", "") if ref is not None else "", {}))
            for override in num.iterchildren(f"{_W}lvlOverride"):
                ilvl = int(override.get(f"{_W}ilvl", "0"))
                lvl = override.find(f"{_W}lvl")
                fmt, start = _level_format(lvl) if lvl is not None else levels.get(ilvl, ("bullet", 1))
                start_override = override.find(f"{_W}startOverride")
                if start_override is not None:
                    start = list_number(start_override.get(f"{_W}val", "1"))
                levels[ilvl] = (fmt, start)
            for ilvl, (fmt, start) in levels.items():
                numbering.formats[(num_id, ilvl)] = fmt
                numbering.starts[(num_id, ilvl)] = start
        return numbering

    def next_number(self, num_id: str, ilvl: int) -> int | None:
        """The number of the next item of list ``num_id`` at ``ilvl``, or ``None`` for a bullet."""
        for key in [k for k in self.counters if k[0] == num_id and k[1] > ilvl]:
            del self.counters[key]  # a shallower item restarts the deeper levels
        key = (num_id, ilvl)
        if self.formats.get(key, "bullet") in _BULLET_FORMATS:
            return None
        self.counters[key] = clamp_list_number(self.counters.get(key, self.starts.get(key, 1) - 1) + 1)
        return self.counters[key]


def _level_format(lvl: Any) -> tuple[str, int]:
    fmt = lvl.find(f"{_W}numFmt")
    start = lvl.find(f"{_W}start")
    return (
        fmt.get(f"{_W}val", "bullet") if fmt is not None else "bullet",
        list_number(start.get(f"{_W}val", "1")) if start is not None else 1,
    )


@dataclass
class _Notes:
    """The footnotes and endnotes of the package by (kind, id), numbered as they are first referenced."""

    elements: dict[tuple[str, str], Any] = field(default_factory=dict)
    #: The referenced notes' keys, the note numbered ``n`` at index ``n - 1``.
    order: list[tuple[str, str]] = field(default_factory=list)
    numbers: dict[tuple[str, str], int] = field(default_factory=dict)

    @classmethod
    def from_document(cls, document: Any) -> _Notes:
        """Read the notes parts the main part relates to; a part holding other XML adds no notes.

        python-docx loads these parts as plain blobs; they are parsed with its own parser, which does
        not resolve entities (and :func:`check_package` has already refused any part declaring them).
        """
        from docx.oxml.parser import parse_xml

        notes = cls()
        for rel in document.part.rels.values():
            tag = _NOTE_PARTS.get(rel.reltype)
            if tag is None or rel.is_external:
                continue
            part = rel.target_part
            root = getattr(part, "element", None)
            root = parse_xml(part.blob) if root is None else root
            kind = tag.rsplit("}", 1)[1]
            for note in root.iterchildren(tag):
                note_id = note.get(f"{_W}id")
                if note.get(f"{_W}type", "normal") == "normal" and note_id is not None:
                    notes.elements.setdefault((kind, note_id), note)
        return notes

    def reference(self, element: Any) -> str:
        """The Markdown reference ``[^n]`` for a ``w:footnoteReference``/``w:endnoteReference``; empty
        when it names no note of the package (Word shows nothing there either). ``w:id`` is required on
        both: a reference without one names no note, and a note without one is never referenced, so
        the two invalid elements are not paired with each other."""
        note_id = element.get(f"{_W}id")
        key = (element.tag.rsplit("}", 1)[1].removesuffix("Reference"), note_id or "")
        if note_id is None or key not in self.elements:
            return ""
        if key not in self.numbers:
            self.order.append(key)
            self.numbers[key] = len(self.order)
        return f"[^{self.numbers[key]}]"


@dataclass(frozen=True)
class _Style:
    """What the parser needs of a paragraph style: lower-cased names and ``w:pPr`` along its chain."""

    names: tuple[str, ...]
    properties: tuple[Any, ...]


def _style_index(document: Any) -> tuple[dict[str, _Style], _Style]:
    """Paragraph styles by style id, each with its ``basedOn`` chain resolved; plus the default style.

    Read from the ``w:style`` elements themselves rather than python-docx's style objects, which fail
    with a ``KeyError`` on a style without ``w:type``: the schema makes such a style a paragraph style.
    The default is the last paragraph style marked ``w:default``, as the specification says. Styles
    are optional: when the styles relationship leads to some other part, the text is read without them.
    """
    elements: dict[str, Any] = {}
    default_id = ""
    try:
        styles = document.styles.element
    except AttributeError:
        return {}, _Style((), ())
    for node in styles.iterchildren(f"{_W}style"):
        if node.get(f"{_W}type", "paragraph") != "paragraph":
            continue
        style_id = node.get(f"{_W}styleId", "")
        elements.setdefault(style_id, node)
        if node.get(f"{_W}default") in _ON:
            default_id = style_id
    index: dict[str, _Style] = {}
    for style_id, element in elements.items():
        names: list[str] = []
        properties: list[Any] = []
        current, seen = element, set()
        while current is not None and current.get(f"{_W}styleId", "") not in seen:
            seen.add(current.get(f"{_W}styleId", ""))
            name = current.find(f"{_W}name")
            names.append((name.get(f"{_W}val", "") if name is not None else "").lower())
            properties.append(current.find(f"{_W}pPr"))
            based_on = current.find(f"{_W}basedOn")
            current = elements.get(based_on.get(f"{_W}val", "")) if based_on is not None else None
        index[style_id] = _Style(tuple(names), tuple(properties))
    return index, index.get(default_id, _Style((), ()))


class _BodyWalker:
    """Walks ``w:body`` in document order and feeds a :class:`DocumentBuilder`."""

    def __init__(self, document: Any, notes: _Notes) -> None:
        self.builder = DocumentBuilder()
        self._numbering = _Numbering.from_document(document)
        self._styles, self._default_style = _style_index(document)
        self._notes = notes

    def walk(self, body: Any) -> None:
        """Add every paragraph and table under ``body``, content controls (``w:sdt``) and custom XML
        blocks (``w:customXml``) descended into.

        The text of a paragraph whose mark is deleted is carried into the next paragraph: the next one
        of the same container, or the first one inside a content control or custom XML block that
        follows (:func:`_previous_block`). With none to join (a table follows, or a content control
        without content, or the container ends) it stands alone, so a paragraph ending a content
        control does not run on past it. The open containers are kept on a list rather than recursed
        into, so no nesting depth can exhaust the stack, whatever depth the XML parser allows.
        """
        carried: list[str] = []  # the texts of paragraphs whose marks are deleted, joined once at the end
        open_containers: list[Iterator[Any]] = [body.iterchildren()]
        while open_containers:
            child = next(open_containers[-1], None)
            if child is not None and child.tag == f"{_W}p":
                carried.append(_paragraph_text(child, self._notes))
                if not _mark_removed(child):
                    self._paragraph(child, "".join(carried))
                    carried = []
                continue
            if child is not None and child.tag not in _BLOCKS:
                continue  # markup between blocks (a bookmark's end) does not part them
            content = _block_content(child) if child is not None else None
            if carried and content is None:  # nothing to join: see above
                self.builder.paragraph("".join(carried))
                carried = []
            if child is None:
                open_containers.pop()
            elif child.tag == f"{_W}tbl":
                self.builder.table(_table_rows(child, self._notes))
            elif content is not None:
                open_containers.append(content.iterchildren())

    def add_notes(self) -> None:
        """Add the referenced notes as ``[^n]: text`` paragraphs in number order. A note that references
        another one numbers it while this runs: iterating the growing list reaches it too."""
        for number, key in enumerate(self._notes.order, start=1):
            text = _paragraph_text(self._notes.elements[key], self._notes).strip()
            if text:
                self.builder.paragraph(f"[^{number}]: {text}")

    def _paragraph(self, p: Any, text: str) -> None:
        if not text.strip():
            return
        ppr = p.find(f"{_W}pPr")
        style_ref = ppr.find(f"{_W}pStyle") if ppr is not None else None
        style_id = style_ref.get(f"{_W}val", "") if style_ref is not None else ""
        style = self._styles.get(style_id, self._default_style)
        heading = _heading_level(ppr, style)
        if heading:
            self.builder.heading(text, heading)
            return
        num = _numbering_properties((ppr, *style.properties))
        if num is not None:
            num_id, ilvl = num
            number = self._numbering.next_number(num_id, ilvl)
            self.builder.list_item(text, depth=max(ilvl, _style_depth(style)), number=number)
        elif _QUOTE_STYLES.intersection(style.names):
            self.builder.quote(text)
        elif _CODE_STYLES.intersection(style.names):
            self.builder.code(text)
        elif _CAPTION_STYLES.intersection(style.names):
            self.builder.caption(text)
        else:
            self.builder.paragraph(text)


def _style_depth(style: _Style) -> int:
    """Nesting implied by Word's numbered list styles ("List Bullet 2" is one level deep)."""
    for name in style.names:
        match = _LIST_STYLE.match(name)
        if match:
            return int(match.group(1)) - 1
    return 0


def _heading_level(ppr: Any, style: _Style) -> int:
    """The heading level from the style chain (Title = 1) or an explicit outline level, else 0."""
    for name in style.names:
        if name == "title":
            return 1
        match = _HEADING_STYLE.match(name)
        if match:
            return int(match.group(1))
    for props in (ppr, *style.properties):
        outline = props.find(f"{_W}outlineLvl") if props is not None else None
        if outline is not None:
            level = int(outline.get(f"{_W}val", "9")) + 1
            return level if level <= 6 else 0
    return 0


def _numbering_properties(candidates: tuple[Any, ...]) -> tuple[str, int] | None:
    """``(numId, ilvl)`` from the first ``w:pPr`` (paragraph, then its styles) that carries ``w:numPr``."""
    for ppr in candidates:
        numpr = ppr.find(f"{_W}numPr") if ppr is not None else None
        if numpr is None:
            continue
        num_id = numpr.find(f"{_W}numId")
        ilvl = numpr.find(f"{_W}ilvl")
        value = num_id.get(f"{_W}val", "0") if num_id is not None else "0"
        if value == "0":
            return None  # numId 0 explicitly removes numbering
        level = int(ilvl.get(f"{_W}val", "0")) if ilvl is not None else 0
        return value, min(max(level, 0), _MAX_LIST_LEVEL)
    return None


def _mark_removed(p: Any) -> bool:
    """Whether paragraph ``p``'s mark is deleted (``w:del``) or moved away (``w:moveFrom``): accepted,
    the paragraph runs on into the next one, as Word shows it."""
    return any(p.find(path) is not None for path in _MARK_REMOVED)


def _block_content(block: Any) -> Any:
    """The element holding the blocks of a content control (its ``w:sdtContent``, ``None`` when it has
    none) or of a custom XML block (the block itself); ``None`` for a paragraph or a table."""
    if block.tag == f"{_W}sdt":
        return block.find(f"{_W}sdtContent")
    return block if block.tag == f"{_W}customXml" else None


def _previous_block(p: Any) -> Any:
    """The block before paragraph ``p`` in reading order: the previous block of its container, or, for
    the first block of a content control or custom XML block, the one before that container (and so
    on outwards); ``None`` at the start of a body, cell, text box or note."""
    node = p
    while node is not None:
        previous = node.getprevious()
        while previous is not None and previous.tag not in _BLOCKS:  # comments' tags are not strings
            previous = previous.getprevious()
        if previous is not None:
            return previous
        parent = node.getparent()
        if parent is not None and parent.tag == f"{_W}sdtContent":
            node = parent.getparent()
        elif parent is not None and parent.tag == f"{_W}customXml":
            node = parent
        else:
            return None
    return None


def _runs_on_from_previous(p: Any) -> bool:
    """Whether paragraph ``p`` continues the block before it (:func:`_previous_block`), a paragraph
    whose mark is deleted (the rule :meth:`_BodyWalker.walk` applies to the body, here for the
    paragraphs of table cells, text boxes and notes)."""
    previous = _previous_block(p)
    return previous is not None and previous.tag == f"{_W}p" and _mark_removed(previous)


def _paragraph_text(element: Any, notes: _Notes) -> str:
    """The visible text under ``element`` (a ``w:p``, a ``w:tc`` or a note): runs, hyperlinks, field
    results, tabs and breaks, note references as ``[^n]`` (numbered by ``notes``), the paragraphs of
    text boxes and nested tables separated by spaces, except after a paragraph whose mark is deleted
    (:func:`_runs_on_from_previous`).

    Left out: deleted text (``w:del``, whose ``w:delText`` is not read anyway), the old place of moved
    text (``w:moveFrom``: the text also stands at its ``w:moveTo``) and the ``mc:Fallback`` of alternate
    content (Word stores a text box twice, once for current readers and once as VML for old ones).
    The walk is iterative, so no nesting depth can exhaust the stack.
    """
    parts: list[str] = []
    stack = [element]
    while stack:
        node = stack.pop()
        tag = node.tag
        if tag in _NOT_SHOWN:
            continue
        if tag == f"{_W}t":
            parts.append(node.text or "")
        elif tag == f"{_W}noBreakHyphen":
            parts.append("-")
        elif tag in _NOTE_REFERENCES:
            parts.append(notes.reference(node))
        elif tag in _ONE_SPACE or (
            tag == f"{_W}p" and node is not element and not _runs_on_from_previous(node)
        ):
            parts.append(" ")
        stack.extend(reversed(node))
    return "".join(parts)


def _table_rows(tbl: Any, notes: _Notes) -> list[list[str]]:
    """Cell texts row by row; a cell's paragraphs (nested tables included) are joined with spaces. A row
    whose deletion is tracked (``w:trPr/w:del``) is left out, as the document reads once revised."""
    rows: list[list[str]] = []
    for tr in tbl.iterchildren(f"{_W}tr"):
        if tr.find(f"{_W}trPr/{_W}del") is None:
            rows.append([_paragraph_text(tc, notes) for tc in tr.iterchildren(f"{_W}tc")])
    return rows
