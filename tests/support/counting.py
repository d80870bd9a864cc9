"""An embedder wrapper that counts what it embeds, to show which runs reuse cached indexes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class CountingEmbedder:
    """Delegates to the real embedder and counts the texts it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts = 0

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts += len(texts)
        return self.inner.embed(texts)
