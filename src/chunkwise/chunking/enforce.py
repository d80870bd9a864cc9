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
from itertools import pairwise

from chunkwise.chunking.boundaries import Level
from chunkwise.chunking.chunk import Chunk, ChunkBuilder
from chunkwise.chunking.measure import Measure
from chunkwise.chunking.tokens import TokenCounter
from chunkwise.chunking.trim import NON_SPACE, skip_space, trim
from chunkwise.document import Document
from chunkwise.errors import ChunkingError

#: ``(start, end, group)``: a proposed span; merging and overlap never cross groups (e.g. sections).
Piece = tuple[int, int, int]

#: Optional per-chunk context (text beside the chunk, e.g. a split table's header row).
ContextFn = Callable[[int, int], str]

_SPACE_RUN = re.compile(r"\s+")


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
    spans: list[tuple[int, int]] = []
    pos = skip_space(text, start, end)
    if pos >= end:
        return spans
    # The hot loop: bound methods and the whitespace scan held in locals, trimming inlined.
    cutters = [level.bind(text, pos, end).last_cut for level in levels]
    forward = measure.forward
    next_text = NON_SPACE.search
    while True:
        limit = forward(pos, budget)
        if limit >= end:
            cut = end
        else:
            found_cut: int | None = None
            for cutter in cutters:
                found_cut = cutter(text, pos, limit)
                if found_cut is not None:
                    break
            cut = found_cut if found_cut is not None else max(limit, pos + 1)
        stop = cut
        while text[stop - 1].isspace():
            stop -= 1
        spans.append((pos, stop))
        found = next_text(text, cut, end) if cut < end else None
        if found is None:
            return spans
        pos = found.start()


def fit_pieces(
    text: str, pieces: Sequence[Piece], measure: Measure, budget: int, levels: Sequence[Level]
) -> list[Piece]:
    """Trim every piece, drop empty ones, and :func:`pack` those over ``budget``."""
    fitted: list[Piece] = []
    for start, end, group in pieces:
        span = trim(text, start, end)
        if span is None:
            continue
        if measure.size(*span) <= budget:
            fitted.append((*span, group))
        else:
            fitted.extend([(a, b, group) for a, b in pack(text, *span, measure, budget, levels=levels)])
    return fitted


def merge_small(pieces: Sequence[Piece], measure: Measure, min_size: int, budget: int) -> list[Piece]:
    """Merge each piece under ``min_size`` into its neighbour of the same group when the union fits."""
    merged: list[Piece] = []
    for start, end, group in pieces:
        if merged:
            prev_start, prev_end, prev_group = merged[-1]
            small = measure.size(prev_start, prev_end) < min_size or measure.size(start, end) < min_size
            if small and prev_group == group and measure.size(prev_start, end) <= budget:
                merged[-1] = (prev_start, end, group)
                continue
        merged.append((start, end, group))
    return merged


def add_overlap(
    text: str, pieces: Sequence[Piece], measure: Measure, overlap: int, snap_to_words: bool
) -> list[Piece]:
    """Start each piece up to ``overlap`` units earlier, inside its predecessor of the same group.

    With ``snap_to_words`` the overlap begins at a word start where the region has one, so a chunk does
    not open mid-word; the overlap only ever shrinks by snapping.
    """
    if not pieces:
        return []
    out = [pieces[0]]
    for (prev_start, _, prev_group), (start, end, group) in pairwise(pieces):
        if group != prev_group:
            out.append((start, end, group))
            continue
        # Never reach the predecessor's first character: a chunk must not contain the one before it.
        reach = max(prev_start + 1, measure.backward(start, overlap))
        if snap_to_words and reach > 0 and not text[reach - 1].isspace():
            space = _SPACE_RUN.search(text, reach, start)
            if space is not None:
                reach = space.end()
        out.append((min(skip_space(text, reach, start), start), end, group))
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

    def exact_sizes(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        """Batch count."""
        return self._counter.count_batch([self._text[a:b] for a, b in spans])


def _enforce_exact(
    text: str, pieces: list[Piece], measure: Measure, limit: int, levels: Sequence[Level]
) -> tuple[list[Piece], list[int]]:
    """Exact sizes of ``pieces``; any piece over ``limit`` is re-packed by exact counting."""
    sizes = measure.exact_sizes([(a, b) for a, b, _ in pieces])
    if all(size <= limit for size in sizes):
        return pieces, sizes
    out_pieces: list[Piece] = []
    out_sizes: list[int] = []
    for (start, end, group), size in zip(pieces, sizes, strict=True):
        if size <= limit:
            out_pieces.append((start, end, group))
            out_sizes.append(size)
            continue
        counting = CountingMeasure(text, measure.counter, end)
        parts = pack(text, start, end, counting, limit, levels=levels)
        part_sizes = counting.exact_sizes(parts)
        if any(n > limit for n in part_sizes):
            raise ChunkingError(
                f"cannot fit text at {start}:{end} into {limit} {measure.counter.name} units: "
                "a single character is larger than the limit"
            )
        out_pieces.extend((a, b, group) for a, b in parts)
        out_sizes.extend(part_sizes)
    return out_pieces, out_sizes


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
    spans, sizes = _enforce_exact(text, spans, measure, budget, levels)
    if limits.overlap:
        extended = add_overlap(text, spans, measure, limits.overlap, snap_overlap)
        ext_sizes = measure.exact_sizes([(a, b) for a, b, _ in extended])
        # Where the exact count of an extended chunk passes the maximum, it keeps no overlap.
        for i, size in enumerate(ext_sizes):
            if size <= limits.max_size:
                spans[i], sizes[i] = extended[i], size
    builder = ChunkBuilder(doc)
    return [
        builder.build(start, end, size, context(start, end) if context else "")
        for (start, end, _), size in zip(spans, sizes, strict=True)
    ]
