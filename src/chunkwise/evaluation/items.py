"""What the metrics compare: gold spans, retrieved items, and one query's run.

Every location is a ``(doc_id, start, end)`` triple of Python ``str`` offsets into the document text, end
exclusive, the convention of :class:`~chunkwise.document.Unit` and :class:`~chunkwise.chunking.chunk.Chunk`.
A retrieved item is a chunk or an RSE segment alike: metrics only see its location and score.
"""

from __future__ import annotations

from dataclasses import dataclass

from chunkwise.spans import Located, Span

__all__ = ["Located", "QueryRun", "Retrieved", "Span"]


@dataclass(frozen=True, slots=True)
class Retrieved(Span):
    """One retrieved item (a chunk or a segment), in rank order; higher ``score`` is better."""

    score: float = 0.0


@dataclass(frozen=True, slots=True)
class QueryRun:
    """What one configuration returned for one query, beside the gold it is judged against.

    ``retrieved`` is the ranked list (best first). ``gold_spans`` is the span gold (empty for a data set
    with document-level gold only); ``gold_docs`` the relevant documents (for span data sets, the
    documents of the gold spans). ``oracle`` holds every chunk of the configuration's chunking that
    shares at least one character with a gold span: the best-case retrieval that precision-Ω scores.
    """

    qid: str
    retrieved: tuple[Retrieved, ...]
    gold_spans: tuple[Span, ...] = ()
    gold_docs: tuple[str, ...] = ()
    oracle: tuple[Span, ...] = ()

    def top(self, k: int | None) -> tuple[Retrieved, ...]:
        """The first ``k`` retrieved items (all of them when ``k`` is ``None``)."""
        return self.retrieved if k is None else self.retrieved[:k]
