"""The JSON bodies of chunk, ingest, search, segments and answer results: one builder for each.

The command line prints these bodies with ``--json`` and the HTTP server (``chunkwise serve``) returns
them, so a script can switch between the two without changing how it reads the result. Each builder
runs the step it reports on (so the accounting it returns is exactly that run's) and returns plain
JSON-ready data.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chunkwise.chunking import Chunk, Chunker
from chunkwise.chunking.limits import MAX_CHUNKS, check_chunk_count, check_chunk_floor
from chunkwise.chunking.llm_common import LLMChunker
from chunkwise.chunking.llm_report import ChunkingRun
from chunkwise.chunking.logprob_curve import BoundaryCurve
from chunkwise.document import Document
from chunkwise.ingest.report import IngestReport
from chunkwise.models.context import Models
from chunkwise.query.pipeline import Hit, QueryPipeline
from chunkwise.query.segments import Segment
from chunkwise.query.trace import Trace
from chunkwise.store.protocol import Store


def _content_chars(text: str) -> int:
    """Number of non-whitespace characters."""
    return len("".join(text.split()))


def chunk_stats(doc: Document, chunks: list[Chunk]) -> dict[str, Any]:
    """Count, size statistics (in the chunker's unit) and non-whitespace coverage."""
    sizes = [c.tokens for c in chunks]
    covered = 0
    reach = 0
    for c in sorted(chunks, key=lambda c: c.start):
        if c.end > reach:
            covered += _content_chars(doc.text[max(c.start, reach) : c.end])
            reach = c.end
    content = _content_chars(doc.text)
    return {
        "count": len(chunks),
        "mean_size": round(statistics.fmean(sizes), 2) if sizes else 0,
        "min_size": min(sizes, default=0),
        "max_size": max(sizes, default=0),
        "coverage": round(covered / content, 6) if content else 1.0,
    }


def chunk_row(chunk: Chunk) -> dict[str, Any]:
    """One chunk of a chunk result: id, offsets, text, unit ids, section path, size, and context when the
    chunker recorded one."""
    row: dict[str, Any] = {
        "id": chunk.id,
        "start": chunk.start,
        "end": chunk.end,
        "text": chunk.text,
        "unit_ids": list(chunk.unit_ids),
        "section": list(chunk.section),
        "tokens": chunk.tokens,
    }
    if chunk.context:
        row["context"] = chunk.context
    return row


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """One document chunked by one chunker: the chunks, the LLM-driven chunkers' run report, and the
    accounting of the model calls made for it."""

    doc: Document
    chunker: Chunker
    params: dict[str, Any]
    chunks: list[Chunk]
    run: ChunkingRun | None
    accounting: dict[str, Any]

    @property
    def curve(self) -> BoundaryCurve | None:
        """The ``logprob`` chunker's boundary score curve; ``None`` for every other chunker."""
        curve: BoundaryCurve | None = getattr(self.run, "curve", None)
        return curve

    def to_dict(self) -> dict[str, Any]:
        """``doc_id``, ``chunker``, ``params``, ``chunks``, ``stats`` and ``accounting``; the LLM-driven
        chunkers add ``llm_report`` (each window's outcome) and ``logprob`` adds ``curve``."""
        body: dict[str, Any] = {
            "doc_id": self.doc.id,
            "chunker": self.chunker.name,
            "params": self.params,
            "chunks": [chunk_row(c) for c in self.chunks],
            "stats": chunk_stats(self.doc, self.chunks),
            "accounting": self.accounting,
        }
        if self.run is not None:
            body["llm_report"] = self.run.report.to_dict()
        if self.curve is not None:
            body["curve"] = self.curve.to_dict()
        return body


def chunk_result(
    doc: Document, chunker: Chunker, params: Mapping[str, Any], models: Models, max_chunks: int = MAX_CHUNKS
) -> ChunkResult:
    """Chunk ``doc`` with ``chunker`` (built with ``params`` on ``models``), keeping the run report of an
    LLM-driven chunker and the accounting of the calls made after this call began; a document that
    becomes more than ``max_chunks`` chunks is refused (:mod:`chunkwise.chunking.limits`)."""
    mark = models.mark()
    check_chunk_floor(chunker, doc, max_chunks)
    run = chunker.run(doc) if isinstance(chunker, LLMChunker) else None
    chunks = run.chunks if run is not None else chunker.chunk(doc)
    check_chunk_count(doc, chunks, max_chunks)
    described = chunker.describe() if hasattr(chunker, "describe") else {"params": dict(params)}
    return ChunkResult(doc, chunker, described["params"], chunks, run, models.accounting(mark))


def search_body(query: QueryPipeline, text: str, k: int) -> dict[str, Any]:
    """Search for ``text``: ``query``, ``hits`` (chunk_id, doc_id, start, end, score, per-stage scores,
    header, text), ``trace`` (one entry per stage), ``totals`` and ``accounting``."""
    return _traced_body(query, text, "hits", lambda trace: query.search(text, k, trace))


def segments_body(query: QueryPipeline, text: str, preset: str | None = None) -> dict[str, Any]:
    """Relevant segments for ``text``: ``query``, ``segments`` (id, doc_id, start, end, text, first and
    last chunk, value), ``trace``, ``totals`` and ``accounting``."""
    return _traced_body(query, text, "segments", lambda trace: query.segments(text, trace, preset))


def _traced_body(
    query: QueryPipeline, text: str, key: str, run: Callable[[Trace], Sequence[Hit | Segment]]
) -> dict[str, Any]:
    """``run``'s results under ``key``, with the query, its trace, totals and the calls' accounting."""
    mark = query.models.mark()
    trace = Trace()
    found = run(trace)
    return {
        "query": text,
        key: [item.to_dict() for item in found],
        "trace": trace.to_dict(),
        "totals": trace.totals(),
        "accounting": query.models.accounting(mark),
    }


def answer_body(query: QueryPipeline, text: str) -> dict[str, Any]:
    """A grounded answer to ``text``: the answer, its citations with offsets, the grounding verdict,
    trace, totals and accounting (:meth:`~chunkwise.query.answer.Answer.to_dict`)."""
    return query.answer(text).to_dict()


def ingest_body(report: IngestReport, models: Models, store: Store) -> dict[str, Any]:
    """An ingest report (added, replaced, skipped, failed, chunks, seconds, embed_seconds) with the
    run's accounting and the store's counts after it."""
    return dict(report.to_dict(), accounting=models.accounting(), counts=store.counts())
