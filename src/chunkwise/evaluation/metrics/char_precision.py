"""LegalBench-RAG's character precision, which LlamaChunk calls the *signal ratio*.

Source: Pipitone & Houir Alami, "LegalBench-RAG: A Benchmark for Retrieval-Augmented Generation in the
Legal Domain" (arXiv 2408.10343), section 4, and ``QAResult.precision`` in its reference code
(``legalbenchrag/run_benchmark.py``):

    char_precision = Σ_r |r ∩ G| / Σ_r |r|

where ``r`` runs over the retrieved items and ``G`` is the set of gold characters of ``r``'s document.
Each retrieved item is scored on its own, so a gold character inside two overlapping retrieved items
counts twice in the numerator as in the denominator: the value is the share of the *text handed to the
reader* that is evidence. It differs from Chroma's precision (:mod:`precision`) only when retrieved items
overlap; there Chroma counts the gold character once in the numerator. 0 when nothing is retrieved.
"""

from __future__ import annotations

from collections.abc import Sequence

from chunkwise.evaluation.intervals import by_document, covered, length
from chunkwise.evaluation.items import Located


def char_precision(retrieved: Sequence[Located], gold: Sequence[Located]) -> float:
    """Share of the retrieved characters (counted per item) that are gold: LlamaChunk's signal ratio."""
    total = length((r.start, r.end) for r in retrieved)
    if not total:
        return 0.0
    gold_sets = by_document(gold)
    return sum(covered(r, gold_sets) for r in retrieved) / total
