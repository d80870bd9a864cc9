"""Chroma's intersection over union.

Source: Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval" (Chroma, 2024), section 3:
IoU = |∪ (retrieved ∩ gold)| / (Σ |retrieved item| + |gold not covered by any retrieved item|), the
gold counted as a set of characters (:mod:`.overlap`).
The denominator is not a true set union: overlapping retrieved items count again, as in the reference
code, so a chunker that retrieves redundant text is penalised. 0 when the denominator is 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from chunkwise.evaluation.items import Located
from chunkwise.evaluation.metrics.overlap import span_overlap


def span_iou(retrieved: Sequence[Located], gold: Sequence[Located]) -> float:
    """Gold characters retrieved, over everything retrieved plus the gold that was missed."""
    counts = span_overlap(retrieved, gold)
    denominator = counts.retrieved + counts.missed
    return counts.relevant / denominator if denominator else 0.0
