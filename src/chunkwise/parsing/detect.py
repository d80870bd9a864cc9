"""Choose a parser: by extension first, confirmed (or overruled) by the content's magic bytes.

A file named ``.pdf`` that does not start with ``%PDF-`` is reported as corrupt rather than handed to the
PDF library; a ``.docx`` must be a zip holding ``word/document.xml``; and so on. Unknown extensions are
sniffed: a zip, a PDF, HTML markup, or else text when the bytes decode.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePath

from chunkwise.errors import CorruptFileError, UnsupportedFormatError
from chunkwise.parsing.decoding import unmarked_utf16
from chunkwise.parsing.formats import EXTENSIONS
from chunkwise.parsing.ooxml import ZIP_ERRORS

#: Member that identifies each Office Open XML format inside its zip.
_OOXML_MARKERS: dict[str, str] = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml"}

_HTML_PREFIXES: tuple[bytes, ...] = (b"<!doctype html", b"<html", b"<head", b"<body", b"<meta")


def _zip_format(data: bytes, source: str) -> str | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except ZIP_ERRORS as exc:
        raise CorruptFileError(source, f"not a valid zip archive ({exc})") from exc
    for fmt, marker in _OOXML_MARKERS.items():
        if marker in names:
            return fmt
    return None


def _looks_like_html(data: bytes) -> bool:
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith(_HTML_PREFIXES)


def detect_format(data: bytes, source: str) -> str:
    """The format name for ``data`` read from ``source`` (a path or name).

    Raises :class:`CorruptFileError` when the extension promises a binary format the bytes do not
    carry, and :class:`UnsupportedFormatError` for unknown binary content.
    """
    ext = PurePath(source).suffix.lower()
    claimed = EXTENSIONS.get(ext)
    if claimed == "pdf":
        if not data.lstrip(b"\x00\t\r\n ")[:5] == b"%PDF-":
            raise CorruptFileError(source, "named .pdf but does not start with a PDF header")
        return "pdf"
    if claimed in _OOXML_MARKERS:
        if not data.startswith(b"PK"):
            raise CorruptFileError(source, f"named {ext} but is not a zip archive")
        found = _zip_format(data, source)
        if found != claimed:
            raise CorruptFileError(source, f"named {ext} but the archive holds no {claimed} document")
        return claimed
    if claimed is not None:
        return claimed
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"PK"):
        found = _zip_format(data, source)
        if found:
            return found
        raise UnsupportedFormatError(source, "zip archive of an unsupported kind")
    if _looks_like_html(data):
        return "html"
    if (
        b"\x00" in data[:4096]
        and not data.startswith((b"\xff\xfe", b"\xfe\xff"))
        and unmarked_utf16(data) is None
    ):
        raise UnsupportedFormatError(source, "binary content of an unknown format")
    return "text"
