"""The markdown-it token stream of a Markdown document, parsed a piece at a time so that memory follows
the piece, not the document.

markdown-it keeps every token of what it parses until the parse ends, about 400 bytes each, and Markdown
of short blocks makes more than one token for every two or three bytes: a megabyte of one-word paragraphs
was 1.3 million tokens and 590 MB, so the 20 million characters a document may hold could have taken
10 GB. A document longer than :data:`PIECE_CHARS` is therefore parsed in pieces that end where a top-level
block begins; each piece's tokens are handed on and dropped before the next piece is parsed.

Cutting there changes nothing. CommonMark closes every open block when a top-level block begins, and it
decides the blocks before a line from that line and the ones above it, with one line of look-ahead (a
table's delimiter row, read when a table might interrupt a paragraph). So a piece is cut only where its
own parse begins a top-level block at least :data:`_LOOKAHEAD_LINES` lines before the piece's end, and
the next piece starts at that block (the tokens from it on are parsed again there). Link reference
definitions are the exception: they apply to the whole document, so a long document that may define one
is read once first to collect them, and walked in a second reading. A definition whose label starts
with ``^`` is a footnote (``[^1]: text``) and is kept as text, whatever its text is.

A top-level block longer than a piece (a long list or block quote) is parsed whole: the piece grows
until it holds the block, by no more than :data:`MAX_BLOCK_TOKENS` tokens allow, and a block that would
pass them is refused with :class:`~chunkwise.errors.UnsafeContentError`, and so is a paragraph whose
inline markup could (one long line is one piece however long); and so, as before, are blocks nested
deeper than :data:`MAX_NESTING` and pipe tables past :data:`MAX_TABLE_CELLS` cells.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock, reference, table
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType

from chunkwise.errors import UnsafeContentError
from chunkwise.parsing.limits import ParseLimits

__all__ = ["MAX_BLOCK_TOKENS", "MAX_NESTING", "MAX_TABLE_CELLS", "PIECE_CHARS", "markdown_tokens"]

#: The deepest nesting handed to markdown-it (each list level counts two: list and item, so about 24
#: list levels). The parser silently drops blocks nested deeper, so such input is refused instead; and
#: its inline link parsing costs time proportional to this bound on hostile ``[[[[...`` runs.
MAX_NESTING = 50

#: The most pipe-table cells one Markdown document may hold. A table cell is four tokens (its opening and
#: closing tags, its inline run and a text token, about 1.3 KB together) from as little as two bytes of
#: input (``b|``), and a table is one block, parsed whole: a 1 MB table of 10,000 columns and 51 rows took
#: 730 MB and 11 s to parse. 100,000 cells (about 130 MB of tokens; 10,000 rows of ten columns) is far past
#: any table meant for reading, so a document whose tables would pass it is refused before the table that
#: passes it is built.
MAX_TABLE_CELLS = 100_000

#: The characters of text parsed at once (about 40 MB of tokens for Markdown of one-word paragraphs);
#: a document no longer than this is parsed in one piece.
PIECE_CHARS = 100_000

#: About the most tokens one top-level block may take (400 MB or so; a list of some 150,000 one-word
#: items): the piece that holds a block grows in proportion to the tokens of its last parse, up to this.
MAX_BLOCK_TOKENS = 1_000_000

#: The least a piece grows by when it holds no whole top-level block, so that a block of about
#: :data:`MAX_BLOCK_TOKENS` is refused after a few parses rather than approached by many.
_LEAST_GROWTH = 1.25

#: Lines a piece must hold after the top-level block it is cut before: the block's first line, and the
#: line after it that markdown-it reads to decide whether a table begins there.
_LOOKAHEAD_LINES = 2

#: Line ends as markdown-it normalises them, done once here so that piece boundaries fall on its lines.
_LINE_ENDS = re.compile(r"\r\n?")

#: What every link reference definition holds (``[label]: target``).
_REFERENCE_MARK = "]:"


class _TableCells:
    """A block rule run just before markdown-it's table rule: it counts the cells of each table about to be
    built and refuses the document once they pass :data:`MAX_TABLE_CELLS`. It builds no table, and
    leaves markdown-it's silent calls alone: they only ask whether a block starts at a line.

    Tables are counted by where they start in the document (``offset`` is the start of the piece being
    parsed), so a table parsed again in the next piece, or in the second reading, is not counted twice. A
    table that runs on past a ``partial`` piece (one before the document's last) is counted as far as
    the piece goes, and not built: the piece's last block is never walked from this parse (see the
    module), so a marker token stands for the table, where a piece may be cut."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.offset = 0
        self.partial = False
        self.lines = 0
        self.total = 0
        self.counted: dict[int, int] = {}

    def __call__(self, state: StateBlock, start: int, end: int, silent: bool) -> bool:
        if silent or not table(state, start, end, True):
            return False
        columns = _delimiter_columns(state, start + 1)
        body = _body_rows(state, start, end)
        rows = 1 + body
        position = self.offset + state.bMarks[start]
        self.total += columns * rows - self.counted.get(position, 0)
        self.counted[position] = columns * rows
        unfinished = self.partial and start + 2 + body >= self.lines
        if self.total > MAX_TABLE_CELLS:
            more = "at least " if unfinished else ""
            raise UnsafeContentError(
                self.source,
                f"Markdown tables with more than {MAX_TABLE_CELLS} cells in all "
                f"(reached with a table of {columns} columns and {more}{rows} rows)",
            )
        if not unfinished:
            return False
        marker = state.push("table_unfinished", "", 0)
        marker.map = [start, self.lines]
        state.line = self.lines
        return True


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


