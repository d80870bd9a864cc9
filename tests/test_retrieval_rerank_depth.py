"""The rerank stage's depth, and the ``quality`` preset that uses it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

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
    assert trace.get("rerank").notes == {"reranker": "length", "not_scored": 2}


def test_no_depth_reranks_everything_and_top_n_cuts() -> None:
    ranked = Rerank(LengthReranker(), top_n=2)(Query("q"), candidates(), Trace())
    assert [c.chunk_id for c in ranked] == ["c3", "c1"]
    with pytest.raises(ValueError, match="depth must be at least 1"):
        Rerank(LengthReranker(), depth=0)


def test_quality_preset_keeps_its_reranker_under_a_models_table() -> None:
    config = from_dict({"preset": "quality", "models": {"llm": "openai:gpt-4o-mini"}})
    assert config.models.reranker == "local:ms-marco-minilm"
    assert config.models.llm == "openai:gpt-4o-mini"
    assert config.rerank.enabled
    assert config.rerank.depth > 0
    assert from_dict({"preset": "quality", "models": {"reranker": "local"}}).models.reranker == "local"
