"""Markdown pipe tables in the canonical text: the header rows a row of the body belongs to.

A table row alone says little (``| CloudSaver (Economy) | 1 | 23 kg |``). A chunk that starts inside a
table body carries the table's header and delimiter rows as context, and an extractive answer that
quotes a row quotes its header row beside it; both find them here.
"""

from __future__ import annotations


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def table_header(text: str, start: int) -> str:
    """The header and delimiter rows of the pipe table whose body holds the line at ``start``.

    Empty when that line is not a table row, or is the table's header or delimiter row itself.
    """
    line = _line_start(text, start)
    if not text.startswith("|", line):
        return ""
    rows = 0
    first = line
    while first > 0:
        previous = _line_start(text, first - 1)
        if not text.startswith("|", previous):
            break
        first = previous
        rows += 1
    if rows < 2:
        return ""
    second = text.find("\n", first)
    end = text.find("\n", second + 1)
    return text[first : end if end >= 0 else len(text)]
