"""Prompt logprobs from servers that speak OpenAI's ``echo`` + ``logprobs``, vLLM's ``prompt_logprobs``,
or neither: the style is probed on the first call, remembered per endpoint, and accounted exactly.

The loopback server plays each kind of server (``styles``); its usage counts words, so the ledger can be
compared with the sum of what the server reported. The real server without prompt logprobs
(``transformers serve``) is in ``tests/test_real_server.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.errors import LogprobsUnavailableError, ModelCallError
from chunkwise.models import Models
from chunkwise.models.accounting import Ledger
from chunkwise.models.config import ModelsConfig
from chunkwise.models.managed import ManagedLLM
from chunkwise.models.openai_compat import align_tokens
from tests.support.openai_server import ALTERNATIVES, OpenAIServer, Reply, token_logprob, word_tokens

PROMPT, CONTINUATION = "Split this text:", " Cats purr.\n\nDogs bark loudly."


def llm_for(server: OpenAIServer, tmp_path: Path, ledger: Ledger | None = None) -> ManagedLLM:
    config = ModelsConfig(base_url=server.base_url, cache=False, timeout=5, backoff_base=0.0, max_attempts=2)
    return Models(config, ledger=ledger).llm("openai:test-model")


def reported_usage(server: OpenAIServer) -> tuple[int, int]:
    """What the server reported over its answered requests: the prompt's words, one generated token."""
    answered = [
        r.json
        for r in server.requests
        if "prompt_logprobs" not in r.json or "prompt_logprobs" in server.styles
    ]
    return sum(len(word_tokens(r["prompt"])) for r in answered), len(answered)


@pytest.fixture
def vllm() -> Iterator[OpenAIServer]:
    """A server that understands both shapes, as vLLM does."""
    with OpenAIServer() as running:
        yield running


@pytest.fixture
def prompt_logprobs_only() -> Iterator[OpenAIServer]:
    """A server that ignores ``echo`` and answers ``prompt_logprobs``."""
    with OpenAIServer(styles=("prompt_logprobs",)) as running:
        yield running


@pytest.fixture
def no_logprobs() -> Iterator[OpenAIServer]:
    """A server that ignores ``echo`` and refuses ``prompt_logprobs`` (as ``transformers serve`` does)."""
    with OpenAIServer(styles=()) as running:
        yield running


def check_scores(result_tokens: tuple[str, ...], logprobs: tuple[float, ...]) -> None:
    assert "".join(result_tokens) == CONTINUATION
    assert logprobs == tuple(token_logprob(t) for t in result_tokens)


def test_echo_is_probed_first_and_kept(vllm: OpenAIServer, tmp_path: Path) -> None:
    ledger = Ledger()
    llm = llm_for(vllm, tmp_path, ledger)
    first = llm.logprobs(PROMPT, CONTINUATION, ["\n\n"])
    llm.logprobs(PROMPT, CONTINUATION + " More.")
    assert [bool(r.json.get("echo")) for r in vllm.requests] == [True, True]
    check_scores(first.tokens, first.logprobs)
    assert (ledger.totals().input_tokens, ledger.totals().output_tokens) == reported_usage(vllm)


def test_prompt_logprobs_when_echo_is_ignored(prompt_logprobs_only: OpenAIServer, tmp_path: Path) -> None:
    server = prompt_logprobs_only
    ledger = Ledger()
    llm = llm_for(server, tmp_path, ledger)
    result = llm.logprobs(PROMPT, CONTINUATION, ["\n\n", "never-seen"])
    styles = [("echo" in r.json, "prompt_logprobs" in r.json) for r in server.requests]
    assert styles == [(True, False), (False, True)]
    check_scores(result.tokens, result.logprobs)
    assert [CONTINUATION[o : o + len(t)] for t, o in zip(result.tokens, result.offsets, strict=True)] == list(
        result.tokens
    )
    lowest_alternative = min(token_logprob(a) for a in ALTERNATIVES)
    for candidates in result.candidates:
        assert candidates["\n\n"] == token_logprob("\n\n")
        assert candidates["never-seen"] == lowest_alternative
    # Both requests are accounted: the ignored echo still cost what the server reported.
    assert (ledger.totals().input_tokens, ledger.totals().output_tokens) == reported_usage(server)
    assert ledger.totals().calls == 1

    again = llm_for(server, tmp_path)  # a new client for the same endpoint remembers the style
    again.logprobs(PROMPT, CONTINUATION)
    assert "prompt_logprobs" in server.requests[-1].json
    assert len(server.requests) == 3


