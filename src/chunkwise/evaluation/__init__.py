"""Evaluation: data sets, metrics, cost accounting, paired bootstrap intervals and reports.

A data set (:mod:`.datasets`) gives queries with span or document gold; a configuration's retrieval for
each query becomes a :class:`~chunkwise.evaluation.items.QueryRun`; :mod:`.scoring` scores the runs with
metrics named by strings (:mod:`.metrics`); :mod:`.report` holds the JSON result that anyone can
recompute, and :mod:`.html_report` renders it.
"""

from chunkwise.evaluation.bootstrap import DifferenceInterval, paired_bootstrap
from chunkwise.evaluation.chunk_stats import ChunkStats, chunk_stats
from chunkwise.evaluation.costs import CostRecorder, StageCost, merge_stages
from chunkwise.evaluation.datasets import Dataset, Query, load_dataset, subsample
from chunkwise.evaluation.items import QueryRun, Retrieved, Span
from chunkwise.evaluation.metrics import METRICS, Metric, parse_metric, parse_metrics
from chunkwise.evaluation.report import ConfigResult, EvaluationReport, QueryRecord, recompute, verify
from chunkwise.evaluation.scoring import score_config

__all__ = [
    "METRICS",
    "ChunkStats",
    "ConfigResult",
    "CostRecorder",
    "Dataset",
    "DifferenceInterval",
    "EvaluationReport",
    "Metric",
    "Query",
    "QueryRecord",
    "QueryRun",
    "Retrieved",
    "Span",
    "StageCost",
    "chunk_stats",
    "load_dataset",
    "merge_stages",
    "paired_bootstrap",
    "parse_metric",
    "parse_metrics",
    "recompute",
    "score_config",
    "subsample",
    "verify",
]
