"""A very long query costs the retrievers no more than ``max_query_tokens``: the embedder and BM25 read
its first tokens, cut at a word, and the trace notes what was kept of how much."""

from __future__ import annotations

import random
import string

from chunkwise.config import from_dict
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from chunkwise.models.managed import estimate_tokens
from chunkwise.query.retrieve import truncate_query
from chunkwise.query.trace import Trace
from tests.support.documents import format_docs
from tests.support.fakes import RecordingEmbedder


def test_truncate_query_cuts_at_a_word_and_says_what_it_kept():
    assert truncate_query("How long do refunds take?", 100) == ("How long do refunds take?", None)
    text = "refund " * 1000
    kept, note = truncate_query(text, 100)
    assert text.startswith(kept)
    assert kept.endswith("refund")
    assert len(kept) <= 400
    assert note == f"{estimate_tokens(kept)}/{estimate_tokens(text)}"
    assert truncate_query("x" * 1000, 10) == ("x" * 40, "10/250")  # one word longer than the limit


def test_a_very_long_query_is_cut_for_the_embedder_and_bm25_with_a_note(tmp_path, data_dir):
    config = from_dict({"models": {"cache": False}, "retrieval": {"max_query_tokens": 64}})
    embedder = RecordingEmbedder()
    rng = random.Random(0)
    filler = " ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(200_000))
    query = f"checked baggage weight limit {filler}"
    with KnowledgeBase(tmp_path / "kb", config, models=Models(config.models, embedder=embedder)) as kb:
        kb.add_documents(format_docs(data_dir))
        trace, short = Trace(), Trace()
        hits = kb.search(query, k=3, trace=trace)
        kb.search("checked baggage", k=1, trace=short)
    total = estimate_tokens(query)
    kept = int(trace.get("dense").notes["truncated"].split("/")[0])
    assert trace.get("dense").notes["truncated"] == f"{kept}/{total}"
    assert trace.get("bm25").notes["truncated"] == f"{kept}/{total}"
    assert kept <= 64
    assert embedder.last != query
    assert query.startswith(embedder.last)
    assert "Baggage" in hits[0].doc_id  # the words kept still find the document
    assert "truncated" not in short.get("dense").notes
    assert short.get("bm25").notes == {}


def test_a_search_for_more_hits_than_candidates_fetches_as_many(tmp_path, data_dir, embedder):
    """``retrieval.candidates`` is a floor, not a cap on ``k``: asked for 12 hits with 5 candidates a
    retriever, each retriever fetches 12, so the search returns 12 hits (it returned 10 at most)."""
    config = from_dict({"retrieval": {"candidates": 5}})
    with KnowledgeBase(tmp_path / "kb", config, models=Models(config.models, embedder=embedder)) as kb:
        kb.add_documents(format_docs(data_dir))
        assert sum(info.chunks for info in kb.documents()) > 12
        trace = Trace()
        hits = kb.search("checked baggage weight", k=12, trace=trace)
        few = kb.search("checked baggage weight", k=3, trace=Trace())
    assert len(hits) == 12
    assert len({hit.chunk_id for hit in hits}) == 12
    assert trace.get("dense").outputs == 12
    assert [hit.chunk_id for hit in few] == [hit.chunk_id for hit in hits[:3]]
