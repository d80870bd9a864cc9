"""Accounting, budgets and caching around any backend, once for all of them.

:class:`ManagedEmbedder`, :class:`ManagedLLM` and :class:`ManagedReranker` implement the same protocols as
the backends they wrap. Each call goes: cache lookup (a hit is recorded as cached, costs nothing and never
reaches the backend) -> budget check on the estimated input -> backend call, timed -> record in the
:class:`~chunkwise.models.accounting.Ledger` -> cache store. Token counts come from the backend's
``last_usage`` (the server's ``usage`` for remote backends), else from its tokenizer.

Model names have the form ``<backend>:<model>`` (``local:all-MiniLM-L6-v2``, ``openai:gpt-4o-mini``);
the ledger records both parts and the price table is looked up by the model part.

Attributes a wrapper does not define (``tokenizer``, ``context_length``...) are read from the backend.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from chunkwise.models.accounting import CallRecord, Ledger, current_stage
from chunkwise.models.cache import CachedCall, ModelCache, cache_key
from chunkwise.models.config import Price
from chunkwise.models.protocols import (
    LLM,
    Embedder,
    Message,
    QueryEmbedder,
    ReportsUsage,
    Reranker,
    TokenLogprobs,
    Usage,
    Vectors,
    model_cache_name,
)
from chunkwise.models.structured import DEFAULT_ATTEMPTS, StructuredViaChat

T = TypeVar("T")
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (four characters a token), for budgets of backends without a tokenizer."""
    return max(1, -(-len(text) // CHARS_PER_TOKEN)) if text else 0


def estimate_rerank_tokens(query: str, texts: Sequence[str]) -> int:
    """:func:`estimate_tokens` of a rerank call: the query is read once with every text."""
    return estimate_tokens(query) * len(texts) + sum(estimate_tokens(t) for t in texts)


class Managed:
    """What the three wrappers share: the backend, ledger, cache, price, and how a call is recorded."""

    role = ""

    def __init__(self, inner: Any, ledger: Ledger, cache: ModelCache | None, price: Price) -> None:
        self._inner = inner
        self.ledger = ledger
        self.cache = cache
        self.price = price
        backend, _, model = str(inner.name).partition(":")
        self._backend, self._model = (backend, model) if model else ("custom", backend)

    @property
    def name(self) -> str:
        """The backend's model identifier."""
        return str(self._inner.name)

    @property
    def inner(self) -> Any:
        """The wrapped backend."""
        return self._inner

    @property
    def cache_model(self) -> str:
        """The model part of the cache keys of embeddings and reranker scores
        (:func:`~chunkwise.models.protocols.model_cache_name`: name, release and build)."""
        return model_cache_name(self._inner)

    def __getattr__(self, attribute: str) -> Any:
        if attribute == "_inner":
            raise AttributeError(attribute)
        return getattr(self._inner, attribute)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inner!r})"

    def _record(
        self,
        operation: str,
        stage: str,
        usage: Usage,
        latency: float,
        *,
        cached: bool,
        cached_tokens: int = 0,
    ) -> None:
        cost = 0.0 if cached else self.price.cost(usage.input_tokens, usage.output_tokens)
        self.ledger.record(
            CallRecord(
                role=self.role,
                backend=self._backend,
                model=self._model,
                operation=operation,
                stage=current_stage(stage),
                input_tokens=0 if cached else usage.input_tokens,
                output_tokens=0 if cached else usage.output_tokens,
                cached_tokens=cached_tokens,
                latency_s=latency,
                cost=cost,
                cached=cached,
            )
        )

    def _call(self, operation: str, stage: str, estimate: int, run: Callable[[], T]) -> tuple[T, Usage]:
        """Check the budget for ``estimate`` input tokens, run the backend call, record it."""
        self.ledger.check(self.name, estimate, self.price.cost(estimate, 0))
        started = time.perf_counter()
        result = run()
        latency = time.perf_counter() - started
        reported = self._inner.last_usage if isinstance(self._inner, ReportsUsage) else None
        usage = reported or Usage(input_tokens=estimate)
        self._record(operation, stage, usage, latency, cached=False)
        return result, usage

    def _cached_call(
        self, operation: str, stage: str, key_parts: tuple[Any, ...], estimate: int, run: Callable[[], Any]
    ) -> Any:
        """A JSON-valued call through the cache: replayed on a hit, made, recorded and stored on a miss."""
        key = cache_key(self.cache_model, operation, *key_parts)
        hit = self.cache.get_call(key) if self.cache else None
        if hit is not None:
            usage = Usage(hit.input_tokens, hit.output_tokens)
            self._record(
                operation, stage, usage, 0.0, cached=True, cached_tokens=hit.input_tokens + hit.output_tokens
            )
            return hit.value
        value, usage = self._call(operation, stage, estimate, run)
        if self.cache:
            self.cache.put_call(key, CachedCall(value, usage.input_tokens, usage.output_tokens))
        return value


