"""A run's deadline: no model call starts after it, with the real bundled embedder."""

from __future__ import annotations

import time

import pytest

from chunkwise import BudgetExceededError, DeadlineExceededError
from chunkwise.models.accounting import Ledger, unbudgeted
from chunkwise.models.config import ModelsConfig
from chunkwise.models.context import Models


def test_no_call_starts_after_the_deadline_and_none_is_recorded() -> None:
    models = Models(ModelsConfig(cache=False), deadline=time.monotonic() + 3600)
    embedder = models.embedder()
    assert embedder.embed(["a first call, well before the deadline"]).shape == (1, embedder.dim)
    models.ledger.deadline = time.monotonic() - 1  # the request has timed out meanwhile
    with pytest.raises(DeadlineExceededError, match="deadline has passed") as raised:
        embedder.embed(["a call nobody waits for"])
    assert isinstance(raised.value, BudgetExceededError)  # a time budget: handled as the others are
    assert len(models.ledger.records) == 1
    with unbudgeted():  # what an ingest finishes storing once its budget is spent
        assert embedder.embed(["kept"]).shape == (1, embedder.dim)
    assert len(models.ledger.records) == 2


def test_without_a_deadline_nothing_is_refused_and_a_ledger_is_not_given_one_beside() -> None:
    assert Ledger().deadline is None
    models = Models(ModelsConfig(cache=False))
    assert models.ledger.deadline is None
    with pytest.raises(ValueError, match="deadline is the ledger's"):
        Models(ModelsConfig(cache=False), ledger=Ledger(), deadline=time.monotonic())
