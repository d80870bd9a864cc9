"""The knowledge base: ingest documents, then search, extract segments and answer, every step traced.

    kb = KnowledgeBase("my-kb", load_config(preset="fast"))
    report = kb.add(["docs/"])                      # parse -> chunk -> headers -> embed -> store
    hits = kb.search("baggage allowance", k=5)      # hybrid retrieval and the enabled query stages
    answer = kb.answer("How heavy may a checked bag be?")

Ingest is per document atomic (see :mod:`chunkwise.store.database`); a file that fails to parse or chunk
is reported in :class:`IngestReport` and the batch goes on. Unchanged documents (same content hash and
same chunking/header/embedder settings) are skipped; changed ones are replaced. Models are created on
first use from the ``[models]`` section through the model layer's factories (with caching, and accounting
into :attr:`KnowledgeBase.ledger`), or passed in directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chunkwise.chunking.base import Chunker
from chunkwise.chunking.chunk import Chunk
from chunkwise.chunking.limits import chunk_within
from chunkwise.config import PipelineConfig
from chunkwise.document import Document
from chunkwise.errors import BudgetExceededError, ChunkwiseError, failure_reason
from chunkwise.models import new_ledger
from chunkwise.models.accounting import Ledger
from chunkwise.models.protocols import LLM, Embedder, Reranker
from chunkwise.parsing.files import folder_files
from chunkwise.retrieval.answer import Answer, AnswerGenerator, Source
from chunkwise.retrieval.candidate import Candidate, Stage, contextual_text
from chunkwise.retrieval.fusion import Fusion
from chunkwise.retrieval.headers import ContextualHeaders
from chunkwise.retrieval.redundancy import Redundancy
from chunkwise.retrieval.relevance import RelevanceFilter
from chunkwise.retrieval.rerank import Rerank
from chunkwise.retrieval.rewrite import QueryRewrite
from chunkwise.retrieval.segments import Segment, SegmentExtraction, rse_params
from chunkwise.retrieval.trace import Trace
from chunkwise.store.database import Store

#: File extensions picked up when a directory is ingested.
INGEST_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".docx", ".pptx"})


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: a chunk with exact offsets, its final score, and the query's trace."""

    chunk_id: str
    doc_id: str
    start: int
    end: int
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


@dataclass(frozen=True, slots=True)
class IngestEvent:
    """Progress of an ingest: the item just handled and how far the batch is."""

    source: str
    status: str
    done: int
    total: int
    chunks: int = 0


@dataclass(slots=True)
class IngestReport:
    """What an ingest did: documents added, replaced, skipped, failed (with reasons) and its timing."""

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "added": self.added,
            "replaced": self.replaced,
            "skipped": self.skipped,
            "failed": [{"source": s, "error": e} for s, e in self.failed],
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
        }


ProgressFn = Callable[[IngestEvent], None]


@dataclass(slots=True)
class _Prepared:
    doc: Document
    chunks: list[Chunk]
    headers: list[str]
    summary: str
    replacing: bool


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files named directly, plus the supported files under named directories (sorted, recursive;
    special files such as a named pipe called ``notes.txt`` are kept, for parsing to report)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(folder_files(path, INGEST_SUFFIXES))
        else:
            files.append(path)
    return files