class ManagedEmbedder(Managed):
    """An :class:`Embedder` with per-text caching (only unseen texts reach the backend) and accounting."""

    role = "embedder"

    def __init__(
        self, inner: Embedder, ledger: Ledger, cache: ModelCache | None = None, price: Price | None = None
    ) -> None:
        super().__init__(inner, ledger, cache, price or Price())

    @property
    def dim(self) -> int:
        """Vector dimension of the backend. A backend that learns it from a request (its ``dim_probe``,
        the text it embeds, is not ``None`` until then) makes that request here as an accounted
        embedding call: checked against the budget and recorded, uncached, like any other."""
        probe = getattr(self._inner, "dim_probe", None)
        if probe is not None:
            return int(self._call("embed", "", self._count(probe), lambda: self._inner.dim)[0])
        return int(self._inner.dim)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Vectors for ``texts``: cached rows are reused, the rest embedded in one backend call."""
        return self._embed(texts, self.cache_model, self._inner.embed)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Query vectors, cached apart from passage vectors when the backend embeds queries differently
        (see :class:`~chunkwise.models.protocols.QueryEmbedder`); else the same as :meth:`embed`."""
        if not isinstance(self._inner, QueryEmbedder):
            return self.embed(texts)
        return self._embed(texts, f"{self.cache_model}#query", self._inner.embed_queries)

    def _embed(self, texts: Sequence[str], key: str, backend: Callable[[Sequence[str]], Vectors]) -> Vectors:
        """Rows cached under model key ``key`` are reused, the rest go to ``backend`` in one call."""
        texts = list(texts)
        hits = self.cache.get_vectors(key, texts) if self.cache else {}
        if hits:
            cached_tokens = sum(tokens for _, tokens in hits.values())
            self._record("embed", "", Usage(0), 0.0, cached=True, cached_tokens=cached_tokens)
        missing = [i for i in range(len(texts)) if i not in hits]
        fresh = [texts[i] for i in missing]
        vectors: Vectors | None = None
        if fresh:
            counts = [self._count(t) for t in fresh]
            vectors, usage = self._call("embed", "", sum(counts), lambda: backend(fresh))
            if not hasattr(self._inner, "count_tokens"):
                counts = _apportion(usage.input_tokens, fresh)
            if self.cache:
                self.cache.put_vectors(key, fresh, np.asarray(vectors, np.float32), counts)
        if vectors is not None:
            dim = int(vectors.shape[1])
        elif hits:
            dim = int(next(iter(hits.values()))[0].shape[0])
        else:
            dim = self.dim
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for index, (vector, _) in hits.items():
            out[index] = vector
        if vectors is not None:
            out[missing] = vectors
        return out

    def _count(self, text: str) -> int:
        counter = getattr(self._inner, "count_tokens", None)
        return int(counter(text)) if counter else estimate_tokens(text)


