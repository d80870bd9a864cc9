"""Reranking with the configured :class:`~chunkwise.models.protocols.Reranker` (ChunkRAG's last step,
"Lost-in-Middle Reranking"). The reranker sees the header and the chunk text together.

A cross-encoder costs one forward pass per candidate, so ``depth`` limits it to the best candidates of
the ranking it receives; the others follow them in their incoming order, scored below every reranked one
(``score = lowest reranked score x incoming score``, incoming scores lying in [0, 1]), so the list stays
complete for segment extraction and deeper evaluation cut-offs."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from chunkwise.models.protocols import Reranker
from chunkwise.query.candidate import Candidate, Query
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

    def __init__(self, reranker: Reranker, top_n: int | None = None, depth: int | None = None) -> None:
        if depth is not None and depth < 1:
            raise ValueError(f"rerank depth must be at least 1 (or None for every candidate), got {depth}")
        self.reranker = reranker
        self.top_n = top_n
        self.depth = depth

    def __call__(self, query: Query, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        """The first ``depth`` candidates (all when unset) sorted by reranker score, then the rest in
        their incoming order; the first ``top_n`` kept when set."""
        with trace.stage(self.name, len(candidates)) as report:
            if not candidates:
                return []
            cut = len(candidates) if self.depth is None else self.depth
            head, tail = candidates[:cut], candidates[cut:]
            scores = to_unit_interval(self.reranker.score(query.text, [c.contextual_text for c in head]))
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
            report.notes = {"reranker": self.reranker.name}
            if self.depth is not None:
                report.notes["not_scored"] = len(tail)
            return ranked
