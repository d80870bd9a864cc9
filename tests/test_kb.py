"""The knowledge base end to end on the bundled embedder: ingest, skip, replace, delete, search with each
stage switched on and off, segments, and answers in both modes."""

from __future__ import annotations

import dataclasses
import gc
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from chunkwise import config as config_module
from chunkwise.config import ChunkingConfig, from_dict
from chunkwise.document import Document
from chunkwise.errors import ConfigError, QueryError
from chunkwise.ingest.paths import expand_paths
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from chunkwise.parsing.text import text_document
from chunkwise.query.answer import NOT_FOUND
from chunkwise.query.trace import Trace
from tests.support.documents import doc_from_markdown_lines, format_docs
from tests.support.fakes import FakeLLM, HashEmbedder, on_prompt
from tests.support.openai_server import OpenAIServer

QUESTION = "What is the maximum weight of a checked bag in CloudSaver economy?"


class OverlapReranker:
    """A reranker scoring shared words (the tests need a deterministic one)."""

    name = "overlap"

    def score(self, query, texts):
        words = set(re.findall(r"\w+", query.lower()))
        return np.array([len(words & set(re.findall(r"\w+", t.lower()))) for t in texts], dtype=np.float32)


def relevance_reply(prompt: str) -> str:
    return "0.9" if "baggage" in prompt.lower() else "0.1"


@pytest.fixture(scope="module")
def docs(data_dir):
    return format_docs(data_dir)


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder, docs):
    path = tmp_path_factory.mktemp("kb")
    with KnowledgeBase(path, models=Models(embedder=embedder)) as kb:
        report = kb.add_documents(docs)
    return path, report


def open_kb(path, embedder, llm=None, **sections):
    config = from_dict(sections)
    models = Models(config.models, embedder=embedder, llm=llm, reranker=OverlapReranker())
    return KnowledgeBase(path, config, models=models)


def test_ingest_report_and_store(built, docs):
    _, report = built
    assert sorted(report.added) == sorted(d.id for d in docs)
    assert report.failed == []
    assert report.chunks > len(docs)
    assert 0 <= report.embed_seconds <= report.seconds


def test_search_hits_are_exact_spans_with_headers_apart(built, embedder, docs):
    path, _ = built
    texts = {d.id: d.text for d in docs}
    with open_kb(path, embedder) as kb:
        hits = kb.search(QUESTION, k=5)
    assert hits[0].doc_id == "Baggage Allowance.md"
    for hit in hits:
        assert texts[hit.doc_id][hit.start : hit.end] == hit.text
        assert hit.header.startswith("Document: ")
        assert not hit.text.startswith("Document: ")
    assert hits[0].trace.names() == ["bm25", "dense", "fusion"]
    assert "Section: CloudWay 24 Baggage Allowance Policy" in hits[0].header


def test_unchanged_skipped_changed_replaced_deleted(tmp_path, embedder, docs):
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=embedder)) as kb:
        kb.add_documents(docs[:2])
        again = kb.add_documents(docs[:2])
        assert sorted(again.skipped) == sorted(d.id for d in docs[:2])
        assert again.added == again.replaced == []
        changed = doc_from_markdown_lines(docs[0].id, "# New\nEntirely new text about zebras.")
        events = []
        report = kb.add_documents([changed], on_progress=events.append)
        assert report.replaced == [docs[0].id]
        assert [(e.status, e.done, e.total) for e in events] == [("replaced", 1, 1)]
        assert kb.search("zebras", k=1)[0].doc_id == docs[0].id
        assert kb.store.check() == []
        assert [(info.doc_id, info.title) for info in kb.documents()] == sorted(
            [(docs[0].id, "New"), (docs[1].id, docs[1].title)]
        )
        assert kb.delete(docs[0].id)
        assert not kb.delete(docs[0].id)
        assert [info.doc_id for info in kb.documents()] == [docs[1].id]
        assert {h.doc_id for h in kb.search("zebras", k=5)} == {docs[1].id}
    resized = from_dict({"chunking": {"params": {"max_size": 300}}})
    with KnowledgeBase(tmp_path / "kb", resized, models=Models(embedder=embedder)) as kb:
        assert kb.add_documents(docs[1:2]).replaced == [docs[1].id]  # new chunking settings re-ingest


