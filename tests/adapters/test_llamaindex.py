"""The LlamaIndex adapters with the real ``llama-index-core``: the node parser cuts with every chunker and
keeps exact start/end character indexes, and the retriever returns the knowledge base's hits."""

from __future__ import annotations

import pytest
from llama_index.core.node_parser import NodeParser
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import Document, NodeRelationship

from chunkwise.adapters.llamaindex import ChunkwiseNodeParser, ChunkwiseRetriever
from chunkwise.kb import KnowledgeBase
from tests.adapters.conftest import EVERY_CHUNKER, TEXT


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
        assert node.node_id == hit.chunk_id
