"""ChunkRAG's multi-stage LLM relevance filter (Algorithm 1, lines 11-22).

For each candidate the LLM gives a base relevance score, then reflects on it (self-reflection), then a
critic gives its own score; the three are combined into one score. The paper does not print
``CombineScores``; chunkwise uses a weighted mean (equal weights by default), so a score stays in [0, 1].

The dynamic threshold keeps the candidates scoring at least ``T``: ``T = mean`` normally, and
``T = mean + std`` when the scores cluster tightly (variance below ``epsilon``), which is when the mean
alone would keep nearly everything. ``T`` is capped at the best score, so the best candidate is always
kept: ``mean + std`` can exceed the maximum (0.5, 0.55, 0.55 gives 0.5569), and when every score is
equal the rounded mean can land one unit in the last place above them. As an option, the LLM picks the
threshold from the scores (the paper's threshold prompt); that one is not capped, since a model may
judge that no candidate is relevant.

Replies are read by :func:`~chunkwise.query.llm_calls.parse_unit_score` (a labelled score, else the one
number in [0, 1] left once statements of the scale are removed). Replies that give no score in [0, 1], or
two different ones, are not errors: the step's score becomes ``neutral_score`` (0.5
by default) and the reply is recorded under ``notes["unparsed"]`` in the trace, so one rambling answer
neither drops nor promotes a chunk on its own and the failure stays visible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from chunkwise.models.protocols import LLM
from chunkwise.query import prompts
from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.llm_calls import ask, parse_unit_score
from chunkwise.query.trace import StageReport, Trace

ThresholdMode = Literal["dynamic", "llm"]


def combine_scores(base: float, reflect: float, critic: float, weights: Sequence[float] = (1, 1, 1)) -> float:
    """Weighted mean of the three step scores."""
    total = float(sum(weights))
    if total <= 0:
        raise ValueError("relevance weights must sum to a positive number")
    return (weights[0] * base + weights[1] * reflect + weights[2] * critic) / total


def dynamic_threshold(scores: Sequence[float], epsilon: float = 0.01) -> float:
    """``mean(S) + std(S)`` if ``var(S) < epsilon`` else ``mean(S)`` (population statistics), at most
    ``max(S)``: a threshold above every score would drop every candidate (see the module docstring)."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        raise ValueError("no scores to threshold")
    mean, var = float(values.mean()), float(values.var())
    threshold = mean + float(np.sqrt(var)) if var < epsilon else mean
    return min(threshold, float(values.max()))


class RelevanceFilter:
    """Stage: score each candidate with the LLM in three steps and keep those at or above the threshold."""

    name = "relevance"

    def __init__(
        self,
        llm: LLM,
        *,
        threshold: ThresholdMode = "dynamic",
        epsilon: float = 0.01,
        neutral_score: float = 0.5,
        weights: Sequence[float] = (1.0, 1.0, 1.0),
        max_candidates: int | None = None,
        max_chunk_chars: int = 2000,
    ) -> None:
        self.llm = llm
        self.threshold = threshold
        self.epsilon = epsilon
        self.neutral_score = neutral_score
        self.weights = tuple(weights)
        self.max_candidates = max_candidates
        self.max_chunk_chars = max_chunk_chars

    def _score(self, prompt: str, report: StageReport, chunk_id: str, step: str) -> float:
        reply = ask(self.llm, prompt, report, max_tokens=8, stage=f"relevance.{step}")
        value = parse_unit_score(reply)
        if value is None:
            report.notes.setdefault("unparsed", []).append(
                {"chunk_id": chunk_id, "step": step, "reply": reply}
            )
            return self.neutral_score
        return value

    def score(self, query: str, cand: Candidate, report: StageReport) -> float:
        """The combined base / self-reflection / critic score of one candidate."""
        chunk = cand.contextual_text[: self.max_chunk_chars]
        base = self._score(prompts.RELEVANCE.format(chunk=chunk, query=query), report, cand.chunk_id, "base")
        reflect = self._score(
            prompts.SELF_REFLECTION.format(score=base, chunk=chunk, query=query),
            report,
            cand.chunk_id,
            "reflect",
        )
        critic = self._score(
            prompts.CRITIC.format(score=base, reflected=reflect, chunk=chunk, query=query),
            report,
            cand.chunk_id,
            "critic",
        )
        report.notes.setdefault("steps", {})[cand.chunk_id] = [base, reflect, critic]
        return combine_scores(base, reflect, critic, self.weights)

    def _llm_threshold(self, scores: list[float], report: StageReport) -> float | None:
        listed = ", ".join(f"{s:.2f}" for s in scores)
        reply = ask(
            self.llm,
            prompts.THRESHOLD.format(scores=listed),
            report,
            max_tokens=8,
            stage="relevance.threshold",
        )
        value = parse_unit_score(reply)
        if value is None:
            report.notes.setdefault("unparsed", []).append({"step": "threshold", "reply": reply})
        return value

    def __call__(self, query: Query, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        """Score the first ``max_candidates`` candidates (the rest are dropped, and counted), then keep
        those scoring at least the threshold, in score order."""
        with trace.stage(self.name, len(candidates)) as report:
            limit = len(candidates) if self.max_candidates is None else self.max_candidates
            report.notes["not_scored"] = max(0, len(candidates) - limit)
            candidates = candidates[:limit]
            if not candidates:
                return []
            scores = [self.score(query.text, cand, report) for cand in candidates]
            threshold = self._llm_threshold(scores, report) if self.threshold == "llm" else None
            report.notes["threshold_source"] = "llm" if threshold is not None else "dynamic"
            if threshold is None:
                threshold = dynamic_threshold(scores, self.epsilon)
            report.notes["threshold"] = threshold
            for cand, value in zip(candidates, scores, strict=True):
                cand.score = value
                cand.scores[self.name] = value
            report.scores = {c.chunk_id: c.score for c in candidates}
            kept = sorted((c for c in candidates if c.score >= threshold), key=lambda c: -c.score)
            report.outputs = len(kept)
            return kept
