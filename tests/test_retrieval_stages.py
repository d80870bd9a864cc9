"""The pure query stages: fusion, redundancy removal, ChunkRAG's relevance filter and query rewriting."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.models.http_client import JsonClient
from chunkwise.models.openai_compat import OpenAIChatLLM
from chunkwise.models.retry import RetryPolicy
from chunkwise.query import Candidate, Trace
from chunkwise.query.candidate import Query
from chunkwise.query.fusion import Fusion, minmax, rrf_fusion, weighted_fusion
from chunkwise.query.llm_calls import parse_unit_score
from chunkwise.query.redundancy import Redundancy, non_redundant
from chunkwise.query.relevance import RelevanceFilter, combine_scores, dynamic_threshold
from chunkwise.query.rewrite import QueryRewrite, clean_rewrite
from chunkwise.store.protocol import StoredChunk
from tests.support.fakes import FakeLLM, on_prompt
from tests.support.openai_server import OpenAIServer


def cand(name: str, vector: np.ndarray | None = None, **scores: float) -> Candidate:
    return Candidate(
        StoredChunk("d", 0, len(name), 0, name, f"text of {name}", vector=vector), scores=dict(scores)
    )


def test_weighted_fusion_by_hand():
    bm25 = np.array([10.0, 5.0, 0.0])
    dense = np.array([0.2, 0.6, 0.4])
    # minmax: bm25 -> [1, .5, 0]; dense -> [0, 1, .5]
    assert weighted_fusion(bm25, dense).tolist() == pytest.approx([0.5, 0.75, 0.25])
    assert weighted_fusion(bm25, dense, 1.0).tolist() == pytest.approx([1.0, 0.5, 0.0])
    assert minmax(np.array([3.0, 3.0])).tolist() == [1.0, 1.0]
    assert minmax(np.array([0.0, 0.0])).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="weight"):
        weighted_fusion(bm25, dense, 1.5)


def test_rrf_by_hand():
    first = np.array([3.0, 2.0, np.nan])  # ranks 1, 2, absent
    second = np.array([1.0, 2.0, 3.0])  # ranks 3, 2, 1
    expected = np.array([1 / 61 + 1 / 63, 2 / 62, 1 / 61]) * 61 / 2
    assert rrf_fusion([first, second], k=60).tolist() == pytest.approx(expected.tolist())


def test_fusion_stage_orders_and_reports():
    trace = Trace()
    ranked = Fusion()(
        "q", [cand("a", bm25=10, dense=0.2), cand("b", bm25=5, dense=0.6), cand("c", dense=0.4)], trace
    )
    assert [c.chunk_id for c in ranked] == ["b", "a", "c"]
    assert trace.get("fusion").scores == pytest.approx({"b": 0.75, "a": 0.5, "c": 0.25})
    dense_only = Fusion()(Query("q"), [cand("a", dense=0.2), cand("b", dense=0.6)], Trace())
    assert [(c.chunk_id, c.score) for c in dense_only] == [("b", 1.0), ("a", 0.0)]
    rrf = Fusion("rrf")(Query("q"), [cand("a", bm25=1, dense=0.1), cand("b", dense=0.9)], Trace())
    assert [c.chunk_id for c in rrf] == ["a", "b"]


def test_redundancy_keeps_first_of_near_duplicates():
    vectors = np.array([[1, 0, 0], [0.99, 0.14, 0], [0, 1, 0], [0.5, 0.5, 0.7]], dtype=np.float32)
    assert non_redundant(vectors).tolist() == [0, 2, 3]
    assert non_redundant(vectors, threshold=0.999).tolist() == [0, 1, 2, 3]
    assert non_redundant(vectors, threshold=0.5).tolist() == [0, 2]
    cands = [cand(n, v) for n, v in zip("wxyz", vectors, strict=True)]
    trace = Trace()
    kept = Redundancy(0.9)(Query("q"), cands, trace)
    assert [c.chunk_id for c in kept] == ["w", "y", "z"]
    assert trace.get("redundancy").notes["dropped"] == ["x"]


def test_dynamic_threshold_golden():
    assert dynamic_threshold([0.2, 0.4, 0.9]) == pytest.approx(0.5)  # var 0.0867 >= 0.01: the mean
    clustered = [0.50, 0.52, 0.54]  # var 0.000267 < 0.01: mean + std
    assert dynamic_threshold(clustered) == pytest.approx(0.52 + np.sqrt(0.0008 / 3))
    assert dynamic_threshold(clustered, epsilon=0.0001) == pytest.approx(0.52)
    assert combine_scores(0.9, 0.6, 0.3) == pytest.approx(0.6)
    assert combine_scores(1.0, 0.0, 0.0, weights=(2, 1, 1)) == pytest.approx(0.5)


def test_dynamic_threshold_never_exceeds_the_best_score():
    # every score equal: the rounded mean of six 0.81 is 0.8100000000000003, above all of them
    assert dynamic_threshold([0.81] * 6) == 0.81
    # mean + std exceeds the maximum in exact arithmetic too: 0.5333 + 0.0236 > 0.55
    assert dynamic_threshold([0.5, 0.55, 0.55]) == 0.55
    assert dynamic_threshold([0.03, 0.04]) == 0.04


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.floats(0, 1))
def test_dynamic_threshold_keeps_the_best_score(scores, epsilon):
    threshold = dynamic_threshold(scores, epsilon)
    assert threshold <= max(scores)


def _score_in_chunk(payload: dict[str, object]) -> str:
    """A model that reads the score each test chunk carries in its text ("text of c2=0.81")."""
    messages = payload["messages"]
    assert isinstance(messages, list)
    match = re.search(r"text of c\d+=([0-9.]+)", messages[-1]["content"])
    return match.group(1) if match else "0.5"


@pytest.fixture(scope="module")
def scoring_llm() -> Iterator[OpenAIChatLLM]:
    with OpenAIServer(answer=_score_in_chunk) as server:
        client = JsonClient(server.base_url, api_key="k", timeout=5.0, policy=RetryPolicy(max_attempts=1))
        yield OpenAIChatLLM("m", client)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 100).map(lambda i: i / 100), min_size=1, max_size=6))
def test_relevance_filter_always_keeps_the_best_candidate(scoring_llm, scores):
    cands = [cand(f"c{i}={score!r}") for i, score in enumerate(scores)]
    trace = Trace()
    kept = RelevanceFilter(scoring_llm)(Query("q"), cands, trace)
    combined = trace.get("relevance").scores
    best = max(combined.values())
    assert kept
    assert kept[0].score == best
    assert {c.chunk_id for c in kept} >= {k for k, v in combined.items() if v == best}


def _scores_by_chunk(table: dict[str, str]):
    def reply(prompt: str) -> str:
        for key, answer in table.items():
            if f"text of {key}" in prompt:
                return answer
        return "0.5"

    return reply


def test_relevance_filter_three_steps_and_threshold():
    llm = FakeLLM(chat_fn=on_prompt(_scores_by_chunk({"good": "0.9", "fair": "0.6", "bad": "0.1"})))
    trace = Trace()
    kept = RelevanceFilter(llm)(Query("q"), [cand("bad"), cand("good"), cand("fair")], trace)
    report = trace.get("relevance")
    assert [c.chunk_id for c in kept] == ["good", "fair"]  # mean 0.533 keeps 0.9 and 0.6
    assert report.calls == 9
    assert report.notes["steps"]["good"] == [0.9, 0.9, 0.9]
    assert report.notes["threshold"] == pytest.approx((0.9 + 0.6 + 0.1) / 3)
    assert "Your initial score was: 0.9" in llm.prompts[4]  # self-reflection sees the base score
    assert "After self-reflection it became: 0.9" in llm.prompts[5]


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("0.8", 0.8),
        (" 1.\n", 1.0),
        (".5", 0.5),
        ("0", 0.0),
        ("Score: 0.9", 0.9),
        ("Relevance Score (between 0 and 1): 0.85", 0.85),  # the echoed scale is not the score
        ("Final Relevance Score (between 0 and 1): 1.0", 1.0),
        ("On a scale from 0 to 1, I'd say 0.3", 0.3),
        ("[0, 1]: 0.4", 0.4),
        ("0.8/1", 0.8),
        ("0.8 out of 1", 0.8),
        ("1. The chunk mentions the fee. Score: 0.2", 0.2),  # a numbered line of reasoning
        ("1. The chunk mentions the fee.\n2. So: 0.2", 0.2),
        ("Initial score: 0.5. Final score: 0.7", 0.7),  # the last labelled number
        ('{"score": 0.4}', 0.4),
        ("The threshold is 0.6", 0.6),
        ("0.9\n\nThe chunk names 3 fees", 0.9),  # 3 is no score
        ("S1 is relevant: 0.6", 0.6),  # a digit inside a word is not a number
        ("1e-3", 0.001),
        ("0,7", 0.7),
        ("very relevant!", None),
        ("7", None),  # out of range: not rescaled
        ("Score: 8", None),
        ("-0.2", None),
        ("85%", None),
        ("1e400", None),
        ("0.7, maybe 0.8", None),  # two different scores: ambiguous
        ("0.2-0.3", None),
    ],
)
def test_parse_unit_score_golden(reply, score):
    assert parse_unit_score(reply) == score


@given(st.floats(0, 1))
def test_parse_unit_score_reads_every_score_as_printed(score):
    for reply in (repr(score), f"Score: {score!r}", f"Relevance Score (between 0 and 1): {score!r}\n"):
        assert parse_unit_score(reply) == score


def test_relevance_unparsed_reply_is_neutral_and_recorded():
    llm = FakeLLM(
        chat_fn=on_prompt(_scores_by_chunk({"good": "Score: 0.9", "odd": "very relevant!", "bad": "7"}))
    )
    trace = Trace()
    RelevanceFilter(llm)(Query("q"), [cand("good"), cand("odd"), cand("bad")], trace)
    report = trace.get("relevance")
    assert report.scores == pytest.approx({"good": 0.9, "odd": 0.5, "bad": 0.5})
    assert {(u["chunk_id"], u["step"]) for u in report.notes["unparsed"]} >= {
        ("odd", "base"),
        ("bad", "critic"),
    }


def test_llm_threshold_and_fallback():
    def reply(prompt: str) -> str:
        if prompt.startswith("Based on the user query"):
            return "0.95"
        return "0.9" if "text of a" in prompt else "0.2"

    trace = Trace()
    kept = RelevanceFilter(FakeLLM(chat_fn=on_prompt(reply)), threshold="llm")(
        Query("q"), [cand("a"), cand("b")], trace
    )
    assert kept == []
    assert trace.get("relevance").notes["threshold_source"] == "llm"
    broken = FakeLLM(
        chat_fn=on_prompt(
            lambda p: "no idea" if p.startswith("Based") else ("0.9" if "text of a" in p else "0.2")
        )
    )
    trace = Trace()
    kept = RelevanceFilter(broken, threshold="llm")(Query("q"), [cand("a"), cand("b")], trace)
    assert [c.chunk_id for c in kept] == ["a"]
    assert trace.get("relevance").notes["threshold_source"] == "dynamic"


def test_rewrite_uses_seed_prompt_and_cleans_reply():
    llm = FakeLLM(
        chat_fn=on_prompt(lambda p: 'Rewritten Query: "Henry Feilden occupation details biography"\nmore')
    )
    trace = Trace()
    assert QueryRewrite(llm).rewrite("What is Henry Feilden's occupation?", trace) == (
        "Henry Feilden occupation details biography"
    )
    assert 'Original Query: "What is Henry Feilden\'s occupation?"' in llm.prompts[0]
    assert trace.get("rewrite").notes["rewritten"].startswith("Henry")
    assert clean_rewrite("  \n ''\n", "original") == "original"


@pytest.mark.parametrize(
    ("reply", "rewritten"),
    [
        ("pet fee", "pet fee"),
        ('Sure! Here is a better query:\n\n"pet travel fee policy"', "pet travel fee policy"),
        ("Sure!\npet fee amount", "pet fee amount"),
        ("Here's an improved version: pet fees", "pet fees"),
        ('Certainly. The rewritten query is: "pet fee"', "pet fee"),
        ("“pet fee per flight”", "pet fee per flight"),
        ("**pet fee per flight**", "pet fee per flight"),
        ("Pet policy: fees and rules", "Pet policy: fees and rules"),  # a colon of the query itself
        ("SQL query syntax: joins", "SQL query syntax: joins"),
        ("Sure! Here is a better query:", "original"),  # a preamble and nothing after it
        ("...", "original"),
        ('"..."', "original"),
    ],
)
def test_clean_rewrite_removes_preambles_and_keeps_only_words(reply, rewritten):
    assert clean_rewrite(reply, "original") == rewritten


REWRITES = {"pets": "...", "fees": "pet \ud800 fee", "bags": "Sure! Here is a better query: checked bag fees"}


@pytest.fixture(scope="module")
def rewriting_llm() -> Iterator[OpenAIChatLLM]:
    """The remote LLM of a loopback server that rewrites each query of :data:`REWRITES` as listed there (a
    lone surrogate travels as the JSON escape ``\\ud800``)."""

    def answer(payload: dict[str, object]) -> str:
        messages = payload["messages"]
        assert isinstance(messages, list)
        match = re.search(r'Original Query: "(\w+)"', messages[-1]["content"])
        return REWRITES[match.group(1)] if match else ""

    with OpenAIServer(answer=answer) as server:
        client = JsonClient(server.base_url, api_key="k", timeout=5.0, policy=RetryPolicy(max_attempts=1))
        yield OpenAIChatLLM("m", client)


@pytest.mark.parametrize(
    ("query", "searched", "refused"),
    [
        ("pets", "pets", None),  # a rewrite with no word is not used
        ("fees", "fees", "not valid Unicode text"),
        ("bags", "checked bag fees", None),
    ],
)
def test_an_unusable_rewrite_falls_back_to_the_query(rewriting_llm, query, searched, refused):
    state, trace = Query(query), Trace()
    QueryRewrite(rewriting_llm)(state, [], trace)
    assert state.text == searched
    notes = trace.get("rewrite").notes
    assert notes["rewritten"] == searched
    assert (refused is None) == ("refused" not in notes)
    if refused:
        assert refused in notes["refused"]
