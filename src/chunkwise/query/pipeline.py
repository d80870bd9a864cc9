"""The query pipeline: a question through the configured stages, to hits, segments or a cited answer.

``search`` runs the stages (:mod:`.stages`) and returns the best chunks as :class:`Hit` s; ``segments``
runs dsRAG's relevant segment extraction over the same ranking; ``answer`` answers from the hits, or
from the segments when segments are enabled. Every step reports into a :class:`~.trace.Trace`, and the
model calls of a question are read back from the run's ledger into ``Answer.accounting``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from numbers import Integral
from typing import Any

from chunkwise.config import PipelineConfig
from chunkwise.errors import ChunkwiseError, QueryError
from chunkwise.models.context import Models
from chunkwise.models.protocols import Vectors
from chunkwise.query.answer import Answer, AnswerGenerator, Source
from chunkwise.query.candidate import Candidate, Query, Stage
from chunkwise.query.segments import Segment, SegmentExtraction, rse_params
from chunkwise.query.stages import StageContext, build_stages
from chunkwise.query.trace import Trace
from chunkwise.spans import Span
from chunkwise.store.protocol import Store
from chunkwise.terms import check_query


@dataclass(frozen=True, slots=True)
class Hit(Span):
    """One search result: a chunk with exact offsets, its final score, and the query's trace."""

    chunk_id: str
    text: str
    score: float
    header: str
    scores: dict[str, float]
    trace: Trace = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (without the trace, which the search result carries once)."""
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "start": self.start,
            "end": self.end,
            "score": self.score,
            "scores": self.scores,
            "header": self.header,
            "text": self.text,
        }


def checked_k(k: object, error: type[ChunkwiseError] = QueryError) -> int:
    """``k``, the number of hits a retriever returns, as an ``int``; ``error`` (a
    :class:`~chunkwise.errors.QueryError` for the ``k`` of one call) names it unless it is a whole number
    of at least 1: ``2.5`` or ``True`` is no number of hits, and below 1 a slice ``[:k]`` would drop
    hits silently."""
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise error(f"k must be a whole number, got {k!r}")
    if k < 1:
        raise error(f"k must be at least 1, got {k}")
    return int(k)


class QueryPipeline:
    """Search, segments and answers over ``store`` as ``config`` says, with the models of ``models``."""

    def __init__(self, store: Store, models: Models, config: PipelineConfig) -> None:
        self.store = store
        self.models = models
        self.config = config

    @cached_property
    def stages(self) -> list[Stage]:
        """The configured stages, built (and their models loaded) on first use."""
        return build_stages(StageContext(self.config, self.store, self.models))

    def ranked(
        self, query: str, trace: Trace, vector: Vectors | None = None, wanted: int = 0
    ) -> list[Candidate]:
        """Every candidate the stages keep for ``query``, best first. ``vector``: the query's embedding
        when the caller computed it already (an evaluation embeds all its queries in one batch);
        ``wanted``: the hits the caller will take, which each retriever fetches at least."""
        state = Query(check_query(query), vector=vector, wanted=wanted)
        candidates: list[Candidate] = []
        for stage in self.stages:
            candidates = stage(state, candidates, trace)
        return candidates

    def search(
        self, query: str, k: int = 10, trace: Trace | None = None, *, vector: Vectors | None = None
    ) -> list[Hit]:
        """The ``k`` best chunks for ``query``; each hit carries the trace.

        Raises:
            QueryError: ``query`` holds no word, or ``k`` is no whole number of at least 1
                (:func:`checked_k`).
        """
        k = checked_k(k)
        trace = trace if trace is not None else Trace()
        return [
            Hit(c.doc_id, c.start, c.end, c.chunk_id, c.text, c.score, c.header, dict(c.scores), trace)
            for c in self.ranked(query, trace, vector, wanted=k)[:k]
        ]

    def segments(
        self,
        query: str,
        trace: Trace | None = None,
        preset: str | None = None,
        *,
        vector: Vectors | None = None,
    ) -> list[Segment]:
        """Relevant segments for ``query`` (dsRAG RSE over the ranked candidates), best first; ``preset``
        names the RSE preset (``None``: the configured one; an empty name is unknown, as the server
        answers it, not the configured one)."""
        trace = trace if trace is not None else Trace()
        cfg = self.config.segments
        params = rse_params(cfg.preset if preset is None else preset, **cfg.overrides())
        return SegmentExtraction(self.store, params).extract(self.ranked(query, trace, vector), trace)

    def answer(self, query: str) -> Answer:
        """A grounded, cited answer from the retrieved chunks (or segments, when enabled)."""
        cfg = self.config.answer
        trace = Trace()
        mark = self.models.mark()
        if self.config.segments.enabled:
            sources = [
                Source(s.doc_id, s.start, s.end, f"S{i}", s.id, s.text)
                for i, s in enumerate(self.segments(query, trace)[: cfg.sources], 1)
            ]
        else:
            sources = [
                Source(h.doc_id, h.start, h.end, f"S{i}", h.chunk_id, h.text)
                for i, h in enumerate(self.search(query, cfg.sources, trace), 1)
            ]
        generator = AnswerGenerator(
            self.models.llm() if cfg.mode == "llm" else None,
            cfg.mode,
            max_context_chars=cfg.max_context_chars,
            max_sentences=cfg.max_sentences,
            min_quote_chars=cfg.min_quote_chars,
        )
        answer = generator.answer(query, sources, trace)
        answer.accounting = self.models.accounting(mark)
        return answer
