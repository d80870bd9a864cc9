"""The grounding check: does each quoted passage appear verbatim in the source span it cites?

"Verbatim" allows one relaxation, stated here and in the README: runs of whitespace (spaces, tabs,
newlines) count as one space, and the quote's leading and trailing whitespace is ignored, because models
reflow lines when they copy. Case, punctuation and every other character must match exactly. Quotes
shorter than ``min_chars`` (after normalisation) are rejected: a two-word quote proves nothing.
"""

from __future__ import annotations

import re

_WS = re.compile(r"\s+")


def _normalised_with_map(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs collapsed to one space, and the original index of each character."""
    out: list[str] = []
    index: list[int] = []
    previous_space = False
    for i, char in enumerate(text):
        if char.isspace():
            if previous_space:
                continue
            out.append(" ")
            previous_space = True
        else:
            out.append(char)
            previous_space = False
        index.append(i)
    return "".join(out), index


def locate_quote(quote: str, source: str, min_chars: int = 10) -> tuple[int, int] | None:
    """``(start, end)`` of ``quote`` in ``source`` (offsets into ``source``), or ``None`` if it is not there.

    An exact match is tried first; then the whitespace-normalised match described in the module docstring.
    """
    wanted = _WS.sub(" ", quote).strip()
    if len(wanted) < min_chars:
        return None
    at = source.find(quote)
    if at >= 0:
        return at, at + len(quote)
    normal, index = _normalised_with_map(source)
    at = normal.find(wanted)
    if at < 0:
        return None
    return index[at], index[at + len(wanted) - 1] + 1
