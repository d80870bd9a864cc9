"""Size of any span of one document in O(log n), from one pass over the whole text.

Chunkers never re-tokenise growing strings. Three measures answer span sizes, "how far can a chunk
reach from here" (:meth:`Measure.forward`) and "how far back can an overlap go" (:meth:`Measure.backward`):

* :class:`CharMeasure`: offset arithmetic;
* :class:`RunTokenMeasure`, for counters whose counts add up at whitespace (WordPiece tokenizers such as
  the bundled MiniLM one): each distinct word is counted once and a prefix sum over words answers
  everything; exact sizes decompose a span into whole words plus at most two partial words;
* :class:`TokenMeasure`, for any other counter (tiktoken's byte-level BPE): the token offsets of one
  tokenisation of the text, binary-searched; exact sizes count each chunk's text again.

Whatever the measure, :meth:`Measure.exact_sizes` is the number the hard limit is checked against.
"""

from __future__ import annotations

import bisect
import operator
import re
import unicodedata
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from chunkwise.chunking.tokens import WORD_SEPARATORS, CharCounter, CodeRanges, Offsets, TokenCounter


class Measure(Protocol):
    """Sizes of spans of one text, in the unit of :attr:`counter`."""

    @property
    def counter(self) -> TokenCounter:
        """The counter whose unit this is."""
        ...

    def size(self, start: int, end: int) -> int:
        """Size of ``text[start:end]`` (an upper-bound estimate for token units mid-word)."""
        ...

    def forward(self, start: int, budget: int) -> int:
        """The largest ``end`` such that ``size(start, end) <= budget`` (at most the text length)."""
        ...

    def backward(self, end: int, budget: int) -> int:
        """The smallest ``start`` such that ``size(start, end) <= budget`` (at least 0)."""
        ...

    def exact_sizes(self, starts: Sequence[int], ends: Sequence[int]) -> list[int]:
        """The exact size of each span ``text[starts[i]:ends[i]]`` under :attr:`counter`."""
        ...


class CharMeasure:
    """Sizes in characters: offset arithmetic."""

    def __init__(self, text: str) -> None:
        self._n = len(text)
        self._counter = CharCounter()

    @property
    def counter(self) -> TokenCounter:
        """The character counter."""
        return self._counter

    def size(self, start: int, end: int) -> int:
        """``end - start``."""
        return end - start

    def forward(self, start: int, budget: int) -> int:
        """``start + budget``, clipped to the text."""
        return min(self._n, start + budget)

    def backward(self, end: int, budget: int) -> int:
        """``end - budget``, clipped to the text."""
        return max(0, end - budget)

    def exact_sizes(self, starts: Sequence[int], ends: Sequence[int]) -> list[int]:
        """Span lengths."""
        return list(map(operator.sub, ends, starts))


class TokenMeasure:
    """Sizes in tokens, from the token offsets of one tokenisation of the whole text."""

    def __init__(self, text: str, counter: TokenCounter) -> None:
        self._text = text
        self._counter = counter
        self._starts, self._ends = counter.token_spans(text)
        self._count = len(self._starts)

    @property
    def counter(self) -> TokenCounter:
        """The token counter."""
        return self._counter

    def size(self, start: int, end: int) -> int:
        """Number of tokens overlapping ``[start, end)``."""
        if end <= start:
            return 0
        before = int(np.searchsorted(self._ends, start, side="right"))
        upto = int(np.searchsorted(self._starts, end, side="left"))
        return max(0, upto - before)

    def forward(self, start: int, budget: int) -> int:
        """Up to the start of the first token past the budget."""
        first = int(np.searchsorted(self._ends, start, side="right"))
        stop = first + budget
        if stop >= self._count:
            return len(self._text)
        return max(start, int(self._starts[stop]))

    def backward(self, end: int, budget: int) -> int:
        """Back to the end of the last token before the budget."""
        last = int(np.searchsorted(self._starts, end, side="left")) - 1
        first_out = last - budget
        if first_out < 0:
            return 0
        return min(end, int(self._ends[first_out]))

    def exact_sizes(self, starts: Sequence[int], ends: Sequence[int]) -> list[int]:
        """Every span's text counted again (the counter gives no additivity to rely on)."""
        text = self._text
        return self._counter.count_batch([text[a:b] for a, b in zip(starts, ends, strict=True)])


