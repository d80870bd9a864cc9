"""The LlamaIndex adapters with the real ``llama-index-core``: the node parser cuts with every chunker and
keeps exact start/end character indexes, and the retriever returns the knowledge base's hits."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.node_parser import NodeParser
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import Document, MetadataMode, NodeRelationship

from chunkwise.adapters.common import hit_id
from chunkwise.adapters.langchain import ChunkwiseRetriever as LangChainRetriever
from chunkwise.adapters.llamaindex import BOOKKEEPING_KEYS, ChunkwiseNodeParser, ChunkwiseRetriever
from chunkwise.config import from_dict
from chunkwise.errors import ConfigError, QueryError
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from tests.adapters.conftest import EVERY_CHUNKER, REPO, TEXT
from tests.support.openai_server import OpenAIServer, Reply


@pytest.mark.parametrize("chunker", EVERY_CHUNKER)
def test_node_parser_cuts_with_every_chunker_at_exact_offsets(chunker: str) -> None:
    parser = ChunkwiseNodeParser(chunker=chunker, params={"max_size": 120, "min_size": 0})
    assert isinstance(parser, NodeParser)
    source = Document(text=TEXT, metadata={"source": "policy"})
    nodes = parser.get_nodes_from_documents([source])
    assert nodes
    for node in nodes:
        assert TEXT[node.start_char_idx : node.end_char_idx] == node.text
        assert node.metadata["source"] == "policy"
        assert node.relationships[NodeRelationship.SOURCE].node_id == source.doc_id
    repeated = [n for n in nodes if n.text.strip() == "Repeated line."]
    assert len({n.start_char_idx for n in repeated}) == len(repeated)  # two equal texts, two places


def test_markdown_nodes_carry_section_paths() -> None:
    parser = ChunkwiseNodeParser(chunker="structure", format="markdown", params={"max_size": 200})
    nodes = parser.get_nodes_from_documents([Document(text=TEXT)])
    assert ["Baggage", "Cabin"] in [n.metadata["section"] for n in nodes]
    for node in nodes:  # offsets in the parsed text are in the metadata; LlamaIndex searches the source
        assert node.metadata["end"] > node.metadata["start"]
        if node.start_char_idx is not None:
            assert TEXT[node.start_char_idx : node.end_char_idx] == node.text


def test_retriever_returns_hits_with_offsets_and_scores(sample_kb: KnowledgeBase) -> None:
    retriever = ChunkwiseRetriever(sample_kb, k=3)
    assert isinstance(retriever, BaseRetriever)
    results = retriever.retrieve("How much does extra baggage cost?")
    hits = sample_kb.search("How much does extra baggage cost?", k=3)
    assert [r.score for r in results] == [h.score for h in hits]
    for result, hit in zip(results, hits, strict=True):
        node = result.node
        assert (node.start_char_idx, node.end_char_idx, node.text) == (hit.start, hit.end, hit.text)
        assert node.metadata["doc_id"] == hit.doc_id
        assert node.node_id == hit_id(hit)
        assert node.metadata["chunk_id"] == hit.chunk_id


def test_documents_with_the_same_content_keep_their_own_nodes(twin_kb: KnowledgeBase) -> None:
    """Two copies of one file share their chunk ids; LlamaIndex keeps one node per node id, so the
    nodes' ids are one per stored chunk (the same in every call, and the LangChain adapter's ids):
    every hit is returned, from both copies, and ``chunk_id`` stays in the metadata."""
    query = "accessories"
    hits = twin_kb.search(query, k=4)
    assert len(hits) == 4
    assert len({h.chunk_id for h in hits}) == 2  # each chunk id twice: once per copy
    results = ChunkwiseRetriever(twin_kb, k=4).retrieve(query)
    assert [(r.node.metadata["doc_id"], r.node.metadata["chunk_id"]) for r in results] == [
        (h.doc_id, h.chunk_id) for h in hits
    ]
    ids = [r.node.node_id for r in results]
    assert len(set(ids)) == 4
    assert ids == [r.node.node_id for r in ChunkwiseRetriever(twin_kb, k=4).retrieve(query)]
    assert ids == [d.id for d in LangChainRetriever(kb=twin_kb, k=4).invoke(query)]


def test_a_leading_byte_order_mark_keeps_offsets_exact() -> None:
    """A leading U+FEFF is part of the node's text: character indexes into it stay exact."""
    text = "\ufeff" + TEXT
    nodes = ChunkwiseNodeParser(params={"max_size": 60, "min_size": 0}).get_nodes_from_documents(
        [Document(text=text)]
    )
    assert len(nodes) > 2
    for node in nodes:
        assert text[node.start_char_idx : node.end_char_idx] == node.text


def test_blank_documents_give_no_nodes_and_do_not_abort_the_batch() -> None:
    """LlamaIndex's own splitters give nothing for an empty or blank document and carry on."""
    parser = ChunkwiseNodeParser(params={"max_size": 200})
    documents = [Document(text=""), Document(text=TEXT), Document(text="  \n ")]
    nodes = parser.get_nodes_from_documents(documents)
    assert nodes
    assert {n.ref_doc_id for n in nodes} == {documents[1].doc_id}


