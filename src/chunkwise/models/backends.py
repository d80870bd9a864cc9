"""The model backends, found by name in a registry per role, as chunkers and parsers are.

A spec ``"<backend>:<rest>"`` names a backend of a role and what it needs (a model name, a directory);
:data:`BACKENDS` maps each backend name to a ``"module:function"`` factory, imported on first use so that
a run that never asks for an LLM never imports torch. A factory takes ``rest`` and the
:class:`~chunkwise.models.context.Models` context it builds for (its configuration, and the other roles
when one backend needs another, as the bi-encoder reranker needs the embedder) and returns the raw
backend; the context wraps it with accounting and caching. :func:`register_backend` adds a backend.

=============  =====================================================================================
role           backends
=============  =====================================================================================
embedder       ``local`` (bundled all-MiniLM-L6-v2, see :data:`DEFAULT_LOCAL_EMBEDDER`), ``local:fp32``
               (sentence-transformers), ``local:int8`` (ONNX), ``local:<sentence-transformers dir>``,
               ``openai:<model>``
llm            ``local`` (bundled SmolLM2-135M-Instruct), ``local:<file.gguf>``, ``openai:<model>``
reranker       ``local`` (MiniLM cosine), ``cross-encoder:<dir>``, ``rerank:<model>`` (Cohere-style)
=============  =====================================================================================
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from chunkwise.errors import ConfigError
from chunkwise.models.config import split_spec
from chunkwise.models.http_client import JsonClient
from chunkwise.models.protocols import LLM, Embedder, Reranker
from chunkwise.models.retry import RetryPolicy

if TYPE_CHECKING:
    from chunkwise.models.context import Models

Role = Literal["embedder", "llm", "reranker"]

DEFAULT_LOCAL_EMBEDDER = "int8"
"""What ``embedder = "local"`` means: the int8 ONNX MiniLM. ``bench/embed_speed.py`` measured it faster
than sentence-transformers fp32 on this project's 2-core machine (1.13-1.18x per CPU-second, 1.2-1.5x
wall-clock at batch 32) with cosine 0.9995 on average and 0.998 at worst to the fp32 vectors; it also
starts without importing torch. ``local:fp32`` selects the sentence-transformers model."""

#: Role -> backend name -> ``"module:function"`` factory.
BACKENDS: dict[Role, dict[str, str]] = {
    "embedder": {
        "local": "chunkwise.models.backends:local_embedder",
        "openai": "chunkwise.models.backends:openai_embedder",
    },
    "llm": {
        "local": "chunkwise.models.backends:local_llm",
        "openai": "chunkwise.models.backends:openai_llm",
    },
    "reranker": {
        "local": "chunkwise.models.backends:local_reranker",
        "cross-encoder": "chunkwise.models.backends:cross_encoder_reranker",
        "rerank": "chunkwise.models.backends:http_reranker",
        "cohere": "chunkwise.models.backends:http_reranker",
    },
}


class BackendFactory(Protocol):
    """Builds the raw backend for the part of the spec after ``<backend>:``."""

    def __call__(self, rest: str, models: Models) -> Any: ...


def register_backend(role: Role, name: str, target: str) -> None:
    """Make ``<name>:...`` specs of ``role`` build through ``target`` (``"package.module:function"``)."""
    if ":" not in target:
        raise ConfigError(f"backend target {target!r} must look like package.module:function")
    BACKENDS[role][name.lower()] = target


def factory(role: Role, backend: str) -> BackendFactory:
    """The factory registered for ``backend`` in ``role``; :class:`ConfigError` naming the valid ones."""
    target = BACKENDS[role].get(backend)
    if target is None:
        raise ConfigError(
            f"unknown {role} backend {backend!r}: use one of {', '.join(sorted(BACKENDS[role]))}"
        )
    module, _, function = target.partition(":")
    try:
        built: BackendFactory = getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load the {role} backend {backend!r} ({target}): {exc}") from exc
    return built


def model_name(backend: str, rest: str) -> str:
    """``rest``, which a remote backend needs: :class:`ConfigError` when the spec names no model."""
    if not rest:
        raise ConfigError(f"the {backend!r} backend needs a model: {backend}:<model>")
    return rest


# --- factories ------------------------------------------------------------------------------------


def local_embedder(rest: str, models: Models) -> Embedder:
    """The bundled MiniLM (``int8`` ONNX by default, ``fp32``) or a sentence-transformers directory."""
    return _local_embedder(rest or DEFAULT_LOCAL_EMBEDDER)


def openai_embedder(rest: str, models: Models) -> Embedder:
    """An OpenAI-compatible ``/embeddings`` endpoint."""
    from chunkwise.models.openai_compat import OpenAIEmbedder

    return OpenAIEmbedder(
        model_name("openai", rest), client(models, f"openai:{rest}", models.config.endpoint)
    )


def local_llm(rest: str, models: Models) -> LLM:
    """The bundled SmolLM2-135M-Instruct, or another GGUF file, run by transformers on the CPU."""
    from chunkwise.models.local_llm import LocalLLM

    return LocalLLM(rest or None)


def openai_llm(rest: str, models: Models) -> LLM:
    """An OpenAI-compatible ``/chat/completions`` (and ``/completions`` for logprobs) endpoint."""
    from chunkwise.models.openai_compat import OpenAIChatLLM

    config = models.config
    return OpenAIChatLLM(
        model_name("openai", rest),
        client(models, f"openai:{rest}", config.endpoint),
        attempts=config.structured_attempts,
    )


def local_reranker(rest: str, models: Models) -> Reranker:
    """Cosine of the local embedder's vectors (the configured one when it is local, else the bundled)."""
    from chunkwise.models.local_reranker import BiEncoderReranker

    configured = models.config.embedder
    return BiEncoderReranker(models.embedder(configured if split_spec(configured)[0] == "local" else "local"))


def cross_encoder_reranker(rest: str, models: Models) -> Reranker:
    """A sentence-transformers cross-encoder from a local directory."""
    from chunkwise.models.local_reranker import CrossEncoderReranker

    return CrossEncoderReranker(model_name("cross-encoder", rest))


def http_reranker(rest: str, models: Models) -> Reranker:
    """A Cohere-style ``/rerank`` endpoint (``rerank_url``, else the OpenAI-compatible base URL)."""
    from chunkwise.models.rerank_http import HTTPReranker

    config = models.config
    return HTTPReranker(
        model_name("rerank", rest), client(models, f"rerank:{rest}", config.rerank_url or config.endpoint)
    )


@functools.cache
def _local_embedder(kind: str) -> Embedder:
    """The local embedder for ``fp32``, ``int8`` or a directory, loaded once per process."""
    if kind == "int8":
        from chunkwise.models.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder()
    from chunkwise.models.local_embedder import LocalEmbedder

    if kind == "fp32":
        return LocalEmbedder()
    if not Path(kind).expanduser().is_dir():
        raise ConfigError(f"{kind}: not a sentence-transformers directory (or use local:fp32 / local:int8)")
    return LocalEmbedder(Path(kind).expanduser())


def client(models: Models, label: str, base_url: str) -> JsonClient:
    """An HTTP client for a remote backend, with the configured key, timeout and retry policy."""
    config = models.config
    policy = RetryPolicy(config.max_attempts, config.backoff_base, config.backoff_max)
    return JsonClient(base_url, api_key=config.api_key(), timeout=config.timeout, policy=policy, label=label)
