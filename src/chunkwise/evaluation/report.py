"""The evaluation result format (JSON), and an independent check that recomputes it.

One :class:`EvaluationReport` holds the data set description, the metric names, and one
:class:`ConfigResult` per configuration: its name, its configuration mapping, the aggregate metrics (the
mean over queries of each per-query value), one :class:`QueryRecord` per query (the ranked retrieved
items with doc id, start, end, score and rank; the gold; the oracle chunks precision-Ω needs; the
per-query metric values), the cost and time per stage, and chunk-size statistics.

Everything an aggregate depends on is in the JSON, so :func:`recompute` can rebuild every number from
the per-query rows alone, with nothing but the metric definitions; :func:`verify` lists the numbers that
disagree. The test suite runs it on every report it produces.

The file is standard JSON: a number that is not finite (NaN, infinity), which no metric gives on valid
input but a degenerate model score could, is written as ``null`` and read back as NaN, so that the rest
of an expensive run is kept and any JSON reader accepts it; :func:`verify` reports a ``null`` aggregate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkwise.errors import ConfigError
from chunkwise.evaluation.bootstrap import DifferenceInterval, paired_bootstrap
from chunkwise.evaluation.chunk_stats import ChunkStats
from chunkwise.evaluation.costs import StageCost
from chunkwise.evaluation.items import QueryRun, Retrieved, Span
from chunkwise.evaluation.metrics.registry import parse_metric

FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class QueryRecord:
    """One query of one configuration: what was retrieved, the gold, and the metric values."""

    qid: str
    retrieved: tuple[Retrieved, ...]
    gold_spans: tuple[Span, ...]
    gold_docs: tuple[str, ...]
    oracle: tuple[Span, ...]
    metrics: dict[str, float]

    def run(self) -> QueryRun:
        """The :class:`~chunkwise.evaluation.items.QueryRun` the metrics score."""
        return QueryRun(self.qid, self.retrieved, self.gold_spans, self.gold_docs, self.oracle)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping; ``rank`` is 1-based."""
        return {
            "qid": self.qid,
            "retrieved": [
                {"doc_id": r.doc_id, "start": r.start, "end": r.end, "score": r.score, "rank": rank}
                for rank, r in enumerate(self.retrieved, start=1)
            ],
            "gold": {"spans": _spans_to_rows(self.gold_spans), "docs": list(self.gold_docs)},
            "oracle": _spans_to_rows(self.oracle),
            "metrics": dict(self.metrics),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QueryRecord:
        """Inverse of :meth:`to_dict` (items are ordered by ``rank``)."""
        rows = sorted(data["retrieved"], key=lambda row: row["rank"])
        return cls(
            qid=data["qid"],
            retrieved=tuple(Retrieved(r["doc_id"], r["start"], r["end"], _number(r["score"])) for r in rows),
            gold_spans=_spans_from_rows(data["gold"]["spans"]),
            gold_docs=tuple(data["gold"]["docs"]),
            oracle=_spans_from_rows(data["oracle"]),
            metrics={name: _number(value) for name, value in data["metrics"].items()},
        )


@dataclass(frozen=True, slots=True)
class ConfigResult:
    """Everything measured for one configuration."""

    name: str
    config: dict[str, Any]
    metrics: dict[str, float]
    queries: tuple[QueryRecord, ...]
    costs: tuple[StageCost, ...] = ()
    chunks: ChunkStats | None = None

    def values(self, metric: str) -> list[float]:
        """The per-query values of ``metric``, in query order."""
        return [record.metrics[metric] for record in self.queries]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "name": self.name,
            "config": self.config,
            "metrics": dict(self.metrics),
            "costs": [cost.to_dict() for cost in self.costs],
            "chunks": self.chunks.to_dict() if self.chunks else None,
            "queries": [record.to_dict() for record in self.queries],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfigResult:
        """Inverse of :meth:`to_dict`."""
        return cls(
            name=data["name"],
            config=dict(data.get("config") or {}),
            metrics={name: _number(value) for name, value in data["metrics"].items()},
            queries=tuple(QueryRecord.from_dict(row) for row in data["queries"]),
            costs=tuple(StageCost.from_dict(row) for row in data.get("costs") or []),
            chunks=ChunkStats.from_dict(data["chunks"]) if data.get("chunks") else None,
        )


@dataclass(frozen=True, slots=True)
class EvaluationReport:
    """The result of evaluating one or more configurations on one data set."""

    dataset: dict[str, Any]
    metrics: tuple[str, ...]
    configs: tuple[ConfigResult, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    def intervals(
        self, *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0
    ) -> dict[str, dict[str, DifferenceInterval]]:
        """Paired bootstrap intervals of (config - first config) per metric, for every later config;
        empty when there are fewer than two queries, which give no interval."""
        if not self.configs or len(self.configs[0].queries) < 2:
            return {}
        base = self.configs[0]
        qids = [record.qid for record in base.queries]
        for config in self.configs[1:]:
            if [record.qid for record in config.queries] != qids:
                raise ConfigError(
                    f"configurations {base.name!r} and {config.name!r} were run on different queries"
                )
        return {
            config.name: {
                metric: paired_bootstrap(
                    base.values(metric),
                    config.values(metric),
                    resamples=resamples,
                    confidence=confidence,
                    seed=seed,
                )
                for metric in self.metrics
            }
            for config in self.configs[1:]
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "format_version": FORMAT_VERSION,
            "dataset": self.dataset,
            "metrics": list(self.metrics),
            "meta": self.meta,
            "configs": [config.to_dict() for config in self.configs],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluationReport:
        """Inverse of :meth:`to_dict`; a result of another format version raises :class:`ConfigError`."""
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise ConfigError(
                f"evaluation results of format version {version!r}; this version reads {FORMAT_VERSION}"
            )
        return cls(
            dataset=dict(data["dataset"]),
            metrics=tuple(data["metrics"]),
            configs=tuple(ConfigResult.from_dict(row) for row in data["configs"]),
            meta=dict(data.get("meta") or {}),
        )

    def write(self, path: str | Path) -> None:
        """Write the JSON file (see :func:`write_json`)."""
        write_json(path, self.to_dict(), separators=(",", ":"))

    @classmethod
    def read(cls, path: str | Path) -> EvaluationReport:
        """Read a file written by :meth:`write`."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def write_json(path: str | Path, data: Any, *, separators: tuple[str, str] | None = None) -> None:
    """Write ``data`` to ``path`` as standard JSON: UTF-8, every float that is not finite as ``null``
    (``json.dumps`` would write ``NaN`` or ``Infinity``, which JSON does not have and strict readers
    refuse), via a temporary file so that a crash leaves no half-written file."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    text = json.dumps(_finite(data), ensure_ascii=False, allow_nan=False, separators=separators)
    partial.write_text(text, encoding="utf-8")
    partial.replace(target)


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite, at any depth, replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _number(value: Any) -> float:
    """A number read from the JSON: ``null`` (a number that was not finite, see :func:`write_json`) is NaN."""
    return math.nan if value is None else float(value)


def recompute(data: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Every aggregate of a report's JSON mapping, rebuilt from its per-query rows alone.

    For each configuration and metric: the metric scored afresh on each query's retrieved items, gold
    and oracle chunks, then averaged over the queries. Neither the stored per-query values nor the stored
    aggregates are read.
    """
    results: dict[str, dict[str, float]] = {}
    for config in data["configs"]:
        runs = [QueryRecord.from_dict(row).run() for row in config["queries"]]
        results[config["name"]] = {
            name: math.fsum(parse_metric(name)(run) for run in runs) / len(runs) if runs else 0.0
            for name in data["metrics"]
        }
    return results


def verify(data: dict[str, Any], tolerance: float = 1e-9) -> list[str]:
    """The aggregates of a report's JSON mapping that :func:`recompute` does not reproduce (empty if none)."""
    problems: list[str] = []
    for name, values in recompute(data).items():
        stored = next(config["metrics"] for config in data["configs"] if config["name"] == name)
        for metric, value in values.items():
            # written so that a stored NaN (which compares false with anything) or null is reported
            stored_value = stored.get(metric)
            if stored_value is None or not abs(stored_value - value) <= tolerance:
                problems.append(f"{name}: {metric} stored {stored.get(metric)!r}, recomputed {value!r}")
    return problems


def _spans_to_rows(spans: Sequence[Span]) -> list[dict[str, Any]]:
    return [{"doc_id": s.doc_id, "start": s.start, "end": s.end} for s in spans]


def _spans_from_rows(rows: Sequence[dict[str, Any]]) -> tuple[Span, ...]:
    return tuple(Span(row["doc_id"], row["start"], row["end"]) for row in rows)