def _reference_unless_footnote(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """markdown-it's link reference definition rule, except for a definition whose label starts with
    ``^``: that is a footnote definition (``[^1]: text``, as GitHub and Pandoc write them), kept as the
    paragraph it reads as when its text is not a link destination. Read as a reference, a note whose
    text is a URL would vanish and its references ``[^1]`` would turn into links reading ``^1``."""
    if state.src.startswith("[^", state.bMarks[start] + state.tShift[start]):
        return False
    return reference(state, start, end, silent)


class _InlineMarkup:
    """A core rule run just before markdown-it parses the inline runs (paragraphs, headings, table cells):
    it refuses the document when one run's markup could make more than :data:`MAX_BLOCK_TOKENS` tokens.
    Pieces bound what a document's lines make, not what one long line does: a megabyte of ``*a* `` on one
    line is one paragraph of 750,000 tokens (390 MB). Each character that stops markdown-it's text rule
    begins at most one token, and text tokens lie between the others, so twice their count (plus one)
    bounds a run's tokens; runs too short to pass the bound whatever they hold are not counted.
    ``text`` and ``offset`` are the document and where the piece being parsed starts in it, for the
    line an error names."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.text = ""
        self.offset = 0

    def __call__(self, state: StateCore) -> None:
        marks = state.md.inline.terminator_re
        for token in state.tokens:
            if token.type != "inline" or 2 * len(token.content) + 1 <= MAX_BLOCK_TOKENS:
                continue
            count = len(token.content) - len(marks.sub("", token.content))
            if 2 * count + 1 > MAX_BLOCK_TOKENS:
                line = self.text.count("\n", 0, self.offset) + (token.map[0] if token.map else 0) + 1
                raise UnsafeContentError(
                    self.source,
                    f"a Markdown paragraph of {len(token.content)} characters holding {count} markup "
                    f"characters, which could make more than {MAX_BLOCK_TOKENS} parser tokens, "
                    f"near line {line}",
                )


class _PieceParser:
    """markdown-it set up for one document (CommonMark with GFM tables and strikethrough, the nesting and
    table bounds), parsing its pieces."""

    def __init__(self, source: str, limits: ParseLimits) -> None:
        self.source = source
        self.nesting = min(limits.max_depth, MAX_NESTING)
        self.cells = _TableCells(source)
        self.md = MarkdownIt("commonmark", {"maxNesting": self.nesting}).enable(["table", "strikethrough"])
        self.md.block.ruler.before("table", "table_cells", self.cells)
        self.md.block.ruler.at("reference", _reference_unless_footnote)
        self.markup = _InlineMarkup(source)
        self.md.core.ruler.before("inline", "inline_markup", self.markup)

    def parse(self, text: str, offset: int, partial: bool, env: EnvType) -> list[Token]:
        """The tokens of ``text``, which starts ``offset`` characters into the document and is
        ``partial`` when more of it follows."""
        self.cells.offset, self.cells.partial, self.cells.lines = offset, partial, text.count("\n")
        self.markup.offset = offset
        tokens = self.md.parse(text, env)
        if any(token.level >= self.nesting - 1 for token in tokens):
            raise UnsafeContentError(self.source, f"Markdown blocks nested deeper than {self.nesting} levels")
        return tokens

    def pieces(self, text: str, env: EnvType) -> Iterator[list[Token]]:
        """The tokens of ``text`` a piece at a time, cut before top-level blocks (see the module)."""
        start, size = 0, PIECE_CHARS
        self.markup.text = text
        while start < len(text):
            end = _line_end(text, start + size)
            piece = text[start:end]
            tokens = self.parse(piece, start, end < len(text), env)
            if end == len(text):
                yield tokens
                return
            cut = _last_block_start(tokens, piece.count("\n") - _LOOKAHEAD_LINES)
            if cut is None:
                growth = min(2.0, MAX_BLOCK_TOKENS / max(1, _token_count(tokens)))
                if growth < _LEAST_GROWTH:
                    line = text.count("\n", 0, start) + 1
                    raise UnsafeContentError(
                        self.source,
                        f"a Markdown block (a list or block quote, say) of more than "
                        f"{int(MAX_BLOCK_TOKENS / _LEAST_GROWTH)} parser tokens, starting near line {line}",
                    )
                size = int(size * growth)
                continue
            index, line = cut
            del tokens[index:]
            yield tokens
            start, size = start + _line_offset(piece, line), PIECE_CHARS


def _line_end(text: str, position: int) -> int:
    """The end of the line holding ``position`` (past its ``\\n``), or of the text."""
    if position >= len(text):
        return len(text)
    newline = text.find("\n", position)
    return len(text) if newline < 0 else newline + 1


def _last_block_start(tokens: Sequence[Token], last_line: int) -> tuple[int, int] | None:
    """The index and line of the last top-level block that begins after the first one, at or before
    ``last_line``; None where there is none."""
    found: tuple[int, int] | None = None
    first = True
    for index, token in enumerate(tokens):
        if token.level == 0 and token.map is not None:
            if not first and token.map[0] <= last_line:
                found = (index, token.map[0])
            first = False
    return found


def _line_offset(text: str, line: int) -> int:
    """Where line ``line`` (counted from 0) of ``text`` begins."""
    offset = 0
    for _ in range(line):
        offset = text.index("\n", offset) + 1
    return offset


def _token_count(tokens: Sequence[Token]) -> int:
    """Tokens in all, inline runs' children included."""
    return len(tokens) + sum(len(token.children or ()) for token in tokens)


def markdown_tokens(text: str, source: str, limits: ParseLimits) -> Iterator[list[Token]]:
    """markdown-it's tokens of Markdown ``text`` in successive lists that, walked in turn, are walked as its
    tokens for the whole text would be; ``source`` names the document in errors."""
    parser = _PieceParser(source, limits)
    if "\r" in text:
        text = _LINE_ENDS.sub("\n", text)
    env: EnvType = {}
    if len(text) > PIECE_CHARS and _REFERENCE_MARK in text:
        for _ in parser.pieces(text, env):
            pass
    yield from parser.pieces(text, env)
