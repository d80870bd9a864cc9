"""Normalised discounted cumulative gain at document level, binary relevance.

Source: Järvelin & Kekäläinen, "Cumulated Gain-Based Evaluation of IR Techniques" (ACM TOIS, 2002), with
the ``log2(rank + 1)`` discount of Burges et al. (2005) as in ranx and trec_eval:

    DCG = Σ_i rel_i / log2(i + 1),  IDCG = Σ_{i=1}^{min(|gold|, k)} 1 / log2(i + 1)

over the deduplicated document ranking of the top-k retrieved items
(:func:`~chunkwise.evaluation.metrics.ranking.ranked_documents`); ``rel_i`` is 1 for a gold document.
With ``k`` unset, the ideal ranking holds every gold document. 0 with no gold.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from chunkwise.evaluation.items import Located
from chunkwise.evaluation.metrics.ranking import ranked_documents


def ndcg(retrieved: Sequence[Located], gold_docs: Collection[str], k: int | None = None) -> float:
    """nDCG of the document ranking; ``k`` bounds the ideal ranking (pass the cut-off used)."""
    gold = set(gold_docs)
    if not gold:
        return 0.0
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, doc_id in enumerate(ranked_documents(retrieved), start=1)
        if doc_id in gold
    )
    ideal_hits = len(gold) if k is None else min(len(gold), k)
    idcg = sum(1.0 / math.log2(rank + 1) for rank in range(1, ideal_hits + 1))
    return dcg / idcg
