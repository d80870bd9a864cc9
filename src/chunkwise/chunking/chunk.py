"""The :class:`Chunk`: a slice of a document with exact offsets and a deterministic id.

Chunk ids are a keyed hash of the span: :func:`chunk_ids` mixes each ``(start, end)`` pair with keys
that fingerprint the document's content (:func:`id_keys`), for all chunks of a document at once rather
than a SHA-256 call per chunk. A chunker builds one chunk per few hundred characters, so per-chunk
costs add up: :class:`ChunkBuilder` builds all the chunks of a document in one call, in C where the
compiled helper is installed (:mod:`chunkwise.chunking.speedups`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkwise.chunking import speedups
from chunkwise.document import Document
from chunkwise.spans import Span

#: Hex digits of a chunk id (80 bits).
ID_HEX_DIGITS = 20
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8).astype(np.uint32)
#: SplitMix64's increment (2**64 over the golden ratio): spreads word positions and keys apart.
_GOLDEN = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1

#: The two 64-bit keys that make a document's chunk ids (see :func:`id_keys`).
IdKeys = tuple[int, int]


def _mix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser, in place: a bijection of 64-bit words with full avalanche."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _mix64_int(x: int) -> int:
    """:func:`_mix64` of one Python int (taken modulo 2**64)."""
    out: int = _mix64(np.array([x & _MASK], dtype=np.uint64))[0].item()
    return out


def id_keys(text: str) -> IdKeys:
    """The keys of the chunk ids of a document with this text: a 64-bit fingerprint of its content.

    The text's code units, in the narrowest fixed width that holds its largest code point (1, 2 or 4
    bytes, which is how CPython stores it), are read as little-endian 64-bit words (the last one
    padded with zeros); each word is XORed with its position times :data:`_GOLDEN` and mixed, and the
    sum of the mixed words, with the byte length and width mixed in, gives both keys. The compiled
    helper computes the same sum over the string's own buffer without copying it: hashing a text is
    then several times faster than encoding it to UTF-8 for SHA-256, which for CJK text cost more
    than chunking it.
    """
    if speedups.native is not None:
        keys: IdKeys = speedups.native.id_keys(text)
        return keys
    data, width = _code_units(text)
    words = np.frombuffer(data + bytes(-len(data) % 8), dtype="<u8").astype(np.uint64)
    positions = np.arange(1, len(words) + 1, dtype=np.uint64) * np.uint64(_GOLDEN)
    total = int(_mix64(words ^ positions).sum(dtype=np.uint64))
    base = total ^ _mix64_int(len(data) * 4 + width)
    return _mix64_int(base ^ _GOLDEN), _mix64_int(base ^ (2 * _GOLDEN & _MASK))


def _code_units(text: str) -> tuple[bytes, int]:
    """``text`` as little-endian code units of the narrowest width (1, 2 or 4 bytes), and that width."""
    try:
        return text.encode("latin-1"), 1
    except UnicodeEncodeError:
        pass
    data = text.encode("utf-16-le", "surrogatepass")
    if len(data) == 2 * len(text):  # no code point above U+FFFF, so UTF-16 is 2 bytes per character
        return data, 2
    return text.encode("utf-32-le", "surrogatepass"), 4


def chunk_ids(keys: IdKeys, starts: Sequence[int], ends: Sequence[int]) -> list[str]:
    """Deterministic ids of the spans ``[starts[i], ends[i])`` of the document with these :func:`id_keys`.

    Re-chunking gives equal ids. Each span packs into one 64-bit word (``start << 32 | end``), which is
    XORed with each key and mixed by :func:`_mix64`: 64 bits from the first, 16 from the second, in
    hex. Packing and mixing are bijections, so within one document (offsets below 2**32) distinct
    spans always get distinct ids; documents with different content get different keys.
    """
    if speedups.native is not None:
        ids: list[str] = speedups.native.chunk_ids(*keys, list(starts), list(ends))
        return ids
    packed = np.asarray(starts, dtype=np.uint64) << np.uint64(32) | np.asarray(ends, dtype=np.uint64)
    lanes = np.empty((len(packed), 2), dtype=np.uint64)
    lanes[:, 0] = _mix64(packed ^ np.uint64(keys[0]))
    lanes[:, 1] = _mix64(packed ^ np.uint64(keys[1]))
    # Big-endian bytes, then each byte as two hex digits, built as fixed-width numpy strings.
    nibbles = lanes.astype(">u8").view(np.uint8).reshape(-1, 16)[:, : ID_HEX_DIGITS // 2]
    digits = np.empty((len(packed), ID_HEX_DIGITS), dtype=np.uint32)
    digits[:, 0::2] = _HEX[nibbles >> 4]
    digits[:, 1::2] = _HEX[nibbles & 15]
    return list(digits.view(f"<U{ID_HEX_DIGITS}").ravel().tolist())


def chunk_id(text: str, start: int, end: int) -> str:
    """Deterministic id of the chunk ``text[start:end]`` of a document with this ``text``."""
    return chunk_ids(id_keys(text), [start], [end])[0]


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
    """Builds the chunks of one document: ids for all spans at once, units found by binary search.

    The id keys, the unit offsets and each unit's section path are computed once, so chunking a
    long document is not quadratic in its units (which :func:`make_chunk` alone would be).
    """

    def __init__(self, doc: Document) -> None:
        self._doc = doc
        self._keys = id_keys(doc.text)
        self._unit_ids = tuple(u.id for u in doc.units)
        self._starts = np.array([u.start for u in doc.units], dtype=np.int64)
        self._ends = np.array([u.end for u in doc.units], dtype=np.int64)
        self._paths = _unit_section_paths(doc)
        self._pages = [u.page for u in doc.units] if any(u.page is not None for u in doc.units) else None

    def build(self, start: int, end: int, tokens: int = 0, context: str = "") -> Chunk:
        """The chunk for ``doc.text[start:end]``."""
        return self.build_all([start], [end], [tokens], [context])[0]

    def build_all(
        self,
        starts: Sequence[int],
        ends: Sequence[int],
        tokens: Sequence[int],
        contexts: Sequence[str] | None = None,
    ) -> list[Chunk]:
        """The chunks for ``doc.text[starts[i]:ends[i]]``, with their sizes and optional contexts."""
        doc = self._doc
        units: list[tuple[str, ...]] | None = None
        sections: list[tuple[str, ...]] | None = None
        pages: list[tuple[int, int] | None] | None = None
        if self._unit_ids:
            first = np.searchsorted(self._ends, starts, side="right").tolist()
            stop = np.searchsorted(self._starts, ends, side="left").tolist()
            at = (np.searchsorted(self._starts, starts, side="right") - 1).tolist()
            units = [self._unit_ids[a:b] for a, b in zip(first, stop, strict=True)]
            sections = [self._paths[i] if i >= 0 else () for i in at]
            if self._pages is not None:
                pages = [_page_range(self._pages[a:b]) for a, b in zip(first, stop, strict=True)]
        if speedups.native is not None:
            chunks: list[Chunk] = speedups.native.build_chunks(
                Chunk,
                *self._keys,
                doc.id,
                doc.text,
                list(starts),
                list(ends),
                list(tokens),
                None if contexts is None else list(contexts),
                units,
                sections,
                pages,
            )
            return chunks
        ids = chunk_ids(self._keys, starts, ends)
        n = len(ids)
        return [
            Chunk(
                id=ids[i],
                doc_id=doc.id,
                start=starts[i],
                end=ends[i],
                text=doc.text[starts[i] : ends[i]],
                unit_ids=units[i] if units else (),
                section=sections[i] if sections else (),
                tokens=tokens[i],
                pages=pages[i] if pages else None,
                context=contexts[i] if contexts else "",
            )
            for i in range(n)
        ]


def _page_range(pages: Sequence[int | None]) -> tuple[int, int] | None:
    """First and last of the known page numbers, or ``None``."""
    numbers = [p for p in pages if p is not None]
    return (min(numbers), max(numbers)) if numbers else None


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
        id=chunk_id(doc.text, start, end),
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
