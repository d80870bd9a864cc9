"""The size contract every chunker goes through: packing, hard splits, merging, overlap, trimming.

A chunker only proposes *pieces*: ``(start, end, group)`` spans of the document in order (sentences
grouped by similarity, sections of units, or the whole text). :func:`finalize` turns them into chunks
that keep the contract:

* no chunk is larger than ``max_size`` in the chosen unit: a piece over the budget is cut by
  :func:`pack` at the strongest boundary that fits (paragraph, line, sentence, clause, word, character),
  and every final size is checked against the exact count of the chunk's text;
* chunks smaller than ``min_size`` are merged with a neighbour of the same group when the merge fits;
* with ``overlap``, pieces are packed to ``max_size - overlap`` and each chunk then reaches back into
  its predecessor (same group) by at most ``overlap`` units, so the maximum still holds;
* chunks start and end on non-whitespace and, without overlap, cover every non-whitespace character of
  the document exactly once, in order; offsets are exact (``doc.text[start:end] == chunk.text``).

Packing is the "greedy strongest boundary" rule: from a chunk's start, the reach of the budget is one
:meth:`~chunkwise.chunking.measure.Measure.forward` call, and the chunk ends at the last boundary of the
strongest level found in that window. That is what a recursive splitter computes (split at paragraphs,
merge, recurse into what is too long), in O(chunks × window) instead of materialising every split.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chunkwise.chunking import speedups
from chunkwise.chunking.boundaries import (
    BlankLineLevel,
    CutsLevel,
    Level,
    LineLevel,
    PunctuationLevel,
    RegexLevel,
)
from chunkwise.chunking.chunk import Chunk, ChunkBuilder
from chunkwise.chunking.measure import CharMeasure, Measure
from chunkwise.chunking.tokens import TokenCounter
from chunkwise.chunking.trim import NON_SPACE, skip_space, trim
from chunkwise.document import Document
from chunkwise.errors import ChunkingError

#: ``(start, end, group)``: a proposed span; merging and overlap never cross groups (e.g. sections).
Piece = tuple[int, int, int]

#: Optional per-chunk context (text beside the chunk, e.g. a split table's header row).
ContextFn = Callable[[int, int], str]

#: Whitespace followed by a word: the word start is one past the match start.
_BEFORE_WORD = re.compile(r"\s\S")


@dataclass(slots=True)
class Spans:
    """Spans in document order as parallel lists (cheaper than a tuple per span on the hot path)."""

    starts: list[int]
    ends: list[int]
    groups: list[int]


@dataclass(frozen=True, slots=True)
class SizeLimits:
    """Resolved size settings, in the unit of the measure: ``overlap`` is absolute here."""

    max_size: int
    min_size: int = 0
    overlap: int = 0

    @property
    def budget(self) -> int:
        """What packing may fill before overlap is added."""
        return self.max_size - self.overlap


def pack(
    text: str, start: int, end: int, measure: Measure, budget: int, *, levels: Sequence[Level]
) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into trimmed spans of at most ``budget``, at the strongest boundaries.

    Each span ends at the last boundary of the first level (in ``levels`` order) that has one inside
    the window the budget reaches; with none, at the window's end (a character cut).
    """
    starts: list[int] = []
    ends: list[int] = []
    _pack_into(text, start, end, measure, budget, levels=levels, starts=starts, ends=ends)
    return list(zip(starts, ends, strict=True))


def _pack_into(
    text: str,
    start: int,
    end: int,
    measure: Measure,
    budget: int,
    *,
    levels: Sequence[Level],
    starts: list[int],
    ends: list[int],
) -> None:
    """:func:`pack`, appending the spans' starts and ends to ``starts`` and ``ends``.

    The hot loop of every chunker, one iteration per chunk. For a character budget it runs in C when the
    compiled helper is installed; this loop is the reference it is tested against.
    """
    pos = skip_space(text, start, end)
    if pos >= end:
        return
    chars = isinstance(measure, CharMeasure)
    if chars and speedups.native is not None:
        # A budget past the range cuts nothing more; clamped, it fits the helper's C integers.
        reach = min(budget, end - pos)
        speedups.native.pack_chars(
            text, pos, end, reach, _native_levels(levels, text, pos, end), starts, ends
        )
        return
    cutters = [level.bind(text, pos, end).last_cut for level in levels]
    forward = measure.forward
    next_text = NON_SPACE.search
    add_start, add_end = starts.append, ends.append
    while True:
        limit = pos + budget if chars else forward(pos, budget)
        if limit >= end:
            cut = end
        else:
            for cutter in cutters:
                found = cutter(text, pos, limit)
                if found is not None:
                    cut = found
                    break
            else:
                cut = limit if limit > pos else pos + 1
        stop = cut
        while text[stop - 1].isspace():
            stop -= 1
        add_start(pos)
        add_end(stop)
        if cut >= end:
            return
        match = next_text(text, cut, end)
        if match is None:
            return
        pos = match.start()


