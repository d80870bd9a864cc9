"""Every transport fault a remote model endpoint can throw, scripted on a real loopback server.

Waits are recorded by an injected ``sleep`` instead of being spent, so nothing here depends on time
except the client timeout of the hanging-server tests (0.2 s against a 30 s hang).
"""

from __future__ import annotations

import email.utils
import random
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.errors import ModelCallError
from chunkwise.models.http_client import JsonClient
from chunkwise.models.openai_compat import OpenAIChatLLM, OpenAIEmbedder
from chunkwise.models.protocols import Message
from chunkwise.models.retry import RetryPolicy, parse_retry_after
from tests.support.openai_server import OpenAIServer, Reply

QUESTION = [Message("user", "hello")]


class Sleeps(list[float]):
    """A ``sleep`` that records the requested waits."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def chat_llm(
    server: OpenAIServer, sleeps: Sleeps, *, attempts: int = 4, timeout: float = 5.0
) -> OpenAIChatLLM:
    policy = RetryPolicy(max_attempts=attempts, backoff_base=0.01, backoff_max=1.0, sleep=sleeps)
    return OpenAIChatLLM(
        "m", JsonClient(server.base_url, api_key="k", timeout=timeout, policy=policy, label="openai:m")
    )


def test_429_honours_retry_after(server: OpenAIServer) -> None:
    sleeps = Sleeps()
    server.script(Reply.error(429, retry_after=0.25), Reply.error(429, retry_after=0.5))
    assert chat_llm(server, sleeps).chat(QUESTION) == "echo: hello"
    assert sleeps == [0.25, 0.5]
    assert len(server.requests) == 3


def test_retry_after_is_capped_by_backoff_max(server: OpenAIServer) -> None:
    sleeps = Sleeps()
    server.script(Reply.error(429, retry_after=3600))
    chat_llm(server, sleeps).chat(QUESTION)
    assert sleeps == [1.0]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_is_retried_with_bounded_exponential_backoff(server: OpenAIServer, status: int) -> None:
    sleeps = Sleeps()
    server.script(Reply.error(status), Reply.error(status), Reply.error(status))
    assert chat_llm(server, sleeps).chat(QUESTION) == "echo: hello"
    assert len(sleeps) == 3
    assert all(0.0 <= wait <= 0.01 * 2**n for n, wait in enumerate(sleeps))


def test_attempt_cap_then_typed_error(server: OpenAIServer) -> None:
    sleeps = Sleeps()
    server.script(*[Reply.error(503)] * 5)
    with pytest.raises(ModelCallError, match=r"openai:m: .*/v1/chat/completions: HTTP 503.*after 3 attempts"):
        chat_llm(server, sleeps, attempts=3).chat(QUESTION)
    assert len(server.requests) == 3
    assert len(sleeps) == 2


def test_client_errors_are_not_retried(server: OpenAIServer) -> None:
    server.script(Reply.error(400))
    with pytest.raises(ModelCallError, match=r"HTTP 400: scripted 400 \(after 1 attempts\)"):
        chat_llm(server, Sleeps()).chat(QUESTION)
    assert len(server.requests) == 1


def test_hang_past_the_timeout_is_retried(server: OpenAIServer) -> None:
    sleeps = Sleeps()
    server.script(Reply.hang(30))
    assert chat_llm(server, sleeps, timeout=0.2).chat(QUESTION) == "echo: hello"
    assert len(server.requests) == 2


def test_server_that_always_hangs_ends_in_a_timeout_error(server: OpenAIServer) -> None:
    server.script(Reply.hang(30), Reply.hang(30))
    with pytest.raises(ModelCallError, match=r"timed out after 0.2s \(after 2 attempts\)"):
        chat_llm(server, Sleeps(), attempts=2, timeout=0.2).chat(QUESTION)


def test_dropped_connection_is_retried(server: OpenAIServer) -> None:
    server.script(Reply.disconnect(), Reply.disconnect())
    assert chat_llm(server, Sleeps()).chat(QUESTION) == "echo: hello"
    assert len(server.requests) == 3


def test_refused_connection_is_a_typed_error() -> None:
    with OpenAIServer() as gone:
        url = gone.base_url
    policy = RetryPolicy(max_attempts=2, sleep=Sleeps())
    llm = OpenAIChatLLM("m", JsonClient(url, timeout=1.0, policy=policy))
    with pytest.raises(ModelCallError, match=r"connection failed \(ConnectError\) \(after 2 attempts\)"):
        llm.chat(QUESTION)


@pytest.mark.parametrize(
    "reply",
    [
        Reply.raw("{{definitely not json"),
        Reply.raw('{"id": "x", "choices": [{"message": {"content": "cut'),
        Reply.raw("<html>Bad gateway</html>", content_type="text/html"),
        Reply.raw('{"choices": []}'),
        Reply.raw('{"choices": [{"message": {"content": null}}]}'),
        Reply.raw("[1, 2, 3]"),
    ],
    ids=["garbage", "truncated", "non-json", "no-choices", "null-content", "not-an-object"],
)
def test_unreadable_bodies_are_retried(server: OpenAIServer, reply: Reply) -> None:
    server.script(reply)
    assert chat_llm(server, Sleeps()).chat(QUESTION) == "echo: hello"
    assert len(server.requests) == 2


def test_unreadable_bodies_until_the_cap(server: OpenAIServer) -> None:
    server.script(*[Reply.raw("nope", content_type="text/plain")] * 2)
    with pytest.raises(ModelCallError, match="not a JSON object"):
        chat_llm(server, Sleeps(), attempts=2).chat(QUESTION)


def test_retry_after_http_date() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after(email.utils.formatdate(now + 7, usegmt=True), now=now) == pytest.approx(7.0)
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


@given(st.integers(0, 12), st.floats(0.0, 2.0), st.floats(0.0, 60.0), st.integers(0, 2**32))
def test_backoff_stays_within_its_envelope(attempt: int, base: float, cap: float, seed: int) -> None:
    policy = RetryPolicy(backoff_base=base, backoff_max=cap, rng=random.Random(seed))
    assert 0.0 <= policy.delay(attempt) <= min(cap, base * 2**attempt)


def test_a_request_that_is_not_valid_unicode_is_a_typed_error_and_not_sent(server: OpenAIServer) -> None:
    sleeps = Sleeps()
    with pytest.raises(ModelCallError, match="not valid Unicode text") as raised:
        chat_llm(server, sleeps).chat([Message("user", "pet \ud800 fee")])
    assert raised.value.status is None
    assert server.requests == []
    assert sleeps == []  # not retried


def _embeddings_body(*rows: tuple[int, str]) -> str:
    data = ", ".join(f'{{"index": {index}, "embedding": {vector}}}' for index, vector in rows)
    return f'{{"data": [{data}], "usage": {{"prompt_tokens": 2}}}}'


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (_embeddings_body((0, "[1, 0]"), (0, "[0, 1]")), r"embedding indexes \[0, 0\] are not 0 to 1"),
        (_embeddings_body((0, "[1, 0]"), (1, "[NaN, 1]")), "not finite"),
        (_embeddings_body((0, "[1, 0]"), (1, "[1e39, 1]")), "not finite"),
        (_embeddings_body((0, "[1, 0]"), (1, "[0, 0.0]")), "a vector of zeros for input 1"),
        (_embeddings_body((0, "[1, 0]"), (1, "[1, 0, 0]")), "unequal length"),
    ],
    ids=["repeated-index", "nan", "past-float32", "zero-vector", "unequal"],
)
def test_embeddings_that_cannot_be_the_inputs_vectors_are_refused(
    server: OpenAIServer, body: str, reason: str
) -> None:
    """A repeated index once gave one text another's vector; a zero vector was stored and, in PostgreSQL,
    scored NaN, which sorts before every real score."""
    server.script(*[Reply.raw(body)] * 2)
    policy = RetryPolicy(max_attempts=2, backoff_base=0.01, backoff_max=1.0, sleep=Sleeps())
    embedder = OpenAIEmbedder(
        "m", JsonClient(server.base_url, api_key="k", timeout=5.0, policy=policy, label="openai:m"), dim=2
    )
    with pytest.raises(ModelCallError, match=reason):
        embedder.embed(["one", "two"])
