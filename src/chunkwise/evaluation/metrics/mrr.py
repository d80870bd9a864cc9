"""Mean reciprocal rank (per query: the reciprocal rank) at document level.

Source: Voorhees, "The TREC-8 Question Answering Track Report" (1999). Per query the value is ``1 / r``
where ``r`` is the rank of the first gold document in the deduplicated document ranking of the top-k
retrieved items (:func:`~chunkwise.evaluation.metrics.ranking.ranked_documents`), 0 if none is there;
the mean over queries is taken by the aggregation, as for every metric.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from chunkwise.evaluation.items import Located
from chunkwise.evaluation.metrics.ranking import ranked_documents


def reciprocal_rank(retrieved: Sequence[Located], gold_docs: Collection[str]) -> float:
    """``1 / rank`` of the first relevant document, 0 if no retrieved document is relevant."""
    gold = set(gold_docs)
    for rank, doc_id in enumerate(ranked_documents(retrieved), start=1):
        if doc_id in gold:
            return 1.0 / rank
    return 0.0
