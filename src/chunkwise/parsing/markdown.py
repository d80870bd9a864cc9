"""Markdown: a CommonMark parse (markdown-it-py, with GFM tables and strikethrough) walked into units.

The token stream becomes :class:`~chunkwise.parsing.blocks.BlockAssembler` events: ATX and setext
headings with their levels, paragraphs, bullet and ordered lists with nesting depth and numbers, pipe
tables (one unit each), fenced and indented code (one unit, language kept), block quotes. Thematic
breaks are dropped; inline formatting is reduced to its text (emphasis markers, link targets and images
go; inline code keeps its text); raw HTML blocks go through the HTML walker (its filters included), so an
embedded ``<table>`` stays a table.
A YAML front-matter block at the very top is kept out of the text and stored in the metadata.
The tokens come a piece of the document at a time (:mod:`.markdown_tokens`, which also holds the bounds
on nesting, table cells and block size past which a document is refused), so memory follows the piece.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it.token import Token

from chunkwise.document import Document
from chunkwise.errors import EmptyDocumentError
from chunkwise.parsing.blocks import BlockAssembler
from chunkwise.parsing.decoding import decode_bytes
from chunkwise.parsing.html import walk_html
from chunkwise.parsing.limits import ParseLimits
from chunkwise.parsing.markdown_tokens import markdown_tokens

__all__ = ["parse", "parse_markdown"]

#: YAML front matter: ``---`` on the first line, ``key: value`` lines, a closing ``---`` or ``...`` line.
_FRONT_MATTER = re.compile(
    r"\A---[ \t]*\r?\n((?:[A-Za-z_][\w-]*[ \t]*:.*\r?\n)(?:.*\r?\n)*?)(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)"
)

_BREAK_TAG = re.compile(r"<br\b", re.IGNORECASE)


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


def _walk(tokens: Sequence[Token], blocks: BlockAssembler, source: str, limits: ParseLimits) -> None:
    """Feed ``blocks`` the events of a run of whole top-level blocks' tokens."""
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
    blocks = BlockAssembler()
    for tokens in markdown_tokens(text, source, limits):
        _walk(tokens, blocks, source, limits)
    builder = blocks.finish()
    if builder.unit_count == 0:
        raise EmptyDocumentError(source, "no text in the Markdown")
    return builder.build(source, source=source, fmt="markdown", metadata=metadata)


def parse(data: bytes, source: str, limits: ParseLimits) -> Document:
    """Decode (see :mod:`.decoding`) and parse a Markdown file; refused past ``limits.max_chars``."""
    decoded = decode_bytes(data, source)
    limits.check_chars(len(decoded.text), source)
    return parse_markdown(decoded.text, source, limits, {"encoding": decoded.encoding})
