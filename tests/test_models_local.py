"""The bundled local models, with no configuration and no network: embeddings, chat, structured, logprobs."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from chunkwise.errors import ConfigError, LLMResponseError
from chunkwise.models import Message, Models
from chunkwise.models.accounting import Ledger
from chunkwise.models.cache import ModelCache
from chunkwise.models.config import ModelsConfig
from chunkwise.models.local_llm import LocalLLM
from chunkwise.models.managed import ManagedLLM
from chunkwise.models.protocols import LLM, Embedder, Reranker

pytestmark = pytest.mark.slow

PROMPT = "A short note about animals.\n"
CONTINUATION = "Cats purr when they are happy. Dogs bark at the door.\n\nThe stock market fell today."


@pytest.fixture
def unconfigured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ModelsConfig:
    """The configuration a user gets with no file and no environment variables."""
    for variable in ("CHUNKWISE_LLM", "CHUNKWISE_EMBEDDER", "CHUNKWISE_RERANKER", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("CHUNKWISE_CACHE_DIR", str(tmp_path / "cache"))
    return ModelsConfig.load()


def test_default_embedder_needs_no_configuration(unconfigured: ModelsConfig) -> None:
    embedder = Models(unconfigured).embedder()
    assert isinstance(embedder, Embedder)
    assert embedder.name == "local:bge-small-en-v1.5-int8"
    vectors = embedder.embed(
        ["A cat sat on the mat.", "A kitten rested on the rug.", "Bond yields rose sharply."]
    )
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_second_local_embedding_run_makes_zero_model_calls(unconfigured: ModelsConfig) -> None:
    texts = ["first chunk of text", "second chunk", "third"]
    first, second = Ledger(), Ledger()
    vectors = Models(unconfigured, ledger=first).embedder().embed(texts)
    again = Models(unconfigured, ledger=second).embedder().embed(texts)
    assert np.array_equal(vectors, again)
    assert first.totals().calls == 1
    assert second.totals().calls == 0
    assert second.totals().cached_tokens == first.totals().input_tokens > 0


def test_default_reranker_is_the_bi_encoder_cosine(unconfigured: ModelsConfig) -> None:
    reranker = Models(unconfigured).reranker()
    assert isinstance(reranker, Reranker)
    scores = reranker.score(
        "which animal purrs?", ["Stocks fell.", "Cats purr when content.", "Rain is wet."]
    )
    assert int(np.argmax(scores)) == 1


def test_chat_answers_the_capital_of_france(llm: LocalLLM) -> None:
    assert isinstance(llm, LLM)
    answer = llm.chat([Message("user", "What is the capital of France?")], max_tokens=20)
    assert "Paris" in answer
    usage = llm.last_usage
    assert usage is not None
    assert 0 < usage.output_tokens <= 20


def test_factory_llm_is_the_bundled_model_with_a_cache(llm: LocalLLM, unconfigured: ModelsConfig) -> None:
    ledger = Ledger()
    managed = Models(unconfigured, ledger=ledger).llm()
    assert isinstance(managed, ManagedLLM)
    assert managed.name == llm.name == "local:SmolLM2-135M-Instruct.Q4_1"
    assert managed.count_tokens("段") == 3  # one CJK character is three byte-level tokens here


def test_logprobs_shape_and_offsets(llm: LocalLLM) -> None:
    result = llm.logprobs(PROMPT, CONTINUATION, candidates=["\n\n", " The"])
    n = len(result.tokens)
    assert n == len(result.offsets) == len(result.logprobs) == len(result.candidates) > 10
    assert "".join(result.tokens) == CONTINUATION
    assert all(CONTINUATION.startswith(t, o) for t, o in zip(result.tokens, result.offsets, strict=True))
    assert all(lp <= 0.0 for lp in result.logprobs)
    assert all(set(c) == {"\n\n", " The"} for c in result.candidates)


def test_logprobs_use_no_deprecated_argument(llm: LocalLLM) -> None:
    """transformers 5.24 renamed a forward pass's ``past_key_values`` to ``cache``: the old name warns on
    every call and goes in 5.40, so a pass (a first one and one reusing its kept prefix) must not use it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        first = llm.logprobs(PROMPT + " Again.", CONTINUATION)
        again = llm.logprobs(PROMPT + " Again.", CONTINUATION)
    assert again.logprobs == pytest.approx(first.logprobs, abs=1e-4)


def test_candidate_logprob_of_the_actual_next_token_equals_its_logprob(llm: LocalLLM) -> None:
    tokens = llm.logprobs(PROMPT, CONTINUATION).tokens
    candidates = [tokens[2], tokens[-1]]
    result = llm.logprobs(PROMPT, CONTINUATION, candidates=candidates)
    hits = [i for i, t in enumerate(result.tokens) if t in candidates]
    assert len(hits) >= 2
    for i in hits:
        assert result.candidates[i][result.tokens[i]] == pytest.approx(result.logprobs[i], abs=1e-5)


def test_logprobs_follow_the_chain_rule(llm: LocalLLM) -> None:
    """log p(a + b | prompt) = log p(a | prompt) + log p(b | prompt + a), from separate computations."""
    first, second = "Cats purr when they are happy.", "\nDogs bark at the door."
    whole = llm.logprobs(PROMPT, first + second)
    head = llm.logprobs(PROMPT, first)
    tail = llm.logprobs(PROMPT + first, second)
    assert whole.tokens == head.tokens + tail.tokens
    assert math.fsum(whole.logprobs) == pytest.approx(
        math.fsum(head.logprobs) + math.fsum(tail.logprobs), abs=1e-2
    )


def test_logprobs_rank_a_coherent_continuation_above_noise(llm: LocalLLM) -> None:
    coherent = llm.logprobs("The capital of France is", " Paris.")
    noise = llm.logprobs("The capital of France is", " banana.")
    assert math.fsum(coherent.logprobs) > math.fsum(noise.logprobs)


def test_logprobs_reject_text_beyond_the_context(llm: LocalLLM) -> None:
    with pytest.raises(ConfigError, match="exceed the model context"):
        llm.logprobs("x", " word" * (llm.context_length + 1))


def test_structured_output_with_the_local_model_replays_from_the_cache(llm: LocalLLM, tmp_path: Path) -> None:
    """With the shape example in the prompt, SmolLM2-135M answers this tiny schema; a re-run is all cache."""
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    question = [Message("user", "What is the capital of France?")]
    first, replay = Ledger(), Ledger()
    value = ManagedLLM(llm, first, ModelCache(tmp_path)).structured(question, schema, max_tokens=24)
    assert value == {"city": "Paris"}
    again = ManagedLLM(llm, replay, ModelCache(tmp_path)).structured(question, schema, max_tokens=24)
    assert again == value
    assert replay.totals().calls == 0
    assert replay.totals().cache_hits == first.totals().calls >= 1
    assert replay.totals().cached_tokens == first.totals().tokens


def test_unsatisfiable_schema_ends_in_the_typed_error(llm: LocalLLM) -> None:
    """A schema no answer can meet exercises the whole repair-and-retry loop, then the typed error."""
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 9}}}
    schema["required"] = ["n"]
    ledger = Ledger()
    with pytest.raises(LLMResponseError, match=r"local:SmolLM2.*no valid JSON .* after 2 attempts"):
        ManagedLLM(llm, ledger, attempts=2).structured(
            [Message("user", "Pick a number.")], schema, max_tokens=12
        )
    assert ledger.totals().calls == 2
