"""Any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, Ollama, LM Studio...) as LLM or embedder.

- chat: ``POST chat/completions`` at temperature 0;
- structured: the shared loop of :mod:`chunkwise.models.structured` over :meth:`OpenAIChatLLM.chat`;
- logprobs: ``POST completions`` with the prompt and continuation concatenated, ``echo=true``,
  ``logprobs=N`` and ``max_tokens=0``, so the server scores the given text instead of writing new text;
- embeddings: ``POST embeddings`` in batches.

Every call goes through :class:`~chunkwise.models.http_client.JsonClient` (timeouts, retries, typed
errors). Token counts come from the server's ``usage``; ``count_tokens`` is an estimate (four characters a
token) because the remote tokenizer is not available offline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from chunkwise.errors import ConfigError
from chunkwise.models.http_client import JsonClient
from chunkwise.models.managed import estimate_tokens
from chunkwise.models.protocols import Message, TokenLogprobs, Usage, Vectors
from chunkwise.models.remote import RemoteModel
from chunkwise.models.structured import DEFAULT_ATTEMPTS, StructuredViaChat


class OpenAIChatLLM(StructuredViaChat, RemoteModel):
    """Chat, structured output and echo logprobs from an OpenAI-compatible server (``openai:<model>``)."""

    backend: ClassVar[str] = "openai"

    def __init__(
        self, model: str, client: JsonClient, *, top_logprobs: int = 5, attempts: int = DEFAULT_ATTEMPTS
    ) -> None:
        super().__init__(model, client)
        self._top = top_logprobs
        self._attempts = attempts

    def count_tokens(self, text: str) -> int:
        """An estimate: the remote tokenizer is not available offline."""
        return estimate_tokens(text)

    def chat(self, messages: Sequence[Message], *, max_tokens: int = 512, stage: str = "") -> str:
        """The model's answer at temperature 0."""
        payload = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        content, usage = self._client.post("chat/completions", payload, _parse_chat)
        self._usage.set(usage)
        return content

    def logprobs(
        self, prompt: str, continuation: str, candidates: Sequence[str] = (), *, stage: str = ""
    ) -> TokenLogprobs:
        """Teacher-forced logprobs of ``continuation`` via ``echo``; tokens are the server's.

        A candidate that is not among the server's ``top_logprobs`` at a position gets the smallest
        logprob listed there: an upper bound on its true value, since it ranked below all of them.
        """
        if not prompt:
            raise ConfigError(
                f"{self.name}: echo logprobs need a non-empty prompt (the first token has none)"
            )
        payload = {
            "model": self.model,
            "prompt": prompt + continuation,
            "max_tokens": 0,
            "echo": True,
            "logprobs": self._top,
            "temperature": 0,
        }
        result, usage = self._client.post(
            "completions",
            payload,
            lambda body: _parse_echo(body, len(prompt), len(prompt + continuation), candidates),
        )
        self._usage.set(usage)
        return result


class OpenAIEmbedder(RemoteModel):
    """Embeddings from an OpenAI-compatible ``embeddings`` endpoint (``openai:<model>``), re-normalised to
    unit length; the usage of :meth:`embed` is summed over its batches."""

    backend: ClassVar[str] = "openai"

    def __init__(
        self, model: str, client: JsonClient, *, dim: int | None = None, batch_size: int = 256
    ) -> None:
        super().__init__(model, client)
        self._dim = dim
        self._batch_size = batch_size

    @property
    def dim(self) -> int:
        """Vector dimension: configured, or learnt from one probe request the first time it is needed."""
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"])[0].shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit float32 vectors, one row per text, in batches of ``batch_size``."""
        parts: list[Vectors] = []
        tokens = 0
        for start in range(0, len(texts), self._batch_size):
            vectors, used = self._request(list(texts[start : start + self._batch_size]))
            parts.append(vectors)
            tokens += used
        self._usage.set(Usage(input_tokens=tokens))
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        matrix = np.vstack(parts)
        self._dim = int(matrix.shape[1])
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return np.asarray(matrix / np.maximum(norms, 1e-12), dtype=np.float32)

    def _request(self, texts: list[str]) -> tuple[Vectors, int]:
        payload = {"model": self.model, "input": texts}
        return self._client.post("embeddings", payload, lambda body: _parse_embeddings(body, len(texts)))


def _read_usage(body: dict[str, Any], fallback_input: int = 0) -> Usage:
    usage = body.get("usage") or {}
    return Usage(
        input_tokens=int(usage.get("prompt_tokens", usage.get("total_tokens", fallback_input)) or 0),
        output_tokens=int(usage.get("completion_tokens", 0) or 0),
    )


def _parse_chat(body: dict[str, Any]) -> tuple[str, Usage]:
    content = body["choices"][0]["message"]["content"]
    if not isinstance(content, str):
        raise TypeError("message content is not text")
    return content.strip(), _read_usage(body)


def _parse_echo(
    body: dict[str, Any], start: int, end: int, candidates: Sequence[str]
) -> tuple[TokenLogprobs, Usage]:
    data = body["choices"][0]["logprobs"]
    rows = [
        (token, offset, logprob, top or {})
        for token, offset, logprob, top in zip(
            data["tokens"], data["text_offset"], data["token_logprobs"], data["top_logprobs"], strict=True
        )
        if start <= offset < end or (offset < start < offset + len(token))
    ]
    if any(logprob is None for _, _, logprob, _ in rows):
        raise ValueError("a continuation token has no logprob")

    def candidate_logprobs(top: dict[str, float]) -> dict[str, float]:
        floor = min(top.values(), default=float("-inf"))
        return {c: float(top.get(c, floor)) for c in candidates}

    result = TokenLogprobs(
        tokens=tuple(str(token) for token, _, _, _ in rows),
        offsets=tuple(max(0, int(offset) - start) for _, offset, _, _ in rows),
        logprobs=tuple(float(logprob) for _, _, logprob, _ in rows),
        candidates=tuple(candidate_logprobs(top) for _, _, _, top in rows),
    )
    return result, _read_usage(body)


def _parse_embeddings(body: dict[str, Any], count: int) -> tuple[Vectors, int]:
    data = sorted(body["data"], key=lambda row: int(row["index"]))
    if len(data) != count:
        raise ValueError(f"{len(data)} embeddings for {count} inputs")
    matrix = np.asarray([row["embedding"] for row in data], dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError("embeddings of unequal length")
    return matrix, _read_usage(body).input_tokens
