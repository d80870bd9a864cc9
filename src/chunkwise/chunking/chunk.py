"""The :class:`Chunk`: a slice of a document with exact offsets and a deterministic id."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from chunkwise.document import Document
from chunkwise.parsing.builder import heading_title


def chunk_id(content_hash: str, start: int, end: int) -> str:
    """Deterministic chunk id from (document content hash, start, end): re-chunking gives equal ids."""
    digest = hashlib.sha256(f"{content_hash}:{start}:{end}".encode("ascii")).hexdigest()
    return digest[:20]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrieval unit: ``document.text[start:end] == text``.

    ``section`` is the heading path above the chunk (outermost first, at most three levels);
    ``unit_ids`` the ids of the units it overlaps; ``tokens`` its size under the chunker's counter;
    ``pages`` the first and last page it spans, where the format has pages.
    """

    id: str
    doc_id: str
    start: int
    end: int
    text: str
    unit_ids: tuple[str, ...] = ()
    section: tuple[str, ...] = ()
    tokens: int = 0
    pages: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (the CLI's chunk row)."""
        return {
            "id": self.id,
            "doc_id": self.doc_id,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "unit_ids": list(self.unit_ids),
            "section": list(self.section),
            "tokens": self.tokens,
            "pages": list(self.pages) if self.pages else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk:
        """Inverse of :meth:`to_dict`."""
        pages = data.get("pages")
        return cls(
            id=data["id"],
            doc_id=data["doc_id"],
            start=data["start"],
            end=data["end"],
            text=data["text"],
            unit_ids=tuple(data.get("unit_ids") or ()),
            section=tuple(data.get("section") or ()),
            tokens=int(data.get("tokens") or 0),
            pages=(int(pages[0]), int(pages[1])) if pages else None,
        )


def make_chunk(doc: Document, start: int, end: int, tokens: int = 0) -> Chunk:
    """Build the chunk for ``doc.text[start:end]``, deriving unit ids, section path and pages."""
    unit_ids: list[str] = []
    pages: list[int] = []
    for unit in doc.units:
        if unit.end <= start:
            continue
        if unit.start >= end:
            break
        unit_ids.append(unit.id)
        if unit.page is not None:
            pages.append(unit.page)
    return Chunk(
        id=chunk_id(doc.content_hash, start, end),
        doc_id=doc.id,
        start=start,
        end=end,
        text=doc.text[start:end],
        unit_ids=tuple(unit_ids),
        section=section_path(doc, start),
        tokens=tokens,
        pages=(min(pages), max(pages)) if pages else None,
    )


def section_path(doc: Document, offset: int, depth: int = 3) -> tuple[str, ...]:
    """Titles of the headings enclosing ``offset`` (outermost first, the innermost ``depth`` kept).

    A chunk that begins with a heading belongs to that heading's section.
    """
    by_id = {u.id: u for u in doc.units}
    current = None
    for unit in doc.units:
        if unit.start > offset:
            break
        current = unit
    path: list[str] = []
    node = current
    if node is not None and node.kind.value != "heading":
        node = by_id.get(node.parent) if node.parent else None
    while node is not None:
        path.append(heading_title(node))
        node = by_id.get(node.parent) if node.parent else None
    path.reverse()
    return tuple(path[-depth:])
