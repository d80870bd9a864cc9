"""The character counts behind Chroma's span metrics (recall, precision, IoU), computed once per query.

Source: Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval", Chroma technical report (2024),
and its reference code ``chunking_evaluation/evaluation_framework/base_evaluation.py``
(``_scores_from_dataset_and_retrievals``), whose edge cases are kept:

- a retrieved item counts toward the numerator only through gold spans *of its own document*; an item
  from another document adds nothing to the numerator but its full length to every denominator;
- the numerator is the size of the *union* of the retrieved ∩ gold pieces, so a gold character inside
  two overlapping retrieved chunks counts once;
- the gold size is the *sum* of the gold span lengths and the retrieved size the *sum* of the retrieved
  lengths, so overlapping retrieved chunks count again in the precision and IoU denominators;
- ``missed`` is, per gold span, the part no retrieved item of its document covers, summed over spans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chunkwise.evaluation.intervals import by_document, covered, intersection_size, length
from chunkwise.evaluation.items import Located


@dataclass(frozen=True, slots=True)
class SpanOverlap:
    """Character counts of one query: ``relevant`` = |∪ (retrieved ∩ gold)|, ``gold`` = Σ|g|,
    ``retrieved`` = Σ|r| over every retrieved item, ``missed`` = Σ_g |g \\ ∪ retrieved|."""

    relevant: int
    gold: int
    retrieved: int
    missed: int


def span_overlap(retrieved: Sequence[Located], gold: Sequence[Located]) -> SpanOverlap:
    """Count the characters that Chroma's recall, precision and IoU are built from."""
    retrieved_sets = by_document(retrieved)
    return SpanOverlap(
        relevant=intersection_size(retrieved_sets, by_document(gold)),
        gold=length((g.start, g.end) for g in gold),
        retrieved=length((r.start, r.end) for r in retrieved),
        missed=sum((g.end - g.start) - covered(g, retrieved_sets) for g in gold),
    )
