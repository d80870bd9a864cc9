"""Bytes to text for the text-based formats (plain text, Markdown, HTML).

The order of evidence, strongest first:

1. a byte-order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE), which is stripped;
2. UTF-16 without a mark, when NUL bytes fill one byte of every pair for a good share of the text
   (its ASCII characters and spaces) and almost never the other, and the bytes decode as UTF-16;
3. valid UTF-8, the overwhelmingly common case, decoded strictly;
4. an encoding the document declares (an HTML ``<meta charset>``), when the bytes decode under it;
5. cp1252 when the bytes read as plausible Western European text, else detection by charset-normalizer
   for other legacy 8-bit and multi-byte encodings (cp1251, cp1253, Shift-JIS...).

Bytes that hold valid multi-byte UTF-8 sequences *and* invalid ones are damaged UTF-8: decoding them as
a legacy encoding would turn every accented letter into mojibake, so they are refused with an
:class:`~chunkwise.errors.EncodingError` naming the first bad byte. Binary content (NUL bytes without a
UTF-16/32 byte-order mark or UTF-16's pattern, or a decoding dense in control characters) is refused the
same way. Nothing is
replaced or normalised: the returned text is exactly what the bytes encode, so offsets into it are
offsets into the source.
"""

from __future__ import annotations

import codecs
import re
from collections import Counter
from dataclasses import dataclass

import charset_normalizer

from chunkwise.errors import EncodingError

#: Byte-order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

#: Undecodable bytes, as ``surrogateescape`` decoding represents them.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")

#: Non-ASCII characters that did decode (as ``surrogateescape`` decoding leaves them).
_NON_ASCII = re.compile("[^\x00-\x7f\udc80-\udcff]")

#: C0 controls other than tab, newline, vertical tab, form feed and carriage return, plus DEL.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")

#: The share of control characters above which decoded text is taken for binary data.
_MAX_CONTROL_RATIO = 0.01

#: Non-ASCII characters that Western European text in cp1252 is made of: Latin-1 letters, the common
#: symbols and cp1252's typographic punctuation. Anything else (superscripts, currency signs such as
#: ``¤``, fractions) hints at another code page read through the wrong table.
_LATIN1_LETTERS = "".join(chr(c) for c in range(0xC0, 0x100) if c not in (0xD7, 0xF7))
_WESTERN = "\u00a0«»°£§©®·¡¿€–—‘’‚“”„…•™" + _LATIN1_LETTERS
_NOT_WESTERN = re.compile(f"[^\\x00-\\x7f{_WESTERN}]")

#: In Western European languages most letters are ASCII; a text whose letters are mostly accented is
#: Cyrillic or Greek bytes read as cp1252.
_MAX_ACCENTED_SHARE = 0.3


#: UTF-16 without a byte-order mark: the least share of byte pairs whose high byte is NUL (ASCII letters,
#: digits, spaces and line ends; a tenth is met by Cyrillic or Greek text's spaces alone) ...
_MIN_UTF16_NUL_SHARE = 0.1

#: ... and the most whose low byte is (U+0100, U+0200...: rare in text, common in binary data).
_MAX_UTF16_LOW_NUL_SHARE = 0.01

#: With fewer high NUL bytes than this, a tenth of the pairs is no evidence (in ten bytes of 8-bit text
#: one stray NUL is: ``<p>a\x00b</p>`` read as UTF-16 is five CJK characters), so the high bytes must
#: also be what one script's text gives them: two values (NUL and the script's block, as 0x04 for
#: Cyrillic) in at least :data:`_MIN_SHORT_UTF16_BLOCK_SHARE` of the pairs, where 8-bit text puts letters
#: of every kind there.
_MIN_UTF16_NULS = 8
_MIN_SHORT_UTF16_BLOCK_SHARE = 0.9


@dataclass(frozen=True, slots=True)
class Decoded:
    """Decoded text and the name of the encoding that produced it (recorded in document metadata)."""

    text: str
    encoding: str


def _check_not_binary(text: str, source: str, encoding: str) -> None:
    controls = len(_CONTROL.findall(text[:65536]))
    if controls > _MAX_CONTROL_RATIO * min(len(text), 65536):
        raise EncodingError(
            source, f"binary content, not text ({controls} control characters when read as {encoding})"
        )


