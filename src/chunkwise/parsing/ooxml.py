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

Both the DOCX and the PPTX parser call :func:`check_package` first and hand the bytes to python-docx or
python-pptx only when it passes.
"""

from __future__ import annotations

import io
import re
import zipfile

from chunkwise.errors import CorruptFileError, FileTooLargeError, UnsafeContentError
from chunkwise.parsing.limits import ParseLimits

#: Members smaller than this are exempt from the per-member ratio check (tiny parts compress wildly).
_RATIO_MIN_MEMBER_BYTES = 1024 * 1024

#: Markup that may only appear in an XML prolog's DTD: refused wherever it shows up before the root.
_DTD_MARKUP = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)

#: The start of the root element: ``<`` followed by a name character (not ``?``, ``!`` or ``/``).
_ROOT_START = re.compile(rb"<[A-Za-z_:]")

_SCAN_BLOCK = 4096


def check_package(data: bytes, source: str, limits: ParseLimits) -> None:
    """Refuse a zip bomb or an XML part that declares a DTD; return quietly when the package is safe.

    Raises :class:`CorruptFileError` when ``data`` is not a readable zip, :class:`FileTooLargeError`
    for a zip bomb and :class:`UnsafeContentError` for DTD/entity declarations.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CorruptFileError(source, f"not a valid zip archive ({exc})") from exc
    with archive:
        members = archive.infolist()
        _check_sizes(members, source, limits)
        for info in members:
            _check_prolog(archive, info, source)


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


def _check_prolog(archive: zipfile.ZipFile, info: zipfile.ZipInfo, source: str) -> None:
    """Scan one member, if it is XML, up to its root element for ``<!DOCTYPE`` / ``<!ENTITY``."""
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
                        return  # not XML (an image, a font): nothing an XML parser will read
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
                    return
                tail = window[-16:]
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise CorruptFileError(source, f"damaged archive member {info.filename} ({exc})") from exc


def unreadable(source: str, fmt: str, exc: Exception) -> CorruptFileError:
    """The error for a package that passed the safety checks but that python-docx/-pptx cannot load.

    Those libraries fail on malformed input with many exception types (``KeyError`` for a missing
    part, lxml syntax errors, ``ValueError``...); all of them mean the same to the caller.
    """
    detail = str(exc) or type(exc).__name__
    return CorruptFileError(source, f"cannot read as {fmt.upper()}: {detail}")
