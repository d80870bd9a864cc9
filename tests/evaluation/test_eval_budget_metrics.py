"""Token-budget metrics (``recall@400t``): the cut, its invariants, parsing, and recomputation."""

from __future__ import annotations

from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.errors import ConfigError
from chunkwise.evaluation.items import QueryRun, Retrieved, Span
from chunkwise.evaluation.metrics import parse_metric, span_recall
from chunkwise.evaluation.metrics.budget import CHARS_PER_TOKEN, items_to_fill, within_budget

items = st.builds(
    lambda doc, start, length: Retrieved(doc, start, start + length),
    st.sampled_from("ab"),
    st.integers(0, 300),
    st.integers(1, 120),
)
ranked = st.lists(items, max_size=10)
gold = st.lists(
    st.builds(
        lambda doc, start, length: Span(doc, start, start + length),
        st.sampled_from("ab"),
        st.integers(0, 300),
        st.integers(1, 80),
    ),
    min_size=1,
    max_size=3,
)


@given(ranked, st.integers(1, 200))
def test_the_cut_is_a_prefix_that_fits_the_budget(retrieved: list[Retrieved], tokens: int) -> None:
    kept = within_budget(retrieved, tokens)
    total = sum(r.end - r.start for r in kept)
    assert total <= tokens * CHARS_PER_TOKEN
    assert list(kept[:-1]) == retrieved[: len(kept) - 1]
    if kept:
        last, original = kept[-1], retrieved[len(kept) - 1]
        assert (last.doc_id, last.start) == (original.doc_id, original.start)
        assert last.end <= original.end
    full = sum(r.end - r.start for r in retrieved)
    assert total == min(full, tokens * CHARS_PER_TOKEN)


@given(ranked, gold, st.integers(1, 100), st.integers(0, 100))
def test_recall_grows_with_the_budget(
    retrieved: list[Retrieved], spans: list[Span], n: int, more: int
) -> None:
    run = QueryRun("q", tuple(retrieved), tuple(spans))
    small, large = parse_metric(f"recall@{n}t"), parse_metric(f"recall@{n + more}t")
    assert 0.0 <= small(run) <= large(run) <= 1.0
    assert large(run) <= span_recall(retrieved, spans) + 1e-12


@given(ranked, gold)
def test_a_budget_past_the_whole_list_is_plain_recall(retrieved: list[Retrieved], spans: list[Span]) -> None:
    run = QueryRun("q", tuple(retrieved), tuple(spans))
    everything = 1 + sum(r.end - r.start for r in retrieved) // CHARS_PER_TOKEN
    assert parse_metric(f"recall@{everything}t")(run) == parse_metric("recall")(run)


def test_worked_example() -> None:
    run = QueryRun("q1", (Retrieved("d", 0, 20), Retrieved("d", 15, 25)), (Span("d", 10, 30),), ("d",))
    assert parse_metric("recall@3t")(run) == pytest.approx(2 / 20)  # 12 characters: 10-12 is gold
    assert parse_metric("recall@5t")(run) == pytest.approx(10 / 20)
    assert parse_metric("recall@7t")(run) == pytest.approx(13 / 20)  # 20 + 8 characters: 10-23
    assert parse_metric("iou@5t")(run) == pytest.approx(10 / (20 + 10))
    assert parse_metric("doc_recall@1t")(run) == 1.0


def test_names() -> None:
    metric = parse_metric("Recall@400T")
    assert (metric.name, metric.base, metric.k, metric.budget) == ("recall@400t", "recall", None, 400)
    assert parse_metric("recall@5").budget is None
    with pytest.raises(ConfigError, match="takes no @k or token budget"):
        parse_metric("precision_omega@400t")
    with pytest.raises(ConfigError, match="at least 1"):
        parse_metric("recall@0t")
    with pytest.raises(ConfigError, match="unknown"):
        parse_metric("recall@400x")


def test_items_to_fill_counts_the_shortest_items_that_reach_the_budget() -> None:
    # 10 tokens = 40 characters: the shortest first, 5 + 10 + 10 + 20 = 45 >= 40 after four items.
    assert items_to_fill([100, 10, 5, 20, 10], 10) == 4
    # all together fall short: every item.
    assert items_to_fill([5, 5], 10) == 2
    assert items_to_fill([], 10) == 0


@given(st.lists(st.integers(1, 200), max_size=30), st.integers(1, 100), st.randoms())
def test_any_items_to_fill_of_the_items_fill_the_budget(lengths: list[int], tokens: int, rng: Random) -> None:
    """Whichever items a retrieval returns, that many of them fill the budget (or are all there is)."""
    count = items_to_fill(lengths, tokens)
    picked = rng.sample(lengths, count)
    assert sum(picked) >= tokens * CHARS_PER_TOKEN or count == len(lengths)
