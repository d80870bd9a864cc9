"""LlamaIndex adapters (extra ``[llamaindex]``): a node parser for every chunker and a retriever over a
knowledge base.

    parser = ChunkwiseNodeParser(chunker="structure", format="markdown", params={"max_size": 300})
    nodes = parser.get_nodes_from_documents([Document(text=markdown_text)])  # exact start/end_char_idx
    retriever = ChunkwiseRetriever(kb, k=4)
    results = retriever.retrieve("extra baggage fees")  # NodeWithScore, offsets in the node
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.node_parser import NodeParser
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import (
    BaseNode,
    Document,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from pydantic import Field, PrivateAttr

from chunkwise.adapters.common import StringChunker, chunk_metadata, hit_id, hit_metadata
from chunkwise.errors import ConfigError
from chunkwise.kb import KnowledgeBase
from chunkwise.models.context import Models
from chunkwise.query.pipeline import checked_k

#: Metadata this module adds for bookkeeping (ids, offsets, sizes, scores): kept on the nodes, but left
#: out of the text LlamaIndex builds for an embedding model or an LLM, where it would only add noise.
#: ``section``, ``doc_id`` and ``header`` say what the text is about and stay in.
BOOKKEEPING_KEYS = ("chunk_id", "start", "end", "unit_ids", "tokens", "score", "scores")


def _excluding(keys: Sequence[str]) -> list[str]:
    """``keys`` (a source node's exclusions) followed by the bookkeeping keys it does not yet hold."""
    return [*keys, *(k for k in BOOKKEEPING_KEYS if k not in keys)]


class ChunkwiseNodeParser(NodeParser):
    """A LlamaIndex ``NodeParser`` that cuts each node's text with chunkwise's chunker ``chunker`` (any of
    them) and its ``params``. Each node's metadata adds ``chunk_id``, ``start``, ``end`` (offsets in the
    document chunkwise parsed), ``section``, ``unit_ids`` and ``tokens``. ``format`` says how a text is
    read (see :class:`~chunkwise.adapters.common.StringChunker`); read verbatim (``text``, the default),
    ``start_char_idx``/``end_char_idx`` are the chunk's exact offsets in the source text (LlamaIndex's own
    post-processing searches for the text instead and can land on an earlier copy; this parser keeps
    the offsets the chunker computed). The source node's excluded metadata keys carry over, and
    :data:`BOOKKEEPING_KEYS` join them, so embeddings and LLM prompts see the text, its section and the
    source's own metadata. The async entry points chunk in a worker thread."""

    chunker: str = Field(default="recursive", description="A chunkwise chunker name.")
    params: dict[str, Any] = Field(default_factory=dict, description="The chunker's parameters.")
    format: str = Field(default="text", description="text (verbatim), markdown or html.")
    _strings: StringChunker = PrivateAttr()

    def __init__(self, *, models: Models | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._strings = StringChunker(self.chunker, format=self.format, models=models, **self.params)

    @classmethod
    def class_name(cls) -> str:
        return "ChunkwiseNodeParser"

    def _parse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        parsed: list[BaseNode] = []
        for node in nodes:
            for chunk in self._strings.chunks(node.get_content(), node.node_id):
                exact = self._strings.verbatim
                parsed.append(
                    TextNode(
                        text=chunk.text,
                        start_char_idx=chunk.start if exact else None,
                        end_char_idx=chunk.end if exact else None,
                        metadata=chunk_metadata(chunk),
                        excluded_embed_metadata_keys=_excluding(node.excluded_embed_metadata_keys),
                        excluded_llm_metadata_keys=_excluding(node.excluded_llm_metadata_keys),
                        relationships={NodeRelationship.SOURCE: node.as_related_node_info()},
                    )
                )
        return parsed

    async def _aparse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        """:meth:`_parse_nodes` in a worker thread: chunking is CPU work and, for the model-driven
        chunkers, model calls, which LlamaIndex's default would run on the event loop itself."""
        return await asyncio.to_thread(self._parse_nodes, nodes, show_progress, **kwargs)

    def _postprocess_parsed_nodes(
        self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]
    ) -> list[BaseNode]:
        if not self._strings.verbatim:
            return super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        offsets = [(n.start_char_idx, n.end_char_idx) for n in nodes if isinstance(n, TextNode)]
        processed = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for node, (start, end) in zip(
            [n for n in processed if isinstance(n, TextNode)], offsets, strict=True
        ):
            node.start_char_idx, node.end_char_idx = start, end
        return processed


class ChunkwiseRetriever(BaseRetriever):
    """The ``k`` best chunks of a :class:`~chunkwise.kb.KnowledgeBase` for a query, after every stage its
    configuration enables, as ``NodeWithScore`` s: each node, its id one per stored chunk
    (:func:`~chunkwise.adapters.common.hit_id`: two documents with the same content keep their own
    nodes), holds the chunk's text, its offsets in its document (``start_char_idx``, ``end_char_idx``),
    a ``SOURCE`` relationship to its document (so ``ref_doc_id`` is the document id) and the metadata
    ``doc_id``, ``chunk_id``, ``start``, ``end``, ``score``, ``scores`` and ``header``; the score is the
    final one. :data:`BOOKKEEPING_KEYS` are left out of the node's embedding and LLM text.
    ``aretrieve`` searches in a worker thread, so the event loop runs on and concurrent retrievals
    overlap."""

    def __init__(self, kb: KnowledgeBase, k: int = 4, **kwargs: Any) -> None:
        """Raises :class:`~chunkwise.errors.ConfigError` when ``k`` is less than 1 or not a whole number."""
        k = checked_k(k, ConfigError)
        super().__init__(**kwargs)
        self.kb = kb
        self.k = k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [
            NodeWithScore(
                node=TextNode(
                    id_=hit_id(hit),
                    text=hit.text,
                    start_char_idx=hit.start,
                    end_char_idx=hit.end,
                    metadata=hit_metadata(hit),
                    excluded_embed_metadata_keys=list(BOOKKEEPING_KEYS),
                    excluded_llm_metadata_keys=list(BOOKKEEPING_KEYS),
                    relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.doc_id)},
                ),
                score=hit.score,
            )
            for hit in self.kb.search(query_bundle.query_str, k=self.k)
        ]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """:meth:`_retrieve` in a worker thread: a search embeds the query, reads the store and may call
        an LLM, all blocking, which LlamaIndex's default would run on the event loop itself."""
        return await asyncio.to_thread(self._retrieve, query_bundle)
