"""Document-level recall@k, as scored on RAG-Multi-Corpus in the W-RAC paper.

recall = |D ∩ gold documents| / |gold documents|, where ``D`` is the ranking of
:func:`~chunkwise.evaluation.metrics.ranking.ranked_documents` over the top-k retrieved items
(Manning, Raghavan & Schütze, *Introduction to Information Retrieval*, 2008, section 8.3). 0 with no gold.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from chunkwise.evaluation.items import Located
from chunkwise.evaluation.metrics.ranking import ranked_documents


def doc_recall(retrieved: Sequence[Located], gold_docs: Collection[str]) -> float:
    """Share of the gold documents that at least one retrieved item comes from."""
    if not gold_docs:
        return 0.0
    return len(set(ranked_documents(retrieved)) & set(gold_docs)) / len(set(gold_docs))
