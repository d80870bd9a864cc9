"""Safety checks for Office Open XML packages (DOCX, PPTX) before any XML library sees them.

A DOCX or PPTX file is a zip archive of XML parts, which makes it a vehicle for two classic attacks:

* **zip bombs**: a few hundred kilobytes that inflate to gigabytes. :func:`check_package` reads only the
  central directory and refuses the archive when the declared uncompressed total passes
  ``ParseLimits.max_uncompressed_bytes`` or when a large member (or the whole archive) compresses by
  more than ``ParseLimits.max_compression_ratio``. Python's :mod:`zipfile` never inflates a member past
  its declared size, so checking the declared sizes bounds what is actually decompressed later.
* **XML entity attacks**: a ``<!DOCTYPE`` with ``<!ENTITY`` declarations expands exponentially
  ("billion laughs") or pulls in external files. OOXML parts never need a document type declaration,
  so any part whose prolog holds one is refused with :class:`~chunkwise.errors.UnsafeContentError`.
  Every member is checked, whatever its name (a relationship may point at an XML part called
  ``media/image1.png``): members that do not start like XML are skipped after their first block, and
  in XML parts only the prolog is scanned (a DTD must come before the root element), in small blocks.

* **text bombs**: a package within those limits can still inflate to hundreds of megabytes of text
  (text compresses about 100:1), which python-docx and python-pptx would hold as a full XML tree and
  then as strings. When the parts the parser reads (by their usual names: ``word/document.xml``,
  ``ppt/slides/slideN.xml``) are together larger than ``ParseLimits.max_chars`` bytes (each character
  of text takes at least one byte of XML, so smaller parts cannot pass the limit), their text runs
  are counted by a streaming parse that keeps no tree and stops at the limit. A package that keeps
  its text under other names escapes this early count, not the limits: its inflated size is bounded by
  ``max_uncompressed_bytes`` and its extracted text is checked against ``max_chars`` after parsing.

Both the DOCX and the PPTX parser call :func:`check_package` first and hand the bytes to python-docx or
python-pptx only when it passes. Once they read the XML, :func:`list_number` reads the list start values
(``w:start``, ``a:buAutoNum startAt``) without converting a hostile many-digit value.
"""

from __future__ import annotations

import io
import lzma
import re
import zipfile
import zlib
from dataclasses import dataclass
from xml.parsers import expat

from chunkwise.errors import CorruptFileError, FileTooLargeError, UnsafeContentError
from chunkwise.parsing.blocks import list_number_of
from chunkwise.parsing.limits import ParseLimits

#: Members smaller than this are exempt from the per-member ratio check (tiny parts compress wildly).
_RATIO_MIN_MEMBER_BYTES = 1024 * 1024

#: Markup that may only appear in an XML prolog's DTD: refused wherever it shows up before the root.
_DTD_MARKUP = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)

#: The start of the root element: ``<`` followed by a name character (not ``?``, ``!`` or ``/``).
_ROOT_START = re.compile(rb"<[A-Za-z_:]")

_SCAN_BLOCK = 4096

#: An XML Schema integer, as OOXML's number attributes are typed: an optional sign and ASCII digits,
#: with blank space around them allowed (the schema collapses it).
_XSD_INTEGER = re.compile(r"[ \t\n\r]*([+-]?)([0-9]+)[ \t\n\r]*")

#: What opening a damaged archive or reading a damaged member raises: zipfile's own errors, the
#: decompressors' (zlib, LZMA; bzip2 raises OSError), an unsupported zip version or compression method
#: (NotImplementedError) and an encrypted member (RuntimeError).
ZIP_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    OSError,
    EOFError,
    ValueError,
    NotImplementedError,
    RuntimeError,
)

#: Bytes of XML fed to the streaming text counter at a time; the limit is checked between blocks.
_COUNT_BLOCK = 1 << 16


@dataclass(frozen=True, slots=True)
class TextMarkup:
    """Where a format's text lives: the parts (a pattern their names fully match), the text-run element
    and the empty elements that each stand for one character (tabs, breaks). Element names are
    ``"<namespace URI> <local name>"``."""

    parts: re.Pattern[str]
    run: str
    single: frozenset[str]


