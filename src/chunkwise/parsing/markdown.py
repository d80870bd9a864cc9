"""Markdown: a CommonMark parse (markdown-it-py, with GFM tables and strikethrough) walked into units.

The token stream becomes :class:`~chunkwise.parsing.blocks.BlockAssembler` events: ATX and setext
headings with their levels, paragraphs, bullet and ordered lists with nesting depth and numbers, pipe
tables (one unit each), fenced and indented code (one unit, language kept), block quotes. Thematic
breaks are dropped; inline formatting is reduced to its text (emphasis markers, link targets and images
go; inline code keeps its text); raw HTML blocks go through the HTML walker (its filters included), so an
embedded ``<table>`` stays a table.
A YAML front-matter block at the very top is kept out of the text and stored in the metadata.
Blocks nested deeper than :data:`MAX_NESTING` raise :class:`~chunkwise.errors.UnsafeContentError`
rather than lose text, and so do pipe tables past :data:`MAX_TABLE_CELLS` cells in all, before markdown-it
builds them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock, table
from markdown_it.token import Token

from chunkwise.document import Document
from chunkwise.errors import EmptyDocumentError, UnsafeContentError
from chunkwise.parsing.blocks import BlockAssembler
from chunkwise.parsing.decoding import decode_bytes
from chunkwise.parsing.html import walk_html
from chunkwise.parsing.limits import ParseLimits

__all__ = ["parse", "parse_markdown"]

#: YAML front matter: ``---`` on the first line, ``key: value`` lines, a closing ``---`` or ``...`` line.
_FRONT_MATTER = re.compile(
    r"\A---[ \t]*\r?\n((?:[A-Za-z_][\w-]*[ \t]*:.*\r?\n)(?:.*\r?\n)*?)(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)"
)

_BREAK_TAG = re.compile(r"<br\b", re.IGNORECASE)


#: The deepest nesting handed to markdown-it (each list level counts two: list and item, so about 24
#: list levels). The parser silently drops blocks nested deeper, so such input is refused instead; and
#: its inline link parsing costs time proportional to this bound on hostile ``[[[[...`` runs.
MAX_NESTING = 50


#: The most pipe-table cells one Markdown document may hold. markdown-it keeps every token of a document
#: until the parse ends, and a table cell is four of them (its opening and closing tags, its inline run and
#: a text token, about 1.3 KB together) from as little as two bytes of input (``b|``): a 1 MB table of
#: 10,000 columns and 51 rows took 730 MB and 11 s to parse, a 2 MB one 1.4 GB and 21 s, nearly all of it
#: in those tokens. 100,000 cells (about 130 MB of tokens; 10,000 rows of ten columns) is far past any table
#: meant for reading, so a document whose tables would pass it is refused before the table that passes it
#: is built.
MAX_TABLE_CELLS = 100_000


class _TableCells:
    """A block rule run just before markdown-it's table rule: it counts the cells of each table about to be
    built and refuses the document once they pass :data:`MAX_TABLE_CELLS`. It never builds anything, and
    leaves markdown-it's silent calls alone: they only ask whether a block starts at a line."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.cells = 0

    def __call__(self, state: StateBlock, start: int, end: int, silent: bool) -> bool:
        if silent or not table(state, start, end, True):
            return False
        columns = _delimiter_columns(state, start + 1)
        rows = 1 + _body_rows(state, start, end)
        self.cells += columns * rows
        if self.cells > MAX_TABLE_CELLS:
            raise UnsafeContentError(
                self.source,
                f"Markdown tables with more than {MAX_TABLE_CELLS} cells in all "
                f"(reached with a table of {columns} columns and {rows} rows)",
            )
        return False


def _delimiter_columns(state: StateBlock, line: int) -> int:
    """The columns of a table's delimiter row (``|---|:-:|``), which every row is cut or padded to."""
    text = state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]
    return sum(1 for part in text.split("|") if part.strip())


