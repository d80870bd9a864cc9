"""Assemble a :class:`~chunkwise.document.Document` from a stream of units.

Every parser walks its format and calls :meth:`DocumentBuilder.add` once per unit, in reading order.
The builder owns the canonical text: units are joined with a blank line between blocks (a single newline
between consecutive list items of one list), ids are numbered ``u1, u2, ...``, and each unit's parent is
the nearest heading of a lower level before it. Because all parsers share this code, the same content
gives the same text and the same unit layout whatever the input format.

The canonical text is *normalised Markdown*: headings as ``## Title``, list items as ``- item`` or
``3. item`` indented two spaces per level, tables as pipe tables, code fenced with three backticks,
quotes prefixed with ``> ``; inline emphasis and link targets are dropped. Structure stays visible to
embedders and LLMs, and a DOCX and its Markdown original produce the same string.
"""

from __future__ import annotations

from typing import Any

from chunkwise.document import Document, Unit, UnitKind


def normalise_inline(text: str) -> str:
    """Collapse runs of whitespace inside a paragraph-like unit to single spaces and strip the ends."""
    return " ".join(text.split())


def render_table(rows: list[list[str]]) -> str:
    """Render rows as a Markdown pipe table (first row = header); ragged rows are padded."""
    cleaned = [[normalise_inline(cell).replace("|", "\\|") for cell in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return ""
    width = max(len(row) for row in cleaned)
    cleaned = [row + [""] * (width - len(row)) for row in cleaned]
    lines = ["| " + " | ".join(cleaned[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(row) + " |" for row in cleaned[1:]]
    return "\n".join(lines)


class DocumentBuilder:
    """Collects units in order and produces a :class:`Document` with exact offsets."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._units: list[Unit] = []
        # heading stack: (level, unit id)
        self._headings: list[tuple[int, str]] = []
        self._last_kind: UnitKind | None = None

    @property
    def unit_count(self) -> int:
        """How many units were added so far."""
        return len(self._units)

    def add(self, kind: UnitKind, text: str, level: int = 0, page: int | None = None) -> Unit | None:
        """Append one unit; empty or whitespace-only text is ignored (returns ``None``).

        Text is kept as given apart from stripping trailing whitespace and leading blank lines, so
        tables and code keep their inner layout; callers normalise paragraph text themselves.
        """
        text = text.rstrip().lstrip("\n")
        if not text.strip():
            return None
        if self._parts:
            tight = kind is UnitKind.LIST_ITEM and self._last_kind is UnitKind.LIST_ITEM
            sep = "\n" if tight else "\n\n"
            self._parts.append(sep)
            self._length += len(sep)
        if kind is UnitKind.HEADING:
            level = max(1, min(level or 1, 6))
            while self._headings and self._headings[-1][0] >= level:
                self._headings.pop()
        parent = self._headings[-1][1] if self._headings else None
        unit = Unit(
            id=f"u{len(self._units) + 1}",
            kind=kind,
            start=self._length,
            end=self._length + len(text),
            text=text,
            level=level,
            parent=parent,
            page=page,
        )
        self._parts.append(text)
        self._length += len(text)
        self._units.append(unit)
        if kind is UnitKind.HEADING:
            self._headings.append((level, unit.id))
        self._last_kind = kind
        return unit

    def heading(self, title: str, level: int, page: int | None = None) -> Unit | None:
        """Add a heading rendered as ``#``-prefixed Markdown."""
        title = normalise_inline(title).lstrip("#").strip()
        if not title:
            return None
        level = max(1, min(level, 6))
        return self.add(UnitKind.HEADING, f"{'#' * level} {title}", level=level, page=page)

    def paragraph(self, text: str, page: int | None = None) -> Unit | None:
        """Add a paragraph; inner whitespace is collapsed."""
        return self.add(UnitKind.PARAGRAPH, normalise_inline(text), page=page)

    def list_item(
        self, text: str, depth: int = 0, number: int | None = None, page: int | None = None
    ) -> Unit | None:
        """Add a list item at nesting ``depth`` (0-based); ``number`` makes it an ordered item."""
        body = normalise_inline(text)
        if not body:
            return None
        marker = f"{number}." if number is not None else "-"
        return self.add(UnitKind.LIST_ITEM, f"{'  ' * depth}{marker} {body}", level=depth, page=page)

    def table(self, rows: list[list[str]], page: int | None = None) -> Unit | None:
        """Add a table as a Markdown pipe table; the first row is the header."""
        return self.add(UnitKind.TABLE, render_table(rows), page=page)

    def code(self, text: str, language: str = "", page: int | None = None) -> Unit | None:
        """Add a fenced code block, inner layout kept."""
        body = text.strip("\n")
        if not body.strip():
            return None
        return self.add(UnitKind.CODE, f"```{language}\n{body}\n```", page=page)

    def quote(self, text: str, page: int | None = None) -> Unit | None:
        """Add a block quote, each line prefixed with ``> ``."""
        lines = [normalise_inline(line) for line in text.splitlines()]
        body = "\n".join(f"> {line}" for line in lines if line)
        return self.add(UnitKind.QUOTE, body, page=page) if body else None

    def caption(self, text: str, page: int | None = None) -> Unit | None:
        """Add a figure or table caption."""
        return self.add(UnitKind.CAPTION, normalise_inline(text), page=page)

    def build(
        self,
        doc_id: str,
        *,
        title: str | None = None,
        source: str | None = None,
        fmt: str = "text",
        metadata: dict[str, Any] | None = None,
    ) -> Document:
        """Freeze the collected units into a document; the title defaults to the first heading."""
        if title is None:
            first = next((u for u in self._units if u.kind is UnitKind.HEADING), None)
            title = first.title if first else None
        return Document(
            id=doc_id,
            text="".join(self._parts),
            title=title,
            source=source,
            format=fmt,
            metadata=metadata or {},
            units=tuple(self._units),
        )
