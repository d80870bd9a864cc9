"""A run's budget bounds every model call of an ingest, the chunker's included (against a real HTTP
server on 127.0.0.1 with a price per token, so the cost of each call is known)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkwise.config import from_dict
from chunkwise.errors import BudgetExceededError
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from tests.support.openai_server import OpenAIServer

#: Dollars per million tokens: 0.001 $ a token, so a W-RAC planning call costs about a dollar.
PRICE = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}


def wrac_config(server: OpenAIServer, max_cost: float | None) -> dict[str, object]:
    return {
        "chunking": {"name": "wrac", "params": {"max_size": 400}},
        "headers": {"enabled": False},
        "models": {
            "llm": "openai:test-model",
            "base_url": server.base_url,
            "cache": False,
            "prices": {"test-model": PRICE},
            "max_cost": max_cost,
        },
    }


def test_ingest_stops_at_the_budget_before_the_call_that_would_cross_it(
    tmp_path: Path, data_dir: Path, embedder: object
) -> None:
    files = sorted((data_dir / "formats").glob("*.md"))[:3]
    with OpenAIServer() as server:
        probe = from_dict(wrac_config(server, None))
        probe_models = Models(probe.models, embedder=embedder)
        with KnowledgeBase(tmp_path / "probe", probe, models=probe_models) as kb:
            kb.add(files[:1])
        first_doc_cost = probe_models.totals().cost
        assert first_doc_cost > 0

        server.requests.clear()
        budget = 1.5 * first_doc_cost  # enough for the first document, not for the second
        config = from_dict(wrac_config(server, budget))
        models = Models(config.models, embedder=embedder)
        with KnowledgeBase(tmp_path / "kb", config, models=models) as kb:
            with pytest.raises(BudgetExceededError, match="cost budget exceeded"):
                kb.add(files)
            stored = [info.doc_id for info in kb.store.documents()]
            assert kb.store.check() == []
    llm_calls = [r for r in models.ledger.records if r.role == "llm" and not r.cached]
    assert llm_calls, "the chunker's calls are in the ingest's ledger"
    assert len(llm_calls) == len([r for r in server.requests if r.path == "/v1/chat/completions"])
    assert models.totals().cost <= budget
    assert stored == [files[0].as_posix()]  # the document prepared before the budget ran out is stored
