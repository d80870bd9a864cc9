"""The model context of one run: configuration, ledger, budgets and cache, and the models built from them.

A run (an ingest, a query, an evaluation, one ``chunkwise chunk``) creates one :class:`Models` and hands
it to everything that calls a model: chunkers, contextual headers, query stages, answers, the evaluation
runner. Every model it returns is wrapped (:mod:`.managed`) so that each call is cached, accounted in
the one :class:`~chunkwise.models.accounting.Ledger` and checked against the one budget before it is
made. So ``max_cost``/``max_tokens`` bound every model call of the run, including those a chunker makes
at ingest time, and the run's accounting is read from one place.

Models are built on first use from their spec (``"local"``, ``"openai:gpt-4o-mini"``, see
:mod:`.backends`) and reused for the rest of the run; a ``fast`` search never loads an LLM. A model
object a caller passes in (a test double, a user's own class) is adopted: wrapped into the same ledger.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from chunkwise.models.accounting import Budget, Ledger, Totals
from chunkwise.models.backends import Role, factory
from chunkwise.models.cache import ModelCache
from chunkwise.models.config import ModelsConfig, Price, split_spec
from chunkwise.models.managed import Managed, ManagedEmbedder, ManagedLLM, ManagedReranker
from chunkwise.models.protocols import LLM, Embedder, Reranker
from chunkwise.models.remote import RemoteModel

_WRAPPERS: dict[Role, type[Managed]] = {
    "embedder": ManagedEmbedder,
    "llm": ManagedLLM,
    "reranker": ManagedReranker,
}


class Models:
    """One run's models: built from ``config`` on first use, all recording into ``ledger``.

    ``config`` defaults to the ``[models]`` defaults with the environment applied
    (:meth:`ModelsConfig.load`); ``ledger`` to a new one carrying the configuration's budget; ``cache``
    to the configured on-disk cache (none when ``config.cache`` is off). ``embedder``, ``llm`` and
    ``reranker`` replace the configured default of their role with a given object. ``deadline`` (a
    :func:`time.monotonic` instant) is the new ledger's: no model call starts after it
    (:class:`~chunkwise.errors.DeadlineExceededError`), so a run nobody waits for any more ends at its
    next call.
    """

    def __init__(
        self,
        config: ModelsConfig | None = None,
        *,
        ledger: Ledger | None = None,
        cache: ModelCache | None = None,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        reranker: Reranker | None = None,
        deadline: float | None = None,
    ) -> None:
        if ledger is not None and deadline is not None:
            raise ValueError("a deadline is the ledger's: give it to the Ledger, not beside one")
        self.config = config if config is not None else ModelsConfig.load()
        self.ledger = ledger if ledger is not None else Ledger(self.budget, deadline=deadline)
        self._cache = cache
        self._built: dict[tuple[Role, str], Any] = {}
        self._remote: dict[tuple[Role, str], RemoteModel] = {}  # built here, each with its own client
        given: tuple[tuple[Role, Any], ...] = (("embedder", embedder), ("llm", llm), ("reranker", reranker))
        for role, model in given:
            if model is not None:
                self._built[(role, "")] = self.adopt(role, model)

    def __repr__(self) -> str:
        return f"Models({self.config.llm!r}, {self.config.embedder!r}, {self.config.reranker!r})"

    @property
    def budget(self) -> Budget:
        """The configured budget of the run."""
        return Budget(max_cost=self.config.max_cost, max_tokens=self.config.max_tokens)

    @property
    def cache(self) -> ModelCache | None:
        """The call and vector cache (opened on first use; ``None`` when caching is off)."""
        if self._cache is None and self.config.cache:
            self._cache = _open_cache(self.config.cache_path().resolve())
        return self._cache

    def embedder(self, spec: str | None = None) -> ManagedEmbedder:
        """The embedder named by ``spec`` (``None``: the configured one), accounted and cached."""
        built: ManagedEmbedder = self._get("embedder", spec)
        return built

    def llm(self, spec: str | None = None) -> ManagedLLM:
        """The LLM named by ``spec`` (``None``: the configured one), accounted and cached."""
        built: ManagedLLM = self._get("llm", spec)
        return built

    def reranker(self, spec: str | None = None) -> ManagedReranker:
        """The reranker named by ``spec`` (``None``: the configured one), accounted and cached."""
        built: ManagedReranker = self._get("reranker", spec)
        return built

    def adopt(self, role: Role, model: Any) -> Any:
        """``model`` wrapped so that its calls record into this run's ledger and respect its budget.

        A model already wrapped for another ledger is re-wrapped around its backend; a plain object is
        wrapped without a cache (its name alone may not identify its behaviour).
        """
        if isinstance(model, Managed):
            if model.ledger is self.ledger:
                return model
            return self._wrap(role, model.inner, model.price, model.cache)
        if role == "llm":
            price = self.config.price(str(model.name))
            attempts = self.config.structured_attempts
            return ManagedLLM(model, self.ledger, None, price, attempts=attempts, own_structured=True)
        return self._wrap(role, model, self.config.price(str(model.name)), None)

    def mark(self) -> int:
        """A position in the ledger, for :meth:`accounting` of what happens after it."""
        return len(self.ledger.records)

    def accounting(self, since: int = 0) -> dict[str, Any]:
        """Calls, cache hits, tokens, cost and seconds (total, per stage, per role) after ``since``."""
        return Ledger.of(self.ledger.records[since:]).to_dict()

    def totals(self, since: int = 0) -> Totals:
        """The totals of the calls recorded after ``since``."""
        return Ledger.of(self.ledger.records[since:]).totals()

    def _get(self, role: Role, spec: str | None) -> Any:
        configured = getattr(self.config, role)
        key = spec if spec is not None and spec != configured else ""
        if (role, key) not in self._built:
            backend, rest = split_spec(spec or configured)
            raw = factory(role, backend)(rest, self)
            self._built[(role, key)] = self._wrap(role, raw, self.config.price(rest), self.cache)
            if isinstance(raw, RemoteModel):
                self._remote[(role, key)] = raw
        return self._built[(role, key)]

    def close(self) -> None:
        """Close the HTTP clients of the remote models built here, so their connections do not stay
        open until garbage collection. Models given to the constructor or adopted belong to the caller,
        and bundled local ones are shared by the process: they are left alone. A remote model asked for
        afterwards is built again, with a new client."""
        for key, model in self._remote.items():
            del self._built[key]
            model.close()
        self._remote.clear()

    def _wrap(self, role: Role, raw: Any, price: Price, cache: ModelCache | None) -> Any:
        if role == "llm":
            return ManagedLLM(raw, self.ledger, cache, price, attempts=self.config.structured_attempts)
        return _WRAPPERS[role](raw, self.ledger, cache, price)


@functools.cache
def _open_cache(directory: Path) -> ModelCache:
    return ModelCache(directory)