def unmarked_utf16(data: bytes) -> str | None:
    """``utf-16-le`` or ``utf-16-be`` when ``data`` has UTF-16's pattern of NUL bytes (see the
    thresholds above) in its first 64 KB, else None. Whether it decodes is for the caller to find."""
    if len(data) % 2:
        return None
    sample = data[:65536]
    pairs = len(sample) // 2
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    for high, low, encoding, start in ((odd, even, "utf-16-le", 1), (even, odd, "utf-16-be", 0)):
        if not high or high < _MIN_UTF16_NUL_SHARE * pairs or low > _MAX_UTF16_LOW_NUL_SHARE * pairs:
            continue
        if high >= _MIN_UTF16_NULS or _block_share(sample[start::2]) >= _MIN_SHORT_UTF16_BLOCK_SHARE:
            return encoding
    return None


def _block_share(high_bytes: bytes) -> float:
    """The share of ``high_bytes`` taken by its two most common values."""
    return sum(count for _, count in Counter(high_bytes).most_common(2)) / len(high_bytes)


def _looks_like_damaged_utf8(data: bytes) -> bool:
    """True when valid multi-byte UTF-8 characters are at least as many as the invalid bytes.

    Legacy 8-bit text (cp1251 Cyrillic, say) forms a valid UTF-8 pair only by chance, so nearly all its
    non-ASCII bytes are invalid; UTF-8 damaged by truncation or a stray byte is mostly valid.
    """
    text = data.decode("utf-8", errors="surrogateescape")
    return len(_NON_ASCII.findall(text)) >= len(_ESCAPED_BYTE.findall(text))


def _is_western_cp1252(data: bytes) -> bool:
    """Whether ``data`` reads as plausible Western European text in cp1252 (Windows Latin-1).

    charset-normalizer often prefers a Baltic or Mac code page for short French or German text, where
    the statistics are thin; cp1252 is by far the most common legacy encoding, so it is tried first
    and kept when the characters it yields are the ones such text is made of.
    """
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return False
    if _NOT_WESTERN.search(text):
        return False
    letters = sum(char.isalpha() for char in text)
    accented = sum(char.isalpha() and not char.isascii() for char in text)
    return accented <= _MAX_ACCENTED_SHARE * letters


def _detect(data: bytes) -> str | None:
    """cp1252 when plausible, else charset-normalizer's best guess (lowest chaos), or ``None``."""
    if _is_western_cp1252(data):
        return "cp1252"
    best = charset_normalizer.from_bytes(data).best()
    return best.encoding if best is not None else None


def decode_bytes(data: bytes, source: str, declared: str | None = None) -> Decoded:
    """Decode ``data`` read from ``source`` (named in errors), following the order in the module doc.

    ``declared`` is an encoding the document itself names; it is tried after UTF-8 and ignored when
    unknown to Python or when the bytes do not decode under it.
    Raises :class:`~chunkwise.errors.EncodingError` for binary or undecodable content.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise EncodingError(
                    source,
                    f"starts with a {encoding} byte-order mark but byte {exc.start + len(bom)} is invalid",
                ) from exc
            _check_not_binary(text, source, encoding)
            return Decoded(text, encoding)
    unmarked = unmarked_utf16(data)
    if unmarked is not None:
        try:
            text = data.decode(unmarked)
        except UnicodeDecodeError:
            pass
        else:
            _check_not_binary(text, source, unmarked)
            return Decoded(text, unmarked)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    else:
        _check_not_binary(text, source, "utf-8")
        return Decoded(text, "utf-8")
    if b"\x00" in data:
        raise EncodingError(
            source, "binary content, not text (NUL bytes, and neither a UTF-16/32 byte-order mark nor UTF-16)"
        )
    if _looks_like_damaged_utf8(data):
        raise EncodingError(source, f"damaged UTF-8: invalid byte at offset {first_bad}")
    if declared:
        try:
            text = data.decode(codecs.lookup(declared).name)
        except (LookupError, UnicodeDecodeError):
            pass
        else:
            _check_not_binary(text, source, declared)
            return Decoded(text, codecs.lookup(declared).name)
    detected = _detect(data)
    if detected is None:
        raise EncodingError(
            source, f"not UTF-8 (invalid byte at offset {first_bad}) and no plausible encoding"
        )
    text = data.decode(detected)
    _check_not_binary(text, source, detected)
    return Decoded(text, detected)
