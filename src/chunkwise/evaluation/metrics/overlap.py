"""The character counts behind Chroma's span metrics (recall, precision, IoU), computed once per query.

Source: Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval", Chroma technical report (2024),
and its reference code ``chunking_evaluation/evaluation_framework/base_evaluation.py``
(``_scores_from_dataset_and_retrievals``), whose edge cases are kept, all but the last:

- a retrieved item counts toward the numerator only through gold spans *of its own document*; an item
  from another document adds nothing to the numerator but its full length to every denominator;
- the numerator is the size of the *union* of the retrieved ∩ gold pieces, so a gold character inside
  two overlapping retrieved chunks counts once;
- the retrieved size is the *sum* of the retrieved lengths, so overlapping retrieved chunks count again
  in the precision and IoU denominators;
- the gold size is the size of the *union* of the gold spans, and ``missed`` the part of that union no
  retrieved item of its document covers. The reference code sums the gold span lengths, the same number
  for the disjoint gold of its data sets; for gold spans that overlap (or repeat), the sum counts a
  character once per span, so a retrieval holding all the gold would score a recall below 1 and an IoU
  above its recall. Here a gold character counts once, whatever the spans that name it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chunkwise.evaluation.intervals import by_document, intersection_size, length, union_size
from chunkwise.evaluation.items import Located


@dataclass(frozen=True, slots=True)
class SpanOverlap:
    """Character counts of one query: ``relevant`` = |∪ (retrieved ∩ gold)|, ``gold`` = |∪ gold|,
    ``retrieved`` = Σ|r| over every retrieved item, ``missed`` = |∪ gold \\ ∪ retrieved|."""

    relevant: int
    gold: int
    retrieved: int
    missed: int


def span_overlap(retrieved: Sequence[Located], gold: Sequence[Located]) -> SpanOverlap:
    """Count the characters that Chroma's recall, precision and IoU are built from."""
    gold_sets = by_document(gold)
    relevant = intersection_size(by_document(retrieved), gold_sets)
    gold_size = union_size(gold_sets)
    return SpanOverlap(
        relevant=relevant,
        gold=gold_size,
        retrieved=length((r.start, r.end) for r in retrieved),
        missed=gold_size - relevant,
    )