class RunTokenMeasure:
    """Sizes in tokens for counters whose counts add up at separators (WordPiece and the like).

    The text is cut into maximal separator-free *runs* (words, roughly) with numpy; each distinct run is
    counted once (a document repeats its words), and a prefix sum over run counts measures any span that
    starts and ends between runs in O(log n). Positions inside a run use that run's own token offsets,
    computed on demand. Exact sizes decompose a span into its whole runs plus at most two partial runs,
    so no chunk's text is ever tokenised in full.

    A character the counter always makes one token of its own (:attr:`TokenCounter.isolated`, such as
    a Chinese character for BERT) is a run by itself and counts one without being tokenised, so text
    without spaces (Chinese, Japanese) is measured without tokenising long runs again and again.
    """

    def __init__(self, text: str, counter: TokenCounter) -> None:
        self._text = text
        self._counter = counter
        self._cache: dict[str, int] = {}
        self._offsets: dict[str, tuple[list[int], list[int]]] = {}
        self._run_cache: dict[int, tuple[list[int], list[int]]] = {}
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        separator = _separator_mask(codes, counter.separators)
        isolated = _range_mask(codes, counter.isolated)
        if isolated is None:
            edges = np.flatnonzero(np.diff(np.concatenate(([True], separator, [True])).astype(np.int8)))
            self._starts: Offsets = edges[0::2].astype(np.int64)
            self._ends: Offsets = edges[1::2].astype(np.int64)
            words = text.split() if _splits_like_python(text, counter.separators) else []
            if len(words) != len(self._starts):
                words = self._texts(self._starts, self._ends)
            counts = np.asarray(self._counts(words), dtype=np.int64)
        else:
            # A run starts after a separator or an isolated character, or at one; it ends likewise.
            breaks = separator | isolated
            before = np.concatenate(([True], breaks[:-1])) | isolated
            after = np.concatenate((breaks[1:], [True])) | isolated
            self._starts = np.flatnonzero(~separator & before).astype(np.int64)
            self._ends = np.flatnonzero(~separator & after).astype(np.int64) + 1
            counts = np.ones(len(self._starts), dtype=np.int64)
            plain = np.flatnonzero(~isolated[self._starts])
            counts[plain] = self._counts(self._texts(self._starts[plain], self._ends[plain]))
        self._cum: Offsets = np.concatenate(([0], np.cumsum(counts)))

    def _texts(self, starts: Offsets, ends: Offsets) -> list[str]:
        """The texts of the runs ``[starts[i], ends[i])``."""
        text = self._text
        return [text[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]

    @property
    def counter(self) -> TokenCounter:
        """The token counter."""
        return self._counter

    def _counts(self, texts: Sequence[str]) -> list[int]:
        """Counts of ``texts`` through the per-document cache (one batch call for the misses)."""
        cache = self._cache
        missing = [t for t in set(texts) if t not in cache]
        if missing:
            # One tokenisation of the distinct texts joined by spaces (a separator, so counts add up);
            # each token is credited to the text its offset falls in.
            bounds = np.cumsum([0, *(len(t) + 1 for t in missing[:-1])])
            token_starts, _ = self._counter.token_spans(" ".join(missing))
            owner = np.searchsorted(bounds, token_starts, side="right") - 1
            counts = np.bincount(owner, minlength=len(missing)).tolist()
            cache.update(zip(missing, counts, strict=True))
        return list(map(cache.__getitem__, texts))

    def _run_offsets(self, run: int) -> tuple[list[int], list[int]]:
        """Token start and end offsets inside run ``run``, relative to the run's start.

        Cached by text (repeated words are tokenised once) behind a cache by run index: a lookup by
        text slices and hashes the run, which for one 200,000-character run, consulted at every chunk
        boundary inside it, made chunking quadratic in the run's length.
        """
        offsets = self._run_cache.get(run)
        if offsets is None:
            word = self._text[int(self._starts[run]) : int(self._ends[run])]
            offsets = self._offsets.get(word)
            if offsets is None:
                token_starts, token_ends = self._counter.token_spans(word)
                offsets = self._offsets[word] = token_starts.tolist(), token_ends.tolist()
            self._run_cache[run] = offsets
        return offsets

    def _run_at(self, pos: int) -> int:
        """Index of the first run ending after ``pos``."""
        return int(np.searchsorted(self._ends, pos, side="right"))

    def _started_before(self, pos: int) -> int:
        """Number of tokens that start before ``pos``."""
        return self._tokens_before(pos, ended=False)

    def _ended_by(self, pos: int) -> int:
        """Number of tokens that end at or before ``pos``."""
        return self._tokens_before(pos, ended=True)

    def _tokens_before(self, pos: int, *, ended: bool) -> int:
        """Tokens that end at or before ``pos`` (``ended``), else tokens that start before it.

        Whole runs before ``pos`` count from the cumulative table; only the run holding ``pos`` is
        tokenised, to find where ``pos`` falls among its token starts or ends.
        """
        run = self._run_at(pos)
        if run == len(self._starts):
            return int(self._cum[-1])
        inside = pos - int(self._starts[run])
        if inside <= 0:
            return int(self._cum[run])
        starts, ends = self._run_offsets(run)
        if ended:
            return int(self._cum[run]) + bisect.bisect_right(ends, inside)
        return int(self._cum[run]) + bisect.bisect_left(starts, inside)

    def _token_start(self, index: int) -> int:
        """Offset where global token ``index`` starts.

        A run's first token starts at the run's first character when the normaliser keeps that
        character (see :func:`_kept`), which spares tokenising the run in the common case.
        """
        run = int(np.searchsorted(self._cum, index, side="right")) - 1
        run_start = int(self._starts[run])
        if index == int(self._cum[run]) and _kept(self._text[run_start]):
            return run_start
        starts, _ = self._run_offsets(run)
        return run_start + starts[index - int(self._cum[run])]

    def _token_end(self, index: int) -> int:
        """Offset where global token ``index`` ends (a run's last token: the run's end, if kept)."""
        run = int(np.searchsorted(self._cum, index, side="right")) - 1
        run_end = int(self._ends[run])
        if index == int(self._cum[run + 1]) - 1 and _kept(self._text[run_end - 1]):
            return run_end
        _, ends = self._run_offsets(run)
        return int(self._starts[run]) + ends[index - int(self._cum[run])]

    def size(self, start: int, end: int) -> int:
        """Number of tokens overlapping ``[start, end)``."""
        if end <= start:
            return 0
        return max(0, self._started_before(end) - self._ended_by(start))

    def forward(self, start: int, budget: int) -> int:
        """Up to the start of the first token past the budget."""
        stop = self._ended_by(start) + budget
        if stop >= int(self._cum[-1]):
            return len(self._text)
        return max(start, self._token_start(stop))

    def backward(self, end: int, budget: int) -> int:
        """Back to the end of the last token before the budget."""
        first_out = self._started_before(end) - 1 - budget
        if first_out < 0:
            return 0
        return min(end, self._token_end(first_out))

    def exact_sizes(self, starts: Sequence[int], ends: Sequence[int]) -> list[int]:
        """Whole runs from the prefix sum, plus the counts of at most two partial runs per span."""
        text = self._text
        parts: list[str] = []
        plan: list[tuple[int, int, int]] = []  # (whole-run tokens, first part index, part count)
        for start, end in zip(starts, ends, strict=True):
            first = self._run_at(start)
            last = int(np.searchsorted(self._starts, end, side="left")) - 1
            first_part = len(parts)
            if last <= first:
                parts.append(text[start:end])
                plan.append((0, first_part, 1))
                continue
            parts.append(text[start : int(self._ends[first])])
            parts.append(text[int(self._starts[last]) : end])
            plan.append((int(self._cum[last] - self._cum[first + 1]), first_part, 2))
        counts = self._counts(parts)
        return [whole + sum(counts[i : i + n]) for whole, i, n in plan]


def _kept(char: str) -> bool:
    """Whether a word-splitting normaliser keeps ``char`` as (part of) a token.

    BERT's normaliser drops control and format characters (category C*), the replacement character
    and, when stripping accents, combining marks; it turns other Unicode whitespace (Z*) into spaces.
    """
    return unicodedata.category(char)[0] not in "CMZ" and char != "\ufffd"


#: Characters ``str.split`` treats as whitespace that are not in :data:`WORD_SEPARATORS`.
_OTHER_PYTHON_SPACE = re.compile("[\x0b\x0c\x1c-\x1f\x85\u2028\u2029]")


def _splits_like_python(text: str, separators: frozenset[str]) -> bool:
    """Whether ``text.split()`` cuts ``text`` at exactly ``separators`` (the fast path for runs)."""
    return separators == WORD_SEPARATORS and _OTHER_PYTHON_SPACE.search(text) is None


def _separator_mask(codes: npt.NDArray[np.uint32], separators: frozenset[str]) -> npt.NDArray[np.bool_]:
    """A boolean array, true where the code points ``codes`` are one of ``separators`` (all in the BMP)."""
    table = np.zeros(0x10000, dtype=np.bool_)
    table[[ord(c) for c in separators]] = True
    return np.where(codes < 0x10000, table[np.minimum(codes, 0xFFFF)], False)


def _range_mask(codes: npt.NDArray[np.uint32], ranges: CodeRanges) -> npt.NDArray[np.bool_] | None:
    """A boolean array, true where ``codes`` fall in one of ``ranges``; ``None`` if none does.

    Only code points from the lowest range bound on are tested: in most texts they are few.
    """
    if not ranges:
        return None
    candidates = np.flatnonzero(codes >= min(low for low, _ in ranges))
    values = codes[candidates]
    inside = np.zeros(len(values), dtype=np.bool_)
    for low, high in ranges:
        inside |= (values >= low) & (values <= high)
    if not inside.any():
        return None
    mask = np.zeros(len(codes), dtype=np.bool_)
    mask[candidates[inside]] = True
    return mask


def measure_for(text: str, counter: TokenCounter) -> Measure:
    """The cheapest exact-enough measure of ``text`` for ``counter``."""
    if isinstance(counter, CharCounter):
        return CharMeasure(text)
    if counter.separators:
        return RunTokenMeasure(text, counter)
    return TokenMeasure(text, counter)
