"""A Cohere-compatible ``/rerank`` endpoint (Cohere, Jina, vLLM, Infinity) as a :class:`Reranker`.

Request ``{"model", "query", "documents": [...], "top_n": n, "return_documents": false}``; answer
``{"results": [{"index": i, "relevance_score": s}, ...]}``. Every text is asked for (``top_n`` = all), so
each gets its score back in input order. Token usage is read from ``usage.total_tokens`` when the server
reports it (Jina, vLLM); Cohere bills search units instead, so the tokens are then estimated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from chunkwise.models.http_client import JsonClient, usage_counts
from chunkwise.models.managed import estimate_rerank_tokens
from chunkwise.models.protocols import Usage
from chunkwise.models.remote import RemoteModel


class HTTPReranker(RemoteModel):
    """Relevance scores from a Cohere-style rerank API, named ``rerank:<model>``; the usage of a call is
    the server's token count, else an estimate."""

    backend: ClassVar[str] = "rerank"

    def __init__(self, model: str, client: JsonClient, *, path: str = "rerank") -> None:
        super().__init__(model, client)
        self._path = path

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One score per text, in the order of ``texts``."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        payload = {
            "model": self.model,
            "query": query,
            "documents": list(texts),
            "top_n": len(texts),
            "return_documents": False,
        }
        scores, tokens = self._client.post(self._path, payload, lambda body: _parse(body, len(texts)))
        estimate = estimate_rerank_tokens(query, texts)
        self._usage.set(Usage(input_tokens=tokens if tokens is not None else estimate))
        return scores


def _parse(body: dict[str, Any], count: int) -> tuple[npt.NDArray[np.float32], int | None]:
    scores = np.full(count, np.nan, dtype=np.float32)
    for row in body["results"]:
        scores[int(row["index"])] = float(row["relevance_score"])
    if np.isnan(scores).any():
        raise ValueError(f"the server scored {int((~np.isnan(scores)).sum())} of {count} texts")
    return scores, usage_counts(body).get("total_tokens")
