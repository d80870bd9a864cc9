"""One document's failure fails that document alone, named in the report, and the batch goes on: a string
that is not valid Unicode text in what is stored (from the document, or from the LLM that titles it),
and a chunker's bug. Real SQLite stores; the LLM is the scripted loopback server."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import chunkwise
from chunkwise.chunking import get_chunker
from chunkwise.chunking.chunk import Chunk
from chunkwise.config import from_dict
from chunkwise.document import Document
from chunkwise.ingest.headers import TITLE_CHARS, TITLE_TOKENS
from chunkwise.ingest.pipeline import SHARED_ID
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from chunkwise.parsing.text import text_document
from tests.support.fakes import HashEmbedder
from tests.support.openai_server import OpenAIServer, Reply

SURROGATE = "not valid Unicode text: a lone surrogate at character"


class BuggyChunker:
    """A plugin chunker with a bug on one document (an ``IndexError`` on text that mentions bamboo)."""

    name = "buggy"

    def __init__(self, **params: Any) -> None:
        self.inner = get_chunker("recursive", **params)

    def chunk(self, doc: Document) -> list[Chunk]:
        if "bamboo" in doc.text:
            return [[]][0][0]  # type: ignore[no-any-return]
        return self.inner.chunk(doc)


def test_a_lone_surrogate_in_a_stored_string_fails_its_document_alone(tmp_path: Path) -> None:
    def doc(name: str, **fields: Any) -> Document:
        return Document(f"{name}.txt", f"Gates of {name} close twenty minutes before departure.", **fields)

    docs = [
        doc("good1"),
        doc("title", title="Gates \udc80"),
        doc("source", source="gates-\ud800.txt"),
        doc("meta", metadata={"tags": ["ok", {"x": "gate \udfff"}]}),
        doc("key", metadata={"gate\udc80": 1}),
        doc("good2", metadata={"tags": ["fine"]}),
    ]
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=HashEmbedder())) as kb:
        report = kb.add_documents(docs)
        assert report.added == ["good1.txt", "good2.txt"]
        assert report.failed == [
            ("title.txt", f"the document's title is {SURROGATE} 6"),
            ("source.txt", f"the document's source is {SURROGATE} 6"),
            ("meta.txt", f"the document's metadata['tags'][1]['x'] is {SURROGATE} 5"),
            ("key.txt", f"the document's metadata key is {SURROGATE} 4"),
        ]
        assert [d.doc_id for d in kb.store.documents()] == ["good1.txt", "good2.txt"]
        assert kb.store.check() == []


def llm_config(server: OpenAIServer) -> dict[str, Any]:
    return {
        "headers": {"llm": True},
        "models": {"llm": "openai:test-model", "base_url": server.base_url, "cache": False},
    }


def test_an_llm_title_is_cleaned_of_lone_surrogates_and_cut_to_a_short_line(tmp_path: Path) -> None:
    """A reply cut inside a surrogate pair loses the lone half instead of stopping the batch, and a
    runaway one-line title is cut at a word boundary (the request asks for a short one, too)."""

    def answer(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if "Title:" not in prompt:
            return "A summary."
        if "Lounges" in prompt:
            return "Lounge hours \ud83d"
        return "The Title " + "word " * 3000

    texts = {"a.txt": "Gates close early.", "b.txt": "Lounges open at six.", "c.txt": "Bags weigh 23 kg."}
    docs = [text_document(name, text) for name, text in texts.items()]
    with OpenAIServer(answer=answer) as server:
        config = from_dict(llm_config(server))
        models = Models(config.models, embedder=HashEmbedder())
        with KnowledgeBase(tmp_path / "kb", config, models=models) as kb:
            report = kb.add_documents(docs)
            assert report.failed == []
            assert report.added == list(texts)
            headers = {
                doc_id: kb.store._rows(
                    "SELECT h.header FROM headers h JOIN chunks c USING (chunk_key) WHERE c.doc_id = ?",
                    (doc_id,),
                )[0][0]
                for doc_id in texts
            }
        titles = [r.json for r in server.requests if "Title:" in r.json["messages"][-1]["content"]]
    assert {r["max_tokens"] for r in titles} == {TITLE_TOKENS}
    assert headers["b.txt"].splitlines()[0] == "Document: Lounge hours"
    long_title = headers["a.txt"].splitlines()[0].removeprefix("Document: ")
    assert long_title.startswith("The Title word word")
    assert TITLE_CHARS - len(" word") < len(long_title) <= TITLE_CHARS
    assert long_title.endswith("word")


class NulContextChunker:
    """A plugin chunker giving the chunks of text that mentions bamboo a context holding a NUL."""

    name = "nul-context"

    def __init__(self, **params: Any) -> None:
        self.inner = get_chunker("recursive", **params)

    def chunk(self, doc: Document) -> list[Chunk]:
        chunks = self.inner.chunk(doc)
        if "bamboo" in doc.text:
            return [dataclasses.replace(c, context="Table\x00 header") for c in chunks]
        return chunks


def test_a_nul_in_a_header_made_for_a_document_fails_it_alone(tmp_path: Path) -> None:
    """A NUL in a string ingest makes for a document (here a chunk's context, part of its header) is
    refused as one in the document itself is: PostgreSQL cannot store it, so no store is given one."""
    docs = [
        text_document(f"{name}.txt", text)
        for name, text in [("a", "Gates close."), ("b", "The bamboo lounge.")]
    ]
    config = from_dict({"chunking": {"name": f"{__name__}:NulContextChunker"}})
    with KnowledgeBase(tmp_path / "kb", config, models=Models(embedder=HashEmbedder())) as kb:
        report = kb.add_documents(docs)
        assert report.added == ["a.txt"]
        assert report.failed == [
            (
                "b.txt",
                "header of chunk 0 holds a NUL character at character 21 (not text: no store is given one)",
            )
        ]
        assert kb.store.check() == []


def test_a_chunker_bug_fails_its_file_alone(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name, text in [("a.txt", "Gates close."), ("b.txt", "The bamboo lounge."), ("c.txt", "Bags.")]:
        (folder / name).write_text(text + "\n")
    config = from_dict({"chunking": {"name": f"{__name__}:BuggyChunker"}})
    with KnowledgeBase(tmp_path / "kb", config, models=Models(embedder=HashEmbedder())) as kb:
        report = kb.add([folder])
        assert report.added == [(folder / "a.txt").as_posix(), (folder / "c.txt").as_posix()]
        assert report.failed == [
            ((folder / "b.txt").as_posix(), "unexpected IndexError: list index out of range")
        ]
        assert kb.store.check() == []
    assert json.dumps(report.to_dict())  # the report stays JSON-ready


def test_a_text_the_embedder_refuses_fails_its_document_alone(tmp_path: Path) -> None:
    """The remote embedder refuses the call holding three documents (HTTP 400, as for a text past its
    context length): each document is embedded alone, and only the one refused again fails, named."""
    docs = [
        text_document(f"{name}.txt", f"{name.title()} close at six.") for name in ("big", "gates", "bags")
    ]
    with OpenAIServer() as server:
        config = from_dict(
            {
                "headers": {"enabled": False},
                "models": {"embedder": "openai:emb-test", "base_url": server.base_url, "cache": False},
            }
        )
        with KnowledgeBase(tmp_path / "kb", config) as kb:
            kb.add_documents([])  # records the embedder (its probe call), so the script starts below
            server.requests.clear()
            server.script(Reply.error(400), Reply.error(400))  # the call of three, then big.txt alone
            report = kb.add_documents(docs)
            stored = [d.doc_id for d in kb.store.documents()]
            assert kb.store.check() == []
        calls = [len(r.json["input"]) for r in server.requests if r.path == "/v1/embeddings"]
    assert calls == [3, 1, 1, 1]
    assert [source for source, _ in report.failed] == ["big.txt"]
    assert "HTTP 400" in report.failed[0][1]
    assert report.added == ["gates.txt", "bags.txt"]
    assert stored == ["bags.txt", "gates.txt"]


def test_a_blank_document_id_fails_its_document_alone(tmp_path: Path) -> None:
    """An id that is empty or whitespace names nothing to list, search or delete (``kb delete ""``
    answered "deleted "): such a document is refused, named by its quoted id, and the batch goes on."""
    text = b"# Gates\n\nGates close twenty minutes before departure."
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=HashEmbedder())) as kb:
        report = kb.add_bytes([("", text), ("gates.md", text), (" \t", text)])
        assert report.added == ["gates.md"]
        assert report.failed == [
            ("''", "the document's id is blank"),
            ("' \\t'", "the document's id is blank"),
        ]
        report = kb.add_documents([Document("  ", "Lounges open at six."), Document("lounges.txt", "Six.")])
        assert (report.added, report.failed) == (["lounges.txt"], [("'  '", "the document's id is blank")])
        assert [d.doc_id for d in kb.store.documents()] == ["gates.md", "lounges.txt"]


def test_a_second_document_with_an_earlier_ones_id_and_other_text_fails_alone(tmp_path: Path) -> None:
    """Two strings given to ``chunkwise.parse`` are both ``text``: storing both replaced the first with
    the second in the same call, reported as added and replaced. The second is refused now, naming the
    id; the same document given twice is stored once and skipped once."""
    first, second = chunkwise.parse("Gates close early."), chunkwise.parse("Lounges open at six.")
    assert first.id == second.id == "text"
    same = b"# Gates\n\nGates close twenty minutes before departure."
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=HashEmbedder())) as kb:
        report = kb.add_documents([first, second, first])
        assert (report.added, report.skipped, report.failed) == (["text"], ["text"], [("text", SHARED_ID)])
        report = kb.add_bytes([("gates.md", same), ("gates.md", same), ("gates.md", b"# Other\n\nText.")])
        assert (report.added, report.skipped) == (["gates.md"], ["gates.md"])
        assert report.failed == [("gates.md", SHARED_ID)]
        assert [(d.doc_id, d.chunks) for d in kb.documents()] == [("gates.md", 1), ("text", 1)]
        # the same text under another title is another document, as a re-ingest would see it
        retitled = [Document("t.txt", "Gates.", title="Gates"), Document("t.txt", "Gates.", title="Lounges")]
        assert kb.add_documents(retitled).failed == [("t.txt", SHARED_ID)]
        texts = {hit.text for hit in kb.search("lounges open at six, gates close early", k=5)}
        assert "Gates close early." in texts
        assert "Lounges open at six." not in texts
