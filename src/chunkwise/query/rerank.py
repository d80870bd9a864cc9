"""Reranking with the configured :class:`~chunkwise.models.protocols.Reranker` (ChunkRAG's last step,
"Lost-in-Middle Reranking"). The reranker sees the header and the chunk text together."""

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

    def __init__(self, reranker: Reranker, top_n: int | None = None) -> None:
        self.reranker = reranker
        self.top_n = top_n

    def __call__(self, query: Query, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        """Candidates sorted by reranker score; the first ``top_n`` kept when set."""
        with trace.stage(self.name, len(candidates)) as report:
            if not candidates:
                return []
            scores = to_unit_interval(
                self.reranker.score(query.text, [c.contextual_text for c in candidates])
            )
            report.calls = 1
            for cand, value in zip(candidates, scores, strict=True):
                cand.score = float(value)
                cand.scores[self.name] = float(value)
            ranked = sorted(candidates, key=lambda c: -c.score)[: self.top_n]
            report.outputs = len(ranked)
            report.scores = {c.chunk_id: c.score for c in ranked}
            report.notes = {"reranker": self.reranker.name}
            return ranked
