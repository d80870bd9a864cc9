"""The one span type: a character range of one document, the shape of every located thing.

Chunks, stored chunks, search hits, segments, answer sources, citations and evaluation items are all
spans: ``doc_id`` plus Python ``str`` offsets ``[start, end)`` into the document's canonical text. They
derive from :class:`Span`, so offsets mean the same everywhere and code that only needs a location
(metrics, overlap tests, segment extraction) accepts any of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Located(Protocol):
    """Anything with a document id and a character range (a :class:`Span`, or an object carrying one)."""

    @property
    def doc_id(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Span:
    """``document.text[start:end]`` of document ``doc_id`` (end exclusive)."""

    doc_id: str
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start

    def overlap(self, other: Located) -> int:
        """Characters shared with ``other`` (0 for another document or disjoint ranges)."""
        if other.doc_id != self.doc_id:
            return 0
        return max(0, min(self.end, other.end) - max(self.start, other.start))