class KnowledgeBase:
    """A store directory plus a pipeline configuration. Models are built lazily: a ``fast`` search
    never loads an LLM."""

    def __init__(
        self,
        path: str | Path,
        config: PipelineConfig | None = None,
        *,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.config = config or PipelineConfig()
        retrieval = self.config.retrieval
        self.store = Store(
            path, hnsw_threshold=retrieval.hnsw_threshold, bm25s_threshold=retrieval.bm25s_threshold
        )
        self._embedder = embedder
        self._llm = llm
        self._reranker = reranker
        self.ledger = new_ledger(self.config.models)

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- models ----------------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The embedder (from ``[models] embedder`` on first use)."""
        if self._embedder is None:
            from chunkwise.models import get_embedder

            self._embedder = get_embedder(config=self.config.models, ledger=self.ledger)
        return self._embedder

    @property
    def llm(self) -> LLM:
        """The LLM (from ``[models] llm`` on first use)."""
        if self._llm is None:
            from chunkwise.models import get_llm

            self._llm = get_llm(config=self.config.models, ledger=self.ledger)
        return self._llm

    @property
    def reranker(self) -> Reranker:
        """The reranker (from ``[models] reranker`` on first use)."""
        if self._reranker is None:
            from chunkwise.models import get_reranker

            self._reranker = get_reranker(config=self.config.models, ledger=self.ledger)
        return self._reranker

    def accounting_since(self, mark: int) -> dict[str, Any]:
        """Model calls, cache hits, tokens and cost recorded by the ledger after record number ``mark``."""
        since = Ledger()
        for record in self.ledger.records[mark:]:
            since.record(record)
        return since.to_dict()

    # --- ingest ----------------------------------------------------------------------------------

    def add(self, paths: Sequence[str | Path], on_progress: ProgressFn | None = None) -> IngestReport:
        """Parse, chunk, contextualise, embed and store files (directories are searched for supported
        files). Per-file errors are collected in the report; the batch goes on."""
        from chunkwise.parsing import parse_file

        files = expand_paths(paths)
        report = IngestReport()
        began = time.perf_counter()

        def documents() -> Iterable[Document | tuple[str, str]]:
            for file in files:
                try:
                    yield parse_file(file)
                except (ChunkwiseError, OSError) as exc:
                    yield (str(file), failure_reason(exc))
                except Exception as exc:  # a parser bug must not end the batch; it is reported as such
                    yield (str(file), f"unexpected {type(exc).__name__}: {exc}")

        self._ingest(documents(), len(files), report, on_progress)
        report.seconds = time.perf_counter() - began
        return report

    def add_documents(self, docs: Sequence[Document], on_progress: ProgressFn | None = None) -> IngestReport:
        """Store already-parsed documents (evaluation data sets come this way)."""
        report = IngestReport()
        began = time.perf_counter()
        self._ingest(iter(docs), len(docs), report, on_progress)
        report.seconds = time.perf_counter() - began
        return report

    def delete(self, doc_id: str) -> bool:
        """Remove a document; False if it was not stored."""
        return self.store.delete(doc_id)

    def _chunker(self) -> Chunker:
        from chunkwise.chunking import get_chunker

        return get_chunker(self.config.chunking.name, **self.config.chunking.params)

    def _headers(self) -> ContextualHeaders | None:
        cfg = self.config.headers
        if not cfg.enabled:
            return None
        return ContextualHeaders(
            self.llm if cfg.llm else None, title=cfg.title, summary=cfg.summary, section=cfg.section
        )

    def _ingest(
        self,
        items: Iterable[Document | tuple[str, str]],
        total: int,
        report: IngestReport,
        on_progress: ProgressFn | None,
    ) -> None:
        embedder = self.embedder
        self.store.check_embedder(embedder.name, embedder.dim)
        fingerprint = self.config.ingest_fingerprint(embedder.name)
        chunker = self._chunker()
        headers = self._headers()
        pending: list[_Prepared] = []
        done = 0

        def notify(source: str, status: str, chunks: int = 0) -> None:
            if on_progress is not None:
                on_progress(IngestEvent(source, status, done, total, chunks))

        def flush() -> None:
            nonlocal done
            texts = [
                contextual_text(h, c.text) for p in pending for c, h in zip(p.chunks, p.headers, strict=True)
            ]
            began = time.perf_counter()
            vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
            report.embed_seconds += time.perf_counter() - began
            row = 0
            for item in pending:
                n = len(item.chunks)
                self.store.put(
                    item.doc,
                    item.chunks,
                    item.headers,
                    vectors[row : row + n],
                    fingerprint=fingerprint,
                    summary=item.summary,
                )
                row += n
                (report.replaced if item.replacing else report.added).append(item.doc.id)
                report.chunks += n
                done += 1
                notify(item.doc.id, "replaced" if item.replacing else "added", n)
            pending.clear()

        for item in items:
            if isinstance(item, tuple):
                report.failed.append(item)
                done += 1
                notify(item[0], "failed")
                continue
            doc = item
            state = self.store.state(doc.id)
            if state == (doc.content_hash, fingerprint):
                report.skipped.append(doc.id)
                done += 1
                notify(doc.id, "skipped")
                continue
            try:
                chunks = chunk_within(chunker, doc)
                context = headers.document_context(doc) if headers else None
            except BudgetExceededError:
                flush()  # keep the documents already prepared, then stop the whole batch
                raise
            except ChunkwiseError as exc:
                report.failed.append((doc.source or doc.id, failure_reason(exc)))
                done += 1
                notify(doc.id, "failed")
                continue
            prefixes = [
                "\n".join(
                    p for p in ((headers.header(c, context) if headers and context else ""), c.context) if p
                )
                for c in chunks
            ]
            pending.append(
                _Prepared(doc, chunks, prefixes, context.summary if context else "", state is not None)
            )
            if sum(len(p.chunks) for p in pending) >= self.config.retrieval.embed_batch:
                flush()
        flush()

    # --- query -----------------------------------------------------------------------------------

    def _stages(self) -> list[Stage]:
        cfg = self.config
        stages: list[Stage] = [Fusion(cfg.retrieval.fusion, cfg.retrieval.weight, cfg.retrieval.rrf_k)]
        if cfg.redundancy.enabled:
            stages.append(Redundancy(cfg.redundancy.threshold))
        if cfg.relevance.enabled:
            stages.append(
                _Limited(
                    RelevanceFilter(
                        self.llm,
                        threshold=cfg.relevance.threshold,
                        epsilon=cfg.relevance.epsilon,
                        neutral_score=cfg.relevance.neutral_score,
                        weights=cfg.relevance.weights,
                    ),
                    cfg.relevance.max_candidates,
                )
            )
        if cfg.rerank.enabled:
            stages.append(Rerank(self.reranker, cfg.rerank.top_n or None))
        return stages

    def _retrieve(self, query: str, trace: Trace) -> list[Candidate]:
        cfg = self.config.retrieval
        if not (cfg.bm25 or cfg.dense):
            raise ChunkwiseError("retrieval needs bm25 or dense (or both) switched on")
        keys: dict[int, dict[str, float]] = {}
        if cfg.bm25:
            with trace.stage("bm25") as report:
                found = self.store.bm25(query, cfg.candidates)
                for key, score in found:
                    keys.setdefault(key, {})["bm25"] = score
                report.outputs = len(found)
        query_vector = None
        if cfg.dense:
            embedder = self.embedder  # loaded before the clock starts: the trace times the query only
            with trace.stage("dense") as report:
                began = time.perf_counter()
                query_vector = embedder.embed([query])[0]
                report.notes["embed_seconds"] = time.perf_counter() - began
                index = self.store.dense_index()
                report.notes["index"] = "hnsw" if index.uses_hnsw else "exact"
                found = index.search(query_vector, cfg.candidates)
                for key, _ in found:
                    keys.setdefault(key, {})
                report.outputs = len(found)
        candidates = self.store.candidates(list(keys))
        for cand in candidates:
            cand.scores.update(keys[cand.key])
            if query_vector is not None and cand.vector is not None:
                cand.scores["dense"] = float(cand.vector @ query_vector)
        return candidates

    def _ranked(self, query: str, trace: Trace) -> list[Candidate]:
        if self.config.rewrite.enabled:
            query = QueryRewrite(self.llm).rewrite(query, trace)
        candidates = self._retrieve(query, trace)
        for stage in self._stages():
            candidates = stage(query, candidates, trace)
        return candidates

    def search(self, query: str, k: int = 10, trace: Trace | None = None) -> list[Hit]:
        """The ``k`` best chunks for ``query`` after every enabled stage; each hit carries the trace."""
        trace = trace if trace is not None else Trace()
        ranked = self._ranked(query, trace)[:k]
        return [
            Hit(c.chunk_id, c.doc_id, c.start, c.end, c.text, c.score, c.header, dict(c.scores), trace)
            for c in ranked
        ]

    def segments(self, query: str, trace: Trace | None = None, preset: str | None = None) -> list[Segment]:
        """Relevant segments for ``query`` (dsRAG RSE over the ranked candidates), best first."""
        trace = trace if trace is not None else Trace()
        cfg = self.config.segments
        params = rse_params(preset or cfg.preset, **cfg.overrides())
        return SegmentExtraction(self.store, params).extract(self._ranked(query, trace), trace)

    def answer(self, query: str) -> Answer:
        """A grounded, cited answer from the retrieved chunks (or segments, when enabled)."""
        cfg = self.config.answer
        trace = Trace()
        mark = len(self.ledger.records)
        if self.config.segments.enabled:
            sources = [
                Source(f"S{i}", s.id, s.doc_id, s.start, s.end, s.text)
                for i, s in enumerate(self.segments(query, trace)[: cfg.sources], 1)
            ]
        else:
            sources = [
                Source(f"S{i}", h.chunk_id, h.doc_id, h.start, h.end, h.text)
                for i, h in enumerate(self.search(query, cfg.sources, trace), 1)
            ]
        generator = AnswerGenerator(
            self.llm if cfg.mode == "llm" else None,
            cfg.mode,
            max_context_chars=cfg.max_context_chars,
            max_sentences=cfg.max_sentences,
            min_quote_chars=cfg.min_quote_chars,
        )
        answer = generator.answer(query, sources, trace)
        answer.accounting = self.accounting_since(mark)
        return answer


class _Limited:
    """Runs an expensive stage on the first ``limit`` candidates only; the rest are dropped (and counted)."""

    def __init__(self, stage: Stage, limit: int) -> None:
        self.stage = stage
        self.limit = limit
        self.name = stage.name

    def __call__(self, query: str, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
        kept = self.stage(query, candidates[: self.limit], trace)
        trace.get(self.name).notes["not_scored"] = max(0, len(candidates) - self.limit)
        return kept