def _native_levels(levels: Sequence[Level], text: str, start: int, end: int) -> list[tuple[Any, ...]]:
    """``levels`` described for the compiled :func:`_pack_into`: the built-in kinds by name (it has
    their rules), precomputed cuts as a list, and any other level as its ``last_cut`` to call back."""
    specs: list[tuple[Any, ...]] = []
    for level in levels:
        if isinstance(level, BlankLineLevel):
            specs.append(("blank_line",))
        elif isinstance(level, LineLevel):
            specs.append(("line",))
        elif isinstance(level, PunctuationLevel):
            specs.append(("punctuation", level.spaced, level.unspaced))
        elif isinstance(level, RegexLevel) and level.separator == r"\s":
            specs.append(("space",))
        else:
            bound = level.bind(text, start, end)
            if isinstance(bound, CutsLevel):
                specs.append(("cuts", list(bound.cuts)))
            else:
                specs.append(("call", bound.last_cut))
    return specs


def fit_pieces(
    text: str, pieces: Sequence[Piece], measure: Measure, budget: int, levels: Sequence[Level]
) -> Spans:
    """Trim every piece, drop empty ones, and :func:`pack` those over ``budget``."""
    starts: list[int] = []
    ends: list[int] = []
    groups: list[int] = []
    for start, end, group in pieces:
        span = trim(text, start, end)
        if span is None:
            continue
        if measure.size(*span) <= budget:
            starts.append(span[0])
            ends.append(span[1])
            groups.append(group)
        else:
            before = len(starts)
            _pack_into(text, *span, measure, budget, levels=levels, starts=starts, ends=ends)
            groups.extend([group] * (len(starts) - before))
    return Spans(starts, ends, groups)


def merge_small(spans: Spans, measure: Measure, min_size: int, budget: int) -> Spans:
    """Merge each span under ``min_size`` into its neighbour of the same group when the union fits."""
    merged = Spans([], [], [])
    for start, end, group in zip(spans.starts, spans.ends, spans.groups, strict=True):
        if merged.starts:
            prev_start, prev_end, prev_group = merged.starts[-1], merged.ends[-1], merged.groups[-1]
            small = measure.size(prev_start, prev_end) < min_size or measure.size(start, end) < min_size
            if small and prev_group == group and measure.size(prev_start, end) <= budget:
                merged.ends[-1] = end
                continue
        merged.starts.append(start)
        merged.ends.append(end)
        merged.groups.append(group)
    return merged


def add_overlap(text: str, spans: Spans, measure: Measure, overlap: int, snap_to_words: bool) -> list[int]:
    """New starts: each span reaches up to ``overlap`` units back into its predecessor of the same group.

    With ``snap_to_words`` the overlap begins at the first word start in its reach (a non-space after
    whitespace), so a chunk does not open mid-word; inside one long word it begins where the reach
    does. Without it, at the first non-space. The overlap only ever shrinks by snapping.
    """
    starts, groups = spans.starts, spans.groups
    if not starts:
        return []
    chars = isinstance(measure, CharMeasure)
    if chars and speedups.native is not None:
        # An overlap longer than the text reaches no further; clamped, it fits the helper's C integers.
        reach = min(overlap, len(text))
        out: list[int] = speedups.native.overlap_chars(text, starts, groups, reach, snap_to_words)
        return out
    backward = measure.backward
    out = [starts[0]]
    for prev_start, start, prev_group, group in zip(starts, starts[1:], groups, groups[1:], strict=False):
        if group != prev_group:
            out.append(start)
            continue
        # Never reach the predecessor's first character: a chunk must not contain the one before it.
        reach = max(prev_start + 1, start - overlap if chars else backward(start, overlap))
        # A chunk's own start is non-space, so the search up to and including it finds a match,
        # except a word start when the whole reach lies inside one word.
        if snap_to_words:
            space = _BEFORE_WORD.search(text, reach - 1, start + 1)
            out.append(reach if space is None else space.start() + 1)
        else:
            out.append(skip_space(text, reach, start))
    return out


