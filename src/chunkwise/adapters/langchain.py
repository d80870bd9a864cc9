"""LangChain adapters (extra ``[langchain]``): a retriever over a knowledge base and a text splitter for
every chunker.

    retriever = ChunkwiseRetriever(kb=kb, k=4)
    docs = retriever.invoke("extra baggage fees")   # Documents with doc_id, start, end, score in metadata
    splitter = ChunkwiseTextSplitter("structure", format="markdown", max_size=300)
    pieces = splitter.create_documents([markdown_text])  # start_index/end_index are exact offsets
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_text_splitters import TextSplitter
from pydantic import ConfigDict, Field

from chunkwise.adapters.common import StringChunker, chunk_metadata, hit_id, hit_metadata
from chunkwise.kb import KnowledgeBase
from chunkwise.models.context import Models
from chunkwise.query.pipeline import checked_k


class ChunkwiseRetriever(BaseRetriever):
    """The ``k`` best chunks of a :class:`~chunkwise.kb.KnowledgeBase` for a query, after every stage the
    knowledge base's configuration enables, as LangChain ``Document`` s: ``page_content`` is the chunk's
    text, ``id`` is one per stored chunk (:func:`~chunkwise.adapters.common.hit_id`) and ``metadata``
    holds ``doc_id``, ``chunk_id``, ``start``, ``end``, ``score``, ``scores`` (per stage) and ``header``.
    A call may ask for another number of hits, as LangChain's vector-store retrievers allow:
    ``invoke(query, k=2)``; a ``k`` below 1 or not a whole number raises
    :class:`~chunkwise.errors.QueryError`, any other keyword a ``TypeError``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kb: KnowledgeBase
    k: int = Field(default=4, ge=1)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        hits = self.kb.search(query, k=checked_k(self.k if k is None else k))
        return [Document(id=hit_id(h), page_content=h.text, metadata=hit_metadata(h)) for h in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        """:meth:`_get_relevant_documents` in a worker thread (LangChain's default would drop ``k``)."""
        return await asyncio.to_thread(
            self._get_relevant_documents, query, run_manager=run_manager.get_sync(), k=k
        )


class ChunkwiseTextSplitter(TextSplitter):
    """A LangChain ``TextSplitter`` that cuts with chunkwise's chunker ``chunker`` (any of them, the
    model-driven ones on ``models``) and its ``params`` (``max_size``, ``min_size``, ``overlap``, ``unit``,
    ...). ``format`` says how a text is read (see :class:`~chunkwise.adapters.common.StringChunker`).

    :meth:`create_documents` gives each chunk the metadata ``chunk_id``, ``start``, ``end`` (offsets in
    the document chunkwise parsed), ``section``, ``unit_ids`` and ``tokens``; when the text is read
    verbatim (``format="text"``) also ``start_index`` and ``end_index``, its exact offsets in the given
    text (LangChain's own ``add_start_index`` searches for the chunk's text instead).
    """

    def __init__(
        self, chunker: str = "recursive", *, format: str = "text", models: Models | None = None, **params: Any
    ) -> None:
        self._chunker = StringChunker(chunker, format=format, models=models, **params)
        # LangChain's chunk_size/chunk_overlap are unused: the chunkwise chunker enforces its own max_size.
        super().__init__(chunk_overlap=0)

    def split_text(self, text: str) -> list[str]:
        """The chunks' texts, in order."""
        return [c.text for c in self._chunker.chunks(text)]

    def create_documents(
        self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None
    ) -> list[Document]:
        """One ``Document`` per chunk of each text, its metadata a deep copy of the text's own (as
        LangChain's splitters make it: editing one chunk's nested values leaves the others and the
        caller's alone) plus the chunk's."""
        given: Iterable[dict[Any, Any]] = metadatas or [{} for _ in texts]
        documents = []
        for text, metadata in zip(texts, given, strict=True):
            for chunk in self._chunker.chunks(text):
                extra = chunk_metadata(chunk)
                if self._chunker.verbatim:
                    extra.update(start_index=chunk.start, end_index=chunk.end)
                documents.append(
                    Document(page_content=chunk.text, metadata={**copy.deepcopy(metadata), **extra})
                )
        return documents
