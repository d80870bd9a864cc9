"""Chroma's token-level (here character-level) precision.

Source: Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval" (Chroma, 2024), section 3:
precision = |∪ (retrieved ∩ gold)| / Σ |retrieved item|; overlapping retrieved items count again in the
denominator and items from other documents count in full; 0 when nothing is retrieved.
"""

from __future__ import annotations

from collections.abc import Sequence

from chunkwise.evaluation.items import Located
from chunkwise.evaluation.metrics.overlap import span_overlap


def span_precision(retrieved: Sequence[Located], gold: Sequence[Located]) -> float:
    """Share of the retrieved characters that are gold (numerator as in recall, denominator summed)."""
    counts = span_overlap(retrieved, gold)
    return counts.relevant / counts.retrieved if counts.retrieved else 0.0