def test_a_file_whose_title_changed_and_text_did_not_is_replaced(tmp_path, embedder):
    """The title (here an HTML ``<title>``) goes into every chunk header: a file whose text is the same
    but whose title changed is ingested again, not skipped; one unchanged in every stored field is
    skipped."""
    page = tmp_path / "policy.html"
    body = "<body><h1>Checked bags</h1><p>Bags may weigh 23 kg.</p></body>"
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=embedder)) as kb:
        page.write_text(f"<html><head><title>Old Baggage Policy 2019</title></head>{body}</html>")
        assert kb.add([page]).added == [page.as_posix()]
        assert kb.add([page]).skipped == [page.as_posix()]
        page.write_text(f"<html><head><title>New Baggage Policy 2025</title></head>{body}</html>")
        assert kb.add([page]).replaced == [page.as_posix()]
        assert kb.store.document(page.as_posix()).title == "New Baggage Policy 2025"
        [hit] = kb.search("checked bags weight", k=1)
        assert "New Baggage Policy 2025" in hit.header
        assert kb.add([page]).skipped == [page.as_posix()]
        tagged = dataclasses.replace(kb.store.document(page.as_posix()), metadata={"tags": ("bags",)})
        assert kb.add_documents([tagged]).replaced == [page.as_posix()]
        assert kb.add_documents([tagged]).skipped == [page.as_posix()]  # a tuple is stored as a list


def test_a_new_chunking_revision_re_ingests(tmp_path, embedder, docs, monkeypatch):
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=embedder)) as kb:
        kb.add_documents(docs[:1])
        assert kb.add_documents(docs[:1]).skipped == [docs[0].id]
    monkeypatch.setattr(config_module, "CHUNKING_REVISION", config_module.CHUNKING_REVISION + 1)
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=embedder)) as kb:
        assert kb.add_documents(docs[:1]).replaced == [docs[0].id]  # chunkers that cut differently now


@pytest.mark.parametrize(
    ("sections", "stages"),
    [
        ({"retrieval": {"dense": False}}, ["bm25", "fusion"]),
        ({"retrieval": {"bm25": False}}, ["dense", "fusion"]),
        (
            {"retrieval": {"fusion": "rrf"}, "redundancy": {"enabled": True}},
            ["bm25", "dense", "fusion", "redundancy"],
        ),
        ({"rewrite": {"enabled": True}}, ["rewrite", "bm25", "dense", "fusion"]),
        (
            {"relevance": {"enabled": True, "max_candidates": 6}},
            ["bm25", "dense", "fusion", "relevance"],
        ),
        ({"rerank": {"enabled": True, "top_n": 3}}, ["bm25", "dense", "fusion", "rerank"]),
    ],
)
def test_each_stage_switches(built, embedder, sections, stages):
    path, _ = built
    llm = FakeLLM(
        chat_fn=on_prompt(
            lambda p: "baggage allowance checked bag weight" if "Rewrite" in p else relevance_reply(p)
        )
    )
    with open_kb(path, embedder, llm, **sections) as kb:
        hits = kb.search(QUESTION, k=3)
    trace = hits[0].trace
    assert trace.names() == stages
    assert hits[0].doc_id == "Baggage Allowance.md"
    if "relevance" in stages:
        report = trace.get("relevance")
        assert report.calls == 6 * 3
        assert report.notes["not_scored"] > 0
        assert all(h.scores["relevance"] == pytest.approx(0.9) for h in hits)
    if "rerank" in stages:
        assert len(hits) <= 3
        assert trace.get("rerank").notes == {"reranker": "overlap", "weight": 1.0}
    if "rewrite" in stages:
        assert trace.get("rewrite").notes["rewritten"] == "baggage allowance checked bag weight"


def test_segments_are_exact_document_spans(built, embedder, docs):
    path, _ = built
    texts = {d.id: d.text for d in docs}
    trace = Trace()
    with open_kb(path, embedder) as kb:
        segments = kb.segments(QUESTION, trace, preset="find_all")
        with pytest.raises(ConfigError, match="unknown RSE preset ''"):  # it ran the configured one
            kb.segments(QUESTION, preset="")
    assert segments
    assert segments[0].doc_id == "Baggage Allowance.md"
    for seg in segments:
        assert texts[seg.doc_id][seg.start : seg.end] == seg.text
    assert trace.names()[-1] == "segments"


