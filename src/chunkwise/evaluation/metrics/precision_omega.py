"""Chroma's precision-Ω: the precision of the best possible retrieval for a chunking.

Source: Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval" (Chroma, 2024), section 3, and
``_full_precision_score`` in its reference code. The retrieval is an oracle's: *every* chunk of the query's
documents that holds gold text, however many. Then

    Ω = |∪ (chunks ∩ gold)| / |(∪ chunks) ∪ (gold not covered)|

Unlike :mod:`precision`, the denominator is a true union (overlapping chunks count once) and includes
any gold the chunking dropped (text that falls in no chunk), so Ω measures how much irrelevant text the
chunk boundaries force a perfect retriever to return. It needs no retrieval, only the chunking.

One deliberate difference from the reference code: it tests overlap on closed ranges, so a chunk that
merely *touches* a gold span (``chunk.end == gold.start``) is selected although it shares no character
with it. Here a chunk is selected only if it shares at least one character with a gold span.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from chunkwise.evaluation.intervals import by_document, covered, intersection_size, merge, union_size
from chunkwise.evaluation.items import Located

L = TypeVar("L", bound=Located)


def omega_chunks(chunks: Sequence[L], gold: Sequence[Located]) -> list[L]:
    """The chunks (in the given order) that share at least one character with a gold span."""
    gold_sets = by_document(gold)
    return [chunk for chunk in chunks if chunk.doc_id in gold_sets and covered(chunk, gold_sets) > 0]


def precision_omega(chunks: Sequence[Located], gold: Sequence[Located]) -> float:
    """Precision-Ω of a chunking for one query; ``chunks`` may be all chunks or only :func:`omega_chunks`."""
    gold_sets = by_document(gold)
    chunk_sets = by_document(omega_chunks(chunks, gold))
    relevant = intersection_size(chunk_sets, gold_sets)
    if not relevant:
        return 0.0
    union = {
        doc_id: merge(chunk_sets.get(doc_id, []) + gold_sets.get(doc_id, []))
        for doc_id in chunk_sets.keys() | gold_sets.keys()
    }
    return relevant / union_size(union)