class CountingMeasure:
    """A :class:`~chunkwise.chunking.measure.Measure` that counts text directly (binary searches).

    Only used to re-fit the rare chunk whose exact size exceeds what the token offsets promised.
    """

    def __init__(self, text: str, counter: TokenCounter, bound: int) -> None:
        self._text = text
        self._counter = counter
        self._bound = bound

    @property
    def counter(self) -> TokenCounter:
        """The counter being called."""
        return self._counter

    def size(self, start: int, end: int) -> int:
        """Exact count of ``text[start:end]``."""
        return self._counter.count(self._text[start:end])

    def forward(self, start: int, budget: int) -> int:
        """The largest end (up to the bound) whose prefix count is within ``budget`` (binary search)."""
        low, high = start, self._bound
        while low < high:
            mid = (low + high + 1) // 2
            if self.size(start, mid) <= budget:
                low = mid
            else:
                high = mid - 1
        return low

    def backward(self, end: int, budget: int) -> int:
        """The smallest start whose suffix count is within ``budget`` (binary search)."""
        low, high = 0, end
        while low < high:
            mid = (low + high) // 2
            if self.size(mid, end) <= budget:
                high = mid
            else:
                low = mid + 1
        return low

    def exact_sizes(self, starts: Sequence[int], ends: Sequence[int]) -> list[int]:
        """Batch count."""
        text = self._text
        return self._counter.count_batch([text[a:b] for a, b in zip(starts, ends, strict=True)])


def _enforce_exact(
    text: str, spans: Spans, measure: Measure, limit: int, levels: Sequence[Level]
) -> list[int]:
    """Exact sizes of ``spans``; any span over ``limit`` is re-packed (in place) by exact counting."""
    sizes = measure.exact_sizes(spans.starts, spans.ends)
    if max(sizes, default=0) <= limit:
        return sizes
    out = Spans([], [], [])
    out_sizes: list[int] = []
    for start, end, group, size in zip(spans.starts, spans.ends, spans.groups, sizes, strict=True):
        if size <= limit:
            out.starts.append(start)
            out.ends.append(end)
            out.groups.append(group)
            out_sizes.append(size)
            continue
        counting = CountingMeasure(text, measure.counter, end)
        before = len(out.starts)
        _pack_into(text, start, end, counting, limit, levels=levels, starts=out.starts, ends=out.ends)
        part_sizes = counting.exact_sizes(out.starts[before:], out.ends[before:])
        if any(n > limit for n in part_sizes):
            raise ChunkingError(
                f"cannot fit text at {start}:{end} into {limit} {measure.counter.name} units: "
                "a single character is larger than the limit"
            )
        out.groups.extend([group] * len(part_sizes))
        out_sizes.extend(part_sizes)
    spans.starts[:], spans.ends[:], spans.groups[:] = out.starts, out.ends, out.groups
    return out_sizes


def finalize(
    doc: Document,
    pieces: Sequence[Piece],
    measure: Measure,
    limits: SizeLimits,
    levels: Sequence[Level],
    *,
    snap_overlap: bool = True,
    context: ContextFn | None = None,
) -> list[Chunk]:
    """Turn proposed pieces into chunks that keep the size and coverage contract (module docstring)."""
    text = doc.text
    budget = limits.budget
    spans = fit_pieces(text, pieces, measure, budget, levels)
    if limits.min_size:
        spans = merge_small(spans, measure, limits.min_size, budget)
    sizes = _enforce_exact(text, spans, measure, budget, levels)
    starts, ends = spans.starts, spans.ends
    if limits.overlap:
        reached = add_overlap(text, spans, measure, limits.overlap, snap_overlap)
        reached_sizes = measure.exact_sizes(reached, ends)
        if max(reached_sizes, default=0) <= limits.max_size:
            starts, sizes = reached, reached_sizes
        else:
            # Where the exact count of an extended chunk passes the maximum, it keeps no overlap.
            for i, size in enumerate(reached_sizes):
                if size <= limits.max_size:
                    starts[i], sizes[i] = reached[i], size
    contexts = [context(a, b) for a, b in zip(starts, ends, strict=True)] if context else None
    return ChunkBuilder(doc).build_all(starts, ends, sizes, contexts)
