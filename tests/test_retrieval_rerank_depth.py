"""The rerank stage's depth and weight, and the ``quality`` preset that uses them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.config import from_dict
from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.rerank import Rerank
from chunkwise.query.trace import Trace
from chunkwise.store.protocol import StoredChunk


class LengthReranker:
    """Scores a text by its length: a deterministic reranker whose order differs from the fused one."""

    name = "length"

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.seen = list(texts)
        return np.array([len(t) / 100 for t in texts], dtype=np.float32)


def candidates() -> list[Candidate]:
    texts = ["aa", "aaaa", "a", "aaaaaa", "aaa"]
    fused = [0.9, 0.8, 0.7, 0.6, 0.5]
    return [
        Candidate(StoredChunk("d", 0, len(t), i, f"c{i}", t), score=s)
        for i, (t, s) in enumerate(zip(texts, fused, strict=True))
    ]


def test_depth_reranks_the_head_and_keeps_the_tail_below_it() -> None:
    reranker = LengthReranker()
    trace = Trace()
    ranked = Rerank(reranker, depth=3)(Query("q"), candidates(), trace)
    assert reranker.seen == ["aa", "aaaa", "a"]
    assert [c.chunk_id for c in ranked] == ["c1", "c0", "c2", "c3", "c4"]
    scores = [c.score for c in ranked]
    assert scores == sorted(scores, reverse=True)
    assert ranked[3].score == pytest.approx(0.01 * 0.6)  # lowest reranked score x incoming score
    assert "rerank" not in ranked[3].scores
    assert trace.get("rerank").notes == {"reranker": "length", "weight": 1.0, "not_scored": 2}


def test_no_depth_reranks_everything_and_top_n_cuts() -> None:
    ranked = Rerank(LengthReranker(), top_n=2)(Query("q"), candidates(), Trace())
    assert [c.chunk_id for c in ranked] == ["c3", "c1"]
    with pytest.raises(ValueError, match="depth must be at least 1"):
        Rerank(LengthReranker(), depth=0)


def test_weight_blends_normalised_reranker_and_incoming_scores() -> None:
    # lengths 2, 4, 1 -> reranker min-max 1/3, 1, 0; incoming 0.9, 0.8, 0.7 -> min-max 1, 0.5, 0
    ranked = Rerank(LengthReranker(), depth=3, weight=0.25)(Query("q"), candidates(), Trace())
    assert [c.chunk_id for c in ranked][:3] == ["c0", "c1", "c2"]
    assert [c.score for c in ranked[:3]] == pytest.approx([0.25 / 3 + 0.75, 0.25 + 0.375, 0.0])
    assert ranked[0].scores["rerank"] == pytest.approx(0.25 / 3 + 0.75)


def test_weight_zero_keeps_the_incoming_order_and_one_the_reranker_order() -> None:
    kept = Rerank(LengthReranker(), weight=0.0)(Query("q"), candidates(), Trace())
    assert [c.chunk_id for c in kept] == ["c0", "c1", "c2", "c3", "c4"]
    reranked = Rerank(LengthReranker(), weight=1.0)(Query("q"), candidates(), Trace())
    assert [c.chunk_id for c in reranked] == ["c3", "c1", "c4", "c0", "c2"]


@pytest.mark.parametrize("weight", [-0.1, 1.5])
def test_weight_outside_the_unit_interval_is_refused(weight: float) -> None:
    with pytest.raises(ValueError, match="rerank weight must lie in"):
        Rerank(LengthReranker(), weight=weight)


@given(
    weight=st.floats(0.0, 1.0),
    depth=st.integers(1, 6),
    lengths=st.lists(st.integers(1, 50), min_size=1, max_size=8),
)
def test_any_weight_keeps_every_candidate_with_sorted_unit_scores(
    weight: float, depth: int, lengths: list[int]
) -> None:
    pool = [
        Candidate(StoredChunk("d", 0, n, i, f"c{i}", "a" * n), score=1.0 - i / 10)
        for i, n in enumerate(lengths)
    ]
    ranked = Rerank(LengthReranker(), depth=depth, weight=weight)(Query("q"), pool, Trace())
    assert sorted(c.chunk_id for c in ranked) == sorted(c.chunk_id for c in pool)
    head = ranked[: min(depth, len(pool))]
    assert all(0.0 <= c.score <= 1.0 for c in ranked)
    assert [c.score for c in head] == sorted((c.score for c in head), reverse=True)
    assert ranked[len(head) :] == pool[len(head) :]


def test_quality_preset_keeps_its_reranker_under_a_models_table() -> None:
    config = from_dict({"preset": "quality", "models": {"llm": "openai:gpt-4o-mini"}})
    assert config.models.reranker == "local:ms-marco-minilm"
    assert config.models.llm == "openai:gpt-4o-mini"
    assert config.rerank.enabled
    assert config.rerank.depth > 0
    assert from_dict({"preset": "quality", "models": {"reranker": "local"}}).models.reranker == "local"
