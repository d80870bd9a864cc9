"""The model layer: three roles (embedder, LLM, reranker) behind small protocols, and one context per run.

:class:`Models` holds a run's configuration, ledger, budget and cache and builds each role's model from
a spec on first use (``"local"``, ``"openai:gpt-4o-mini"``, ``"cross-encoder:/dir"``; the backends are
in the registry of :mod:`.backends`), wrapped with caching and accounting. Everything that calls a model
receives the run's :class:`Models`, so one budget bounds every call and one ledger holds them all::

    models = Models(ModelsConfig(max_cost=0.50))
    vectors = models.embedder().embed(["a sentence"])
    spent = models.accounting()  # calls, tokens, cost and seconds per stage and role
"""

from __future__ import annotations

from chunkwise.models.accounting import Budget, Ledger
from chunkwise.models.backends import BACKENDS, register_backend
from chunkwise.models.cache import ModelCache
from chunkwise.models.config import ModelsConfig
from chunkwise.models.context import Models
from chunkwise.models.protocols import LLM, Embedder, Message, Reranker, TokenLogprobs

__all__ = [
    "BACKENDS",
    "LLM",
    "Budget",
    "Embedder",
    "Ledger",
    "Message",
    "ModelCache",
    "Models",
    "ModelsConfig",
    "Reranker",
    "TokenLogprobs",
    "register_backend",
]
