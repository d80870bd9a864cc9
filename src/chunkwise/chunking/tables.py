"""Markdown pipe tables in the canonical text: the header rows a row of the body belongs to.

A table row alone says little (``| CloudSaver (Economy) | 1 | 23 kg |``). A chunk that starts inside a
table body carries the table's header and delimiter rows as context, and an extractive answer that
quotes a row quotes its header row beside it; both find them here. Rows are lines as
:mod:`chunkwise.chunking.lines` defines them (a lone ``\\r`` ends one too); with ``\\r\\n`` endings the
header text keeps the ``\\r`` that ends its delimiter row, as the row itself does.
"""

from __future__ import annotations

from chunkwise.chunking.lines import last_break, next_break


def _line_start(text: str, offset: int) -> int:
    return last_break(text, 0, offset) + 1


class TableHeaders:
    """Finds the header rows of the tables of one text, for many offsets.

    Finding a table's first row walks back over its rows. Each answer is remembered (a row and the
    first row of its table), and a later walk that reaches the remembered row stops there, so asking
    for the chunks of a document in order costs one walk over each table in all, not one per chunk:
    a 40,000-row table cut into 2,000 chunks was walked 2,000 times, quadratic in its length.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._row = -1  # the start of a row whose table's first row is known ...
        self._first = -1  # ... and the start of that first row

    def header(self, start: int) -> str:
        """The header and delimiter rows of the pipe table whose body holds the line at ``start``.

        Empty when that line is not a table row, or is the table's header or delimiter row itself.
        """
        text = self._text
        line = _line_start(text, start)
        if not text.startswith("|", line):
            return ""
        first = line
        while first > 0:
            if first == self._row:
                first = self._first
                break
            previous = _line_start(text, first - 1)
            if not text.startswith("|", previous):
                break
            first = previous
        self._row, self._first = line, first
        second = next_break(text, first)
        end = next_break(text, second + 1) if second >= 0 else -1
        if end < 0 or line <= end:  # the header or delimiter row itself
            return ""
        return text[first:end]


def table_header(text: str, start: int) -> str:
    """The header and delimiter rows of the pipe table whose body holds the line at ``start``.

    Empty when that line is not a table row, or is the table's header or delimiter row itself. For
    many offsets of one text, :class:`TableHeaders` answers in one pass.
    """
    return TableHeaders(text).header(start)
