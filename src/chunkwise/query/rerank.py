"""Reranking with the configured :class:`~chunkwise.models.protocols.Reranker` (ChunkRAG's last step,
"Lost-in-Middle Reranking"). The reranker sees the header and the chunk text together.

A cross-encoder costs one forward pass per candidate, so ``depth`` limits it to the best candidates of
the ranking it receives; the others follow them in their incoming order, scored below every reranked one
(``score = lowest reranked score x incoming score``, incoming scores lying in [0, 1]), so the list stays
complete for segment extraction and deeper evaluation cut-offs.

``weight`` is the reranker's share of the final score. At 1 its order alone ranks the head. Below 1 its
logits and the incoming scores, each min-max normalised over the head, are blended
(``weight x reranker + (1 - weight) x incoming``): a cross-encoder trained on web questions and short
passages is a strong but narrow judge, and out of its domain (source code, meeting transcripts, long
chunks read through one window) the hybrid ranking it replaces often knew better. Interpolating the two
is the usual cure (the "score interpolation" of the neural reranking literature)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from chunkwise.models.protocols import Reranker
from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.fusion import minmax
from chunkwise.query.trace import Trace


def to_unit_interval(scores: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """Scores as they are when all lie in [0, 1], else through the logistic function (raw logits)."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0 or (values.min() >= 0.0 and values.max() <= 1.0):
        return values
    return 1.0 / (1.0 + np.exp(-values))


class Rerank:
    """Stage: rescore the candidates with a reranker and sort by its score (in [0, 1])."""

    name = "rerank"

    def __init__(
        self, reranker: Reranker, top_n: int | None = None, depth: int | None = None, weight: float = 1.0
    ) -> None:
        if depth is not None and depth < 1:
            raise ValueError(f"rerank depth must be at least 1 (or None for every candidate), got {depth}")
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"rerank weight must lie in [0, 1], got {weight}")
        self.reranker = reranker
        self.top_n = top_n
        self.depth = depth
        self.weight = weight

    def __call__(self, query: Query, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        """The first ``depth`` candidates (all when unset) sorted by reranker score, then the rest in
        their incoming order; the first ``top_n`` kept when set."""
        with trace.stage(self.name, len(candidates)) as report:
            if not candidates:
                return []
            cut = len(candidates) if self.depth is None else self.depth
            head, tail = candidates[:cut], candidates[cut:]
            logits = self.reranker.score(query.text, [c.contextual_text for c in head])
            scores = self.blend(logits, np.array([c.score for c in head], dtype=np.float64))
            report.calls = 1
            for cand, value in zip(head, scores, strict=True):
                cand.score = float(value)
                cand.scores[self.name] = float(value)
            floor = float(scores.min())
            for cand in tail:
                cand.score = floor * min(max(cand.score, 0.0), 1.0)
            ranked = [*sorted(head, key=lambda c: -c.score), *tail][: self.top_n]
            report.outputs = len(ranked)
            report.scores = {c.chunk_id: c.score for c in ranked}
            report.notes = {"reranker": self.reranker.name, "weight": self.weight}
            if self.depth is not None:
                report.notes["not_scored"] = len(tail)
            return ranked

    def blend(
        self, logits: npt.NDArray[np.float32], incoming: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """The head's new scores in [0, 1]: the reranker's alone at ``weight`` 1, else its min-max
        normalised logits blended with the min-max normalised incoming scores."""
        if self.weight == 1.0:
            return to_unit_interval(logits)
        reranked = minmax(np.asarray(logits, dtype=np.float64))
        return self.weight * reranked + (1.0 - self.weight) * minmax(incoming)
