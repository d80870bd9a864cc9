"""What every model call cost: one :class:`CallRecord` per call, collected by a :class:`Ledger`.

A ledger belongs to a run (an ingest, an evaluation, a query). It totals tokens, latency and dollars by
pipeline stage and by role, and it enforces the run's :class:`Budget` *before* each call: the wrappers in
:mod:`chunkwise.models.managed` ask :meth:`Ledger.check` with the call's estimated input, and a call that
would cross ``max_cost`` or ``max_tokens`` raises :class:`~chunkwise.errors.BudgetExceededError` without
being made, so a pipeline stops between calls with nothing half-written by the model layer.

Calls served from the cache are recorded too (``cached=True``, zero cost, their tokens counted as
``cached_tokens``), so a re-run shows what it saved.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from chunkwise.errors import BudgetExceededError, DeadlineExceededError

_STAGE: contextvars.ContextVar[str] = contextvars.ContextVar("chunkwise_model_stage", default="")


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Attribute the model calls made inside the block to pipeline stage ``name``.

    Calls that pass their own non-empty ``stage=`` keep it; the rest (embeddings, reranking) take this one.
    """
    token = _STAGE.set(name)
    try:
        yield
    finally:
        _STAGE.reset(token)


#: Set inside :func:`unbudgeted`: calls are recorded but not checked against the budget.
_UNBUDGETED: contextvars.ContextVar[bool] = contextvars.ContextVar("chunkwise_unbudgeted", default=False)


@contextlib.contextmanager
def unbudgeted() -> Iterator[None]:
    """Make the model calls inside the block (in this thread or task) without checking them against the
    budget; they are recorded and count in the totals as any call.

    For the calls that finish work the budget already paid for: when a spent budget stops an ingest, it
    embeds the documents already prepared (their LLM calls made) rather than throw them away."""
    token = _UNBUDGETED.set(True)
    try:
        yield
    finally:
        _UNBUDGETED.reset(token)


def current_stage(explicit: str = "") -> str:
    """``explicit`` when given, else the stage of the enclosing :func:`stage` block (``""`` outside)."""
    return explicit or _STAGE.get()


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One model call (or one cache hit)."""

    role: str
    backend: str
    model: str
    operation: str
    stage: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    latency_s: float
    cost: float
    cached: bool


@dataclass(slots=True)
class Totals:
    """Sums over a set of records; ``calls`` counts backend calls only, ``cache_hits`` the rest."""

    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    latency_s: float = 0.0
    cost: float = 0.0

    def add(self, record: CallRecord) -> None:
        """Fold ``record`` into the sums."""
        if record.cached:
            self.cache_hits += 1
        else:
            self.calls += 1
        self.input_tokens += record.input_tokens
        self.output_tokens += record.output_tokens
        self.cached_tokens += record.cached_tokens
        self.latency_s += record.latency_s
        self.cost += record.cost

    @property
    def tokens(self) -> int:
        """Input plus output tokens that reached a backend (cache hits excluded)."""
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (cost rounded to micro-dollars)."""
        data = asdict(self)
        data["cost"] = round(self.cost, 6)
        data["latency_s"] = round(self.latency_s, 3)
        return data


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits for one run; ``None`` means unlimited."""

    max_cost: float | None = None
    max_tokens: int | None = None


@dataclass
class Ledger:
    """Thread-safe collection of :class:`CallRecord` with totals and budget enforcement."""

    budget: Budget = field(default_factory=Budget)
    #: A :func:`time.monotonic` instant after which no call starts (``None``: no deadline).
    deadline: float | None = None
    _records: list[CallRecord] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, records: Iterable[CallRecord]) -> Ledger:
        """A ledger (without a budget) holding ``records``: totals over a part of a run."""
        ledger = cls()
        ledger._records.extend(records)
        return ledger

    @property
    def records(self) -> list[CallRecord]:
        """A snapshot of the records so far."""
        with self._lock:
            return list(self._records)

    def record(self, record: CallRecord) -> None:
        """Append one record."""
        with self._lock:
            self._records.append(record)

    def check(self, model: str, tokens: int, cost: float) -> None:
        """Raise :class:`DeadlineExceededError` past the deadline, :class:`BudgetExceededError` if a call
        of ``tokens``/``cost`` would cross the budget (neither inside :func:`unbudgeted`)."""
        if _UNBUDGETED.get():
            return
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise DeadlineExceededError(model, "the run's deadline has passed: no further model call is made")
        spent = self.totals()
        limits = self.budget
        if limits.max_tokens is not None and spent.tokens + tokens > limits.max_tokens:
            raise BudgetExceededError(
                model,
                f"token budget exceeded: {spent.tokens} used + about {tokens} for the next call "
                f"> max_tokens {limits.max_tokens}",
            )
        if limits.max_cost is not None and spent.cost + cost > limits.max_cost:
            raise BudgetExceededError(
                model,
                f"cost budget exceeded: ${spent.cost:.6f} spent + about ${cost:.6f} for the next call "
                f"> max_cost ${limits.max_cost:.6f}",
            )

    def totals(self) -> Totals:
        """Totals over every record."""
        return _sum(self.records)

    def by_stage(self) -> dict[str, Totals]:
        """Totals per pipeline stage (``""`` for calls made without a stage)."""
        return self._group("stage")

    def by_role(self) -> dict[str, Totals]:
        """Totals per role (``embedder``, ``llm``, ``reranker``)."""
        return self._group("role")

    def to_dict(self) -> dict[str, Any]:
        """Totals, per stage and per role, JSON-ready (what ``--json`` prints)."""
        return {
            "total": self.totals().to_dict(),
            "by_stage": {k: v.to_dict() for k, v in self.by_stage().items()},
            "by_role": {k: v.to_dict() for k, v in self.by_role().items()},
        }

    def _group(self, attribute: str) -> dict[str, Totals]:
        groups: dict[str, list[CallRecord]] = {}
        for record in self.records:
            groups.setdefault(getattr(record, attribute), []).append(record)
        return {key: _sum(records) for key, records in sorted(groups.items())}


def _sum(records: Iterable[CallRecord]) -> Totals:
    totals = Totals()
    for record in records:
        totals.add(record)
    return totals
