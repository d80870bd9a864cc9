"""The :class:`Chunk`: a slice of a document with exact offsets and a deterministic id."""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass
from typing import Any

from chunkwise.document import Document
from chunkwise.spans import Span


def chunk_id(content_hash: str, start: int, end: int) -> str:
    """Deterministic chunk id from (document content hash, start, end): re-chunking gives equal ids."""
    digest = hashlib.sha256(f"{content_hash}:{start}:{end}".encode("ascii")).hexdigest()
    return digest[:20]


def contextual_text(header: str, text: str) -> str:
    """What embedders, BM25 and rerankers read for a chunk: its header, a blank line, its text.

    The header (document title, summary, section path) is stored beside the chunk, never inside its
    span, so offsets and citations stay exact while the ranking models still see the context.
    """
    return f"{header}\n\n{text}" if header else text


@dataclass(frozen=True, slots=True)
class Chunk(Span):
    """A retrieval unit: ``document.text[start:end] == text``.

    ``section`` is the heading path above the chunk (outermost first, at most three levels);
    ``unit_ids`` the ids of the units it overlaps; ``tokens`` its size under the chunker's counter;
    ``pages`` the first and last page it spans, where the format has pages. ``context`` is text that
    belongs in front of the chunk when it is read or embedded but is not part of its span (the header
    row of a table split across chunks, say); it is never spliced into ``text``.
    """

    id: str
    text: str
    unit_ids: tuple[str, ...] = ()
    section: tuple[str, ...] = ()
    tokens: int = 0
    pages: tuple[int, int] | None = None
    context: str = ""

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
            "context": self.context,
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
            context=str(data.get("context") or ""),
        )


class ChunkBuilder:
    """Builds many chunks of one document in O(log units) each.

    The content hash, the unit offsets and each unit's section path are computed once, so chunking a
    long document is not quadratic in its units (which :func:`make_chunk` alone would be).
    """

    def __init__(self, doc: Document) -> None:
        self._doc = doc
        # The id is sha256("<content hash>:<start>:<end>"): hash the shared prefix once, copy it per chunk.
        self._id_prefix = hashlib.sha256(f"{doc.content_hash}:".encode("ascii"))
        self._starts = [u.start for u in doc.units]
        self._ends = [u.end for u in doc.units]
        self._paths = _unit_section_paths(doc)

    def build(self, start: int, end: int, tokens: int = 0, context: str = "") -> Chunk:
        """The chunk for ``doc.text[start:end]``."""
        doc = self._doc
        digest = self._id_prefix.copy()
        digest.update(f"{start}:{end}".encode("ascii"))
        unit_ids: tuple[str, ...] = ()
        section: tuple[str, ...] = ()
        pages = None
        if self._starts:
            units = doc.units[bisect.bisect_right(self._ends, start) : bisect.bisect_left(self._starts, end)]
            unit_ids = tuple(u.id for u in units)
            numbers = [u.page for u in units if u.page is not None]
            pages = (min(numbers), max(numbers)) if numbers else None
            at = bisect.bisect_right(self._starts, start) - 1
            section = self._paths[at] if at >= 0 else ()
        # Positional arguments, in field order: measurably cheaper than keywords on this hot path.
        return Chunk(
            doc.id,
            start,
            end,
            digest.hexdigest()[:20],
            doc.text[start:end],
            unit_ids,
            section,
            tokens,
            pages,
            context,
        )


def _unit_section_paths(doc: Document, depth: int = 3) -> list[tuple[str, ...]]:
    """:func:`section_path` at each unit's start, for all units in one pass."""
    full: dict[str, tuple[str, ...]] = {}
    paths: list[tuple[str, ...]] = []
    for unit in doc.units:
        parent = full.get(unit.parent, ()) if unit.parent else ()
        path = (*parent, unit.title) if unit.kind.value == "heading" else parent
        if unit.kind.value == "heading":
            full[unit.id] = path
        paths.append(path[-depth:])
    return paths


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
        path.append(node.title)
        node = by_id.get(node.parent) if node.parent else None
    path.reverse()
    return tuple(path[-depth:])
