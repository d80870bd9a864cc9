"""The two functions most users start with: :func:`parse` and :func:`chunk`.

Both accept what a user has at hand (a path, raw bytes, a string of text, or an already parsed
:class:`~chunkwise.document.Document`) and return the library's own types with exact offsets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chunkwise.chunking import get_chunker
from chunkwise.chunking.chunk import Chunk
from chunkwise.document import Document, lone_surrogate
from chunkwise.errors import EncodingError, ParseError
from chunkwise.models.context import Models
from chunkwise.parsing import ParseLimits, parse_bytes, parse_file
from chunkwise.parsing.formats import EXTENSIONS
from chunkwise.parsing.text import text_document

#: Longest string that is still taken for a file name rather than text.
_MAX_PATH_CHARS = 4096


def _names_a_file(text: str) -> bool:
    """True when ``text`` is one line naming something that exists on disk (a file, or a directory or
    special file that :func:`~chunkwise.parsing.parse_file` then refuses by name). Ordinary text, even
    with a ``/`` or a file name in it (``"50 EUR/USD"``, ``"see README.md"``), names nothing there."""
    if "\n" in text or len(text) > _MAX_PATH_CHARS or not text.strip():
        return False
    try:
        return Path(text).exists()
    except (OSError, ValueError):  # a NUL, a lone surrogate or an over-long component: no such file
        return False


def _looks_like_a_file_name(text: str) -> bool:
    """True when ``text`` is one word ending in a supported extension (``report.pdf``,
    ``docs/notes.md``): a file name with a typo, or one relative to another directory, far more likely
    than a document of one word."""
    return not any(c.isspace() for c in text) and Path(text).suffix.lower() in EXTENSIONS


def _check_unicode(text: str, doc_id: str) -> None:
    """:class:`EncodingError` naming ``doc_id`` when ``text`` holds a lone surrogate (no encoding can
    store it)."""
    at = lone_surrogate(text)
    if at is not None:
        raise EncodingError(doc_id, f"not valid Unicode text: a lone surrogate at character {at}")


def verbatim_document(text: str, doc_id: str = "text", limits: ParseLimits | None = None) -> Document:
    """``text`` as a plain-text document whose :attr:`~Document.text` is ``text`` exactly, so offsets
    index the given string. It is not encoded and decoded again: decoding would drop a leading U+FEFF
    (taken for a byte-order mark, shifting every offset by one) and could take text full of NUL
    characters for UTF-16 or binary data, while a ``str`` is already text.

    Raises:
        EncodingError: ``text`` holds a lone surrogate (no encoding can store it).
        FileTooLargeError: ``text`` is longer than ``limits.max_chars``.
        EmptyDocumentError: ``text`` holds only whitespace, or nothing.
    """
    _check_unicode(text, doc_id)
    (limits or ParseLimits()).check_chars(len(text), doc_id)
    return text_document(doc_id, text, source=doc_id)


def parse(
    source: str | Path | bytes,
    *,
    format: str | None = None,
    doc_id: str | None = None,
    limits: ParseLimits | None = None,
) -> Document:
    """Parse a file, bytes, or text into a :class:`Document` with addressable units.

    Args:
        source: a :class:`~pathlib.Path`; a string naming a file that exists; any other string is the
            text itself, except one word ending in a supported extension (``notes.md``), refused as a
            missing file unless a ``format`` is named; ``bytes`` are a file's content.
        format: force a format (``text``, ``markdown``, ``html``, ``pdf``, ``docx``, ``pptx``);
            otherwise it comes from the extension and the content. Text given as a string is kept
            verbatim (``text``, see :func:`verbatim_document`) unless another format is named.
        doc_id: the document id (default: the path, or ``"text"``/``"bytes"``).
        limits: size and nesting limits (:class:`~chunkwise.parsing.ParseLimits` defaults).

    Returns:
        The document: ``doc.text[u.start:u.end] == u.text`` for every unit ``u``.

    Raises:
        ParseError: a subclass naming the input and the reason (empty, corrupt, encrypted, too large,
            unsafe, undecodable, unsupported); ``ParseError`` itself for a file that cannot be read,
            and for a one-word string with a supported extension that names no file.
    """
    if isinstance(source, Path) or (isinstance(source, str) and _names_a_file(source)):
        return parse_file(source, fmt=format, limits=limits, doc_id=doc_id)
    if isinstance(source, str):
        if format is None and _looks_like_a_file_name(source):
            raise ParseError(
                source, 'cannot read file: no such file (to parse the string itself, pass format="text")'
            )
        return parse_text(source, format, doc_id or "text", limits)
    return parse_bytes(source, doc_id or "bytes", fmt=format, limits=limits)


def parse_text(
    text: str, format: str | None = None, doc_id: str = "text", limits: ParseLimits | None = None
) -> Document:
    """``text``, given as a string, as a document: plain text (``format`` ``None`` or ``text``) kept
    verbatim (:func:`verbatim_document`: offsets index ``text`` itself, a leading U+FEFF included);
    another format parsed as a file of that format would be. A parsed format's offsets index its parsed
    :attr:`~Document.text`, which leaves out markup, front matter and leading blank lines, and a leading
    U+FEFF as well, taken for a byte-order mark just as in a file (kept, it would turn a first
    ``# Title`` into a paragraph). The string is never taken for a file name (:func:`parse` would).

    Raises:
        EncodingError: ``text`` holds a lone surrogate (no encoding can store it).
        ParseError: another subclass naming ``doc_id`` and the reason (empty, too large, unsupported).
    """
    if format in (None, "text"):
        return verbatim_document(text, doc_id, limits)
    _check_unicode(text, doc_id)
    return parse_bytes(text.encode("utf-8"), doc_id, fmt=format, limits=limits)


def chunk(
    source: Document | str | Path | bytes,
    chunker: str = "recursive",
    *,
    models: Models | None = None,
    **params: Any,
) -> list[Chunk]:
    """Chunk a document (or anything :func:`parse` accepts) with a named chunker.

    Args:
        source: a parsed :class:`Document`, or a path, text or bytes, parsed first with :func:`parse`.
        chunker: ``fixed``, ``recursive``, ``sentence``, ``semantic``, ``structure``, ``wrac``,
            ``agentic``, ``logprob``, ``sections``, or ``package.module:Class``.
        models: the model context for the model-driven chunkers (its ledger accounts their calls, its
            budget bounds them); default: one built from the environment.
        **params: the chunker's parameters (``max_size``, ``min_size``, ``overlap``, ``unit``, ...).

    Returns:
        The chunks in document order, each with ``doc.text[c.start:c.end] == c.text`` and a size within
        ``max_size``.

    Raises:
        ConfigError: an unknown chunker or parameter, or a value out of range.
        ParseError: ``source`` could not be parsed.
    """
    doc = source if isinstance(source, Document) else parse(source)
    return get_chunker(chunker, models=models, **params).chunk(doc)
