"""Every metric on hand-built cases; the expected values are worked out by hand in the comments."""

from __future__ import annotations

import math

import pytest

from chunkwise.errors import ConfigError
from chunkwise.evaluation.items import QueryRun, Retrieved, Span
from chunkwise.evaluation.metrics import (
    char_precision,
    char_recall,
    doc_precision,
    doc_recall,
    ndcg,
    omega_chunks,
    parse_metric,
    parse_metrics,
    precision_omega,
    ranked_documents,
    reciprocal_rank,
    span_iou,
    span_precision,
    span_recall,
)


def r(doc_id: str, start: int, end: int, score: float = 0.0) -> Retrieved:
    return Retrieved(doc_id, start, end, score)


def s(doc_id: str, start: int, end: int) -> Span:
    return Span(doc_id, start, end)


# Case A: one gold span d[10, 30) split across two overlapping retrieved chunks, plus a chunk of the
# right document that misses the gold and a chunk of the wrong document.
GOLD_A = [s("d", 10, 30)]
RETRIEVED_A = [r("d", 0, 20), r("d", 15, 25), r("d", 40, 50), r("e", 0, 10)]


def test_recall_counts_a_gold_character_once_across_overlapping_chunks() -> None:
    # d[0,20) ∩ gold = [10,20); d[15,25) ∩ gold = [15,25); union [10,25) = 15 chars; Σ|gold| = 20.
    assert span_recall(RETRIEVED_A, GOLD_A) == pytest.approx(15 / 20)


def test_precision_counts_overlapping_and_wrong_document_chunks_in_the_denominator() -> None:
    # numerator 15 (as recall); Σ|retrieved| = 20 + 10 + 10 + 10 = 50 (e[0,10) counts in full).
    assert span_precision(RETRIEVED_A, GOLD_A) == pytest.approx(15 / 50)


def test_iou_adds_the_missed_gold_to_the_summed_retrieved_length() -> None:
    # missed gold: [25,30) = 5; IoU = 15 / (50 + 5).
    assert span_iou(RETRIEVED_A, GOLD_A) == pytest.approx(15 / 55)


def test_overlapping_and_repeated_gold_spans_count_each_character_once() -> None:
    # gold d[0,10) and d[5,15) cover 15 characters, d[0,10) listed twice 10; retrieving d[0,15) holds
    # them all: recall 1 and IoU 1 (summing span lengths would give 15/20 and 10/20 recall, IoU 1).
    whole = [r("d", 0, 15)]
    assert span_recall(whole, [s("d", 0, 10), s("d", 5, 15)]) == 1.0
    assert span_iou(whole, [s("d", 0, 10), s("d", 5, 15)]) == 1.0
    assert span_recall(whole, [s("d", 0, 10), s("d", 0, 10)]) == 1.0
    # d[0,5) of the overlapping pair: 5 of 15 gold characters; missed 10, IoU 5 / (5 + 10).
    part = [r("d", 0, 5)]
    assert span_recall(part, [s("d", 0, 10), s("d", 5, 15)]) == pytest.approx(5 / 15)
    assert span_iou(part, [s("d", 0, 10), s("d", 5, 15)]) == pytest.approx(5 / 15)


def test_legalbench_precision_counts_overlap_per_chunk_and_recall_once() -> None:
    # signal ratio: (|[10,20)| + |[15,25)| + 0 + 0) / 50 = 20 / 50; retrieval ratio: 15 / 20.
    assert char_precision(RETRIEVED_A, GOLD_A) == pytest.approx(20 / 50)
    assert char_recall(RETRIEVED_A, GOLD_A) == pytest.approx(15 / 20)


def test_document_metrics_on_the_deduplicated_ranking() -> None:
    # documents in rank order: d, e. Gold {d}: recall 1, precision 1/2, RR 1, nDCG 1/1.
    assert ranked_documents(RETRIEVED_A) == ["d", "e"]
    assert doc_recall(RETRIEVED_A, ["d"]) == 1.0
    assert doc_precision(RETRIEVED_A, ["d"]) == 0.5
    assert reciprocal_rank(RETRIEVED_A, ["d"]) == 1.0
    assert ndcg(RETRIEVED_A, ["d"], 4) == 1.0