def check_package(data: bytes, source: str, limits: ParseLimits, text: TextMarkup) -> None:
    """Refuse a zip bomb, an XML part that declares a DTD, or more than ``limits.max_chars`` characters
    in ``text`` elements; return quietly when the package is safe.

    Raises :class:`CorruptFileError` when ``data`` is not a readable zip, :class:`FileTooLargeError`
    for a zip bomb or a text bomb and :class:`UnsafeContentError` for DTD/entity declarations.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except ZIP_ERRORS as exc:
        raise CorruptFileError(source, f"not a valid zip archive ({exc})") from exc
    with archive:
        members = archive.infolist()
        _check_sizes(members, source, limits)
        xml_members = [info for info in members if _check_prolog(archive, info, source)]
        text_parts = [info for info in xml_members if text.parts.fullmatch(info.filename)]
        if sum(info.file_size for info in text_parts) > limits.max_chars:
            _check_text_volume(archive, text_parts, source, limits, text)


def _check_sizes(members: list[zipfile.ZipInfo], source: str, limits: ParseLimits) -> None:
    total = sum(info.file_size for info in members)
    packed = sum(info.compress_size for info in members)
    if total > limits.max_uncompressed_bytes:
        raise FileTooLargeError(
            source,
            f"zip bomb refused: archive inflates to {total} bytes, over the limit of "
            f"{limits.max_uncompressed_bytes}",
        )
    for info in members:
        if info.file_size >= _RATIO_MIN_MEMBER_BYTES:
            ratio = info.file_size / max(info.compress_size, 1)
            if ratio > limits.max_compression_ratio:
                raise FileTooLargeError(
                    source,
                    f"zip bomb refused: member {info.filename} compresses {ratio:.0f}:1, over the limit "
                    f"of {limits.max_compression_ratio:.0f}:1",
                )
    if total >= _RATIO_MIN_MEMBER_BYTES and total / max(packed, 1) > limits.max_compression_ratio:
        raise FileTooLargeError(
            source,
            f"zip bomb refused: archive compresses {total / max(packed, 1):.0f}:1, over the limit of "
            f"{limits.max_compression_ratio:.0f}:1",
        )


def _check_prolog(archive: zipfile.ZipFile, info: zipfile.ZipInfo, source: str) -> bool:
    """Scan one member, if it is XML, up to its root element for ``<!DOCTYPE`` / ``<!ENTITY``.

    Returns whether the member is XML (or may be: an empty or blank member counts as XML).
    """
    tail = b""
    utf16: str | None = None
    started = False  # seen the first non-blank byte
    try:
        with archive.open(info) as member:
            while block := member.read(_SCAN_BLOCK):
                if utf16 is None:
                    utf16 = "utf-16-le" if block.startswith(b"\xff\xfe") else ""
                    utf16 = "utf-16-be" if block.startswith(b"\xfe\xff") else utf16
                if utf16:
                    block = block.decode(utf16, errors="ignore").encode("utf-8", errors="ignore")
                if not started:
                    lead = block.lstrip(b"\xef\xbb\xbf \t\r\n")
                    if lead and not lead.startswith(b"<"):
                        return False  # not XML (an image, a font): nothing an XML parser will read
                    started = bool(lead)
                window = tail + block
                root = _ROOT_START.search(window)
                if _DTD_MARKUP.search(window, 0, root.start() if root else len(window)):
                    raise UnsafeContentError(
                        source,
                        f"XML part {info.filename} declares a DTD or entities (entity expansion / "
                        "external entity attack); refused",
                    )
                if root:
                    return True
                tail = window[-16:]
    except ZIP_ERRORS as exc:
        raise CorruptFileError(source, f"damaged archive member {info.filename} ({exc})") from exc
    return True


class _TextCounter:
    """Expat handlers that count the characters inside text-run elements and the one-character ones."""

    def __init__(self, text: TextMarkup, count: int) -> None:
        self.text = text
        self.count = count
        self._inside = 0

    def start(self, name: str, _attributes: object) -> None:
        if name == self.text.run:
            self._inside += 1
        elif name in self.text.single:
            self.count += 1

    def end(self, name: str) -> None:
        if name == self.text.run:
            self._inside -= 1

    def characters(self, data: str) -> None:
        if self._inside:
            self.count += len(data)


def _check_text_volume(
    archive: zipfile.ZipFile,
    members: list[zipfile.ZipInfo],
    source: str,
    limits: ParseLimits,
    text: TextMarkup,
) -> None:
    """Count the characters in ``text`` elements of ``members``, stopping past the limit.

    Expat reads each member in blocks and keeps only the running count, so memory stays constant
    whatever the size. A member that is not well-formed XML ends its own count: the parsers report it
    if it matters. Members were checked for DTDs before, so no entity is ever expanded here.
    """
    count = 0
    for info in members:
        counter = _TextCounter(text, count)  # a fresh one per member: a broken one may end inside a run
        parser = expat.ParserCreate(namespace_separator=" ")
        parser.buffer_text = True
        parser.StartElementHandler = counter.start
        parser.EndElementHandler = counter.end
        parser.CharacterDataHandler = counter.characters
        try:
            with archive.open(info) as member:
                while block := member.read(_COUNT_BLOCK):
                    parser.Parse(block, False)
                    limits.check_chars(counter.count, source)
                parser.Parse(b"", True)
        except expat.ExpatError:
            pass
        except ZIP_ERRORS as exc:
            raise CorruptFileError(source, f"damaged archive member {info.filename} ({exc})") from exc
        count = counter.count
        limits.check_chars(count, source)


def unreadable(source: str, fmt: str, exc: Exception) -> CorruptFileError:
    """The error for a package that passed the safety checks but that python-docx/-pptx cannot load.

    Those libraries fail on malformed input with many exception types (``KeyError`` for a missing
    part, lxml syntax errors, ``ValueError``...); all of them mean the same to the caller.
    """
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, AttributeError | TypeError | IndexError):
        # the library met a part that parses as XML but is not shaped as the format says (a missing
        # namespace, say): its own message names an attribute of its code, not the file's fault
        detail = (
            f"a part of the package is not shaped as {fmt.upper()} requires ({type(exc).__name__}: {detail})"
        )
    return CorruptFileError(source, f"cannot read as {fmt.upper()}: {detail}")


def list_number(value: str) -> int:
    """A list start attribute (``w:start``, ``w:startOverride``, ``a:buAutoNum startAt``) as an item
    number, clamped to +-:data:`~chunkwise.parsing.blocks.MAX_LIST_NUMBER` like HTML and Markdown list
    numbers; only its first ten significant digits are converted, so a 10,000-digit value costs nothing.

    Raises ``ValueError`` for a value that is no integer (empty, ``"abc"``, ``"1.5"``): the parsers
    report it as a malformed package (:func:`unreadable`).
    """
    match = _XSD_INTEGER.fullmatch(value)
    if match is None:
        raise ValueError(f"list start {value[:20]!r} is not an integer")
    return list_number_of(*match.groups())
