"""Line breaks as the chunkers see them: ``\\n``, ``\\r\\n`` and a lone ``\\r`` (old Mac OS files) each end
a line, as they do for the plain-text parser.

Plain text reaches the chunkers verbatim (evaluation data give offsets into it), so its line endings are
whatever its file had. A line break is matched by its last character: ``\\n``, or a ``\\r`` that no
``\\n`` follows. The ``\\r`` of ``\\r\\n`` is whitespace inside the line, so text with ``\\r\\n`` endings
cuts where it cuts with ``\\n`` alone, and every cut stays an offset into the text as given.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: Regular-expression pieces for text that may hold ``\r``: a line break (``\n``, or ``\r`` that no
#: ``\n`` follows), whitespace inside a line (the ``\r`` of ``\r\n`` included), any character inside a
#: line.
_ANY_ENDINGS = {
    "<br>": r"[\n\r](?!(?<=\r)\n)",
    "<sp>": r"(?:[^\S\n\r]|\r(?=\n))",
    "<line>": r"(?:[^\n\r]|\r(?=\n))",
}
#: The same pieces for text without ``\r``.
_LF_ENDINGS = {"<br>": r"\n", "<sp>": r"[^\S\n]", "<line>": r"[^\n]"}


def _expand(template: str, pieces: dict[str, str]) -> str:
    for name, piece in pieces.items():
        template = template.replace(name, piece)
    return template


class LinePattern:
    """A regular expression written with ``<br>`` (a line break), ``<sp>`` (whitespace inside a line)
    and ``<line>`` (a character inside a line), compiled twice: for text that holds a ``\\r`` and for
    text that does not. Without ``\\r`` the line break is the literal ``\\n``, which the engine searches
    for three to four times faster than a character class; both give the same matches there."""

    def __init__(self, template: str, flags: int = 0) -> None:
        self._any = re.compile(_expand(template, _ANY_ENDINGS), flags)
        self._lf = re.compile(_expand(template, _LF_ENDINGS), flags)

    def _for(self, text: str, start: int, end: int) -> re.Pattern[str]:
        return self._lf if text.find("\r", start, end) < 0 else self._any

    def finditer(self, text: str, start: int, end: int) -> Iterator[re.Match[str]]:
        """Matches in ``text[start:end]``: ``end`` should not split a ``\\r\\n`` (see :func:`window_end`)."""
        return self._for(text, start, end).finditer(text, start, end)

    def match(self, text: str, start: int, end: int) -> re.Match[str] | None:
        """A match at ``start`` inside ``text[start:end]`` (the same caveat on ``end``)."""
        return self._for(text, start, end).match(text, start, end)


def is_break(text: str, i: int) -> bool:
    """Whether ``text[i]`` ends a line."""
    char = text[i]
    return char == "\n" or (char == "\r" and not text.startswith("\n", i + 1))


def next_break(text: str, start: int) -> int:
    """The index of the first line break character in ``text[start:]``, or -1.

    Two ``str.find`` calls: the first ``\\n``, then the first ``\\r`` before it, a line break unless
    that ``\\n`` follows it.
    """
    found = text.find("\n", start)
    r = text.find("\r", start, found if found >= 0 else len(text))
    return r if r >= 0 and is_break(text, r) else found


def first_line(text: str) -> str:
    """``text`` up to its first line break, without the break (``\\r\\n`` included); all of it if none."""
    end = next_break(text, 0)
    if end < 0:
        return text
    crlf = end > 0 and text[end] == "\n" and text[end - 1] == "\r"
    return text[: end - 1] if crlf else text[:end]


def is_one_break(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is exactly one line break: ``\\n``, ``\\r\\n`` or a lone ``\\r``."""
    length = end - start
    return (length == 1 and is_break(text, start)) or (length == 2 and text.startswith("\r\n", start))


def window_end(text: str, limit: int) -> int:
    """The end to give a regular expression searching ``text[:limit]``: ``limit``, or ``limit - 1`` where
    ``limit`` splits a ``\\r\\n`` (the search would see that ``\\r`` followed by nothing, a lone one)."""
    return limit - 1 if 0 < limit < len(text) and text[limit - 1] == "\r" and text[limit] == "\n" else limit


def last_break(text: str, start: int, limit: int) -> int:
    """The index of the last line break character in ``text[start:limit]``, or -1.

    Two ``str.rfind`` calls: the last ``\\n``, then a lone ``\\r`` after it (at most one ``\\r`` there is
    followed by a ``\\n``: the one just before ``limit``).
    """
    found = text.rfind("\n", start, limit)
    r = text.rfind("\r", max(start, found + 1), limit)
    while r >= 0 and not is_break(text, r):
        r = text.rfind("\r", max(start, found + 1), r)
    return max(found, r)
