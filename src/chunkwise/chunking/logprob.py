"""The ``logprob`` chunker: LlamaChunk's split-marker probabilities, read in one forward pass per window.

LlamaChunk asks a model to repeat a document with a marker inserted between sections, but instead of
letting it generate (slow: every token is an output token) it teacher-forces the document after the
prompt and reads, at every token position, the probability that the model would have written the
marker there. Here:

* the marker is chosen per model and per document (:func:`choose_marker`): the first of
  :data:`MARKER_CANDIDATES` that is one token in the model's vocabulary and does not occur in the text
  (the seed's "段" is three tokens in SmolLM2's vocabulary, so it is skipped there);
* the prompt is the seed's system prompt plus one few-shot example (the same prefix for every window),
  then the window as the user's message, rendered with the model's chat template (ChatML when the
  backend has none); the window is then teacher-forced as the assistant's answer, so each window costs
  one forward pass. Windows are ``window_chars`` long with ``overlap_chars`` of overlap; an overlap
  is split at its middle, the earlier window scoring the first half and the later one the second
  (where it already has the first half as context). Windows are scored ``workers`` at a time
  (independent calls: a server batches them, the local model runs them on separate cores); the result
  does not depend on the order in which they finish.
* a boundary inside a token (a line that starts mid-token) is scored as the seed describes: when the
  log-probability of the token's head is above :data:`PARTIAL_TOKEN_GATE` (−7), one extra evaluation
  after that head gives P(marker), and the two log-probabilities add (the product of probabilities);
* the positional decay is divided out per window (:func:`~chunkwise.chunking.logprob_curve.normalise_decay`)
  and boundaries are peaks of the normalised score above ``threshold`` under the size limits
  (:func:`~chunkwise.chunking.logprob_curve.pick_boundaries`); the shared enforcement then guarantees
  the hard maximum.

The per-character score curve is kept on the run (:class:`~chunkwise.chunking.logprob_curve.BoundaryCurve`)
for export (``chunkwise chunk --scores FILE``) and plotting.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from chunkwise.chunking.base import ChunkerParams
from chunkwise.chunking.llm_common import LLMChunker, LLMChunkerParams, render_chat
from chunkwise.chunking.llm_report import VALID, ChunkingReport, ChunkingRun, WindowReport
from chunkwise.chunking.logprob_curve import (
    LOGPROB_FLOOR,
    BoundaryCurve,
    clip_logprob,
    normalise_decay,
    pick_boundaries,
)
from chunkwise.document import Document
from chunkwise.errors import ChunkingError, ConfigError
from chunkwise.models.protocols import LLM, Message

#: Split markers to try, in order: rare symbols that models know as section signs or separators.
MARKER_CANDIDATES: tuple[str, ...] = ("段", "¶", "§", "†", "•", "※", "⁂", "‡", "¤", "■", "◆", "~", "^", "|")

#: A partial token whose log-probability is at or below this is not worth an extra evaluation (seed).
PARTIAL_TOKEN_GATE = -7.0

#: Token heads after which a boundary inside a token is worth scoring: a line or a sentence ends there
#: while the token runs on (byte-level BPE merges punctuation runs such as ``."`` or ``.)``).
PARTIAL_HEADS: tuple[str, ...] = ("\n", ".", "!", "?", ";", ":")

SYSTEM_PROMPT = """Your job is to act as a chunker.

You should insert the "{marker}" throughout the input.

Your goal is to separate the content into semantically relevant groupings."""

EXAMPLE_INPUT = """Section. 1.
All legislative Powers herein granted shall be vested in a Congress of the United States, which shall \
consist of a Senate and House of Representatives.

Section. 2.
The House of Representatives shall be composed of Members chosen every second Year by the People of the \
several States, and the Electors in each State shall have the Qualifications requisite for Electors of \
the most numerous Branch of the State Legislature.

