"""The document model: one canonical text, addressed by units with exact offsets.

A :class:`Document` is what every parser produces and every chunker consumes. Its ``text`` is the one
canonical string; each :class:`Unit` (a heading, a paragraph, a table, ...) is a slice of it, so
``doc.text[unit.start:unit.end] == unit.text`` always holds. Units carry stable ids (``u1``, ``u2``, ...
in document order), which is what W-RAC's planner addresses instead of text.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class UnitKind(StrEnum):
    """What a unit is, structurally. Chunkers treat some kinds as never to be split."""

    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    TABLE = "table"
    CODE = "code"
    QUOTE = "quote"
    CAPTION = "caption"


#: Kinds whose units are kept whole by structure-aware chunkers unless one alone passes the hard limit.
ATOMIC_KINDS: frozenset[UnitKind] = frozenset({UnitKind.TABLE, UnitKind.CODE})


@dataclass(frozen=True, slots=True)
class Unit:
    """One addressable piece of a document.

    ``start``/``end`` are Python ``str`` offsets into :attr:`Document.text` (end exclusive). ``level`` is
    the heading level (1-6) for headings and the nesting depth (0-based) for list items, else 0.
    ``parent`` is the id of the nearest enclosing heading, or ``None`` at top level.
    """

    id: str
    kind: UnitKind
    start: int
    end: int
    text: str
    level: int = 0
    parent: str | None = None
    page: int | None = None

    @property
    def title(self) -> str:
        """A heading's title: its text without the Markdown ``#`` marker (any other unit: its text)."""
        return self.text.lstrip("#").strip() if self.kind is UnitKind.HEADING else self.text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (without ``text``, which the document holds)."""
        return {
            "id": self.id,
            "kind": self.kind.value,
            "level": self.level,
            "start": self.start,
            "end": self.end,
            "page": self.page,
            "parent": self.parent,
        }


#: A UTF-16 surrogate code point: never a character of Unicode text on its own. Python strings get them
#: from ``\\ud800``-style JSON escapes and from file names that are not UTF-8 (``surrogateescape``), and
#: they cannot be encoded as UTF-8: hashed, stored or sent, such a string fails far from where it came in.
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> int | None:
    """The offset of the first surrogate code point in ``text`` (not valid Unicode text), else ``None``."""
    found = _SURROGATE.search(text)
    return found.start() if found else None


def path_id(path: str) -> str:
    """``path`` as a document id: undecodable bytes of a file name (which Python keeps as surrogates)
    written as ``\\xNN`` escapes, so the id is valid text and names the file readably."""
    if lone_surrogate(path) is None:
        return path
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that stands for no byte: escaped as itself
        raw = path.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed document: canonical ``text`` plus the units that tile its content.

    ``id`` comes from the source (its path or a given id), so re-parsing gives the same id.
    ``content_hash`` (SHA-256 of ``text``) identifies the content, for caches and for the store to skip
    unchanged documents.
    """

    id: str
    text: str
    title: str | None = None
    source: str | None = None
    format: str = "text"
    metadata: dict[str, Any] = field(default_factory=dict)
    units: tuple[Unit, ...] = ()

    def __post_init__(self) -> None:
        for unit in self.units:
            if self.text[unit.start : unit.end] != unit.text:
                raise ValueError(f"unit {unit.id} does not match document text at {unit.start}")

    @property
    def content_hash(self) -> str:
        """SHA-256 hex digest of the canonical text."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def stored_alike(self, other: Document) -> bool:
        """Whether ``other`` has the same source, title, format, metadata (compared as the JSON a store
        keeps: a tuple equals its list) and units as this document: what, besides the text, a store keeps
        and the chunk headers and sections are made of. The ingest skips a document only when its text,
        settings and all of these are unchanged (a changed HTML ``<title>`` with the same text is a
        changed document)."""
        return _stored_form(self) == _stored_form(other)

    def stored_digest(self) -> str:
        """A digest of the text and of all that :meth:`stored_alike` compares: two documents of one id
        with equal digests would be stored alike (an ingest skips the second of them in one batch)."""
        form = json.dumps([self.content_hash, *_stored_form(self)], ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(form.encode("utf-8", "surrogatepass")).hexdigest()

    def unit(self, unit_id: str) -> Unit:
        """The unit with this id; ``KeyError`` if absent."""
        for unit in self.units:
            if unit.id == unit_id:
                return unit
        raise KeyError(unit_id)

    def headings(self) -> list[Unit]:
        """The heading units, in document order."""
        return [u for u in self.units if u.kind is UnitKind.HEADING]

    def skeleton(self, preview_words: int = 0) -> list[dict[str, Any]]:
        """The unit outline an LLM planner sees: ids, kinds, levels, parents, sizes, optional preview.

        Cheap by design (one pass, no tokenisation): ``chars`` is the unit length in characters.
        """
        rows: list[dict[str, Any]] = []
        for u in self.units:
            row: dict[str, Any] = {"id": u.id, "kind": u.kind.value, "chars": u.end - u.start}
            if u.level:
                row["level"] = u.level
            if u.parent:
                row["parent"] = u.parent
            if preview_words:
                row["preview"] = " ".join(u.text.split()[:preview_words])
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping that :meth:`from_dict` turns back into an equal document."""
        return {
            "doc_id": self.id,
            "title": self.title,
            "source": self.source,
            "format": self.format,
            "metadata": self.metadata,
            "text": self.text,
            "units": [u.to_dict() for u in self.units],
        }

    def to_json(self) -> str:
        """Serialise losslessly to a JSON string."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Document:
        """Rebuild a document from :meth:`to_dict` output."""
        text: str = data["text"]
        units = tuple(
            Unit(
                id=u["id"],
                kind=UnitKind(u["kind"]),
                start=u["start"],
                end=u["end"],
                text=text[u["start"] : u["end"]],
                level=u.get("level", 0),
                parent=u.get("parent"),
                page=u.get("page"),
            )
            for u in data.get("units", [])
        )
        return cls(
            id=data["doc_id"],
            text=text,
            title=data.get("title"),
            source=data.get("source"),
            format=data.get("format", "text"),
            metadata=dict(data.get("metadata") or {}),
            units=units,
        )

    @classmethod
    def from_json(cls, raw: str) -> Document:
        """Parse :meth:`to_json` output."""
        return cls.from_dict(json.loads(raw))


def _stored_form(doc: Document) -> tuple[Any, ...]:
    """What a store keeps of ``doc`` besides its id and text, in a comparable form."""
    metadata = json.loads(json.dumps(doc.metadata, ensure_ascii=False))
    return (doc.source, doc.title, doc.format, metadata, [unit.to_dict() for unit in doc.units])
