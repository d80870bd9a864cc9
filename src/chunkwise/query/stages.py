"""The query stages, built from the configuration by name, in pipeline order.

:data:`STAGES` maps each stage name to a builder that returns the stage configured by a
:class:`~chunkwise.config.PipelineConfig`, or ``None`` when the configuration switches it off. The query
pipeline is the list of built stages, run in this order: ``rewrite`` (ChunkRAG query rewriting),
``retrieve`` (BM25 + dense), ``fusion``, ``redundancy`` (ChunkRAG redundancy removal), ``relevance``
(ChunkRAG's multi-stage LLM scoring with a dynamic threshold), ``rerank``. Models come from the run's
:class:`~chunkwise.models.Models`, so every stage's calls share its ledger and budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chunkwise.config import PipelineConfig
from chunkwise.models.context import Models
from chunkwise.query.candidate import Stage
from chunkwise.query.fusion import Fusion
from chunkwise.query.redundancy import Redundancy
from chunkwise.query.relevance import RelevanceFilter
from chunkwise.query.rerank import Rerank
from chunkwise.query.retrieve import Retrieve
from chunkwise.query.rewrite import QueryRewrite
from chunkwise.store.protocol import Store


@dataclass(frozen=True, slots=True)
class StageContext:
    """What a stage builder may use: the configuration, the store and the run's models."""

    config: PipelineConfig
    store: Store
    models: Models


StageBuilder = Callable[[StageContext], Stage | None]


def _rewrite(ctx: StageContext) -> Stage | None:
    return QueryRewrite(ctx.models.llm()) if ctx.config.rewrite.enabled else None


def _retrieve(ctx: StageContext) -> Stage:
    cfg = ctx.config.retrieval
    embedder = ctx.models.embedder() if cfg.dense else None
    return Retrieve(
        ctx.store, embedder, bm25=cfg.bm25, candidates=cfg.candidates, max_query_tokens=cfg.max_query_tokens
    )


def _fusion(ctx: StageContext) -> Stage:
    cfg = ctx.config.retrieval
    return Fusion(cfg.fusion, cfg.weight, cfg.rrf_k)


def _redundancy(ctx: StageContext) -> Stage | None:
    cfg = ctx.config.redundancy
    return Redundancy(cfg.threshold) if cfg.enabled else None


def _relevance(ctx: StageContext) -> Stage | None:
    cfg = ctx.config.relevance
    if not cfg.enabled:
        return None
    return RelevanceFilter(
        ctx.models.llm(),
        threshold=cfg.threshold,
        epsilon=cfg.epsilon,
        neutral_score=cfg.neutral_score,
        weights=cfg.weights,
        max_candidates=cfg.max_candidates,
    )


def _rerank(ctx: StageContext) -> Stage | None:
    cfg = ctx.config.rerank
    if not cfg.enabled:
        return None
    return Rerank(ctx.models.reranker(), cfg.top_n or None, cfg.depth or None, cfg.weight)


#: Stage name -> builder, in pipeline order.
STAGES: dict[str, StageBuilder] = {
    "rewrite": _rewrite,
    "retrieve": _retrieve,
    "fusion": _fusion,
    "redundancy": _redundancy,
    "relevance": _relevance,
    "rerank": _rerank,
}


def build_stages(ctx: StageContext) -> list[Stage]:
    """The stages the configuration switches on, in pipeline order."""
    return [stage for build in STAGES.values() if (stage := build(ctx)) is not None]