def test_k_cuts_the_ranking_before_scoring() -> None:
    run = QueryRun("q", tuple(RETRIEVED_A), tuple(GOLD_A), ("d",))
    # top 2: d[0,20), d[15,25): numerator 15, Σ|retrieved| = 30, missed 5.
    assert parse_metric("recall@2")(run) == pytest.approx(15 / 20)
    assert parse_metric("precision@2")(run) == pytest.approx(15 / 30)
    assert parse_metric("iou@2")(run) == pytest.approx(15 / 35)
    # top 2 come from d only: document precision 1.
    assert parse_metric("doc_precision@2")(run) == 1.0


# Case B: three gold spans in two documents.
GOLD_B = [s("d", 0, 10), s("d", 20, 30), s("e", 5, 15)]
RETRIEVED_B = [r("e", 0, 10), r("d", 8, 22)]


def test_multiple_gold_spans_in_two_documents() -> None:
    # e[0,10) ∩ e[5,15) = 5; d[8,22) ∩ (d[0,10) ∪ d[20,30)) = 2 + 2: numerator 9, Σ|gold| = 30.
    assert span_recall(RETRIEVED_B, GOLD_B) == pytest.approx(9 / 30)
    # Σ|retrieved| = 10 + 14 = 24.
    assert span_precision(RETRIEVED_B, GOLD_B) == pytest.approx(9 / 24)
    # missed: 8 + 8 + 5 = 21; IoU = 9 / (24 + 21).
    assert span_iou(RETRIEVED_B, GOLD_B) == pytest.approx(9 / 45)
    assert char_precision(RETRIEVED_B, GOLD_B) == pytest.approx(9 / 24)
    assert char_recall(RETRIEVED_B, GOLD_B) == pytest.approx(9 / 30)


def test_multiple_gold_documents() -> None:
    # ranking [e, d], gold {d, e}: all 1. At k = 1: ranking [e]: recall 1/2, precision 1,
    # nDCG@1 = (1 / log2 2) / (1 / log2 2) = 1.
    assert doc_recall(RETRIEVED_B, ["d", "e"]) == 1.0
    assert doc_precision(RETRIEVED_B, ["d", "e"]) == 1.0
    assert ndcg(RETRIEVED_B, ["d", "e"], 2) == 1.0
    run = QueryRun("q", tuple(RETRIEVED_B), tuple(GOLD_B), ("d", "e"))
    assert parse_metric("doc_recall@1")(run) == 0.5
    assert parse_metric("doc_precision@1")(run) == 1.0
    assert parse_metric("ndcg@1")(run) == 1.0


def test_rank_is_the_rank_among_distinct_documents() -> None:
    retrieved = [r("a", 0, 5), r("a", 5, 9), r("b", 0, 5)]
    # ranking [a, b]: the gold document b is second, not third.
    assert reciprocal_rank(retrieved, ["b"]) == 0.5
    # DCG = 1 / log2(3); IDCG = 1 / log2(2) = 1.
    assert ndcg(retrieved, ["b"], 3) == pytest.approx(1 / math.log2(3))


