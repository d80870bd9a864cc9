"""The LangChain adapters with the real ``langchain-core`` and ``langchain-text-splitters``: the retriever
returns the knowledge base's hits as Documents with offsets and scores, and the splitter cuts with every
chunker at exact offsets."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_text_splitters import TextSplitter
from pydantic import ValidationError

from chunkwise.adapters.langchain import ChunkwiseRetriever, ChunkwiseTextSplitter
from chunkwise.errors import ConfigError, QueryError
from chunkwise.kb import KnowledgeBase
from tests.adapters.conftest import EVERY_CHUNKER, TEXT


def test_retriever_returns_hits_as_documents(sample_kb: KnowledgeBase) -> None:
    retriever = ChunkwiseRetriever(kb=sample_kb, k=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("How much does extra baggage cost?")
    hits = sample_kb.search("How much does extra baggage cost?", k=3)
    assert [d.page_content for d in docs] == [h.text for h in hits]
    for doc, hit in zip(docs, hits, strict=True):
        meta = doc.metadata
        assert (meta["doc_id"], meta["start"], meta["end"], meta["score"]) == (
            hit.doc_id,
            hit.start,
            hit.end,
            hit.score,
        )
        assert set(meta["scores"]) == {"bm25", "dense", "fusion"}
        stored = sample_kb.store.document_text(meta["doc_id"], meta["start"], meta["end"])
        assert stored == doc.page_content


def test_documents_with_the_same_content_get_their_own_ids(twin_kb: KnowledgeBase) -> None:
    """Two copies of one file share their chunk ids; the Documents' ids are one per stored chunk, the
    same in every call."""
    retriever = ChunkwiseRetriever(kb=twin_kb, k=4)
    docs = retriever.invoke("accessories")
    assert len({d.metadata["doc_id"] for d in docs}) == 2
    assert len({d.metadata["chunk_id"] for d in docs}) == 2
    assert len({d.id for d in docs}) == 4
    assert [d.id for d in docs] == [d.id for d in retriever.invoke("accessories")]


@pytest.mark.parametrize("chunker", EVERY_CHUNKER)
def test_splitter_cuts_with_every_chunker_at_exact_offsets(chunker: str) -> None:
    splitter = ChunkwiseTextSplitter(chunker, max_size=120, min_size=0)
    assert isinstance(splitter, TextSplitter)
    docs = splitter.create_documents([TEXT], metadatas=[{"source": "policy"}])
    assert [d.page_content for d in docs] == splitter.split_text(TEXT)
    assert docs
    for doc in docs:
        start, end = doc.metadata["start_index"], doc.metadata["end_index"]
        assert TEXT[start:end] == doc.page_content  # exact, the second "Repeated line." included
        assert len(doc.page_content) <= 120
        assert doc.metadata["source"] == "policy"
    covered = "".join(d.page_content for d in docs)
    assert "".join(covered.split()) == "".join(TEXT.split())


def test_markdown_splitting_keeps_section_paths_and_splits_documents() -> None:
    splitter = ChunkwiseTextSplitter("structure", format="markdown", max_size=200)
    docs = splitter.split_documents([Document(page_content=TEXT, metadata={"id": 7})])
    assert {tuple(d.metadata["section"]) for d in docs} >= {("Baggage",), ("Baggage", "Cabin")}
    assert all(d.metadata["id"] == 7 for d in docs)
    # Read as Markdown, offsets index the parsed text, not the given one: no start_index is claimed.
    assert all("start_index" not in d.metadata and d.metadata["end"] > d.metadata["start"] for d in docs)


def test_a_leading_byte_order_mark_keeps_offsets_exact() -> None:
    """Text read with ``encoding="utf-8"`` keeps a leading U+FEFF; it is part of the string, so it stays
    in the document and offsets into the string stay exact (decoding bytes would drop it)."""
    text = "\ufeff" + TEXT
    docs = ChunkwiseTextSplitter("recursive", max_size=60, min_size=0).create_documents([text])
    assert len(docs) > 2
    for doc in docs:
        assert text[doc.metadata["start_index"] : doc.metadata["end_index"]] == doc.page_content


def test_blank_texts_give_no_chunks_and_do_not_abort_the_batch() -> None:
    """LangChain's own splitters return nothing for an empty or blank text; so does this one, in every
    entry point, whatever the format."""
    for fmt in ("text", "markdown", "html"):
        splitter = ChunkwiseTextSplitter("recursive", format=fmt, max_size=200)
        assert splitter.split_text("") == []
        assert splitter.split_text("  \n\t ") == []
        docs = splitter.create_documents(["", TEXT, " \n "], metadatas=[{"n": 0}, {"n": 1}, {"n": 2}])
        assert docs
        assert {d.metadata["n"] for d in docs} == {1}
        split = splitter.split_documents([Document(page_content=""), Document(page_content=TEXT)])
        assert [d.page_content for d in split] == [d.page_content for d in docs]


def test_a_call_may_ask_for_another_number_of_hits(sample_kb: KnowledgeBase) -> None:
    """As with LangChain's vector-store retrievers, ``invoke(query, k=...)`` is honoured (sync and
    async), not silently ignored; a ``k`` below 1 is refused, here and in the field, and so is a ``k``
    that is no whole number."""
    query = "How much does extra baggage cost?"
    retriever = ChunkwiseRetriever(kb=sample_kb, k=3)
    expected = [h.chunk_id for h in sample_kb.search(query, k=1)]
    assert [d.metadata["chunk_id"] for d in retriever.invoke(query, k=1)] == expected
    assert [d.metadata["chunk_id"] for d in asyncio.run(retriever.ainvoke(query, k=1))] == expected
    assert len(retriever.invoke(query)) == 3
    for bad in (0, -1):
        with pytest.raises(QueryError, match="k must be at least 1"):
            retriever.invoke(query, k=bad)
        with pytest.raises(ValidationError):
            ChunkwiseRetriever(kb=sample_kb, k=bad)
    for bad in (2.5, 2.0, True, "2"):  # a QueryError naming it, not a TypeError from deep inside a search
        with pytest.raises(QueryError, match=f"k must be a whole number, got {bad!r}"):
            retriever.invoke(query, k=bad)
        with pytest.raises(QueryError, match="k must be a whole number"):
            asyncio.run(retriever.ainvoke(query, k=bad))


def test_each_chunk_gets_its_own_copy_of_nested_metadata() -> None:
    """LangChain's ``create_documents`` deep-copies a text's metadata into each chunk: editing a list in
    one chunk's metadata must not change the other chunks' or the caller's."""
    given = {"tags": ["policy"], "owner": {"team": "ops"}}
    docs = ChunkwiseTextSplitter("recursive", max_size=60, min_size=0).create_documents([TEXT], [given])
    assert len(docs) > 1
    docs[0].metadata["tags"].append("edited")
    docs[0].metadata["owner"]["team"] = "edited"
    assert [d.metadata["tags"] for d in docs[1:]] == [["policy"]] * (len(docs) - 1)
    assert {d.metadata["owner"]["team"] for d in docs[1:]} == {"ops"}
    assert given == {"tags": ["policy"], "owner": {"team": "ops"}}


@pytest.mark.parametrize("format_", ["pdf", "docx", "Markdown", ""])
def test_a_format_a_string_cannot_have_is_refused_when_the_splitter_is_made(format_: str) -> None:
    """``format="pdf"`` was taken, and every ``split_text`` then failed ("the PDF is truncated")."""
    with pytest.raises(ConfigError, match=f"format {format_!r}: a string is read as text, markdown, html"):
        ChunkwiseTextSplitter("fixed", format=format_)
    assert ChunkwiseTextSplitter("fixed", format="html").split_text("<p>Gates close early.</p>") == [
        "Gates close early."
    ]
