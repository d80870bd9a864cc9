"""Hybrid retrieval: fuse BM25 and dense scores into one ranking.

ChunkRAG combines BM25 and embedding retrieval "with equal weights (0.5 each)". Raw BM25 and cosine scores
live on different scales, so each is min-max normalised over the candidate set first:
``hybrid = w * minmax(bm25) + (1 - w) * minmax(dense)``. Reciprocal rank fusion (Cormack et al., 2009,
``sum 1 / (k + rank)`` with k = 60) is the scale-free alternative. Fused scores are divided by their best
possible value, so both methods give scores in [0, 1].
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.trace import Trace

Floats = npt.NDArray[np.float64]
FusionMethod = Literal["weighted", "rrf"]


def minmax(values: Floats) -> Floats:
    """Scale to [0, 1]; a constant vector becomes all ones (all zeros if it is constantly <= 0)."""
    if values.size == 0:
        return values.astype(np.float64)
    low, high = float(values.min()), float(values.max())
    if high == low:
        return np.full(values.shape, 1.0 if high > 0 else 0.0)
    return (values - low) / (high - low)


def weighted_fusion(bm25: Floats, dense: Floats, weight: float = 0.5) -> Floats:
    """``weight * minmax(bm25) + (1 - weight) * minmax(dense)``, element-wise over aligned candidates."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"fusion weight must lie in [0, 1], got {weight}")
    return weight * minmax(bm25) + (1.0 - weight) * minmax(dense)


def ranks(scores: Floats) -> Floats:
    """1-based rank of each score (highest first, ties by position); NaN scores get rank +inf."""
    order = np.argsort(np.where(np.isnan(scores), np.inf, -scores), kind="stable")
    result = np.empty(scores.shape, dtype=np.float64)
    result[order] = np.arange(1, scores.size + 1, dtype=np.float64)
    result[np.isnan(scores)] = np.inf
    return result


def rrf_fusion(score_lists: list[Floats], k: int = 60) -> Floats:
    """Reciprocal rank fusion of aligned score vectors, NaN meaning "not retrieved by this list",
    divided by the best possible value ``len(score_lists) / (k + 1)``."""
    total = np.zeros(score_lists[0].shape, dtype=np.float64)
    for scores in score_lists:
        total += 1.0 / (k + ranks(scores))
    return total * (k + 1) / len(score_lists)


class Fusion:
    """Stage: fuse the ``bm25`` and ``dense`` scores the retrievers put on each candidate.

    A candidate that BM25 did not match has BM25 score 0 (that is its true BM25 value); one the dense
    retriever did not return is NaN for RRF and scores by its exact cosine otherwise. When one retriever
    is switched off the other's normalised score is used alone.
    """

    name = "fusion"

    def __init__(self, method: FusionMethod = "weighted", weight: float = 0.5, rrf_k: int = 60) -> None:
        self.method = method
        self.weight = weight
        self.rrf_k = rrf_k

    def __call__(self, query: Query, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        """Score and sort ``candidates`` by the fused score."""
        with trace.stage(self.name, len(candidates)) as report:
            report.notes = {"method": self.method, "weight": self.weight, "rrf_k": self.rrf_k}
            if not candidates:
                return []
            lists = {
                name: np.array([c.scores.get(name, np.nan) for c in candidates], dtype=np.float64)
                for name in ("bm25", "dense")
                if any(name in c.scores for c in candidates)
            }
            if self.method == "rrf":
                fused = rrf_fusion(list(lists.values()), self.rrf_k)
            elif len(lists) == 2:
                fused = weighted_fusion(
                    np.nan_to_num(lists["bm25"]), np.nan_to_num(lists["dense"]), self.weight
                )
            else:
                fused = minmax(np.nan_to_num(next(iter(lists.values()))))
            for cand, value in zip(candidates, fused, strict=True):
                cand.score = float(value)
                cand.scores[self.name] = float(value)
            ranked = sorted(candidates, key=lambda c: -c.score)
            report.outputs = len(ranked)
            report.scores = {c.chunk_id: c.score for c in ranked}
            return ranked