def test_extractive_answer_is_cited_and_grounded(built, embedder):
    path, _ = built
    with open_kb(path, embedder) as kb:
        answer = kb.answer(QUESTION)
        missing = kb.answer("zebra quantum chromodynamics?")
    assert answer.found
    assert answer.grounding.grounded
    assert answer.citations[0].doc_id == "Baggage Allowance.md"
    assert answer.citations[0].quote in answer.text
    assert missing.text == NOT_FOUND


def _quote_first_source(prompt: str):
    block = prompt.split("[S1]\n", 1)[1]
    quote = block.split("\n")[0][:60]
    return {"answer": "From the sources: " + quote, "citations": [{"source": "S1", "quote": quote}]}


def test_llm_answer_over_segments(built, embedder, docs):
    path, _ = built
    texts = {d.id: d.text for d in docs}
    llm = FakeLLM(structured_fn=on_prompt(_quote_first_source))
    with open_kb(path, embedder, llm, segments={"enabled": True}, answer={"mode": "llm"}) as kb:
        answer = kb.answer(QUESTION)
    assert answer.grounding.grounded
    citation = answer.citations[0]
    assert texts[citation.doc_id][citation.start : citation.end] == citation.quote
    assert "#" in citation.ref  # a segment id
    assert answer.trace.names()[-2:] == ["segments", "answer"]
    assert answer.to_dict()["totals"]["calls"] == 1


def test_add_collects_errors_and_goes_on(tmp_path, embedder):
    good = tmp_path / "good.txt"
    good.write_text("Lounges open two hours before departure.\n", encoding="utf-8")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=embedder)) as kb:
        report = kb.add([empty, tmp_path / "missing.txt", good])
    assert [s for s, _ in report.failed] == [str(empty), str(tmp_path / "missing.txt")]
    assert len(report.added) == 1
    assert all(reason for _, reason in report.failed)


