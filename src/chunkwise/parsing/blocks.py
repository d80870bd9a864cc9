"""Block events to units: the nesting logic shared by the Markdown and HTML parsers.

Markdown tokens and HTML elements describe the same structures (lists in lists, paragraphs in list
items, lists in quotes...). Both parsers translate their input into the same small set of events
(``open_list``, ``open_item``, ``text``, ``block_break``, ``table``...) and this class turns them into
:class:`~chunkwise.parsing.builder.DocumentBuilder` calls, so a Markdown file and its HTML rendering give
the same units by construction. The rules:

* inline text accumulates in the innermost open block; ``block_break`` ends a paragraph (at top level it
  becomes a paragraph unit, inside a list item a space, inside a quote a new quote line);
* a list item becomes one unit holding all its paragraphs; when a nested block (list, quote, code,
  table) starts inside it, the text so far is emitted first, so the parent item precedes its children;
  text after a nested block becomes a paragraph;
* a quote becomes one unit, one line per paragraph, list item or heading inside it; a code block or a
  table inside a quote splits the quote around it, keeping reading order and the block whole;
* an ordered item's number is clamped to +-:data:`MAX_LIST_NUMBER`, however its list counts on from its
  start, as a browser keeps list numbers within its integer range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, auto

from chunkwise.parsing.builder import DocumentBuilder, normalise_inline

#: The largest list number kept: the nine digits a CommonMark ordered-list marker may have. Every item
#: number is clamped to it (and its negative), so a list starting near the bound counts up to it and
#: stays there rather than growing a tenth digit.
MAX_LIST_NUMBER = 999_999_999


def clamp_list_number(number: int) -> int:
    """``number`` held to +-:data:`MAX_LIST_NUMBER`: the one bound every parser's list numbers keep."""
    return min(max(number, -MAX_LIST_NUMBER), MAX_LIST_NUMBER)


def list_number_of(sign: str, digits: str) -> int:
    """A list number written as ``sign`` (``""``, ``"+"`` or ``"-"``) and ASCII ``digits``, clamped
    (:func:`clamp_list_number`); only the first ten significant digits are converted, which already pass
    the bound, so a hostile 10,000-digit value costs nothing."""
    number = int(digits.lstrip("0")[:10] or "0")
    return clamp_list_number(-number if sign == "-" else number)


class _Kind(Enum):
    ROOT = auto()
    LIST = auto()
    ITEM = auto()
    QUOTE = auto()
    HEADING = auto()
    CAPTION = auto()


@dataclass(slots=True)
class _Frame:
    """One open block. ``level``: heading level, or list depth for lists and items.

    ``number``: for a list the next ordered number (``None`` for bullets), for an item its own number.
    ``step``: for an ordered list, what each item adds to the number (-1 for a reversed HTML list).
    """

    kind: _Kind
    level: int = 0
    number: int | None = None
    step: int = 1
    pieces: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    emitted: bool = False

    def take_text(self) -> str:
        """The inline text collected so far, whitespace-normalised; the buffer is emptied."""
        text = normalise_inline("".join(self.pieces))
        self.pieces.clear()
        return text


