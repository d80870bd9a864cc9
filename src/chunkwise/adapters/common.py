"""What the LangChain and LlamaIndex adapters share: chunking a string with a named chunker, and the id
and metadata a search hit carries into either framework."""

from __future__ import annotations

import json
import uuid
from typing import Any

from chunkwise.api import verbatim_document
from chunkwise.chunking import Chunk, get_chunker
from chunkwise.errors import ConfigError
from chunkwise.models.context import Models
from chunkwise.parsing import parse_bytes
from chunkwise.query.pipeline import Hit

#: How a string may be read: formats of text (a binary format's bytes are no string).
STRING_FORMATS = ("text", "markdown", "html")


class StringChunker:
    """Chunker ``name`` (any of :data:`~chunkwise.chunking.CHUNKERS`) with ``params``, applied to strings.

    ``format``: how a string is read: ``text`` keeps it verbatim, so chunk offsets index the string
    itself (:attr:`verbatim`); ``markdown`` or ``html`` parse it first (headings become section paths)
    and offsets index the parsed document's canonical text, not the string. ``models``: the model
    context of the model-driven chunkers (default: one built from the environment).
    """

    def __init__(
        self, name: str, *, format: str = "text", models: Models | None = None, **params: Any
    ) -> None:
        if format not in STRING_FORMATS:
            raise ConfigError(
                f"format {format!r}: a string is read as {', '.join(STRING_FORMATS)} (a PDF, DOCX or PPTX "
                "is a file: parse it with chunkwise.parse and chunk the document)"
            )
        self.format = format
        self.verbatim = format == "text"
        self.chunker = get_chunker(name, models=models if models is not None else Models(), **params)

    def chunks(self, text: str, doc_id: str = "text") -> list[Chunk]:
        """The chunks of ``text``, in order, with exact offsets (read verbatim, offsets in ``text``
        itself: a leading U+FEFF is kept, see :func:`~chunkwise.api.verbatim_document`). A text that is
        empty or only whitespace has none, as with the frameworks' own splitters, so one blank text does
        not abort a batch."""
        if not text.strip():
            return []
        if self.verbatim:
            return self.chunker.chunk(verbatim_document(text, doc_id))
        return self.chunker.chunk(parse_bytes(text.encode("utf-8"), doc_id, fmt=self.format))


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """A chunk's id, offsets in the document chunkwise parsed, section path, unit ids and size, as
    framework metadata."""
    return {
        "chunk_id": chunk.id,
        "start": chunk.start,
        "end": chunk.end,
        "section": list(chunk.section),
        "unit_ids": list(chunk.unit_ids),
        "tokens": chunk.tokens,
    }


#: The namespace of the ids :func:`hit_id` derives.
HIT_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "chunkwise:hit")


def hit_id(hit: Hit) -> str:
    """The id of a search hit in either framework: one per stored chunk, the same in every search. A
    chunk id alone is not one per stored chunk: it derives from its document's text and its span, so
    two documents with the same content (a file copied to two folders) share their chunk ids, and
    LlamaIndex keeps one node of those that share an id. This is a UUID (the form the frameworks' own
    ids take, and some vector stores require) derived from the document id and the chunk id."""
    return str(uuid.uuid5(HIT_ID_NAMESPACE, json.dumps([hit.doc_id, hit.chunk_id])))


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """A search hit's document, offsets, scores (final and per stage) and header, as framework metadata."""
    return {
        "doc_id": hit.doc_id,
        "chunk_id": hit.chunk_id,
        "start": hit.start,
        "end": hit.end,
        "score": hit.score,
        "scores": dict(hit.scores),
        "header": hit.header,
    }