def test_text_that_is_not_unicode_fails_its_document_alone(tmp_path, embedder):
    """A file name that is not UTF-8 becomes an id with ``\\xNN`` escapes and is stored; a document
    whose text holds a lone surrogate (built by hand, or from a JSON escape) is refused by name, and the
    batch goes on; a query holding one is refused before it reaches a model or a store."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / os.fsdecode(b"caf\xe9.txt")).write_text(
        "Lounges open two hours before departure.\n", encoding="utf-8"
    )
    good = text_document("good.txt", "Gates close twenty minutes before departure.")
    bad = text_document("bad.txt", "Gates \udc80 close.")
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=embedder)) as kb:
        (folder / os.fsdecode(b"vid\xe9.txt")).write_bytes(b"")
        report = kb.add([folder])
        assert report.added == [f"{folder.as_posix()}/caf\\xe9.txt"]
        assert report.failed == [(f"{folder.as_posix()}/vid\\xe9.txt", "file is empty")]
        report = kb.add_documents([bad, good])
        assert report.failed == [
            ("bad.txt", "the document's text is not valid Unicode text: a lone surrogate at character 6")
        ]
        assert report.added == ["good.txt"]
        assert kb.store.check() == []
        with pytest.raises(ValueError, match="not valid Unicode text"):
            kb.search("lounges \ud800")


def test_config_is_frozen_and_presets_differ():
    fast, chunkrag, dsrag = (from_dict({}, p) for p in ("fast", "chunkrag", "dsrag"))
    assert not fast.relevance.enabled
    assert chunkrag.relevance.enabled
    assert chunkrag.rewrite.enabled
    assert chunkrag.rerank.enabled
    assert dsrag.segments.enabled
    assert dsrag.headers.summary
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.rewrite.enabled = True  # type: ignore[misc]


def test_a_knowledge_base_records_its_configuration_and_reopens_with_it(tmp_path, embedder, monkeypatch):
    config = from_dict({"chunking": {"params": {"max_size": 300}}, "retrieval": {"weight": 0.7}})
    doc = doc_from_markdown_lines("a.md", "# A\nSome words about baggage.")
    with KnowledgeBase(tmp_path / "kb", config, models=Models(embedder=embedder)) as kb:
        kb.add_documents([doc])
    monkeypatch.setenv("CHUNKWISE_LLM", "openai:from-the-environment")
    with KnowledgeBase(tmp_path / "kb") as reopened:  # no configuration given: the recorded one
        assert reopened.config.chunking.params == {"max_size": 300}
        assert reopened.config.retrieval.weight == 0.7
        assert reopened.config.models.llm == "openai:from-the-environment"  # the environment still wins
    with KnowledgeBase(tmp_path / "fresh") as fresh:  # nothing recorded: defaults, environment applied
        assert fresh.config.models.llm == "openai:from-the-environment"
        assert fresh.config.chunking.params == ChunkingConfig().params


def test_an_empty_or_wordless_query_is_refused(built, embedder):
    path, _ = built
    with KnowledgeBase(path, models=Models(embedder=embedder)) as kb:
        for query in ("", "   ", "?!…"):
            with pytest.raises(ValueError, match="holds no word"):
                kb.search(query)


def test_a_single_path_is_one_path_not_its_characters(tmp_path, embedder, monkeypatch):
    """A ``str`` is a sequence of one-character strings: taken as a list of paths, ``"notes.md"`` would
    ingest ``"."`` (the whole working directory) and report each letter as a missing file."""
    work = tmp_path / "work"
    (work / "docs").mkdir(parents=True)
    (work / "notes.md").write_text("# Notes\n\nLounges open two hours before departure.\n", encoding="utf-8")
    (work / "docs" / "gates.md").write_text("# Gates\n\nGates close at departure.\n", encoding="utf-8")
    monkeypatch.chdir(work)
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=embedder)) as kb:
        report = kb.add("notes.md")
        assert (report.added, report.failed) == (["notes.md"], [])
        report = kb.add(work / "docs")
        assert (report.added, report.failed) == ([(work / "docs" / "gates.md").as_posix()], [])
        with pytest.raises(TypeError, match="add_bytes"):
            kb.add(b"notes.md")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="int"):
            kb.add([1])  # type: ignore[list-item]


def test_the_pipeline_and_expand_paths_take_a_single_path_as_one_path(tmp_path, embedder, monkeypatch):
    """The rule of :meth:`KnowledgeBase.add` holds where the pipeline is called directly too: ``"."``
    taken character by character by ``add_files`` or ``expand_paths`` would read the working directory
    for ``"notes.md"``, and each letter as a missing file."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("# Notes\n\nLounges open two hours before departure.\n", encoding="utf-8")
    (work / "other.md").write_text("# Other\n\nGates close at departure.\n", encoding="utf-8")
    monkeypatch.chdir(work)
    assert expand_paths("notes.md") == [Path("notes.md")]
    assert expand_paths(work) == [work / "notes.md", work / "other.md"]
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=embedder)) as kb:
        report = kb.ingest.add_files("notes.md")
        assert (report.added, report.failed) == (["notes.md"], [])
        with pytest.raises(TypeError, match="add_bytes"):
            kb.ingest.add_files(b"notes.md")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="int"):
            kb.ingest.add_files([1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="add_bytes"):
        expand_paths(b".")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="NoneType"):
        expand_paths([None])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("call", "argument", "message"),
    [
        (
            "add_bytes",
            ("gates.md", b"# Gates"),
            r"files\[0\] is not a \(name: str, content: bytes\) pair: 'gates.md'",
        ),
        ("add_bytes", [("gates.md", "# Gates")], r"files\[0\] is not a \(name: str, content: bytes\) pair"),
        ("add_bytes", [(None, b"# Gates")], r"files\[0\] is not a \(name: str, content: bytes\) pair"),
        ("add_bytes", (pair for pair in [("gates.md", b"# Gates")]), "not generator"),
        ("add_bytes", b"# Gates", "not bytes"),
        ("add_documents", ["Gates close early."], r"docs\[0\] is a str, not a Document"),
        ("add_documents", Document("gates.txt", "Gates close early."), "put a single document in a list"),
        ("add_documents", (d for d in [Document("g.txt", "Gates.")]), "not generator"),
    ],
    ids=[
        "one-pair",
        "str-content",
        "no-name",
        "generator",
        "bytes",
        "a-text",
        "one-document",
        "documents-generator",
    ],
)
def test_add_bytes_and_add_documents_refuse_the_wrong_shape_up_front(
    tmp_path: Path, call: str, argument: object, message: str
) -> None:
    """As ``add`` refuses what is not paths: a ``TypeError`` naming the argument and the item, before
    anything is stored (``str`` content failed per item as an "unexpected TypeError", one pair alone
    raised "too many values to unpack", a document alone "'Document' object is not iterable")."""
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=HashEmbedder())) as kb:
        with pytest.raises(TypeError, match=message):
            getattr(kb, call)(argument)
        assert kb.documents() == []
        # the pipeline, called directly, alike
        with pytest.raises(TypeError, match=r"^(files|docs) must be a collection"):
            getattr(kb.ingest, call)(7)


