"""LegalBench-RAG's character recall, which LlamaChunk calls the *retrieval ratio*.

Source: Pipitone & Houir Alami, "LegalBench-RAG" (arXiv 2408.10343), section 4, and ``QAResult.recall``
in its reference code (``legalbenchrag/run_benchmark.py``):

    char_recall = |G ∩ ∪ R| / |G|

the share of the gold characters that some retrieved item of the same document holds, with ``G`` the
union of the gold spans (LegalBench-RAG requires them disjoint). The reference code sums Σ_g Σ_r |g ∩ r|,
which is the same number whenever the retrieved items are disjoint, as they are in its benchmark; with
overlapping retrieved items it would count a gold character once per item and could exceed 1, so here
each gold character counts once. It equals Chroma's recall (:mod:`.recall`). 0 when there is no gold.
"""

from __future__ import annotations

from collections.abc import Sequence

from chunkwise.evaluation.intervals import by_document, intersection_size, union_size
from chunkwise.evaluation.items import Located


def char_recall(retrieved: Sequence[Located], gold: Sequence[Located]) -> float:
    """Share of the (unioned) gold characters that were retrieved: LlamaChunk's retrieval ratio."""
    gold_sets = by_document(gold)
    total = union_size(gold_sets)
    return intersection_size(by_document(retrieved), gold_sets) / total if total else 0.0