No Person shall be a Representative who shall not have attained to the Age of twenty five Years, and \
been seven Years a Citizen of the United States."""


@dataclass(frozen=True, slots=True)
class LogprobRun(ChunkingRun):
    """A logprob chunking run with its boundary score curve (what ``--scores`` writes)."""

    curve: BoundaryCurve | None = None


def example_output(marker: str) -> str:
    """The few-shot answer: the example input with the marker closing each section."""
    parts = EXAMPLE_INPUT.split("\n\n")
    return "\n\n".join(part + marker for part in parts)


def choose_marker(llm: LLM, text: str, candidates: Sequence[str] = MARKER_CANDIDATES) -> str:
    """The first candidate that is a single token for ``llm`` and absent from ``text``."""
    for candidate in candidates:
        if candidate not in text and llm.count_tokens(candidate) == 1:
            return candidate
    raise ChunkingError(
        f"{llm.name}: no split marker among {''.join(candidates)!r} is one token absent from the text"
    )


def windows(text: str, window_chars: int, overlap_chars: int) -> list[tuple[int, int, int]]:
    """``(start, end, own_from)`` per window: windows end at whitespace, and a window owns positions
    from ``own_from`` on (the middle of its overlap with the previous one)."""
    if window_chars <= overlap_chars:
        raise ChunkingError(f"window_chars ({window_chars}) must exceed overlap_chars ({overlap_chars})")
    spans: list[tuple[int, int, int]] = []
    start = own = 0
    while True:
        end = (
            len(text)
            if len(text) - start <= window_chars
            else _back_to_space(text, start, start + window_chars)
        )
        spans.append((start, end, own))
        if end >= len(text):
            return spans
        next_start = max(_back_to_space(text, start, end - overlap_chars), start + 1)
        own = (next_start + end) // 2
        start = next_start


def _back_to_space(text: str, low: int, pos: int) -> int:
    """``pos`` moved back to just after the last whitespace in ``text[low:pos]`` (``pos`` if none)."""
    for i in range(pos, low, -1):
        if text[i - 1].isspace():
            return i
    return pos


@dataclass(frozen=True, slots=True)
class _WindowScores:
    offsets: list[int]
    logprobs: list[float]
    baseline: list[float]
    scores: list[float]
    extra: int


@dataclasses.dataclass(frozen=True)
class LogprobParams(LLMChunkerParams):
    """``threshold``: the score a peak must pass, in standard deviations of the log-probability above
    the decay baseline.
    ``window_chars``/``overlap_chars``: the text teacher-forced per forward pass, and the overlap of
    consecutive windows. ``max_extra``: mid-token evaluations allowed per window. ``marker``: the split
    marker (empty: chosen per model and document by :func:`choose_marker`). ``workers``: windows scored
    at the same time (2: the two cores this project is measured on; a remote server takes more)."""

    threshold: float = 2.0
    window_chars: int = 4000
    overlap_chars: int = 400
    max_extra: int = 8
    marker: str = ""
    workers: int = 2

    def validate(self) -> None:
        """Check the LlamaChunk settings on top of the common ones."""
        super().validate()
        if not 0 <= self.overlap_chars < self.window_chars:
            raise ConfigError(f"overlap_chars must be in [0, window_chars), got {self.overlap_chars}")
        if self.max_extra < 0:
            raise ConfigError(f"max_extra must be >= 0, got {self.max_extra}")
        if self.workers < 1:
            raise ConfigError(f"workers must be >= 1, got {self.workers}")


class LogprobChunker(LLMChunker):
    """LlamaChunk: boundaries where the model most wants to write a split marker."""

    name: ClassVar[str] = "logprob"
    Params: ClassVar[type[ChunkerParams]] = LogprobParams
    params: LogprobParams

    @cached_property
    def _heads(self) -> list[str]:
        """Token heads worth a mid-token evaluation: those that are one token for this model."""
        return [h for h in PARTIAL_HEADS if self.llm.count_tokens(h) == 1]

    def run(self, doc: Document) -> LogprobRun:
        """Score every token position of ``doc``, pick boundaries, and build the chunks."""
        text = doc.text
        marker = self.params.marker or choose_marker(self.llm, text)
        began = time.perf_counter()
        offsets: list[int] = []
        logprobs: list[float] = []
        baseline: list[float] = []
        scores: list[float] = []
        reports: list[WindowReport] = []
        extra = scored_tokens = 0
        spans = windows(text, self.params.window_chars, self.params.overlap_chars)
        heads = self._heads  # resolved here, once, not by the threads below

        def score_span(span: tuple[int, int, int]) -> _WindowScores:
            return self._score_window(text[span[0] : span[1]], marker, heads)

        with ThreadPoolExecutor(min(self.params.workers, len(spans))) as pool:
            scored = list(pool.map(score_span, spans))
        for index, ((start, end, own), window) in enumerate(zip(spans, scored, strict=True)):
            own_to = spans[index + 1][2] if index + 1 < len(spans) else len(text)
            scored_tokens += len(window.offsets)
            extra += window.extra
            for off, lp, base, score in zip(
                window.offsets, window.logprobs, window.baseline, window.scores, strict=True
            ):
                if own <= start + off < own_to:
                    offsets.append(start + off)
                    logprobs.append(lp)
                    baseline.append(base)
                    scores.append(score)
            reports.append(WindowReport(index, start, end, VALID))
        seconds = time.perf_counter() - began
        counter_starts, _ = self.counter.token_spans(text)
        sizes = np.searchsorted(counter_starts, np.asarray(offsets, dtype=np.int64))
        chosen = pick_boundaries(
            sizes,
            np.asarray(scores, dtype=np.float64),
            int(counter_starts.size),
            threshold=self.params.threshold,
            min_size=self.params.min_size,
            max_size=self.params.max_size,
        )
        cuts = [offsets[i] for i in chosen]
        curve = BoundaryCurve(
            offsets=tuple(offsets),
            logprobs=tuple(logprobs),
            baseline=tuple(baseline),
            scores=tuple(scores),
            chosen=tuple(cuts),
            marker=marker,
            threshold=self.params.threshold,
        )
        stats = {
            "marker": marker,
            "scored_tokens": scored_tokens,
            "extra_evaluations": extra,
            "seconds": round(seconds, 3),
            "tokens_per_second": round(scored_tokens / seconds, 1) if seconds > 0 else None,
        }
        report = ChunkingReport(self.name, doc.id, tuple(reports), stats)
        return LogprobRun(self.finish(doc, cuts), report, curve)

    def prompt(self, marker: str, window_text: str) -> str:
        """The chat-rendered prompt for one window: system, the few-shot pair, then the window as the
        user's message. The window's text then follows as the assistant's (teacher-forced) repetition."""
        messages = [
            Message("system", SYSTEM_PROMPT.format(marker=marker)),
            Message("user", EXAMPLE_INPUT),
            Message("assistant", example_output(marker)),
            Message("user", window_text),
        ]
        return render_chat(self.llm, messages)

    def _score_window(self, chunk_text: str, marker: str, heads: Sequence[str]) -> _WindowScores:
        """Marker log-probabilities at every token start of one window, and the decay-normalised score.

        Every log-probability the model returns is clipped (:func:`clip_logprob`) before it is kept, so
        the curve (and its JSON export) holds finite numbers whatever the server answered.
        """
        prompt = self.prompt(marker, chunk_text)
        result = self.llm.logprobs(prompt, chunk_text, [marker, *heads], stage="chunk.logprob")
        offsets: list[int] = []
        values: list[float] = []
        extra_points: list[tuple[int, float, int]] = []
        for i, (offset, token, candidates) in enumerate(
            zip(result.offsets, result.tokens, result.candidates, strict=True)
        ):
            if i == 0:
                continue  # a split before the very first token splits nothing
            offsets.append(offset)
            values.append(clip_logprob(candidates.get(marker, LOGPROB_FLOOR)))
            head = _partial_head(token, heads)
            head_lp = clip_logprob(candidates.get(head, LOGPROB_FLOOR)) if head else LOGPROB_FLOOR
            if head and head_lp > PARTIAL_TOKEN_GATE and len(extra_points) < self.params.max_extra:
                cut = offset + len(head)
                after = self.llm.logprobs(
                    prompt + chunk_text[:cut], token[len(head) :], [marker], stage="chunk.logprob"
                )
                marker_lp = (
                    after.candidates[0].get(marker, LOGPROB_FLOOR) if after.candidates else LOGPROB_FLOOR
                )
                extra_points.append((cut, head_lp + clip_logprob(marker_lp), i))
        fit = normalise_decay(np.asarray(values, dtype=np.float64))
        baseline = [float(b) for b in fit.baseline]
        scores = [float(s) for s in fit.scores]
        # Each mid-token point takes the baseline of its token (token i sits at index i - 1).
        extra = [(offset, value, baseline[i - 1]) for offset, value, i in extra_points]
        for offset, value, base in extra:
            at = int(np.searchsorted(np.asarray(offsets), offset))
            offsets.insert(at, offset)
            values.insert(at, value)
            baseline.insert(at, base)
            scores.insert(at, (max(value, LOGPROB_FLOOR) - base) / fit.scale)
        return _WindowScores(offsets, values, baseline, scores, len(extra_points))


def _partial_head(token: str, heads: Sequence[str]) -> str | None:
    """The head of ``token`` after which a split could fall mid-token (``."`` → ``.``), if any."""
    for head in heads:
        if len(token) > len(head) and token.startswith(head) and not token[len(head)].isspace():
            return head
    return None
