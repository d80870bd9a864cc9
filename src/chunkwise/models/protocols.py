"""The three model roles as small protocols: every backend, local or remote, implements one of them.

Pipelines depend on these protocols only, so any role can be served by the bundled local models, an
OpenAI-compatible endpoint, or a user's own class.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message (``role`` is ``system``, ``user`` or ``assistant``)."""

    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        """The OpenAI wire form."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class TokenLogprobs:
    """Teacher-forced log-probabilities over a continuation, from one forward pass.

    ``tokens[i]`` is the i-th continuation token (as text), ``offsets[i]`` its start offset in the
    continuation string, ``logprobs[i]`` the log-probability the model gave it, and
    ``candidates[i][c]`` the log-probability of candidate token ``c`` at that same position (the
    probability that ``c`` comes *instead of* token ``i``).
    """

    tokens: tuple[str, ...]
    offsets: tuple[int, ...]
    logprobs: tuple[float, ...]
    candidates: tuple[dict[str, float], ...]


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one backend call consumed, as the backend counted them (the server's ``usage`` when remote)."""

    input_tokens: int
    output_tokens: int = 0


class UsageSlot:
    """Where a backend keeps the usage of its last call, one slot per thread.

    Per thread, so that a wrapper reading ``last_usage`` right after its call gets that call's usage even
    when other threads share the backend.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def set(self, usage: Usage) -> None:
        """Remember ``usage`` for the calling thread."""
        self._local.usage = usage

    def get(self) -> Usage | None:
        """The calling thread's last usage, ``None`` before its first call."""
        return getattr(self._local, "usage", None)


@runtime_checkable
class ReportsUsage(Protocol):
    """A backend that knows what its last call consumed; the accounting wrappers read it after each call."""

    @property
    def last_usage(self) -> Usage | None:
        """Usage of the most recent call made by this object, ``None`` before the first."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Texts to L2-normalised float32 vectors."""

    @property
    def name(self) -> str:
        """A stable model identifier (part of every cache key)."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text, L2-normalised, dtype float32."""
        ...


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An embedder that embeds search queries differently from the passages searched.

    Retrieval-trained models want an instruction or a prefix on one side only (bge: "Represent this
    sentence for searching relevant passages: " before queries; e5: "query: " / "passage: "). ``embed``
    stays the passage side, so every caller that embeds stored text needs no change; the query side of a
    pipeline calls :func:`embed_queries`, which falls back to ``embed`` for symmetric models.
    """

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """One row per query, L2-normalised, dtype float32, comparable with ``embed``'s passage rows."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Query vectors: ``embedder.embed_queries`` where the embedder has one, else ``embedder.embed``."""
    if isinstance(embedder, QueryEmbedder):
        return embedder.embed_queries(texts)
    return embedder.embed(texts)


def embedder_version(embedder: object) -> str:
    """The embedder's optional ``version`` (the package release that ships its weights), ``""`` if none.

    Stored with the vectors, so a store is never searched with the same-named model from another release.
    """
    return _text_attribute(embedder, "version")


def model_build(model: object) -> str:
    """The model's optional ``build`` (the graph chunkwise built from its shipped file: see
    :class:`~chunkwise.models.identity.ModelIdentity`), ``""`` if none."""
    return _text_attribute(model, "build")


def model_cache_name(model: Any) -> str:
    """What a model's cached results are keyed by: ``<name>@<version>/<build>``, the optional version
    (:func:`embedder_version`) and build (:func:`model_build`) left out when empty, so that an upgraded
    model package or a rebuilt graph never serves the former one's results."""
    version, build = embedder_version(model), model_build(model)
    return f"{model.name}{'@' + version if version else ''}{'/' + build if build else ''}"


def _text_attribute(model: object, attribute: str) -> str:
    """``model.<attribute>`` as text, ``""`` when absent, empty or callable: a method of that name (a
    model class's own ``build()``) is no identifier, and its ``repr`` (with a memory address) would
    change every cache key in every process."""
    value = getattr(model, attribute, "")
    return "" if callable(value) else str(value or "")


@runtime_checkable
class LLM(Protocol):
    """A chat model, with tokenisation and teacher-forced logprobs where the backend allows."""

    @property
    def name(self) -> str:
        """A stable model identifier (part of every cache key)."""
        ...

    def chat(self, messages: Sequence[Message], *, max_tokens: int = 512, stage: str = "") -> str:
        """Greedy (temperature 0) completion of a conversation."""
        ...

    def structured(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        *,
        max_tokens: int = 1024,
        stage: str = "",
    ) -> Any:
        """A JSON value that validates against ``schema``; repaired or retried, else a typed error."""
        ...

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` in this model's vocabulary."""
        ...

    def logprobs(
        self, prompt: str, continuation: str, candidates: Sequence[str] = (), *, stage: str = ""
    ) -> TokenLogprobs:
        """Log-probabilities of ``continuation`` after ``prompt``, teacher-forced, in one pass."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Scores a query against candidate texts; higher is more relevant."""

    @property
    def name(self) -> str:
        """A stable model identifier."""
        ...

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One relevance score per text."""
        ...
