"""A run's budget bounds every model call of an ingest, the chunker's included (against a real HTTP
server on 127.0.0.1 with a price per token, so the cost of each call is known)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkwise.config import from_dict
from chunkwise.errors import BudgetExceededError
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from chunkwise.models.managed import estimate_tokens
from chunkwise.parsing.text import text_document
from tests.support.fakes import HashEmbedder
from tests.support.openai_server import OpenAIServer, word_count

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


def test_a_spent_token_budget_still_stores_the_documents_prepared_before_it(tmp_path: Path) -> None:
    """``max_tokens`` counts embedding tokens too: the budget that lets the LLM title the first document
    but not the second would also refuse the embedding of the first. That embedding finishes work the
    budget paid for, so it is made (and recorded), the first document is stored, and the error raised
    is the LLM's."""
    long = text_document("long.txt", " ".join(f"Sentence {i} about lounges and gates." for i in range(60)))
    short = text_document("short.txt", "Bags weigh 23 kg.")

    def config(server: OpenAIServer, max_tokens: int | None) -> dict[str, object]:
        models = {"llm": "openai:test-model", "base_url": server.base_url, "cache": False}
        return {"headers": {"llm": True, "summary": False}, "models": {**models, "max_tokens": max_tokens}}

    # a long reply: its output tokens alone leave no room for the next call
    with OpenAIServer(answer=lambda request: "A Title " + "word " * 1000) as server:
        probe = from_dict(config(server, None))
        probe_models = Models(probe.models, embedder=HashEmbedder())
        with KnowledgeBase(tmp_path / "probe", probe, models=probe_models) as kb:
            kb.add_documents([long])
        assert [r.role for r in probe_models.ledger.records] == ["llm", "embedder"]
        # what the budget check estimates for the first title call: it is made, and nothing after it
        budget = estimate_tokens(server.requests[0].json["messages"][-1]["content"])
        assert probe_models.ledger.records[0].output_tokens > budget

        settings = from_dict(config(server, budget))
        models = Models(settings.models, embedder=HashEmbedder())
        with KnowledgeBase(tmp_path / "kb", settings, models=models) as kb:
            with pytest.raises(BudgetExceededError, match="test-model: token budget exceeded"):
                kb.add_documents([long, short])
            assert [info.doc_id for info in kb.store.documents()] == ["long.txt"]
            assert kb.store.check() == []
    assert [r.role for r in models.ledger.records] == ["llm", "embedder"]


def embedding_config(server: OpenAIServer, max_tokens: int | None = None) -> dict[str, object]:
    """An endpoint's embedder without a configured dimension, priced, uncached, and no LLM."""
    return {
        "headers": {"enabled": False},
        "models": {
            "embedder": "openai:emb",
            "base_url": server.base_url,
            "cache": False,
            "prices": {"emb": PRICE},
            "max_tokens": max_tokens,
        },
    }


def test_the_dimension_probe_is_an_accounted_embedding_call(tmp_path: Path) -> None:
    """An embedder whose dimension is not configured learns it from one ``/embeddings`` request, which
    reached no ledger: its tokens were missing from the accounting and from every budget. Each request
    of an ingest into a fresh knowledge base, the probe among them, is now an accounted embedding call."""
    docs = [text_document("bags.txt", "Bags weigh 23 kg."), text_document("gates.txt", "Gates close early.")]
    with OpenAIServer() as server:
        with KnowledgeBase(tmp_path / "kb", from_dict(embedding_config(server))) as kb:
            kb.add_documents(docs)
            accounting = kb.accounting()
        sent = [request.json["input"] for request in server.requests if request.path == "/v1/embeddings"]
    assert ["dimension probe"] in sent
    tokens = sum(word_count(text) for texts in sent for text in texts)
    embedder = accounting["by_role"]["embedder"]
    assert (embedder["calls"], embedder["input_tokens"]) == (len(sent), tokens)
    assert accounting["total"]["cost"] == pytest.approx(tokens * PRICE["input_per_mtok"] / 1e6)


def test_a_budget_too_small_for_the_dimension_probe_sends_nothing(tmp_path: Path) -> None:
    """The probe is checked against the budget like any embedding call: a token budget below its
    estimate stops the ingest before any request reaches the endpoint."""
    budget = estimate_tokens("dimension probe") - 1
    with OpenAIServer() as server:
        with KnowledgeBase(tmp_path / "kb", from_dict(embedding_config(server, budget))) as kb:
            with pytest.raises(BudgetExceededError, match="openai:emb: token budget exceeded"):
                kb.add_documents([text_document("bags.txt", "Bags weigh 23 kg.")])
            assert kb.accounting()["total"]["calls"] == 0
        assert server.requests == []
