"""Ingest memory follows one document: chunks are embedded in calls of at most ``embed_batch`` texts,
each document is stored as soon as its own chunks are embedded, and a long document reports its progress
between calls (the command line shows it on the progress bar)."""

from __future__ import annotations

import numpy as np
import pytest

from chunkwise.chunking.tokens import get_counter
from chunkwise.config import from_dict
from chunkwise.ingest.windows import window_spans
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


@pytest.mark.parametrize("embed_whole", [False, True])
def test_a_chunk_with_windows_counts_as_embedded_once_its_last_window_is(tmp_path, embed_whole):
    config = from_dict(
        {
            "chunking": {"name": "fixed", "params": {"max_size": 600}},
            "retrieval": {"embed_batch": 3, "windows": 16, "embed_whole": embed_whole},
            "models": {"cache": False},
        }
    )
    lines = "\n".join(
        f"Paragraph {i} of a document long enough for several windows a chunk." for i in range(40)
    )
    doc = doc_from_markdown_lines("windowed.md", f"# Windowed\n{lines}")
    embedder = RecordingEmbedder()
    events = []
    with KnowledgeBase(tmp_path / "kb", config, models=Models(config.models, embedder=embedder)) as kb:
        kb.add_documents([doc], on_progress=events.append)
        texts = [c.text for c in kb.store.chunks(sorted(kb.store.dense_index().keys.tolist()))]
    counter = get_counter("minilm")
    windows = [len(window_spans(text, 16, counter, overlap=False)) for text in texts]
    assert all(count >= 2 for count in windows)
    # the rows the embedder reads, in order: the whole chunks (unless pooled), then every window
    last_row = np.cumsum(windows) + (len(texts) if embed_whole else 0)
    done_after = np.cumsum(embedder.calls)
    progress = [event.embedded for event in events if event.status == "embedding"]
    assert progress, "a document of several calls reports its progress"
    expected = [int(np.count_nonzero(last_row <= rows)) for rows in done_after[: len(progress)]]
    assert progress == expected
    assert progress[-1] < len(texts)