def test_a_k_below_one_is_refused(sample_kb: KnowledgeBase) -> None:
    """``[:k]`` with ``k`` of -1 would silently drop the last hit instead of returning none or all."""
    for bad in (0, -1):
        with pytest.raises(ConfigError, match="k must be at least 1"):
            ChunkwiseRetriever(sample_kb, k=bad)
        with pytest.raises(QueryError, match="k must be at least 1"):
            sample_kb.search("extra baggage fees", k=bad)
    for bad in (2.5, 2.0, True, "2", None):  # not a TypeError from deep inside a search
        with pytest.raises(ConfigError, match=f"k must be a whole number, got {bad!r}"):
            ChunkwiseRetriever(sample_kb, k=bad)  # type: ignore[arg-type]


def test_bookkeeping_metadata_stays_out_of_embedding_and_llm_text(sample_kb: KnowledgeBase) -> None:
    """Ids, offsets, sizes and scores are for code, not for models: LlamaIndex prepends every metadata
    key not excluded to what it embeds and what it shows an LLM. The source's own exclusions carry over."""
    source = Document(text=TEXT, metadata={"source": "policy", "secret": "x"})
    source.excluded_embed_metadata_keys = ["secret"]
    nodes = ChunkwiseNodeParser(chunker="structure", format="markdown").get_nodes_from_documents([source])
    for node in nodes:
        for mode in (MetadataMode.EMBED, MetadataMode.LLM):
            seen = node.get_metadata_str(mode)
            assert not any(f"{key}: " in seen for key in BOOKKEEPING_KEYS), seen
            assert "section: " in seen
            assert "source: policy" in seen
        assert "secret" not in node.get_metadata_str(MetadataMode.EMBED)
        assert "chunk_id: " in node.get_metadata_str(MetadataMode.ALL)
    results = ChunkwiseRetriever(sample_kb, k=3).retrieve("How much does extra baggage cost?")
    for result in results:
        node = result.node
        for mode in (MetadataMode.EMBED, MetadataMode.LLM):
            seen = node.get_metadata_str(mode)
            assert not any(f"{key}: " in seen for key in BOOKKEEPING_KEYS), seen
            assert f"doc_id: {node.metadata['doc_id']}" in seen
        assert node.ref_doc_id == node.metadata["doc_id"]
        assert node.relationships[NodeRelationship.SOURCE].node_id == node.metadata["doc_id"]


def _remote_config(server: OpenAIServer) -> dict[str, Any]:
    """Every model on ``server`` (no cache, so each search makes its own requests)."""
    return {
        "models": {
            "llm": "openai:gpt-test",
            "embedder": "openai:emb",
            "reranker": "rerank:rr",
            "base_url": server.base_url,
            "rerank_url": server.url,
            "cache": False,
        },
        "chunking": {"name": "recursive", "params": {"max_size": 300}},
    }


async def _overlapping(calls: list[Awaitable[Any]]) -> tuple[list[Any], float, int]:
    """The results of ``calls`` run together, the seconds they took, and how often a ticker task that
    wakes every 20 ms ran meanwhile (none when the calls block the event loop)."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    task = asyncio.create_task(ticker())
    began = time.perf_counter()
    results = await asyncio.gather(*calls)
    seconds = time.perf_counter() - began
    task.cancel()
    return results, seconds, ticks


def test_async_entry_points_run_in_threads_and_overlap(tmp_path: Path) -> None:
    """``aretrieve`` and ``aget_nodes_from_documents`` must not block the event loop: with the model
    server answering each request after 0.6 s, three concurrent calls take about 0.6 s, not 1.8 s, and
    other tasks run meanwhile; the results equal the synchronous ones."""
    queries = ["extra baggage fees", "pets in the cabin", "flight delay compensation"]
    with OpenAIServer() as server:
        config = from_dict(_remote_config(server))
        with KnowledgeBase(tmp_path / "kb", config) as kb:
            assert kb.add([REPO / "samples" / "docs"]).failed == []
            retriever = ChunkwiseRetriever(kb, k=3)
            server.script(*[Reply.hang(0.6)] * 3)  # the three query embeddings
            results, seconds, ticks = asyncio.run(_overlapping([retriever.aretrieve(q) for q in queries]))
            assert server.pending == 0
            assert seconds < 1.5, seconds
            assert ticks >= 10, ticks
            for query, nodes in zip(queries, results, strict=True):
                expected = [(hit_id(h), h.score) for h in kb.search(query, k=3)]
                assert [(n.node.node_id, n.score) for n in nodes] == expected

            parser = ChunkwiseNodeParser(models=Models(config.models), chunker="semantic")
            documents = [Document(text=TEXT, doc_id=f"d{i}") for i in range(3)]
            server.script(*[Reply.hang(0.6)] * 3)  # one sentence-embedding request per document
            calls = [parser.aget_nodes_from_documents([d]) for d in documents]
            results, seconds, ticks = asyncio.run(_overlapping(calls))
            assert server.pending == 0
            assert seconds < 1.5, seconds
            assert ticks >= 10, ticks
            expected_nodes = [parser.get_nodes_from_documents([d]) for d in documents]
            for got, want in zip(results, expected_nodes, strict=True):
                assert [(n.text, n.start_char_idx) for n in got] == [(n.text, n.start_char_idx) for n in want]


def test_a_format_a_string_cannot_have_is_refused_when_the_parser_is_made() -> None:
    """As the LangChain splitter: the node parser reads strings, so ``pdf`` is no format it can take."""
    with pytest.raises(ConfigError, match="format 'pdf': a string is read as text, markdown, html"):
        ChunkwiseNodeParser(chunker="fixed", format="pdf")
