"""Plain text: the decoded text verbatim, with one paragraph unit per blank-line separated block.

Unlike the structured formats, plain text is *not* re-rendered through the
:class:`~chunkwise.parsing.builder.DocumentBuilder`: evaluation data sets give gold evidence as offsets
into the raw text, so :attr:`Document.text` must be the decoded input exactly (no newline, whitespace or
Unicode normalisation). Units are found in place: a paragraph is a maximal run of non-blank lines,
trimmed of surrounding whitespace, so every non-whitespace character lies in exactly one unit.
"""

from __future__ import annotations

import re
from typing import Any

from chunkwise.document import Document, Unit, UnitKind
from chunkwise.errors import EmptyDocumentError
from chunkwise.parsing.decoding import decode_bytes
from chunkwise.parsing.limits import ParseLimits

__all__ = ["parse", "text_document"]

#: One or more blank lines (lines holding only whitespace) between two line breaks. ``\r\n``, ``\n``
#: and a lone ``\r`` all end a line.
_BLANK_LINES = re.compile(r"(?:\r\n|\r|\n)(?:[^\S\r\n]*(?:\r\n|\r|\n))+")

#: The non-whitespace extent of a block: from its first to its last non-whitespace character.
_CONTENT = re.compile(r"\S(?:.*\S)?", re.DOTALL)


def _paragraph_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each paragraph, trimmed of whitespace, in order."""
    spans: list[tuple[int, int]] = []
    block_start = 0
    for sep in _BLANK_LINES.finditer(text):
        content = _CONTENT.search(text, block_start, sep.start())
        if content:
            spans.append(content.span())
        block_start = sep.end()
    content = _CONTENT.search(text, block_start)
    if content:
        spans.append(content.span())
    return spans


def text_document(
    doc_id: str,
    text: str,
    *,
    title: str | None = None,
    source: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Document:
    """A document whose text is ``text`` verbatim and whose units are its paragraphs.

    Used for ``.txt`` files and for data-set corpora given as strings, whose gold spans are offsets into
    exactly this text. Raises :class:`~chunkwise.errors.EmptyDocumentError` when ``text`` holds no
    non-whitespace character.
    """
    spans = _paragraph_spans(text)
    if not spans:
        where = f"document {doc_id!r}: " if source and source != doc_id else ""
        raise EmptyDocumentError(source or doc_id, f"{where}no text (only whitespace)")
    units = tuple(
        Unit(id=f"u{i}", kind=UnitKind.PARAGRAPH, start=start, end=end, text=text[start:end])
        for i, (start, end) in enumerate(spans, start=1)
    )
    return Document(
        id=doc_id,
        text=text,
        title=title,
        source=source,
        format="text",
        metadata=metadata or {},
        units=units,
    )


def parse(data: bytes, source: str, limits: ParseLimits) -> Document:
    """Decode a plain-text file (see :mod:`.decoding`) and split it into paragraphs.

    The text is refused past ``limits.max_chars`` before it is split.
    """
    decoded = decode_bytes(data, source)
    limits.check_chars(len(decoded.text), source)
    return text_document(source, decoded.text, source=source, metadata={"encoding": decoded.encoding})
