"""Chroma's token-level (here character-level) recall.

Source: Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval" (Chroma, 2024), section 3:
recall = |∪ (retrieved ∩ gold)| / |∪ gold|; 0 when there is no gold (Chroma divides by Σ |gold span|,
the same number unless gold spans overlap). See
:mod:`chunkwise.evaluation.metrics.overlap` for the exact counting rules.
"""

from __future__ import annotations

from collections.abc import Sequence

from chunkwise.evaluation.items import Located
from chunkwise.evaluation.metrics.overlap import span_overlap


def span_recall(retrieved: Sequence[Located], gold: Sequence[Located]) -> float:
    """Share of the gold characters that at least one retrieved item (of the same document) holds."""
    counts = span_overlap(retrieved, gold)
    return counts.relevant / counts.gold if counts.gold else 0.0
