"""``semantic``: chunks of consecutive sentences that stay on one topic, by embedding similarity.

Every sentence is embedded; the cosine distance of consecutive sentences scores each gap between them;
breaks go where the scores are strongest, and the size maximum applies on top. Where the breaks go:

* ``breakpoint="percentile"`` (default), the SemanticChunk baseline (seed 004) and LangChain's
  ``SemanticChunker`` default: break where the distance exceeds its ``percentile``-th percentile over the
  document. With ``percentile`` unset (the default), the percentile is **calibrated per document to the
  size target**: the fewest, strongest breaks whose chunks average at most ``target`` x ``max_size``.
  Where the size limit forces a cut, it falls on the chunk's highest-scoring gap (one that leaves the
  chunk at least a quarter full), not on the last sentence that fits.
  A fixed percentile or threshold cannot do that: how many sentences make a topic depends on the
  document and the size limit, and how far apart sentence vectors lie depends on the embedder (with
  all-MiniLM-L6-v2, ChunkRAG's θ = 0.8 broke 631 times in a 643-sentence document).
* ``breakpoint="gradient"``, LangChain's ``gradient`` rule for texts whose topics drift: the same, over
  the gradient of the distances (a jump stands out more than a high but steady distance).
* ``breakpoint="threshold"``, ChunkRAG (seed 001): a new chunk when the similarity of two consecutive
  sentences drops below ``threshold`` (θ = 0.8, tuned by the paper for text-embedding-3-small) or when
  adding the next sentence would pass ``max_size``.
* ``method="cluster"``, Chroma's ClusterSemanticChunker: cut the text into small pieces
  (``piece_size``, recursive rules, a sentence end before a line end), embed them, and choose the
  segmentation that maximises the summed pairwise similarity inside chunks (similarities centred on
  their document mean) by dynamic programming, under the size maximum. Rewards come from banded row
  sums, so the cost is O(pieces × pieces-per-chunk), not a full similarity matrix. Unlike Chroma's,
  it cuts inside a sentence that fits a chunk only where the size maximum leaves no other way (as the
  greedy method does): centred similarities cut a one-sentence text that fitted in one chunk into
  several.

Sentences longer than the maximum are cut by the recursive rules below the sentence level. The embedder
is any :class:`~chunkwise.models.protocols.Embedder` (vectors L2-normalised); the default is the bundled
local embedder, loaded on first use.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from chunkwise.chunking.base import BaseChunker, ChunkerParams
from chunkwise.chunking.boundaries import (
    CLAUSE,
    LINE,
    PARAGRAPH,
    SENTENCE,
    WITHIN_SENTENCE_LEVELS,
    WORD,
    Level,
)
from chunkwise.chunking.enforce import Piece, SizeLimits, pack
from chunkwise.chunking.measure import Measure
from chunkwise.chunking.sentences import split_sentences
from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.models.context import Models
from chunkwise.models.protocols import Embedder, Vectors

BREAKPOINTS = ("percentile", "gradient", "threshold")
#: Rewards closer than this are equal (the embedder's float32 vectors are rounded to about 1e-7).
TIE = 1e-6
Floats = npt.NDArray[np.float64]
METHODS = ("greedy", "cluster")
#: The cluster method's piece levels: the recursive ones with a sentence end before a line end, so that
#: pieces end where sentences do and the segmentation has sentence ends to cut at in hard-wrapped text.
PIECE_LEVELS: tuple[Level, ...] = (PARAGRAPH, SENTENCE, LINE, CLAUSE, WORD)


@dataclasses.dataclass(frozen=True)
class SemanticParams(ChunkerParams):
    """At most 500 characters; breaks calibrated to chunks averaging 0.7 of that.

    ``breakpoint``: ``percentile``, ``gradient`` or ``threshold``. ``percentile``: the score percentile
    that marks a break; ``None`` calibrates it to ``target`` (a fraction of ``max_size``) per document.
    ``threshold``: similarity below which a new chunk starts (``breakpoint="threshold"``). ``method``:
    ``greedy`` (sentence by sentence) or ``cluster`` (dynamic programming over small pieces).
    ``piece_size``: the cluster method's piece size in ``unit`` (0 means ``max_size // 8``). ``embedder``:
    an :class:`Embedder`, or a spec string for the run's :class:`~chunkwise.models.Models` (``None``: its
    configured embedder).
    """

    breakpoint: str = "percentile"
    percentile: float | None = None
    target: float = 0.7
    threshold: float = 0.8
    method: str = "greedy"
    piece_size: int = 0
    embedder: Embedder | str | None = None

    def validate(self) -> None:
        """Check the semantic settings on top of the common ones."""
        super().validate()
        if self.breakpoint not in BREAKPOINTS:
            raise ConfigError(f"breakpoint must be one of {', '.join(BREAKPOINTS)}, got {self.breakpoint!r}")
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if not -1.0 <= self.threshold <= 1.0:
            raise ConfigError(f"threshold must be a cosine similarity in [-1, 1], got {self.threshold}")
        if self.percentile is not None and not 0.0 <= self.percentile <= 100.0:
            raise ConfigError(f"percentile must be in [0, 100], got {self.percentile}")
        if not 0.0 < self.target <= 1.0:
            raise ConfigError(f"target must be a fraction of max_size in (0, 1], got {self.target}")
        if not 0 <= self.piece_size <= self.max_size:
            raise ConfigError(f"piece_size must be between 0 and max_size, got {self.piece_size}")


def breaks_below(similarities: Vectors, threshold: float) -> list[bool]:
    """ChunkRAG: a break before sentence ``i + 1`` where ``sim(i, i + 1) < threshold``."""
    return [bool(s < threshold) for s in similarities]


def breaks_above_percentile(scores: Floats, percentile: float) -> list[bool]:
    """A break where a gap's score (higher: stronger break) exceeds its ``percentile``-th percentile."""
    if scores.size == 0:
        return []
    cutoff = float(np.percentile(scores, percentile))
    return [bool(d > cutoff) for d in scores]


