"""Score one configuration's query runs with a set of metrics: per-query values and their means."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from chunkwise.errors import ConfigError
from chunkwise.evaluation.chunk_stats import ChunkStats
from chunkwise.evaluation.costs import StageCost
from chunkwise.evaluation.items import QueryRun
from chunkwise.evaluation.metrics.registry import Metric
from chunkwise.evaluation.report import ConfigResult, QueryRecord


def check_gold(runs: Sequence[QueryRun], metrics: Sequence[Metric]) -> None:
    """Raise :class:`~chunkwise.errors.ConfigError` if a span metric meets a query without span gold."""
    require_span_gold(metrics, (run.qid for run in runs if not run.gold_spans))


def require_span_gold(metrics: Sequence[Metric], without_spans: Iterable[str]) -> None:
    """Raise :class:`~chunkwise.errors.ConfigError` if ``metrics`` hold a span metric and
    ``without_spans`` (the ids of the queries with document gold only) is not empty; a command checks
    its data set this way before it runs (or estimates) anything."""
    span_metrics = [m.name for m in metrics if m.gold == "spans"]
    missing = next(iter(without_spans), None)
    if span_metrics and missing is not None:
        raise ConfigError(
            f"metric {span_metrics[0]}: needs span gold, and query {missing!r} has only document gold;"
            " use document metrics (doc_recall@k, doc_precision@k, mrr@k, ndcg@k)"
        )


def score_config(
    name: str,
    config: dict[str, Any],
    runs: Sequence[QueryRun],
    metrics: Sequence[Metric],
    *,
    costs: Sequence[StageCost] = (),
    chunks: ChunkStats | None = None,
) -> ConfigResult:
    """Score every run with every metric; aggregates are the plain means over the queries."""
    if not runs:
        raise ConfigError(f"configuration {name!r}: no queries to score")
    check_gold(runs, metrics)
    records = tuple(
        QueryRecord(
            qid=run.qid,
            retrieved=run.retrieved,
            gold_spans=run.gold_spans,
            gold_docs=run.gold_docs,
            oracle=run.oracle,
            metrics={metric.name: metric(run) for metric in metrics},
        )
        for run in runs
    )
    aggregates = {
        metric.name: math.fsum(record.metrics[metric.name] for record in records) / len(records)
        for metric in metrics
    }
    return ConfigResult(
        name=name, config=config, metrics=aggregates, queries=records, costs=tuple(costs), chunks=chunks
    )
