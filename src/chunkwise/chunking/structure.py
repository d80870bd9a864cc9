"""``structure``: W-RAC's chunking rules applied without an LLM, over the parsed units.

The rules (W-RAC's planner constraints, decided here by code):

* **Sections are respected.** A chunk never spans two sections (a heading and the units up to the next
  heading). A section holding nothing but its heading joins the section after it, so a title is never a
  chunk of its own. Each chunk carries its heading path (``Chunk.section``).
* **Blocks stay whole.** A table, a code block and a run of list items (a list or numbered procedure)
  are never split, unless one alone exceeds the hard maximum; then it is cut at row or line boundaries
  (words and characters only for a single overlong line).
* **A split table keeps its header.** Repeating the header row inside later chunks would break the exact
  offsets invariant, so each chunk that starts inside a table after its header carries the header row
  and delimiter row in ``Chunk.context`` instead.
* **Units are packed** whole, in order, up to the maximum; tiny chunks (``min_size``) merge with a
  neighbour of the same section.

A document without units (plain text) falls back to its blank-line paragraphs, all in one section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from chunkwise.chunking.base import BaseChunker
from chunkwise.chunking.boundaries import LINE_LEVELS, RECURSIVE_LEVELS, Level
from chunkwise.chunking.enforce import ContextFn, Piece, SizeLimits, pack
from chunkwise.chunking.lines import LinePattern
from chunkwise.chunking.measure import Measure
from chunkwise.chunking.tables import TableHeaders
from chunkwise.chunking.trim import trim
from chunkwise.document import ATOMIC_KINDS, Document, UnitKind

_PARAGRAPH_BREAK = LinePattern("<br><sp>*<br>")


@dataclass(slots=True)
class Block:
    """A span packed whole: one unit, or a run of list items; ``section`` numbers the sections."""

    start: int
    end: int
    kind: UnitKind
    section: int

    @property
    def atomic(self) -> bool:
        """Tables, code and lists: split only at line boundaries, and only when too large alone."""
        return self.kind in ATOMIC_KINDS or self.kind is UnitKind.LIST_ITEM


def blocks_of(doc: Document) -> list[Block]:
    """The document's blocks in order: units (list runs joined), gaps and unit-less text as paragraphs."""
    blocks: list[Block] = []
    section = 0
    pos = 0
    for unit in sorted(doc.units, key=lambda u: u.start):
        if unit.start < pos:  # overlapping units: the earlier one already covers this text
            continue
        _add_paragraphs(doc.text, pos, unit.start, section, blocks)
        if unit.kind is UnitKind.HEADING:
            section += 1
        last = blocks[-1] if blocks else None
        if last and unit.kind is UnitKind.LIST_ITEM and last.kind is UnitKind.LIST_ITEM:
            last.end = unit.end
        else:
            blocks.append(Block(unit.start, unit.end, unit.kind, section))
        pos = unit.end
    _add_paragraphs(doc.text, pos, len(doc.text), section, blocks)
    return _join_bare_headings(blocks)


def _add_paragraphs(text: str, start: int, end: int, section: int, blocks: list[Block]) -> None:
    """Blank-line paragraphs of ``text[start:end]`` (text no unit covers) as paragraph blocks."""
    pos = start
    for match in [*_PARAGRAPH_BREAK.finditer(text, start, end), None]:
        stop = end if match is None else match.start()
        span = trim(text, pos, stop)
        if span is not None:
            blocks.append(Block(span[0], span[1], UnitKind.PARAGRAPH, section))
        if match is not None:
            pos = match.end()


def _join_bare_headings(blocks: list[Block]) -> list[Block]:
    """Move each section that is only a heading into the section that follows it."""
    for i in range(len(blocks) - 2, -1, -1):
        block, nxt = blocks[i], blocks[i + 1]
        if block.kind is UnitKind.HEADING and nxt.section != block.section:
            block.section = nxt.section
    return blocks


def table_header_context(doc: Document) -> ContextFn:
    """Context for chunks that start inside a table past its header: the header and delimiter rows."""
    headers = TableHeaders(doc.text)

    def context(start: int, end: int) -> str:
        return headers.header(start)

    return context


class StructureChunker(BaseChunker):
    """Units packed within sections; tables, code and lists kept whole where they fit."""

    name: ClassVar[str] = "structure"
    levels: ClassVar[tuple[Level, ...]] = RECURSIVE_LEVELS

    def pieces(self, doc: Document, measure: Measure, limits: SizeLimits) -> Sequence[Piece]:
        """Blocks packed greedily per section; an oversize block cut by its own rules."""
        text, budget = doc.text, limits.budget
        pieces: list[Piece] = []
        current: list[Block] = []

        def flush() -> None:
            if current:
                pieces.append((current[0].start, current[-1].end, current[0].section))
                current.clear()

        for block in blocks_of(doc):
            if current and current[0].section != block.section:
                flush()
            if measure.size(block.start, block.end) > budget:
                # Headings waiting for content lead into the first part of the split block.
                start = (
                    current[0].start if current and all(b.kind is UnitKind.HEADING for b in current) else None
                )
                if start is None:
                    flush()
                    start = block.start
                current.clear()
                levels = LINE_LEVELS if block.atomic else RECURSIVE_LEVELS
                pieces.extend(
                    (a, b, block.section)
                    for a, b in pack(text, start, block.end, measure, budget, levels=levels)
                )
                continue
            if current and measure.size(current[0].start, block.end) > budget:
                flush()
            current.append(block)
        flush()
        return pieces

    def context_fn(self, doc: Document) -> ContextFn | None:
        """The table header context (see the module docstring)."""
        return table_header_context(doc) if any(u.kind is UnitKind.TABLE for u in doc.units) else None