def gap_scores(similarities: Vectors, breakpoint: str) -> Floats:
    """How strongly each gap between consecutive sentences marks a break: the cosine distance
    (``percentile``), or its gradient (``gradient``, LangChain's rule; flat for fewer than two gaps)."""
    distances = np.asarray(1.0 - similarities, dtype=np.float64)
    if breakpoint == "gradient" and distances.size >= 2:
        return np.asarray(np.gradient(distances), dtype=np.float64)
    return distances


def calibrated_breaks(
    scores: Floats, spans: Sequence[tuple[int, int]], measure: Measure, budget: int, target: float
) -> list[bool]:
    """Breaks at the ``m`` highest-scoring gaps, ``m`` the fewest (by bisection) whose chunks, grouped by
    :func:`group_scored` under ``budget``, average at most ``target`` x ``budget``: the percentile that
    meets the size target. Ties keep document order."""
    order = np.argsort(-np.asarray(scores), kind="stable")
    goal = target * budget

    def breaks_for(m: int) -> list[bool]:
        chosen = np.zeros(len(scores), dtype=bool)
        chosen[order[:m]] = True
        return [bool(b) for b in chosen]

    def mean_size(m: int) -> float:
        pieces = group_scored(spans, breaks_for(m), scores, measure, budget)
        return sum(measure.size(a, b) for a, b, _ in pieces) / len(pieces)

    low, high = 0, len(scores)
    while low < high:
        middle = (low + high) // 2
        if mean_size(middle) <= goal:
            high = middle
        else:
            low = middle + 1
    return breaks_for(low)


def group_spans(
    spans: Sequence[tuple[int, int]], breaks: Sequence[bool], measure: Measure, budget: int
) -> list[Piece]:
    """Consecutive spans joined until a break or until the next span would pass ``budget`` (ChunkRAG)."""
    pieces: list[Piece] = []
    start = spans[0][0]
    for (_, prev_end), (span_start, span_end), brk in zip(spans[:-1], spans[1:], breaks, strict=True):
        if brk or measure.size(start, span_end) > budget:
            pieces.append((start, prev_end, 0))
            start = span_start
    pieces.append((start, spans[-1][1], 0))
    return pieces


