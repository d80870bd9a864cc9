"""Ingest memory follows one document: chunks are embedded in calls of at most ``embed_batch`` texts,
each document is stored as soon as its own chunks are embedded, and a long document reports its progress
between calls (the command line shows it on the progress bar)."""

from __future__ import annotations

from chunkwise.config import from_dict
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from tests.support.documents import doc_from_markdown_lines
from tests.support.fakes import RecordingEmbedder

BATCH = 16


def test_a_long_document_is_embedded_in_bounded_calls_and_reports_progress(tmp_path):
    config = from_dict(
        {
            "chunking": {"name": "fixed", "params": {"max_size": 40}},
            "retrieval": {"embed_batch": BATCH},
            "models": {"cache": False},
        }
    )
    lines = "\n".join(f"Paragraph {i} of the long document." for i in range(60))
    long = doc_from_markdown_lines("long.md", f"# Long\n{lines}")
    small = [
        doc_from_markdown_lines(f"small{i}.md", f"# Small {i}\nA short note number {i}.") for i in range(3)
    ]
    embedder = RecordingEmbedder()
    events = []
    with KnowledgeBase(tmp_path / "kb", config, models=Models(config.models, embedder=embedder)) as kb:
        report = kb.add_documents([small[0], long, small[1], small[2]], on_progress=events.append)
        long_chunks = next(info.chunks for info in kb.store.documents() if info.doc_id == "long.md")
        assert kb.store.check() == []
    assert report.added == ["small0.md", "long.md", "small1.md", "small2.md"]
    assert long_chunks > 3 * BATCH
    assert max(embedder.calls) <= BATCH  # never the whole batch's texts at once
    assert sum(embedder.calls) == report.chunks
    progress = [event for event in events if event.status == "embedding"]
    assert {(event.source, event.chunks) for event in progress} == {("long.md", long_chunks)}
    embedded = [event.embedded for event in progress]
    assert embedded == sorted(embedded)
    assert 0 < embedded[0] < embedded[-1] < long_chunks
    outcomes = [(event.source, event.status, event.done) for event in events if event.status != "embedding"]
    assert outcomes == [(doc.id, "added", done) for done, doc in enumerate([small[0], long, *small[1:]], 1)]
    # the short document before the long one is stored with the first call, not after the long one
    assert events.index(next(e for e in events if e.source == "small0.md")) < events.index(progress[0])
