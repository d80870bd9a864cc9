"""Boundary levels: where a chunk may end, strongest first.

A level answers one question with C-speed string searches (``str.rfind``, or a regular expression on the
window or on the window reversed, so that the engine stops at the first hit instead of backtracking):
the last place a chunk starting at ``start`` may end, no further than ``limit``. The recursive hierarchy
is blank line, line, sentence end, clause punctuation, word; below the last level a chunk is cut at the
size limit itself (a character cut). A level looks only at the window ``[start, limit]``, so packing a
document costs O(chunks × window), whatever its length. A level consulted for every chunk may instead
precompute its cuts once per packing range when :meth:`Level.bind` is called (sentence ends for the
sentence chunker) and answer each window with a binary search.

Each level returns a *cut*: the chunk is ``text[start:cut]`` with trailing whitespace trimmed, and the
next chunk starts at the first non-whitespace character after ``cut``. Punctuation stays with the text
before it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from chunkwise.chunking.lines import LinePattern, last_break, window_end
from chunkwise.chunking.sentences import last_sentence_end, sentence_ends


class Level(Protocol):
    """One kind of boundary."""

    @property
    def name(self) -> str:
        """Short name (``paragraph``, ``line``, ...)."""
        ...

    def last_cut(self, text: str, start: int, limit: int) -> int | None:
        """The largest cut ``c`` with ``start < c <= limit``, or ``None`` if the window has none."""
        ...

    def bind(self, text: str, start: int, end: int) -> Level:
        """This level prepared for many windows inside ``text[start:end]`` (may precompute cuts)."""
        ...


class RegexLevel:
    """Boundaries at the end of each match of a separator pattern."""

    def __init__(self, name: str, separator: str) -> None:
        self.name = name
        self.separator = separator
        # Greedy ``.*`` runs to the window's end and backtracks: the first match found is the last one.
        self._last = re.compile(f"(?s:.*)(?:{separator})")

    def bind(self, text: str, start: int, end: int) -> Level:
        """Nothing to precompute: windows are searched directly."""
        return self

    def last_cut(self, text: str, start: int, limit: int) -> int | None:
        """End of the last separator inside ``text[start:limit]``."""
        match = self._last.match(text, start, limit)
        if match is None or match.end() <= start:
            return None
        return match.end()


class BlankLineLevel:
    """Boundaries after a blank line: a line break, optional spaces or tabs, and a line break (``\n``,
    ``\r\n`` or a lone ``\r``: :mod:`chunkwise.chunking.lines`); but not
    the blank line right after a Markdown heading (``#`` to ``######`` and a space, the form every
    parser gives headings), so that a heading starts the chunk of the text it heads instead of ending
    the chunk before it.

    Binding finds every blank line of the packing range in one forward scan: blank lines are few next to
    windows, whereas a backward search re-reads every window that has none (a hard-wrapped text has
    one a few hundred kilobytes). Every run of whitespace holding several line breaks gives a cut after
    each break but the first, as a search of the window would. The compiled helper has its own
    backward scan of each window with the same rule, which is cheaper where it stops at once.
    """

    name = "paragraph"
    # Consumes the first break and the spaces after it, not the second break, so that consecutive
    # blank lines all match; the cut is just after the second break (one character).
    _BREAK = LinePattern("<br><sp>*(?=<br>)")
    # A heading line followed by a blank line; the match ends at the heading's line break.
    _HEADING = LinePattern(r"(?:^|(?<=\r))#{1,6}[ \t]<line>*(?=<br><sp>*<br>)", re.MULTILINE)

    def bind(self, text: str, start: int, end: int) -> Level:
        """A :class:`CutsLevel` of the blank lines in ``text[start:end]``."""
        return CutsLevel(self.name, self._cuts(text, start, end))

    def last_cut(self, text: str, start: int, limit: int) -> int | None:
        """Just after the last blank line inside ``text[start:limit]`` (one window, no precomputation)."""
        cuts = self._cuts(text, start, limit)
        return cuts[-1] if cuts else None

    def _cuts(self, text: str, start: int, end: int) -> list[int]:
        """The cuts inside ``text[start:end]``, in order, without those after a heading line (scans by
        the regular-expression engine and ``str.find``; Python only filters the matches)."""
        end = window_end(text, end)
        breaks = list(self._BREAK.finditer(text, start, end))
        if not breaks or text.find("#", start, end) < 0:  # no blank line, or no heading: skip the scan
            return [match.end() + 1 for match in breaks]
        headings = {match.end() for match in self._HEADING.finditer(text, start, end)}
        return [match.end() + 1 for match in breaks if match.start() not in headings]


class LineLevel:
    """Boundaries after each line break (``\n``, ``\r\n`` or a lone ``\r``: two ``str.rfind`` calls, no
    regular expression)."""

    name = "line"

    def bind(self, text: str, start: int, end: int) -> Level:
        """Nothing to precompute: windows are searched directly."""
        return self

    def last_cut(self, text: str, start: int, limit: int) -> int | None:
        """Just after the last line break inside ``text[start:limit]``."""
        found = last_break(text, start, limit)
        return None if found < 0 else found + 1


class PunctuationLevel:
    """Boundaries after punctuation: ``spaced`` marks need whitespace after them, ``unspaced`` do not.

    The window is reversed and searched forwards, so the regular expression stops at the last mark of
    the window instead of backtracking over all of it.
    """

    def __init__(self, name: str, spaced: str, unspaced: str) -> None:
        self.name = name
        self.spaced = spaced
        self.unspaced = unspaced
        self._reversed = re.compile(f"\\s[{re.escape(spaced)}]|[{re.escape(unspaced)}]")

    def bind(self, text: str, start: int, end: int) -> Level:
        """Nothing to precompute: windows are searched directly."""
        return self

    def last_cut(self, text: str, start: int, limit: int) -> int | None:
        """Just after the last qualifying mark inside ``text[start:limit]`` (its whitespace may be at
        ``limit``)."""
        stop = min(len(text), limit + 1)
        found = self._reversed.search(text[start:stop][::-1])
        if found is None:
            return None
        cut = stop - found.end() + 1
        return cut if start < cut <= limit else None


@dataclass(frozen=True, slots=True)
class SentenceLevel:
    """Boundaries at sentence ends, by the rules of :mod:`chunkwise.chunking.sentences`.

    With ``precompute`` the sentence ends of a whole packing range are found in one scan when the level
    is bound, and each window is a binary search: the right choice when this level is consulted for
    every chunk (the sentence chunker). Without it each window is searched backwards, which is cheaper
    when stronger levels usually answer first (the recursive chunker).
    """

    name: str = "sentence"
    precompute: bool = False

    def bind(self, text: str, start: int, end: int) -> Level:
        """A :class:`CutsLevel` of all sentence ends in the range, or this level itself."""
        return CutsLevel(self.name, sentence_ends(text, start, end)) if self.precompute else self

    def last_cut(self, text: str, start: int, limit: int) -> int | None:
        """The last sentence end in the window."""
        return last_sentence_end(text, start, limit)


class CutsLevel:
    """A level whose cuts are known in advance (sorted offsets)."""

    def __init__(self, name: str, cuts: Sequence[int]) -> None:
        self.name = name
        self.cuts = cuts

    def bind(self, text: str, start: int, end: int) -> Level:
        """Already bound."""
        return self

    def last_cut(self, text: str, start: int, limit: int) -> int | None:
        """The largest known cut in ``(start, limit]``."""
        i = bisect.bisect_right(self.cuts, limit) - 1
        return self.cuts[i] if i >= 0 and self.cuts[i] > start else None


PARAGRAPH = BlankLineLevel()
LINE = LineLevel()
SENTENCE = SentenceLevel()
#: Sentence ends scanned once per packing range (for chunkers that consult them for every chunk).
SENTENCE_SCAN = SentenceLevel(precompute=True)
CLAUSE = PunctuationLevel("clause", spaced=",;:)]", unspaced="，；：、")
WORD = RegexLevel("word", r"\s")

#: The recursive splitter's hierarchy (a character cut comes after the last level).
RECURSIVE_LEVELS: tuple[Level, ...] = (PARAGRAPH, LINE, SENTENCE, CLAUSE, WORD)

#: Levels for splitting inside one sentence (a sentence longer than the limit).
WITHIN_SENTENCE_LEVELS: tuple[Level, ...] = (LINE, CLAUSE, WORD)

#: Levels for splitting a table or code block: only at line ends, then words.
LINE_LEVELS: tuple[Level, ...] = (LINE, WORD)
