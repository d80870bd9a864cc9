"""Document-level precision@k over the deduplicated document ranking.

precision = |D ∩ gold documents| / |D|, where ``D`` is the ranking of distinct documents of the top-k
retrieved items (:func:`~chunkwise.evaluation.metrics.ranking.ranked_documents`): the share of the
*distinct documents* retrieved that are relevant. Dividing by ``|D|`` rather than ``k`` is deliberate: with
one gold document and ``k = 6``, dividing by ``k`` would cap precision at 1/6 even for a retrieval whose
six chunks all come from the right document. The W-RAC paper does not define its precision@6 further.
0 when nothing is retrieved.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from chunkwise.evaluation.items import Located
from chunkwise.evaluation.metrics.ranking import ranked_documents


def doc_precision(retrieved: Sequence[Located], gold_docs: Collection[str]) -> float:
    """Share of the distinct retrieved documents that are gold documents."""
    ranking = ranked_documents(retrieved)
    if not ranking:
        return 0.0
    gold = set(gold_docs)
    return sum(doc_id in gold for doc_id in ranking) / len(ranking)
