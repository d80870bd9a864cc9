"""Metrics named by strings: ``"recall@5"``, ``"iou@5"``, ``"precision_omega"``, ``"mrr@10"``, ...

A name is ``<metric>``, ``<metric>@<k>`` or ``<metric>@<n>t``; ``k`` cuts the ranked retrieval to its
first ``k`` items before scoring (no ``k``: the whole list), ``<n>t`` to a context of ``n`` tokens
(:mod:`.budget`: ``recall@400t``). Each metric declares the gold it needs: ``"spans"`` (character
ranges) or ``"docs"`` (document ids, which span data sets also have: the documents of their spans).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal

from chunkwise.errors import ConfigError
from chunkwise.evaluation.items import QueryRun
from chunkwise.evaluation.metrics.budget import within_budget
from chunkwise.evaluation.metrics.char_precision import char_precision
from chunkwise.evaluation.metrics.char_recall import char_recall
from chunkwise.evaluation.metrics.doc_precision import doc_precision
from chunkwise.evaluation.metrics.doc_recall import doc_recall
from chunkwise.evaluation.metrics.iou import span_iou
from chunkwise.evaluation.metrics.mrr import reciprocal_rank
from chunkwise.evaluation.metrics.ndcg import ndcg
from chunkwise.evaluation.metrics.precision import span_precision
from chunkwise.evaluation.metrics.precision_omega import precision_omega
from chunkwise.evaluation.metrics.recall import span_recall

GoldKind = Literal["spans", "docs"]
Scorer = Callable[[QueryRun, "int | None"], float]


@dataclass(frozen=True, slots=True)
class MetricDefinition:
    """One metric family: how to score a query, which gold it needs, whether ``@k`` applies."""

    scorer: Scorer
    gold: GoldKind
    takes_k: bool
    summary: str


#: Every metric by base name. Span metrics follow Chroma's report unless named ``char_*`` (LegalBench-RAG).
METRICS: dict[str, MetricDefinition] = {
    "recall": MetricDefinition(
        lambda run, k: span_recall(run.top(k), run.gold_spans), "spans", True, "Chroma character recall"
    ),
    "precision": MetricDefinition(
        lambda run, k: span_precision(run.top(k), run.gold_spans), "spans", True, "Chroma character precision"
    ),
    "iou": MetricDefinition(
        lambda run, k: span_iou(run.top(k), run.gold_spans), "spans", True, "Chroma intersection over union"
    ),
    "precision_omega": MetricDefinition(
        lambda run, _k: precision_omega(run.oracle, run.gold_spans),
        "spans",
        False,
        "Chroma precision-Ω (precision of the oracle retrieval of every chunk holding gold)",
    ),
    "char_recall": MetricDefinition(
        lambda run, k: char_recall(run.top(k), run.gold_spans),
        "spans",
        True,
        "LegalBench-RAG character recall (LlamaChunk's retrieval ratio)",
    ),
    "char_precision": MetricDefinition(
        lambda run, k: char_precision(run.top(k), run.gold_spans),
        "spans",
        True,
        "LegalBench-RAG character precision (LlamaChunk's signal ratio)",
    ),
    "doc_recall": MetricDefinition(
        lambda run, k: doc_recall(run.top(k), run.gold_docs), "docs", True, "document recall"
    ),
    "doc_precision": MetricDefinition(
        lambda run, k: doc_precision(run.top(k), run.gold_docs), "docs", True, "document precision"
    ),
    "mrr": MetricDefinition(
        lambda run, k: reciprocal_rank(run.top(k), run.gold_docs), "docs", True, "mean reciprocal rank"
    ),
    "ndcg": MetricDefinition(
        lambda run, k: ndcg(run.top(k), run.gold_docs, k), "docs", True, "nDCG, binary relevance"
    ),
}

#: Other names users know these metrics by.
ALIASES: dict[str, str] = {"signal_ratio": "char_precision", "retrieval_ratio": "char_recall"}

_NAME = re.compile(r"^([a-z_]+)(?:@(\d+)(t?))?$")


@dataclass(frozen=True, slots=True)
class Metric:
    """A parsed metric name, callable on a :class:`~chunkwise.evaluation.items.QueryRun`; ``budget`` is
    the context in tokens of an ``@<n>t`` name (``k`` is then ``None``)."""

    name: str
    base: str
    k: int | None
    definition: MetricDefinition
    budget: int | None = None

    @property
    def gold(self) -> GoldKind:
        """The gold this metric needs: ``"spans"`` or ``"docs"``."""
        return self.definition.gold

    def __call__(self, run: QueryRun) -> float:
        if self.budget is not None:
            run = replace(run, retrieved=within_budget(run.retrieved, self.budget))
        return self.definition.scorer(run, self.k)


def parse_metric(name: str) -> Metric:
    """Parse ``"recall@5"``, ``"recall@400t"`` and the like; raise :class:`~chunkwise.errors.ConfigError`
    on a bad name."""
    match = _NAME.match(name.strip().lower())
    base = ALIASES.get(match.group(1), match.group(1)) if match else ""
    if match is None or base not in METRICS:
        known = ", ".join(sorted(METRICS))
        raise ConfigError(f"metric {name!r}: unknown; expected one of {known}, optionally with @k or @<n>t")
    definition = METRICS[base]
    cut = int(match.group(2)) if match.group(2) else None
    if cut is not None and not definition.takes_k:
        raise ConfigError(f"metric {name!r}: {base} takes no @k or token budget")
    if cut is not None and cut < 1:
        raise ConfigError(f"metric {name!r}: k and token budgets must be at least 1")
    if match.group(3):
        return Metric(f"{base}@{cut}t", base, None, definition, budget=cut)
    return Metric(name=base if cut is None else f"{base}@{cut}", base=base, k=cut, definition=definition)


def parse_metrics(names: Iterable[str]) -> tuple[Metric, ...]:
    """Parse several names, dropping repeats (first occurrence kept)."""
    unique: dict[str, Metric] = {}
    for name in names:
        metric = parse_metric(name)
        unique.setdefault(metric.name, metric)
    return tuple(unique.values())
