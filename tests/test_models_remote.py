"""The remote code paths end to end against a real loopback OpenAI-compatible server.

Chat, structured output, embeddings, echo logprobs and rerank go through the same factories, wrappers,
HTTP client, ledger and cache as in production; the server's usage counts words, so totals are exact.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkwise.errors import BudgetExceededError, LLMResponseError, ModelCallError
from chunkwise.models import Message, Models
from chunkwise.models.accounting import Ledger, stage
from chunkwise.models.cache import ModelCache
from chunkwise.models.config import ModelsConfig, Price
from tests.support.openai_server import (
    ALTERNATIVES,
    OpenAIServer,
    Reply,
    hash_vector,
    token_logprob,
    word_count,
)

KEY = "sk-test-secret-0123456789"
CUTS = {
    "type": "object",
    "properties": {"cuts": {"type": "array", "items": {"type": "integer"}}},
    "required": ["cuts"],
}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


@pytest.fixture
def config(server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelsConfig:
    monkeypatch.setenv("CHUNKWISE_TEST_KEY", KEY)
    return ModelsConfig(
        base_url=server.base_url,
        api_key_env="CHUNKWISE_TEST_KEY",
        timeout=5,
        backoff_base=0.0,
        cache_dir=str(tmp_path / "cache"),
        prices={"gpt-test": Price(input_per_mtok=1.0, output_per_mtok=4.0)},
    )


def test_chat_sends_the_key_and_returns_the_answer(server: OpenAIServer, config: ModelsConfig) -> None:
    llm = Models(config).llm("openai:gpt-test")
    answer = llm.chat([Message("system", "be brief"), Message("user", "hello there")], max_tokens=20)
    assert answer == "echo: hello there"
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.json["temperature"] == 0
    assert request.json["max_tokens"] == 20
    assert request.json["messages"][1] == {"role": "user", "content": "hello there"}


def test_accounting_totals_are_exact(server: OpenAIServer, config: ModelsConfig) -> None:
    ledger = Ledger()
    llm = Models(config, ledger=ledger).llm("openai:gpt-test")
    prompts = ["one two three", "four five", "six"]
    for prompt in prompts:
        llm.chat([Message("user", prompt)], stage="plan")
    llm.chat([Message("user", "seven eight")], stage="answer")
    inputs = [word_count(p) for p in [*prompts, "seven eight"]]
    outputs = [word_count(f"echo: {p}") for p in [*prompts, "seven eight"]]
    total = ledger.totals()
    assert (total.calls, total.cache_hits) == (4, 0)
    assert (total.input_tokens, total.output_tokens) == (sum(inputs), sum(outputs))
    assert total.cost == pytest.approx((sum(inputs) * 1.0 + sum(outputs) * 4.0) / 1e6)
    by_stage = ledger.by_stage()
    assert by_stage["plan"].input_tokens == sum(inputs[:3])
    assert by_stage["answer"].output_tokens == outputs[3]
    record = ledger.records[0]
    assert (record.role, record.backend, record.model, record.operation) == (
        "llm",
        "openai",
        "gpt-test",
        "chat",
    )
    assert json.loads(json.dumps(ledger.to_dict()))["total"]["calls"] == 4


def test_rerun_makes_zero_backend_calls(server: OpenAIServer, config: ModelsConfig) -> None:
    def run() -> tuple[Ledger, list[Any]]:
        ledger = Ledger()
        llm = Models(config, ledger=ledger).llm("openai:gpt-test")
        embedder = Models(config, ledger=ledger).embedder("openai:emb-test")
        reranker = Models(config, ledger=ledger).reranker("rerank:rr-test")
        results = [
            embedder.embed(["alpha beta", "gamma"]).tolist(),
            llm.chat([Message("user", "a b c")]),
            llm.logprobs("Text:", " one two\n\nthree", ["\n\n"]),
            reranker.score("alpha", ["alpha beta", "gamma"]).tolist(),
        ]
        return ledger, results

    first, results = run()
    assert len(server.requests) == 4
    second, results_again = run()
    assert len(server.requests) == 4
    assert results_again == results
    total = second.totals()
    assert (total.calls, total.input_tokens, total.output_tokens, total.cost) == (0, 0, 0, 0.0)
    assert total.cache_hits == 4
    assert total.cached_tokens == first.totals().tokens


def test_structured_repairs_fenced_truncated_json(server: OpenAIServer, config: ModelsConfig) -> None:
    server.answer = lambda request: '```json\n{"cuts": [2, 5,'
    llm = Models(config).llm("openai:gpt-test")
    assert llm.structured([Message("user", "split it")], CUTS) == {"cuts": [2, 5]}
    assert len(server.requests) == 1
    assert '{"cuts": [0]}' in server.requests[0].json["messages"][-1]["content"]


def test_structured_retries_a_schema_violation_with_feedback(
    server: OpenAIServer, config: ModelsConfig
) -> None:
    server.script(Reply.answer('{"cuts": "three"}'), Reply.answer('{"cuts": [3]}'))
    llm = Models(config).llm("openai:gpt-test")
    assert llm.structured([Message("user", "split it")], CUTS) == {"cuts": [3]}
    retry = server.requests[1].json["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"cuts": "three"}'}
    assert "schema violation at $['cuts']" in retry[-1]["content"]


def test_structured_gives_up_with_a_typed_error(server: OpenAIServer, config: ModelsConfig) -> None:
    server.answer = lambda request: "I cannot answer in JSON, sorry."
    llm = Models(config).llm("openai:gpt-test")
    with pytest.raises(LLMResponseError, match=r"openai:gpt-test: no valid JSON .* after 3 attempts"):
        llm.structured([Message("user", "split it")], CUTS)
    assert len(server.requests) == config.structured_attempts


def test_embeddings_match_the_server_and_count_tokens(server: OpenAIServer, config: ModelsConfig) -> None:
    ledger = Ledger()
    embedder = Models(config, ledger=ledger).embedder("openai:emb-test")
    texts = ["the first text", "second", "a third one here"]
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, server.dim)
    assert np.allclose(vectors, np.asarray([hash_vector(t, server.dim) for t in texts]), atol=1e-6)
    assert ledger.totals().input_tokens == sum(word_count(t) for t in texts)
    more = embedder.embed(["second", "new text"])
    assert np.allclose(more[0], vectors[1])
    assert server.requests[-1].json["input"] == ["new text"]
    assert ledger.totals().cached_tokens == word_count("second")


def test_echo_logprobs_cover_the_continuation_only(server: OpenAIServer, config: ModelsConfig) -> None:
    llm = Models(config).llm("openai:gpt-test")
    prompt, continuation = "Split this text:", " Cats purr.\n\nDogs bark."
    result = llm.logprobs(prompt, continuation, candidates=["\n\n", "never-seen"])
    request = server.requests[0].json
    assert (request["prompt"], request["echo"], request["max_tokens"]) == (prompt + continuation, True, 1)
    assert "".join(result.tokens) == continuation
    assert [continuation[o : o + len(t)] for t, o in zip(result.tokens, result.offsets, strict=True)] == list(
        result.tokens
    )
    assert result.logprobs == tuple(token_logprob(t) for t in result.tokens)
    for token, candidates in zip(result.tokens, result.candidates, strict=True):
        listed = {token: token_logprob(token), **{a: token_logprob(a) for a in ALTERNATIVES}}
        assert candidates["\n\n"] == token_logprob("\n\n")
        assert candidates["never-seen"] == min(listed.values())


def test_rerank_scores_follow_input_order(server: OpenAIServer, config: ModelsConfig) -> None:
    ledger = Ledger()
    reranker = Models(config, ledger=ledger).reranker("rerank:rr-test")
    with stage("rerank"):
        scores = reranker.score("red apple", ["green pear", "red apple pie", "apple"])
    assert scores.tolist() == [0.0, 1.0, 0.5]
    assert server.requests[0].path == "/v1/rerank"
    assert ledger.by_stage()["rerank"].input_tokens == 2 * 3 + 2 + 3 + 1


def test_budget_stops_before_the_call(server: OpenAIServer, config: ModelsConfig) -> None:
    ledger = Ledger()
    ledger.budget = type(ledger.budget)(max_tokens=12)
    llm = Models(config, ledger=ledger, cache=ModelCache(config.cache_path() / "b")).llm("openai:gpt-test")
    llm.chat([Message("user", "one two three four")])
    spent = ledger.totals().tokens
    with pytest.raises(BudgetExceededError, match=r"token budget exceeded: .* > max_tokens 12"):
        llm.chat([Message("user", "x" * 200)])
    assert len(server.requests) == 1
    assert ledger.totals().tokens == spent


def test_cost_budget(server: OpenAIServer, config: ModelsConfig) -> None:
    ledger = Ledger()
    ledger.budget = type(ledger.budget)(max_cost=1e-6)
    llm = Models(config, ledger=ledger).llm("openai:gpt-test")
    with pytest.raises(BudgetExceededError, match="cost budget exceeded"):
        llm.chat([Message("user", "y" * 40)])
    assert server.requests == []


def test_the_key_never_leaks(
    server: OpenAIServer,
    config: ModelsConfig,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level("DEBUG")
    llm = Models(config).llm("openai:gpt-test")
    llm.chat([Message("user", "cache me")])
    server.script(
        Reply.raw(json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}}), status=401)
    )
    with pytest.raises(ModelCallError) as raised:
        llm.chat([Message("user", "fail now")])
    assert "HTTP 401" in str(raised.value)
    texts = [
        repr(llm),
        repr(llm.inner),
        str(raised.value),
        repr(raised.value),
        caplog.text,
        *capsys.readouterr(),
    ]
    assert all(KEY not in text for text in texts)
    cache_files = list(Path(config.cache_path()).rglob("*"))
    assert cache_files
    assert all(KEY.encode() not in f.read_bytes() for f in cache_files if f.is_file())


def _chat_body(usage: object) -> str:
    """A chat completion answering "fine" whose ``usage`` is ``usage`` (JSON text, sent verbatim)."""
    message = '{"role": "assistant", "content": "fine"}'
    return f'{{"choices": [{{"index": 0, "message": {message}}}], "usage": {usage}}}'


@pytest.mark.parametrize(
    ("usage", "counted"),
    [
        ("[3, 4]", (2, 1)),  # not an object: the estimates (8 characters sent, 4 received)
        ('"lots"', (2, 1)),
        ('{"prompt_tokens": 1e400, "completion_tokens": 5}', (2, 5)),  # infinite: the estimate
        ('{"prompt_tokens": -779, "completion_tokens": -3}', (2, 1)),  # negative: never lowers the totals
        ('{"prompt_tokens": 2.5, "completion_tokens": true}', (2, 1)),
        ('{"prompt_tokens": 7.0, "completion_tokens": null}', (7, 1)),
        ('{"prompt_tokens": 7, "completion_tokens": 3}', (7, 3)),
    ],
)
def test_a_malformed_usage_is_read_as_not_reported(
    server: OpenAIServer, config: ModelsConfig, usage: str, counted: tuple[int, int]
) -> None:
    server.script(Reply.raw(_chat_body(usage)))
    ledger = Ledger()
    llm = Models(config, ledger=ledger).llm("openai:gpt-test")
    assert llm.chat([Message("user", "12345678")]) == "fine"
    assert (ledger.totals().input_tokens, ledger.totals().output_tokens) == counted


def test_a_malformed_rerank_usage_is_estimated(server: OpenAIServer, config: ModelsConfig) -> None:
    server.script(Reply.raw('{"results": [{"index": 0, "relevance_score": 0.5}], "usage": [1]}'))
    ledger = Ledger()
    reranker = Models(config, ledger=ledger).reranker("rerank:rr-test")
    assert reranker.score("red apple", ["green pear"]).tolist() == [0.5]
    assert ledger.totals().input_tokens > 0