def test_ndcg_ideal_ranking_is_bounded_by_k() -> None:
    # gold {a, b, c}, k = 2, ranking [a, x]: DCG = 1; IDCG = 1 + 1/log2(3).
    retrieved = [r("a", 0, 1), r("x", 0, 1)]
    assert ndcg(retrieved, ["a", "b", "c"], 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    # without k every gold document is in the ideal ranking: IDCG = 1 + 1/log2 3 + 1/2.
    assert ndcg(retrieved, ["a", "b", "c"]) == pytest.approx(1 / (1 + 1 / math.log2(3) + 0.5))


def test_empty_retrieval_scores_zero_everywhere() -> None:
    gold = [s("d", 0, 10)]
    for fn in (span_recall, span_precision, span_iou, char_precision, char_recall):
        assert fn([], gold) == 0.0
    for doc_fn in (doc_recall, doc_precision, reciprocal_rank):
        assert doc_fn([], ["d"]) == 0.0
    assert ndcg([], ["d"], 5) == 0.0


def test_wrong_document_only() -> None:
    # same offsets, other document: no overlap; IoU = 0 / (10 + 10).
    gold, retrieved = [s("d", 10, 20)], [r("e", 10, 20)]
    assert span_recall(retrieved, gold) == 0.0
    assert span_precision(retrieved, gold) == 0.0
    assert span_iou(retrieved, gold) == 0.0
    assert reciprocal_rank(retrieved, ["d"]) == 0.0


def test_touching_is_not_overlapping() -> None:
    # d[0,10) ends where the gold d[10,20) starts: no shared character.
    assert span_recall([r("d", 0, 10)], [s("d", 10, 20)]) == 0.0


def test_no_gold_scores_zero() -> None:
    assert span_recall([r("d", 0, 10)], []) == 0.0
    assert doc_recall([r("d", 0, 10)], []) == 0.0
    assert ndcg([r("d", 0, 10)], [], 5) == 0.0


# Precision-Ω: chunks tiling d[0,100) in 25s.
TILING = [s("d", 0, 25), s("d", 25, 50), s("d", 50, 75), s("d", 75, 100), s("x", 0, 25)]


def test_precision_omega_selects_every_chunk_holding_gold() -> None:
    gold = [s("d", 20, 30), s("d", 60, 65)]
    # chunks [0,25), [25,50), [50,75) hold gold: union 75 chars; gold 10 + 5 = 15 -> 15 / 75.
    assert [(c.start, c.end) for c in omega_chunks(TILING, gold)] == [(0, 25), (25, 50), (50, 75)]
    assert precision_omega(TILING, gold) == pytest.approx(15 / 75)
    # passing only the selected chunks gives the same value.
    assert precision_omega(omega_chunks(TILING, gold), gold) == pytest.approx(15 / 75)


def test_precision_omega_ignores_chunks_that_only_touch_the_gold() -> None:
    # gold is exactly [25,50): [0,25) and [50,75) touch it and are not selected -> 25 / 25.
    # (The reference code's closed-range test would select them and give 25 / 75.)
    assert precision_omega(TILING, [s("d", 25, 50)]) == 1.0


def test_precision_omega_unions_overlapping_chunks() -> None:
    # [0,30) and [20,50) both hold gold [25,28): denominator |[0,50)| = 50, not 30 + 30.
    assert precision_omega([s("d", 0, 30), s("d", 20, 50)], [s("d", 25, 28)]) == pytest.approx(3 / 50)


def test_precision_omega_counts_gold_no_chunk_covers() -> None:
    # chunks [0,10) and [12,20) skip [10,12); gold [8,14): numerator 2 + 2;
    # denominator |[0,10) ∪ [12,20) ∪ [8,14)| = |[0,20)| = 20.
    assert precision_omega([s("d", 0, 10), s("d", 12, 20)], [s("d", 8, 14)]) == pytest.approx(4 / 20)
    assert precision_omega([s("d", 0, 10)], [s("d", 30, 40)]) == 0.0


def test_segments_are_scored_like_chunks() -> None:
    # An RSE segment d[0,50) is one retrieved item: gold d[20,30) -> recall 1, precision 10 / 50;
    # the same text as two chunks d[0,25), d[25,50) scores the same recall and precision.
    gold = [s("d", 20, 30)]
    segment = [r("d", 0, 50)]
    chunks = [r("d", 0, 25), r("d", 25, 50)]
    assert span_recall(segment, gold) == span_recall(chunks, gold) == 1.0
    assert span_precision(segment, gold) == span_precision(chunks, gold) == pytest.approx(10 / 50)


def test_registry_parses_names_aliases_and_rejects_bad_ones() -> None:
    assert parse_metric("recall@5").k == 5
    assert parse_metric("MRR@10").name == "mrr@10"
    assert parse_metric("signal_ratio@3").name == "char_precision@3"
    assert parse_metric("retrieval_ratio@3").name == "char_recall@3"
    assert parse_metric("precision_omega").gold == "spans"
    assert parse_metric("ndcg@10").gold == "docs"
    assert [m.name for m in parse_metrics(["iou@5", "recall@5", "iou@5"])] == ["iou@5", "recall@5"]
    for bad in ("bogus@5", "recall@0", "precision_omega@5", "recall@", "recall@x"):
        with pytest.raises(ConfigError):
            parse_metric(bad)


def test_metric_without_k_uses_the_whole_ranking() -> None:
    run = QueryRun("q", tuple(RETRIEVED_A), tuple(GOLD_A), ("d",))
    assert parse_metric("precision")(run) == pytest.approx(15 / 50)


def test_huge_offsets_cost_nothing_more() -> None:
    # a 10-million-character gold span half covered: interval arithmetic, no character sets.
    gold = [s("big", 0, 10_000_000)]
    retrieved = [r("big", 5_000_000, 15_000_000), r("big", 9_000_000, 9_500_000)]
    assert span_recall(retrieved, gold) == 0.5
    # numerator 5e6; Σ|r| = 1e7 + 5e5; missed 5e6.
    assert span_iou(retrieved, gold) == pytest.approx(5e6 / (1.05e7 + 5e6))
    assert char_precision(retrieved, gold) == pytest.approx((5e6 + 5e5) / 1.05e7)