def group_scored(
    spans: Sequence[tuple[int, int]],
    breaks: Sequence[bool],
    scores: Floats,
    measure: Measure,
    budget: int,
) -> list[Piece]:
    """Consecutive spans joined until a break; where the next span would pass ``budget``, the chunk ends
    at its highest-scoring gap rather than at the last span that fits, so a cut forced by the size limit
    still falls on the clearest topic shift inside the chunk. Only gaps that leave the chunk at least a
    quarter of ``budget`` compete: a shift right after the first sentence made one-sentence chunks of a
    few words, so many that the forced cuts alone met the size target and the calibration chose no
    break at all. ``scores[g]`` scores the gap between spans ``g`` and ``g + 1``."""
    pieces: list[Piece] = []
    first = 0  # index of the current chunk's first span
    index = 1
    while index < len(spans):
        if breaks[index - 1]:
            pieces.append((spans[first][0], spans[index - 1][1], 0))
            first = index
        elif index > first and measure.size(spans[first][0], spans[index][1]) > budget:
            # The chunk ends after span ``gap``, the best gap that leaves it a quarter full.
            low = first
            while low < index - 1 and measure.size(spans[first][0], spans[low][1]) < budget / 4:
                low += 1
            gap = low + int(np.argmax(scores[low:index]))
            pieces.append((spans[first][0], spans[gap][1], 0))
            first = gap + 1
            continue  # the shorter chunk may still be too long with span ``index``
        index += 1
    pieces.append((spans[first][0], spans[-1][1], 0))
    return pieces


def cluster_segments(
    vectors: Vectors, fits: Sequence[int], splits: Sequence[bool] | None = None
) -> list[int]:
    """Chroma's cluster segmentation: the start index of each segment, by dynamic programming.

    ``fits[i]`` is the first piece index ``j`` such that pieces ``j..i`` fit in one chunk. The reward of a
    segment is the sum of the pairwise similarities of its pieces, centred on the mean similarity of all
    pairs in the document (so joining unrelated pieces costs); the segmentation maximises the total.
    Where joining gains nothing (a tie, within :data:`TIE` of rounding), the pieces stay together:
    with two pieces, or pieces all alike, every centred similarity is zero, and cutting on ties made
    a two-piece document two chunks and a repeated phrase one chunk per piece.

    ``splits[j]`` says that a segment starting at piece ``j`` would split a sentence that fits in one
    chunk. The segmentation first makes the fewest such splits, then maximises the reward among those:
    centred similarities are below zero for some pairs of any text, so the reward alone cut a
    one-sentence text that fitted in one chunk into several.
    """
    n = len(vectors)
    if n <= 1:
        return [0] * n
    vectors = np.asarray(vectors, dtype=np.float64)  # float32 sums drift past TIE on long documents
    total = vectors.sum(axis=0)
    pair_sum = (float(total @ total) - float((vectors * vectors).sum())) / 2.0
    mean = pair_sum / (n * (n - 1) / 2.0)
    width = max(i - fits[i] for i in range(n)) + 1
    # row[d][a] = sum_{t=1..d} (sim(a, a+t) - mean): similarity of piece a to the d pieces after it.
    row = np.zeros((width, n), dtype=np.float64)
    for d in range(1, width):
        sims = np.einsum("ij,ij->i", vectors[:-d], vectors[d:]).astype(np.float64) - mean
        row[d, : n - d] = row[d - 1, : n - d] + sims
    split_cost = [int(j > 0 and splits is not None and splits[j]) for j in range(n)]
    best = [0.0] * (n + 1)
    fewest = [0] * (n + 1)  # the fewest sentence splits of a segmentation of the first i pieces
    start_of = [0] * n
    for i in range(n):
        reward = 0.0
        best_value = -np.inf
        best_splits = n
        for j in range(i, fits[i] - 1, -1):
            reward += 2.0 * row[i - j, j]
            value = best[j] + reward
            count = fewest[j] + split_cost[j]
            # Longer segments come later: ties go to them.
            if count < best_splits or (count == best_splits and value >= best_value - TIE):
                best_value, best_splits, start_of[i] = value, count, j
        best[i + 1] = best_value
        fewest[i + 1] = best_splits
    starts: list[int] = []
    i = n - 1
    while i >= 0:
        starts.append(start_of[i])
        i = start_of[i] - 1
    return starts[::-1]