def test_add_bytes_and_add_documents_take_any_collection(tmp_path: Path) -> None:
    """``dict.items()`` of uploads and ``dict.values()`` of documents are collections of the
    right items: taken, as they were before the shape was checked."""
    uploads = {"gates.md": b"# Gates\n\nGates close early.", "bags.md": b"# Bags\n\nOne bag."}
    docs = {"a.txt": Document("a.txt", "Lounges open at six."), "b.txt": Document("b.txt", "Pets fly.")}
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=HashEmbedder())) as kb:
        assert sorted(kb.add_bytes(uploads.items()).added) == ["bags.md", "gates.md"]
        assert sorted(kb.add_documents(docs.values()).added) == ["a.txt", "b.txt"]
        assert kb.add_documents(tuple(docs.values())).skipped == ["a.txt", "b.txt"]


def test_a_configuration_given_as_a_mapping_is_a_type_error_naming_the_readers(tmp_path: Path) -> None:
    """``KnowledgeBase(path, {"preset": "fast"})`` failed later with "'dict' object has no attribute
    'retrieval'"; the error names the functions that make a configuration, and no store is made."""
    with pytest.raises(TypeError, match=r"config must be a PipelineConfig, not dict \(chunkwise.load_config"):
        KnowledgeBase(tmp_path / "kb", {"preset": "fast"})  # type: ignore[arg-type]
    assert not (tmp_path / "kb").exists()


def test_a_k_below_one_is_refused(built, embedder):
    """``k=-1`` used to return every hit but the last (a ``[:k]`` slice), ``k=0`` none, silently."""
    path, _ = built
    with KnowledgeBase(path, models=Models(embedder=embedder)) as kb:
        for k in (0, -1):
            with pytest.raises(QueryError, match=f"k must be at least 1, got {k}"):
                kb.search("baggage", k=k)
            with pytest.raises(QueryError, match=f"k must be at least 1, got {k}"):
                kb.query.search("baggage", k=k)  # the pipeline itself, as the adapters call it


@pytest.mark.parametrize("k", [2.5, 3.0, True, "3", None])
def test_a_k_that_is_no_whole_number_is_refused(built, embedder, k):
    """``k=2.5`` failed deep in the pipeline with a bare ``TypeError`` (slice indices must be integers),
    and ``True`` was taken as 1."""
    path, _ = built
    with (
        KnowledgeBase(path, models=Models(embedder=embedder)) as kb,
        pytest.raises(QueryError, match="k must be a whole number"),
    ):
        kb.search("baggage", k=k)


def _remote_models(server: OpenAIServer) -> dict:
    return {
        "models": {
            "embedder": "openai:emb",
            "llm": "openai:gpt-test",
            "base_url": server.base_url,
            "cache": False,
        }
    }


def test_close_closes_the_model_clients_it_opened(tmp_path):
    """Closing a knowledge base closes the HTTP clients of the remote models it built: no socket is left
    for garbage collection to find (a ResourceWarning each). A model context given to it stays open."""
    doc = doc_from_markdown_lines("a.md", "# A\nSome words about baggage.")
    with OpenAIServer() as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        config = from_dict(_remote_models(server))
        with KnowledgeBase(tmp_path / "kb", config) as kb:
            kb.add_documents([doc])
            assert kb.search("baggage", k=1)
        del kb
        gc.collect()
        assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
        models = Models(config.models)
        with KnowledgeBase(tmp_path / "kb", config, models=models) as kb:
            assert kb.search("baggage", k=1)
        assert models.embedder().embed(["still open"]).shape[0] == 1
        models.close()
