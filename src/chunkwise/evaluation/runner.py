"""Run pipeline configurations on a data set and score them: the engine under ``chunkwise eval``.

For each configuration: index the data set's documents in a :class:`~chunkwise.kb.KnowledgeBase`
(parse is already done: the corpus is verbatim text; the knowledge base chunks, adds headers, embeds
and stores), ask every query (``search``, or ``segments`` when the configuration enables relevant
segment extraction, whose segments are scored like chunks), and score the ranked items with the
requested metrics. Time per stage comes from the knowledge base's ingest report (``index``: chunking,
headers and storing; ``embed``: embedding the chunks) and query traces (one stage per retrieval stage);
model calls, tokens and money from the model ledger every model of the run records into.

Indexes are cached under ``workdir``: one store per (data set folder, chunking, headers, embedder), so
configurations that differ only in retrieval settings reuse the same chunks and embeddings, and a
second run re-embeds nothing. Documents a cached store holds beyond the data set (from an earlier,
larger subsample) are removed before searching, so they never act as distractors by accident. A document
that fails to index (a chunk limit, a model error) stops the run with a
:class:`~chunkwise.errors.ConfigError`: scoring its queries as misses would report a silent 0.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkwise.config import LimitsConfig, PipelineConfig
from chunkwise.errors import ConfigError
from chunkwise.evaluation.chunk_stats import chunk_stats
from chunkwise.evaluation.costs import CostRecorder, StageCost
from chunkwise.evaluation.datasets import Dataset
from chunkwise.evaluation.items import QueryRun, Retrieved, Span
from chunkwise.evaluation.metrics.budget import items_to_fill
from chunkwise.evaluation.metrics.precision_omega import omega_chunks
from chunkwise.evaluation.metrics.registry import Metric, parse_metrics
from chunkwise.evaluation.report import ConfigResult, EvaluationReport
from chunkwise.evaluation.scoring import check_gold, score_config
from chunkwise.kb import KnowledgeBase
from chunkwise.models.accounting import CallRecord
from chunkwise.models.context import Models
from chunkwise.models.protocols import Embedder, Vectors, embed_queries, model_cache_name
from chunkwise.query.trace import Trace

#: The stage of a model call recorded without one of its own, by (phase, role); else the role names it.
UNLABELLED: dict[tuple[str, str], str] = {
    ("index", "embedder"): "embed",
    ("search", "embedder"): "dense",
    ("search", "reranker"): "rerank",
}

#: How many items each query retrieves by default (the recall/precision-against-k curves reach this);
#: a configuration retrieves more where a token budget needs them (:func:`run_config`).
DEFAULT_DEPTH = 20


@dataclass(frozen=True, slots=True)
class EvalProgress:
    """Progress of an evaluation: configuration, phase (``"index"`` or ``"retrieve"``), items done/total."""

    config: str
    phase: str
    done: int
    total: int


ProgressFn = Callable[[EvalProgress], None]


def default_metrics(dataset: Dataset, k: int = 5) -> tuple[str, ...]:
    """Span and document metrics at ``k`` for a span data set, with recall at 400- and 1000-token context
    budgets (:mod:`~chunkwise.evaluation.metrics.budget`); document metrics only otherwise."""
    documents = (f"doc_recall@{k}", f"doc_precision@{k}", f"mrr@{k}", f"ndcg@{k}")
    if not dataset.has_spans:
        return documents
    spans = (
        f"recall@{k}",
        f"precision@{k}",
        f"iou@{k}",
        "precision_omega",
        "recall@400t",
        "recall@1000t",
        f"char_recall@{k}",
        f"char_precision@{k}",
    )
    return spans + documents


def evaluate(
    dataset: Dataset,
    configs: Sequence[tuple[str, PipelineConfig]],
    *,
    workdir: str | Path,
    metrics: Sequence[str] | None = None,
    k: int = 5,
    depth: int = DEFAULT_DEPTH,
    models: Models | None = None,
    meta: dict[str, Any] | None = None,
    on_progress: ProgressFn | None = None,
) -> EvaluationReport:
    """Run and score each ``(name, config)`` on ``dataset``; metrics default to :func:`default_metrics`."""
    parsed = parse_metrics(metrics or default_metrics(dataset, k))
    depth = max([depth, *(m.k for m in parsed if m.k is not None)])
    check_gold(_gold_runs(dataset), parsed)
    results = tuple(
        run_config(
            dataset,
            name,
            config,
            parsed,
            workdir=Path(workdir),
            depth=depth,
            models=models,
            on_progress=on_progress,
        )
        for name, config in configs
    )
    return EvaluationReport(
        dataset={
            "name": dataset.name,
            "path": dataset.path,
            "documents": len(dataset.documents),
            "queries": len(dataset.queries),
            "characters": dataset.characters,
        },
        metrics=tuple(m.name for m in parsed),
        configs=results,
        meta={"depth": depth, **(meta or {})},
    )


def run_config(
    dataset: Dataset,
    name: str,
    config: PipelineConfig,
    metrics: Sequence[Metric],
    *,
    workdir: Path,
    depth: int = DEFAULT_DEPTH,
    models: Models | None = None,
    on_progress: ProgressFn | None = None,
) -> ConfigResult:
    """Index, query and score one configuration (see the module docstring).

    Each query retrieves ``depth`` items, more where a token budget metric needs them: as many as the
    shortest chunks of this chunking take to fill the largest budget, so that small chunks are scored on
    a full context as large ones are (each retriever then fetches that many candidates, when it is more
    than ``retrieval.candidates``).

    ``models`` is the run's model context; ``None`` builds one from ``config.models``. A given context
    serves the configuration with its own models, ledger and budget.
    """
    models = models if models is not None else Models(config.models)
    ledger_start = models.mark()
    costs = CostRecorder()

    def notify(phase: str, done: int, total: int) -> None:
        if on_progress is not None:
            on_progress(EvalProgress(name, phase, done, total))

    embedder = models.embedder()
    with KnowledgeBase(index_path(workdir, dataset, config, embedder), config, models=models) as kb:
        wanted = {doc.id for doc in dataset.documents}
        for stale in (info.doc_id for info in kb.store.documents() if info.doc_id not in wanted):
            kb.delete(stale)
        ingest = kb.add_documents(
            list(dataset.documents), on_progress=lambda e: notify("index", e.done, e.total)
        )
        if ingest.failed:
            doc_id, reason = ingest.failed[0]
            raise ConfigError(
                f"configuration {name!r}: document {doc_id!r} could not be indexed ({reason});"
                f" {len(ingest.failed)} of {len(dataset.documents)} failed, and a document missing from"
                " the index would score 0 on every query that needs it"
            )
        indexed = models.mark()
        costs.add(StageCost("index", seconds=max(ingest.seconds - ingest.embed_seconds, 0.0)))
        costs.add(StageCost("embed", seconds=ingest.embed_seconds))
        chunks = {
            doc.id: [Span(doc.id, s, e) for s, e in kb.store.chunk_spans(doc.id)] for doc in dataset.documents
        }
        lengths = [c.end - c.start for spans in chunks.values() for c in spans]
        depth = max([depth, *(items_to_fill(lengths, m.budget) for m in metrics if m.budget is not None)])
        vectors = _query_vectors(embedder, [q.query for q in dataset.queries], config, costs)
        runs = []
        for done, query in enumerate(dataset.queries, start=1):
            trace = Trace()
            vector = vectors[done - 1] if vectors is not None else None
            retrieved = _retrieve(kb, config, query.query, depth, trace, vector=vector)
            runs.append(
                QueryRun(query.qid, retrieved, query.spans, query.gold_docs, _oracle(query.spans, chunks))
            )
            for report in trace.stages:
                costs.add(StageCost(report.stage, seconds=report.seconds))
            notify("retrieve", done, len(dataset.queries))
    records = models.ledger.records
    for record in records[ledger_start:indexed]:
        costs.add(_model_cost(record, "index"))
    for record in records[indexed:]:
        costs.add(_model_cost(record, "search"))
    return score_config(
        name,
        config.to_dict(),
        runs,
        metrics,
        costs=costs.stages(),
        chunks=chunk_stats(lengths),
    )


def _query_vectors(
    embedder: Embedder, queries: list[str], config: PipelineConfig, costs: CostRecorder
) -> Vectors | None:
    """Every query embedded in one batch (``None`` when dense retrieval is off).

    The pipeline embeds one query per search; a single-text forward pass costs several times the
    per-text share of a batch, so an evaluation of hundreds of queries would spend most of its time
    there. They are embedded on the query side, as the ``retrieve`` stage does
    (:func:`~chunkwise.models.protocols.embed_queries`). The batch's time is reported under the ``dense``
    stage, so the report's total stays honest. A stage that rewrites a query embeds the rewrite itself.
    """
    if not config.retrieval.dense or not queries:
        return None
    began = time.perf_counter()
    vectors = embed_queries(embedder, queries)
    costs.add(StageCost("dense", seconds=time.perf_counter() - began))
    return vectors


def index_path(workdir: Path, dataset: Dataset, config: PipelineConfig, embedder: Embedder) -> Path:
    """The cached store for this data set and ingest shape (chunking, headers, embedder): the
    fingerprint that makes a knowledge base re-ingest a document, with the embedder named as its cached
    vectors are (release and build too: :func:`~chunkwise.models.protocols.model_cache_name`), so that an
    evaluation never scores vectors of another graph than the one that embeds its queries. The data set
    is named by its folder's name and a digest of its resolved path, so two sets in folders of the same
    name (``a/dev`` and ``b/dev``) keep one index each instead of re-indexing one over the other on every
    run.

    A limit of chunks a document other than the default (``limits.max_chunks``; the byte and character
    limits bound parsing, which an evaluation's documents skip) names the index too: a knowledge base
    keeps a document it stored under a looser limit, so an index built under it would let a
    configuration with ``max_chunks = 5`` pass where a fresh index refuses its documents."""
    folder = hashlib.sha256(Path(dataset.path).resolve().as_posix().encode()).hexdigest()[:8]
    fingerprint = config.ingest_fingerprint(model_cache_name(embedder))
    if config.limits.max_chunks != LimitsConfig.max_chunks:  # the one limit documents given as text meet
        fingerprint += f"-max-chunks-{config.limits.max_chunks}"
    return workdir / "indexes" / f"{dataset.name}-{folder}-{fingerprint}"


def _model_cost(record: CallRecord, phase: str) -> StageCost:
    """One model call as a cost record of its stage (the time is in the stage timers already)."""
    return StageCost(
        record.stage or UNLABELLED.get((phase, record.role), record.role),
        calls=0 if record.cached else 1,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cost_usd=record.cost,
    )


def _retrieve(
    kb: KnowledgeBase, config: PipelineConfig, query: str, depth: int, trace: Trace, *, vector: Vectors | None
) -> tuple[Retrieved, ...]:
    if config.segments.enabled:
        segments = kb.query.segments(query, trace, vector=vector)[:depth]
        return tuple(Retrieved(s.doc_id, s.start, s.end, s.value) for s in segments)
    hits = kb.query.search(query, k=depth, trace=trace, vector=vector)
    return tuple(Retrieved(h.doc_id, h.start, h.end, h.score) for h in hits)


def _oracle(gold: Sequence[Span], chunks: dict[str, list[Span]]) -> tuple[Span, ...]:
    """The chunks of the gold documents that hold gold text (what precision-Ω scores)."""
    candidates = [chunk for doc_id in dict.fromkeys(s.doc_id for s in gold) for chunk in chunks[doc_id]]
    return tuple(omega_chunks(candidates, gold))


def _gold_runs(dataset: Dataset) -> list[QueryRun]:
    """Empty runs carrying each query's gold, to check metrics against the gold before any work."""
    return [QueryRun(q.qid, (), q.spans, q.gold_docs) for q in dataset.queries]
