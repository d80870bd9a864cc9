"""Invariants of the span and document metrics on arbitrary inputs (hypothesis).

The interval kernel is also checked against a slow reference that builds per-character sets, written
from the metric definitions alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from chunkwise.evaluation.intervals import by_document, merge, overlap
from chunkwise.evaluation.items import Retrieved, Span
from chunkwise.evaluation.metrics import (
    char_precision,
    char_recall,
    doc_precision,
    doc_recall,
    ndcg,
    precision_omega,
    reciprocal_rank,
    span_iou,
    span_precision,
    span_recall,
)

DOCS = ("a", "b", "c")


@st.composite
def ranges(draw: st.DrawFn, doc_ids: Sequence[str] = DOCS) -> tuple[str, int, int]:
    doc_id = draw(st.sampled_from(doc_ids))
    start = draw(st.integers(0, 200))
    return doc_id, start, start + draw(st.integers(1, 60))


retrieved_lists = st.lists(ranges().map(lambda t: Retrieved(*t)), max_size=8)


@st.composite
def disjoint_gold(draw: st.DrawFn) -> list[Span]:
    """1-4 gold spans, pairwise disjoint and not touching (as the data sets guarantee)."""
    spans: list[Span] = []
    for doc_id, start, end in draw(st.lists(ranges(), min_size=1, max_size=4)):
        if all(g.doc_id != doc_id or end < g.start or start > g.end for g in spans):
            spans.append(Span(doc_id, start, end))
    return spans


def chars(items: Sequence[Retrieved] | Sequence[Span]) -> set[tuple[str, int]]:
    return {(i.doc_id, c) for i in items for c in range(i.start, i.end)}


def reference_counts(retrieved: Sequence[Retrieved], gold: Sequence[Span]) -> tuple[int, int, int, int]:
    """(|R ∩ G|, Σ|g|, Σ|r|, Σ_g |g \\ R|) with Python sets, straight from Chroma's definitions."""
    r_chars = chars(retrieved)
    return (
        len(r_chars & chars(gold)),
        sum(len(g) for g in gold),
        sum(len(x) for x in retrieved),
        sum(len(chars([g]) - r_chars) for g in gold),
    )


@given(
    st.lists(st.tuples(st.integers(0, 100), st.integers(0, 100))),
    st.lists(st.tuples(st.integers(0, 100), st.integers(0, 100))),
)
def test_interval_overlap_matches_character_sets(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    set_a = {c for lo, hi in a for c in range(lo, hi)}
    set_b = {c for lo, hi in b for c in range(lo, hi)}
    merged = merge(a)
    assert sum(hi - lo for lo, hi in merged) == len(set_a)
    assert all(merged[i][1] < merged[i + 1][0] for i in range(len(merged) - 1))
    assert overlap(merged, merge(b)) == len(set_a & set_b)


@given(retrieved_lists, disjoint_gold())
def test_span_metrics_match_the_character_set_reference(retrieved: list[Retrieved], gold: list[Span]) -> None:
    relevant, gold_len, retrieved_len, missed = reference_counts(retrieved, gold)
    assert span_recall(retrieved, gold) == relevant / gold_len
    assert span_precision(retrieved, gold) == (relevant / retrieved_len if retrieved_len else 0.0)
    assert span_iou(retrieved, gold) == relevant / (retrieved_len + missed)
    per_item = sum(len(chars([x]) & chars(gold)) for x in retrieved)
    assert char_precision(retrieved, gold) == (per_item / retrieved_len if retrieved_len else 0.0)
    assert char_recall(retrieved, gold) == relevant / len(chars(gold))


@given(retrieved_lists, disjoint_gold())
def test_span_metrics_lie_in_the_unit_interval(retrieved: list[Retrieved], gold: list[Span]) -> None:
    values = [
        fn(retrieved, gold) for fn in (span_recall, span_precision, span_iou, char_recall, char_precision)
    ]
    assert all(0.0 <= v <= 1.0 for v in values)
    # IoU never beats recall or precision (gold spans disjoint).
    assert (
        span_iou(retrieved, gold)
        <= min(span_recall(retrieved, gold), span_precision(retrieved, gold)) + 1e-12
    )


@given(disjoint_gold())
def test_retrieving_exactly_the_gold_scores_one(gold: list[Span]) -> None:
    exact = [Retrieved(g.doc_id, g.start, g.end) for g in gold]
    for fn in (span_recall, span_precision, span_iou, char_recall, char_precision):
        assert fn(exact, gold) == 1.0
    assert precision_omega(gold, gold) == 1.0
    docs = list(dict.fromkeys(g.doc_id for g in gold))
    assert doc_recall(exact, docs) == doc_precision(exact, docs) == reciprocal_rank(exact, docs) == 1.0
    assert ndcg(exact, docs, len(exact)) == 1.0


@given(retrieved_lists, disjoint_gold(), ranges())
def test_a_chunk_without_gold_never_raises_precision(
    retrieved: list[Retrieved], gold: list[Span], extra: tuple[str, int, int]
) -> None:
    item = Retrieved(*extra)
    if chars([item]) & chars(gold):
        return
    more = [*retrieved, item]
    assert span_precision(more, gold) <= span_precision(retrieved, gold)
    assert char_precision(more, gold) <= char_precision(retrieved, gold)
    assert span_iou(more, gold) <= span_iou(retrieved, gold)
    assert span_recall(more, gold) == span_recall(retrieved, gold)


any_gold = st.lists(ranges().map(lambda t: Span(*t)), min_size=1, max_size=4)


@given(retrieved_lists, any_gold)
def test_span_metrics_count_a_gold_character_once_however_many_spans_name_it(
    retrieved: list[Retrieved], gold: list[Span]
) -> None:
    """Gold spans that overlap or repeat score as the set of characters they cover: a data set may list
    the same evidence twice, and that must not lower recall or lift IoU above recall."""
    union = [Span(doc_id, start, end) for doc_id, ivs in by_document(gold).items() for start, end in ivs]
    for fn in (span_recall, span_precision, span_iou, char_recall, char_precision):
        assert fn(retrieved, gold) == fn(retrieved, union)
    assert span_recall(retrieved, gold) == char_recall(retrieved, gold)
    assert (
        span_iou(retrieved, gold)
        <= min(span_recall(retrieved, gold), span_precision(retrieved, gold)) + 1e-12
    )
    exact = [Retrieved(g.doc_id, g.start, g.end) for g in union]
    assert span_recall(exact, gold) == span_iou(exact, gold) == 1.0


@given(retrieved_lists, st.lists(st.sampled_from(DOCS), min_size=1, max_size=3), st.integers(1, 10))
def test_document_metrics_lie_in_the_unit_interval(
    retrieved: list[Retrieved], gold: list[str], k: int
) -> None:
    top = retrieved[:k]
    for value in (
        doc_recall(top, gold),
        doc_precision(top, gold),
        reciprocal_rank(top, gold),
        ndcg(top, gold, k),
    ):
        assert 0.0 <= value <= 1.0 + 1e-12


@given(st.lists(ranges(("a",)).map(lambda t: Span(*t)), min_size=1, max_size=10), disjoint_gold())
def test_precision_omega_lies_in_the_unit_interval(chunks: list[Span], gold: list[Span]) -> None:
    assert 0.0 <= precision_omega(chunks, gold) <= 1.0