class ManagedLLM(StructuredViaChat, Managed):
    """An :class:`LLM` with cached, accounted chat and logprobs.

    Structured output goes through this wrapper's own chat (so every attempt is cached and accounted),
    unless ``own_structured``: then the backend's ``structured`` is called as one accounted call. That
    is how a caller's own LLM object keeps its structured output (a native JSON mode, a test double).
    """

    role = "llm"

    def __init__(
        self,
        inner: LLM,
        ledger: Ledger,
        cache: ModelCache | None = None,
        price: Price | None = None,
        *,
        attempts: int = DEFAULT_ATTEMPTS,
        own_structured: bool = False,
    ) -> None:
        super().__init__(inner, ledger, cache, price or Price())
        self._attempts = attempts
        self._own_structured = own_structured

    def structured(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        *,
        max_tokens: int = 1024,
        stage: str = "",
    ) -> Any:
        """A JSON value valid against ``schema`` (see the class docstring for who produces it)."""
        if not self._own_structured:
            return super().structured(messages, schema, max_tokens=max_tokens, stage=stage)
        wire = [m.to_dict() for m in messages]
        estimate = sum(self.count_tokens(m.content) for m in messages)
        return self._cached_call(
            "structured",
            stage,
            (wire, schema, max_tokens),
            estimate,
            lambda: self._inner.structured(messages, schema, max_tokens=max_tokens, stage=stage),
        )

    def count_tokens(self, text: str) -> int:
        """The backend's token count of ``text``."""
        return int(self._inner.count_tokens(text))

    def chat(self, messages: Sequence[Message], *, max_tokens: int = 512, stage: str = "") -> str:
        """The backend's greedy answer, from the cache when this exact call was made before."""
        wire = [m.to_dict() for m in messages]
        estimate = sum(self.count_tokens(m.content) for m in messages)
        answer = self._cached_call(
            "chat",
            stage,
            (wire, max_tokens),
            estimate,
            lambda: self._inner.chat(messages, max_tokens=max_tokens, stage=stage),
        )
        return str(answer)

    def logprobs(
        self, prompt: str, continuation: str, candidates: Sequence[str] = (), *, stage: str = ""
    ) -> TokenLogprobs:
        """Teacher-forced logprobs from the backend, cached by prompt, continuation and candidates."""
        estimate = self.count_tokens(prompt) + self.count_tokens(continuation)
        value = self._cached_call(
            "logprobs",
            stage,
            (prompt, continuation, sorted(candidates)),
            estimate,
            lambda: _logprobs_to_json(self._inner.logprobs(prompt, continuation, candidates, stage=stage)),
        )
        return _logprobs_from_json(value)


class ManagedReranker(Managed):
    """A :class:`Reranker` with accounted scoring, cached per (query, text) pair.

    A reranker scores each pair on its own (a cross-encoder reads one query and one passage), so a pair
    scored once is never sent again, whatever list it comes in: the same question over a changed store,
    a deeper rerank, or another fusion weight send only the passages not scored yet. Each stored pair
    keeps its share of the call's tokens, which a hit records as cached tokens."""

    role = "reranker"

    def __init__(
        self, inner: Reranker, ledger: Ledger, cache: ModelCache | None = None, price: Price | None = None
    ) -> None:
        super().__init__(inner, ledger, cache, price or Price())

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One score per text; only the pairs the cache does not hold reach the backend, in one call."""
        texts = list(texts)
        key_of = {text: cache_key(self.cache_model, "rerank", query, text) for text in texts}
        hits = self.cache.get_calls(list(key_of.values())) if self.cache else {}
        if hits:
            cached_tokens = sum(hit.input_tokens for hit in hits.values())
            self._record("rerank", "", Usage(0), 0.0, cached=True, cached_tokens=cached_tokens)
        fresh = [text for text, key in key_of.items() if key not in hits]
        scores = {key: float(hit.value) for key, hit in hits.items()}
        if fresh:
            estimate = estimate_rerank_tokens(query, fresh)
            values, usage = self._call("rerank", "", estimate, lambda: self._inner.score(query, fresh))
            calls = {
                key_of[text]: CachedCall(float(value), tokens, 0)
                for text, value, tokens in zip(
                    fresh, values, _apportion(usage.input_tokens, fresh), strict=True
                )
            }
            if self.cache:
                self.cache.put_calls(calls)
            scores.update((key, call.value) for key, call in calls.items())
        return np.asarray([scores[key_of[text]] for text in texts], dtype=np.float32)


def _apportion(total: int, texts: Sequence[str]) -> list[int]:
    """Split a batch's token total over its texts by their length; the parts sum to ``total``."""
    weights = [max(1, len(t)) for t in texts]
    scale = total / sum(weights)
    parts = [int(w * scale) for w in weights]
    by_remainder = sorted(range(len(texts)), key=lambda i: parts[i] - weights[i] * scale)
    for i in by_remainder[: total - sum(parts)]:
        parts[i] += 1
    return parts


def _logprobs_to_json(result: TokenLogprobs) -> dict[str, Any]:
    return {
        "tokens": list(result.tokens),
        "offsets": list(result.offsets),
        "logprobs": list(result.logprobs),
        "candidates": [dict(c) for c in result.candidates],
    }


def _logprobs_from_json(value: dict[str, Any]) -> TokenLogprobs:
    return TokenLogprobs(
        tokens=tuple(value["tokens"]),
        offsets=tuple(int(o) for o in value["offsets"]),
        logprobs=tuple(float(x) for x in value["logprobs"]),
        candidates=tuple(dict(c) for c in value["candidates"]),
    )