def sentence_splits(text: str, spans: Sequence[tuple[int, int]], measure: Measure, budget: int) -> list[bool]:
    """For each span, whether it starts strictly inside a sentence that fits in ``budget``: a chunk
    starting there would split that sentence."""
    sentences = split_sentences(text)
    starts = [a for a, _ in sentences]
    splits: list[bool] = []
    for start, _ in spans:
        k = bisect.bisect_right(starts, start) - 1
        inside = k >= 0 and sentences[k][0] < start < sentences[k][1]
        splits.append(inside and measure.size(*sentences[k]) <= budget)
    return splits


def first_fitting(spans: Sequence[tuple[int, int]], measure: Measure, budget: int) -> list[int]:
    """For each span ``i``, the first ``j`` such that spans ``j..i`` fit in ``budget`` (two pointers)."""
    fits: list[int] = []
    j = 0
    for i, (_, end) in enumerate(spans):
        while j < i and measure.size(spans[j][0], end) > budget:
            j += 1
        fits.append(j)
    return fits


class SemanticChunker(BaseChunker):
    """Sentences grouped by embedding similarity (ChunkRAG, SemanticChunk, or cluster DP)."""

    name: ClassVar[str] = "semantic"
    Params: ClassVar[type[ChunkerParams]] = SemanticParams
    levels: ClassVar[tuple[Level, ...]] = WITHIN_SENTENCE_LEVELS
    params: SemanticParams

    def __init__(self, *, models: Models | None = None, **params: object) -> None:
        super().__init__(models=models, **params)
        self._embedder: Embedder | None = None

    @property
    def embedder(self) -> Embedder:
        """The embedder, resolved through the run's model context (and loaded) on first use."""
        if self._embedder is None:
            spec = self.params.embedder
            if spec is None or isinstance(spec, str):
                self._embedder = self.models.embedder(spec)
            else:
                self._embedder = self.models.adopt("embedder", spec)
        return self._embedder

    def pieces(self, doc: Document, measure: Measure, limits: SizeLimits) -> list[Piece]:
        """Sentence groups (greedy rules) or DP segments of small pieces (cluster)."""
        text, budget = doc.text, limits.budget
        if self.params.method == "cluster":
            piece_size = self.params.piece_size or max(1, self.params.max_size // 8)
            spans = pack(text, 0, len(text), measure, min(piece_size, budget), levels=PIECE_LEVELS)
            if len(spans) <= 1:
                return [(a, b, 0) for a, b in spans]
            vectors = self.embedder.embed([text[a:b] for a, b in spans])
            fits = first_fitting(spans, measure, budget)
            starts = cluster_segments(vectors, fits, sentence_splits(text, spans, measure, budget))
            ends = [*starts[1:], len(spans)]
            return [(spans[s][0], spans[e - 1][1], 0) for s, e in zip(starts, ends, strict=True)]
        spans = split_sentences(text)
        if len(spans) <= 1:
            return [(a, b, 0) for a, b in spans]
        vectors = self.embedder.embed([text[a:b] for a, b in spans])
        similarities = np.einsum("ij,ij->i", vectors[:-1], vectors[1:])
        params = self.params
        if params.breakpoint == "threshold":
            return group_spans(spans, breaks_below(similarities, params.threshold), measure, budget)
        scores = gap_scores(similarities, params.breakpoint)
        if params.percentile is None:
            breaks = calibrated_breaks(scores, spans, measure, budget, params.target)
        else:
            breaks = breaks_above_percentile(scores, params.percentile)
        return group_scored(spans, breaks, scores, measure, budget)