class BlockAssembler:
    """Receives block events in reading order and feeds a :class:`DocumentBuilder`."""

    def __init__(self) -> None:
        self.builder = DocumentBuilder()
        self._stack: list[_Frame] = [_Frame(_Kind.ROOT)]

    # -- inline content -------------------------------------------------------------------------

    def text(self, text: str) -> None:
        """Append inline text to the innermost open block."""
        self._stack[-1].pieces.append(text)

    def block_break(self) -> None:
        """End a paragraph-level block (a Markdown paragraph, an HTML ``<p>`` or ``<div>``)."""
        top = self._stack[-1]
        if top.kind in (_Kind.ROOT, _Kind.LIST):
            self.builder.paragraph(top.take_text())
        elif top.kind is _Kind.QUOTE:
            self._end_quote_line(top)
        else:
            top.pieces.append(" ")

    # -- containers -----------------------------------------------------------------------------

    def open_list(self, ordered: bool, start: int = 1, step: int = 1) -> None:
        """Start a bullet or ordered list (nested in the current item, if any); an ordered list's items
        are numbered from ``start``, each ``step`` after the one before."""
        self._flush_inline()
        depth = 0
        for frame in reversed(self._stack):
            if frame.kind is _Kind.QUOTE:
                break
            depth += frame.kind is _Kind.LIST
        self._stack.append(_Frame(_Kind.LIST, level=depth, number=start if ordered else None, step=step))

    def close_list(self) -> None:
        """End the innermost list."""
        self._close(_Kind.LIST)

    def open_item(self, value: int | None = None) -> None:
        """Start a list item; outside any list it counts as a top-level bullet.

        ``value`` (an HTML ``<li value>``) renumbers an item of an ordered list and the items after it.
        The number given is clamped to +-:data:`MAX_LIST_NUMBER`.
        """
        top = self._stack[-1]
        depth, number = 0, None
        if top.kind is _Kind.LIST:
            self.builder.paragraph(top.take_text())
            if top.number is not None:
                number = clamp_list_number(top.number if value is None else value)
                top.number = number + top.step
            depth = top.level
        else:
            self._flush_inline()
        self._stack.append(_Frame(_Kind.ITEM, level=depth, number=number))

    def close_item(self) -> None:
        """End the innermost list item, emitting its text if not done yet."""
        self._close(_Kind.ITEM)

    def open_quote(self) -> None:
        """Start a block quote."""
        self._flush_inline()
        self._stack.append(_Frame(_Kind.QUOTE))

    def close_quote(self) -> None:
        """End the innermost quote; a quote nested in another one becomes lines of the outer one."""
        self._close(_Kind.QUOTE)

    def open_heading(self, level: int) -> None:
        """Start a heading of ``level`` (1-6); its inline text follows."""
        self._flush_inline()
        self._stack.append(_Frame(_Kind.HEADING, level=level))

    def close_heading(self) -> None:
        """End the heading; inside a quote it becomes a quote line."""
        self._close(_Kind.HEADING)

    def open_caption(self) -> None:
        """Start a figure or table caption; its inline text follows."""
        self._flush_inline()
        self._stack.append(_Frame(_Kind.CAPTION))

    def close_caption(self) -> None:
        """End the caption."""
        self._close(_Kind.CAPTION)

    # -- atomic blocks --------------------------------------------------------------------------

    def code(self, text: str, language: str = "") -> None:
        """A code block, one unit, layout kept."""
        self._before_atomic()
        self.builder.code(text, language)

    def table(self, rows: list[list[str]]) -> None:
        """A table given as rows of cell text, header first; one unit."""
        self._before_atomic()
        self.builder.table(rows)

    def finish(self) -> DocumentBuilder:
        """Close whatever is still open and return the builder, ready to build."""
        while len(self._stack) > 1:
            self._close(self._stack[-1].kind)
        self.block_break()
        return self.builder

    # -- internals ------------------------------------------------------------------------------

    def _close(self, kind: _Kind) -> None:
        """Close the innermost frame of ``kind`` and any frames left open inside it."""
        if not any(frame.kind is kind for frame in self._stack[1:]):
            return
        while True:
            frame = self._stack.pop()
            self._emit(frame)
            if frame.kind is kind:
                return

    def _emit(self, frame: _Frame) -> None:
        quote = self._enclosing_quote()
        if frame.kind is _Kind.LIST:
            self.builder.paragraph(frame.take_text())
        elif frame.kind is _Kind.ITEM:
            self._emit_item(frame)
        elif frame.kind is _Kind.QUOTE:
            self._end_quote_line(frame)
            if quote is not None:
                quote.lines.extend(frame.lines)
            elif frame.lines:
                self.builder.quote("\n".join(frame.lines))
        else:
            text = frame.take_text()
            if quote is not None:
                self._end_quote_line(quote)
                if text:
                    quote.lines.append(text)
            elif frame.kind is _Kind.HEADING:
                self.builder.heading(text, frame.level)
            else:
                self.builder.caption(text)

    def _emit_item(self, item: _Frame) -> None:
        text = item.take_text()
        if not text:
            return
        quote = self._enclosing_quote()
        marker = "-" if item.number is None else f"{item.number}."
        if quote is not None:
            self._end_quote_line(quote)
            quote.lines.append(f"{marker} {text}")
        elif item.emitted:
            self.builder.paragraph(text)
        else:
            self.builder.list_item(text, depth=item.level, number=item.number)
        item.emitted = True

    def _enclosing_quote(self) -> _Frame | None:
        return next((f for f in reversed(self._stack) if f.kind is _Kind.QUOTE), None)

    @staticmethod
    def _end_quote_line(quote: _Frame) -> None:
        line = quote.take_text()
        if line:
            quote.lines.append(line)

    def _flush_inline(self) -> None:
        """Emit the inline text of the innermost block before a nested block starts."""
        top = self._stack[-1]
        if top.kind in (_Kind.ROOT, _Kind.LIST):
            self.builder.paragraph(top.take_text())
        elif top.kind is _Kind.ITEM:
            self._emit_item(top)
        elif top.kind is _Kind.QUOTE:
            self._end_quote_line(top)

    def _before_atomic(self) -> None:
        """Emit everything pending, quotes included, so an atomic block lands in reading order."""
        self._flush_inline()
        for frame in self._stack:
            if frame.kind is _Kind.QUOTE and frame.lines:
                self.builder.quote("\n".join(frame.lines))
                frame.lines.clear()
