"""The test doubles, all in one place: a deterministic in-process LLM and a counting embedder.

:class:`FakeLLM` implements the :class:`~chunkwise.models.protocols.LLM` protocol: ``structured`` and
``chat`` answers come from queues (or a function of the conversation), ``logprobs`` from a score
function of the continuation, so hypothesis can drive every branch of the checks and repairs, and the
query stages can be tested with exact replies. :class:`CountingEmbedder` wraps the real embedder and
counts what it embeds; :class:`RecordingEmbedder` needs no model and records the size of each call.
Tests that need a real model or a real HTTP server use the local models, the
real OpenAI-compatible server, or the scripted loopback server (for faults) instead.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from chunkwise.errors import LLMResponseError
from chunkwise.models.protocols import Message, TokenLogprobs

_TOKENS = re.compile(r"\w+|\s+|[^\w\s]")

#: ``score(text, offset) -> log-probability of the marker at offset`` (text = prompt + continuation).
ScoreFn = Callable[[str, int], float]


def on_prompt(reply: Callable[[str], Any]) -> Callable[[Sequence[Message]], Any]:
    """A reply function of the conversation, from one of its last message (the prompt)."""
    return lambda messages: reply(messages[-1].content)


def paragraph_score(text: str, offset: int) -> float:
    """High right after a blank line, low elsewhere: a model that knows where paragraphs end."""
    return -1.0 if text[max(0, offset - 2) : offset] == "\n\n" else -12.0


class FakeLLM:
    """Scripted answers: ``structured``/``chat`` pop their queues (a raised error if the item is one)."""

    def __init__(
        self,
        structured: Sequence[Any] = (),
        chat: Sequence[str] = (),
        *,
        structured_fn: Callable[[Sequence[Message]], Any] | None = None,
        chat_fn: Callable[[Sequence[Message]], str] | None = None,
        score: ScoreFn = paragraph_score,
        token_pattern: str = _TOKENS.pattern,
        head_logprob: float = -20.0,
    ) -> None:
        self._structured: deque[Any] = deque(structured)
        self._chat: deque[str] = deque(chat)
        self._structured_fn = structured_fn
        self._chat_fn = chat_fn
        self._score = score
        self._token_re = re.compile(token_pattern)
        self._head_logprob = head_logprob
        self.calls: list[tuple[str, list[Message]]] = []

    @property
    def name(self) -> str:
        return "fake"

    @property
    def prompts(self) -> list[str]:
        """The last message of every chat and structured call so far, in order."""
        return [messages[-1].content for kind, messages in self.calls if kind != "logprobs"]

    def count_tokens(self, text: str) -> int:
        return len([t for t in _TOKENS.findall(text) if not t.isspace()]) or (1 if text else 0)

    def chat(self, messages: Sequence[Message], *, max_tokens: int = 512, stage: str = "") -> str:
        self.calls.append(("chat", list(messages)))
        if self._chat:
            return self._chat.popleft()
        return self._chat_fn(messages) if self._chat_fn else ""

    def structured(
        self, messages: Sequence[Message], schema: dict[str, Any], *, max_tokens: int = 1024, stage: str = ""
    ) -> Any:
        self.calls.append(("structured", list(messages)))
        value = self._structured.popleft() if self._structured else None
        if value is None and self._structured_fn is not None:
            value = self._structured_fn(messages)
        if isinstance(value, Exception):
            raise value
        if value is None:
            raise LLMResponseError("fake", "no scripted answer")
        return value

    def logprobs(
        self, prompt: str, continuation: str, candidates: Sequence[str] = (), *, stage: str = ""
    ) -> TokenLogprobs:
        """The first candidate (the marker) scores by :attr:`score`; any other by ``head_logprob``."""
        self.calls.append(("logprobs", [Message("user", continuation)]))
        full = prompt + continuation
        tokens = list(self._token_re.finditer(continuation))
        rows = [
            {
                c: self._score(full, len(prompt) + m.start()) if i == 0 else self._head_logprob
                for i, c in enumerate(candidates)
            }
            for m in tokens
        ]
        return TokenLogprobs(
            tokens=tuple(m.group() for m in tokens),
            offsets=tuple(m.start() for m in tokens),
            logprobs=tuple(-2.0 for _ in tokens),
            candidates=tuple(rows),
        )


class CountingEmbedder:
    """Delegates to a real embedder and counts the texts it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts = 0

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts += len(texts)
        return self.inner.embed(texts)


class RecordingEmbedder:
    """A model-free embedder: each text's vector comes from its hash; ``calls`` records how many texts
    every call received (so a test can see how an ingest slices its work) and ``last`` the last text."""

    name = "recording"
    dim = 8

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.last = ""

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls.append(len(texts))
        self.last = texts[-1] if texts else self.last
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[: self.dim] for t in texts]
        vectors = np.array(rows, dtype=np.float32).reshape(len(texts), self.dim) + 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