def _body_rows(state: StateBlock, start: int, end: int) -> int:
    """The rows after the delimiter row of the table opening at line ``start``: the lines before the first
    one that is blank, outdented, indented as code or opens another block. markdown-it makes as many rows,
    or fewer when it ends a table early rather than pad its short rows with too many empty cells."""
    openers = state.md.block.ruler.getRules("blockquote")
    line = start + 2
    while (
        line < end
        and state.sCount[line] >= state.blkIndent
        and not state.isEmpty(line)
        and not state.is_code_block(line)
        and not any(opens(state, line, end, True) for opens in openers)
    ):
        line += 1
    return line - start - 2


def _tokens(text: str, source: str, limits: ParseLimits) -> list[Token]:
    nesting = min(limits.max_depth, MAX_NESTING)
    md = MarkdownIt("commonmark", {"maxNesting": nesting}).enable(["table", "strikethrough"])
    md.block.ruler.before("table", "table_cells", _TableCells(source))
    tokens = md.parse(text)
    if any(token.level >= nesting - 1 for token in tokens):
        raise UnsafeContentError(source, f"Markdown blocks nested deeper than {nesting} levels")
    return tokens


def _inline_text(children: Sequence[Token] | None) -> str:
    """The text of an inline token run: markers, link targets, images and raw tags dropped."""
    parts: list[str] = []
    for token in children or ():
        if token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak") or (
            token.type == "html_inline" and _BREAK_TAG.match(token.content)
        ):
            parts.append(" ")
    return "".join(parts)


def _table_rows(tokens: Sequence[Token], start: int) -> tuple[list[list[str]], int]:
    """Rows of cell text of the table opening at ``tokens[start]``, and the index after it."""
    rows: list[list[str]] = []
    i = start + 1
    while tokens[i].type != "table_close":
        token = tokens[i]
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append(_inline_text(token.children))
        i += 1
    return rows, i + 1


def _walk(tokens: Sequence[Token], source: str, limits: ParseLimits) -> BlockAssembler:
    blocks = BlockAssembler()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        kind = token.type
        if kind == "table_open":
            rows, i = _table_rows(tokens, i)
            blocks.table(rows)
            continue
        if kind == "heading_open":
            blocks.open_heading(int(token.tag[1]))
        elif kind == "heading_close":
            blocks.close_heading()
        elif kind in ("paragraph_open", "paragraph_close"):
            blocks.block_break()
        elif kind == "inline":
            blocks.text(_inline_text(token.children))
        elif kind == "bullet_list_open":
            blocks.open_list(ordered=False)
        elif kind == "ordered_list_open":
            blocks.open_list(ordered=True, start=int(token.attrGet("start") or 1))
        elif kind in ("bullet_list_close", "ordered_list_close"):
            blocks.close_list()
        elif kind == "list_item_open":
            blocks.open_item()
        elif kind == "list_item_close":
            blocks.close_item()
        elif kind == "blockquote_open":
            blocks.open_quote()
        elif kind == "blockquote_close":
            blocks.close_quote()
        elif kind in ("fence", "code_block"):
            language = token.info.split()[0] if token.info.strip() else ""
            blocks.code(token.content, language)
        elif kind == "html_block":
            blocks.block_break()
            walk_html(token.content, blocks, source, limits)
            blocks.block_break()
        i += 1
    return blocks


def parse_markdown(
    text: str, source: str, limits: ParseLimits | None = None, metadata: dict[str, str] | None = None
) -> Document:
    """Parse Markdown ``text``; ``source`` is the document id and the name used in errors."""
    limits = limits or ParseLimits()
    metadata = dict(metadata or {})
    front = _FRONT_MATTER.match(text)
    if front:
        metadata["front_matter"] = front.group(1)
        text = text[front.end() :]
    builder = _walk(_tokens(text, source, limits), source, limits).finish()
    if builder.unit_count == 0:
        raise EmptyDocumentError(source, "no text in the Markdown")
    return builder.build(source, source=source, fmt="markdown", metadata=metadata)


def parse(data: bytes, source: str, limits: ParseLimits) -> Document:
    """Decode (see :mod:`.decoding`) and parse a Markdown file; refused past ``limits.max_chars``."""
    decoded = decode_bytes(data, source)
    limits.check_chars(len(decoded.text), source)
    return parse_markdown(decoded.text, source, limits, {"encoding": decoded.encoding})