def test_both_styles_score_the_same_tokens(
    vllm: OpenAIServer, prompt_logprobs_only: OpenAIServer, tmp_path: Path
) -> None:
    echo = llm_for(vllm, tmp_path).logprobs(PROMPT, CONTINUATION)
    vllm_style = llm_for(prompt_logprobs_only, tmp_path).logprobs(PROMPT, CONTINUATION)
    assert (echo.tokens, echo.offsets, echo.logprobs) == (
        vllm_style.tokens,
        vllm_style.offsets,
        vllm_style.logprobs,
    )


def test_no_prompt_logprobs_is_one_clear_error(no_logprobs: OpenAIServer, tmp_path: Path) -> None:
    llm = llm_for(no_logprobs, tmp_path)
    with pytest.raises(LogprobsUnavailableError) as raised:
        llm.logprobs(PROMPT, CONTINUATION)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"openai:test-model: {no_logprobs.base_url} returns no prompt logprobs")
    assert len(no_logprobs.requests) == 2
    with pytest.raises(LogprobsUnavailableError):
        llm.logprobs(PROMPT, CONTINUATION)
    assert len(no_logprobs.requests) == 2  # remembered: no request is made again


def test_a_failing_server_is_not_taken_for_one_without_logprobs(vllm: OpenAIServer, tmp_path: Path) -> None:
    vllm.script(Reply.error(503), Reply.error(503))
    llm = llm_for(vllm, tmp_path)
    with pytest.raises(ModelCallError, match="HTTP 503") as raised:
        llm.logprobs(PROMPT, CONTINUATION)
    assert raised.value.status == 503
    assert llm.logprobs(PROMPT, CONTINUATION).tokens  # not remembered as "no logprobs"


def echo_reply(logprobs: list[float | None]) -> Reply:
    """An ``echo`` reply over the prompt's word tokens with the given logprobs."""
    tokens = word_tokens(PROMPT + CONTINUATION)
    data = {"tokens": tokens, "token_logprobs": logprobs, "top_logprobs": [None] * len(tokens)}
    body = {"choices": [{"index": 0, "text": PROMPT + CONTINUATION, "logprobs": data}], "usage": {}}
    return Reply.raw(json.dumps(body))


def test_an_echo_without_scores_falls_back_to_prompt_logprobs(vllm: OpenAIServer, tmp_path: Path) -> None:
    """A server that echoes the prompt with every logprob null has not scored it: the next style is asked,
    rather than the first token being blamed for straddling the prompt."""
    vllm.script(echo_reply([None] * len(word_tokens(PROMPT + CONTINUATION))))
    result = llm_for(vllm, tmp_path).logprobs(PROMPT, CONTINUATION)
    assert ["prompt_logprobs" in r.json for r in vllm.requests] == [False, True]
    check_scores(result.tokens, result.logprobs)


def test_a_null_logprob_inside_the_text_is_named(vllm: OpenAIServer, tmp_path: Path) -> None:
    tokens = word_tokens(PROMPT + CONTINUATION)
    logprobs: list[float | None] = [None, *(token_logprob(t) for t in tokens[1:])]
    logprobs[-2] = None
    vllm.script(echo_reply(logprobs))
    with pytest.raises(LogprobsUnavailableError, match=f"no logprob for the text's token {tokens[-2]!r}"):
        llm_for(vllm, tmp_path).logprobs(PROMPT, CONTINUATION)


def test_align_tokens_repairs_what_servers_decode() -> None:
    text = "<|im_start|>user\n中文 text\n"
    # vLLM decodes each byte-level token alone: the split CJK characters come out as U+FFFD.
    tokens = ["<s>", "<|im_start|>", "user", "\n", "\ufffd", "\ufffd\ufffd", "\ufffd", " text", "\n"]
    offsets = align_tokens(text, tokens)
    assert offsets[:4] == [0, 0, 12, 16]
    assert offsets[7:] == [19, 24]
    assert offsets[4:7] == sorted(offsets[4:7])
    assert all(17 <= o < 19 for o in offsets[4:7])
    # A SentencePiece token decoded without its leading space still starts at the space.
    assert align_tokens("a b", ["a", "b"]) == [0, 1]
    # The first position of vLLM's prompt_logprobs has no token: it is spread before the second.
    assert align_tokens("<|im_start|>system", [None, "system"]) == [0, 12]


@given(st.lists(st.text(alphabet="ab \n中", min_size=1, max_size=3), max_size=30))
def test_align_tokens_is_exact_on_tokens_that_spell_the_text(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert align_tokens(text, pieces) == [sum(len(p) for p in pieces[:i]) for i in range(len(pieces))]


TOKENS = st.lists(st.sampled_from(["a", " b", "\ufffd", None, "<s>"]))


@given(st.text(alphabet="ab \n中", max_size=30), TOKENS)
def test_align_tokens_offsets_never_decrease(text: str, tokens: list[str | None]) -> None:
    offsets = align_tokens(text, tokens)
    assert offsets == sorted(offsets)
    assert all(0 <= o <= len(text) for o in offsets)
