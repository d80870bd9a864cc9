"""Deterministic parsers: files of six formats into ID-addressable :class:`~chunkwise.document.Document`s.

The format is chosen by extension and confirmed by content (magic bytes), see :mod:`.detect`. Each format
lives in its own module exposing ``parse(data, source, limits) -> Document``; they are imported lazily so
that parsing Markdown never loads the PDF stack.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from chunkwise.document import Document, lone_surrogate, path_id
from chunkwise.errors import EmptyDocumentError, EncodingError, FileTooLargeError
from chunkwise.parsing.detect import detect_format
from chunkwise.parsing.files import read_file
from chunkwise.parsing.formats import EXTENSIONS, FORMATS
from chunkwise.parsing.limits import ParseLimits

__all__ = ["EXTENSIONS", "FORMATS", "ParseLimits", "detect_format", "parse_bytes", "parse_file"]

ParserFn = Callable[[bytes, str, ParseLimits], Document]


def _parser(fmt: str) -> ParserFn:
    module = importlib.import_module(FORMATS[fmt])
    fn: ParserFn = module.parse
    return fn


def parse_bytes(
    data: bytes,
    source: str,
    *,
    fmt: str | None = None,
    limits: ParseLimits | None = None,
) -> Document:
    """Parse in-memory bytes; ``source`` names the input (used as document id and in errors).

    ``fmt`` forces a format; otherwise it is detected from ``source``'s extension and the content.
    Raises a :class:`~chunkwise.errors.ParseError` subclass on bad input, and
    :class:`~chunkwise.errors.FileTooLargeError` past any of ``limits`` (parsers that can stop early
    check ``limits.max_chars`` while extracting; the finished text is checked here for all).
    """
    limits = limits or ParseLimits()
    if lone_surrogate(source) is not None:
        raise EncodingError(path_id(source), "the name is not valid Unicode text (it holds a lone surrogate)")
    if not data:
        raise EmptyDocumentError(source, "file is empty")
    if len(data) > limits.max_bytes:
        raise FileTooLargeError(source, f"{len(data)} bytes exceeds the limit of {limits.max_bytes}")
    fmt = fmt or detect_format(data, source)
    doc = _parser(fmt)(data, source, limits)
    limits.check_chars(len(doc.text), source)
    return doc


def parse_file(
    path: str | Path,
    *,
    fmt: str | None = None,
    limits: ParseLimits | None = None,
    doc_id: str | None = None,
) -> Document:
    """Parse a file. The document id is ``doc_id`` or the path as given (POSIX form; bytes of a file name
    that are not UTF-8 written as ``\\xNN``, :func:`~chunkwise.document.path_id`).

    Only regular files are read (symlinks are followed), and never past ``limits.max_bytes``: the size
    is checked before reading, so a 200 MB file over the limit costs no memory, and again while
    reading (see :mod:`.files`).
    """
    limits = limits or ParseLimits()
    source = doc_id or path_id(Path(path).as_posix())
    data = read_file(path, source, limits.max_bytes)
    return parse_bytes(data, source, fmt=fmt, limits=limits)
