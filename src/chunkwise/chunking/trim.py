"""Whitespace trimming of ``(start, end)`` spans over a text, without copying the text."""

from __future__ import annotations

import re

NON_SPACE = re.compile(r"\S")


def skip_space(text: str, pos: int, end: int) -> int:
    """The first non-whitespace offset in ``text[pos:end]``, or ``end`` if there is none."""
    match = NON_SPACE.search(text, pos, end)
    return end if match is None else match.start()


def rstrip_end(text: str, start: int, end: int) -> int:
    """``end`` moved left past trailing whitespace, never before ``start``."""
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``(start, end)`` shrunk to non-whitespace ends, or ``None`` if the span is only whitespace."""
    first = skip_space(text, start, end)
    if first >= end:
        return None
    return first, rstrip_end(text, first, end)
