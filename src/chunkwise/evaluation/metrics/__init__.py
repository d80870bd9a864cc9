"""Retrieval metrics, one module each: a small kernel and a thin public function citing its source.

Span metrics compare character ranges (:mod:`.recall`, :mod:`.precision`, :mod:`.iou`,
:mod:`.precision_omega` after Chroma's report; :mod:`.char_recall`, :mod:`.char_precision` after
LegalBench-RAG); document metrics score the deduplicated document ranking (:mod:`.doc_recall`,
:mod:`.doc_precision`, :mod:`.mrr`, :mod:`.ndcg`). :mod:`.registry` names them by strings.
"""

from chunkwise.evaluation.metrics.char_precision import char_precision
from chunkwise.evaluation.metrics.char_recall import char_recall
from chunkwise.evaluation.metrics.doc_precision import doc_precision
from chunkwise.evaluation.metrics.doc_recall import doc_recall
from chunkwise.evaluation.metrics.iou import span_iou
from chunkwise.evaluation.metrics.mrr import reciprocal_rank
from chunkwise.evaluation.metrics.ndcg import ndcg
from chunkwise.evaluation.metrics.precision import span_precision
from chunkwise.evaluation.metrics.precision_omega import omega_chunks, precision_omega
from chunkwise.evaluation.metrics.ranking import ranked_documents
from chunkwise.evaluation.metrics.recall import span_recall
from chunkwise.evaluation.metrics.registry import METRICS, Metric, parse_metric, parse_metrics

__all__ = [
    "METRICS",
    "Metric",
    "char_precision",
    "char_recall",
    "doc_precision",
    "doc_recall",
    "ndcg",
    "omega_chunks",
    "parse_metric",
    "parse_metrics",
    "precision_omega",
    "ranked_documents",
    "reciprocal_rank",
    "span_iou",
    "span_precision",
    "span_recall",
]
