"""Segment extraction on a store another writer changes after the search: the candidates' documents may
be replaced or removed before their chunk spans or text are read. A real SQLite store; the extraction
leaves those chunks out (counted as ``stale`` in its trace) and never fails or credits a score to another
document's chunk."""

from __future__ import annotations

from pathlib import Path

from chunkwise.config import RSEParams
from chunkwise.document import Document
from chunkwise.query import Candidate, Trace
from chunkwise.query.segments import SegmentExtraction
from chunkwise.store.sqlite import SQLiteStore
from tests.support.documents import doc_from_markdown_lines
from tests.support.store import animal_doc, put


def ranked(store: SQLiteStore, doc_ids: list[str]) -> list[Candidate]:
    """Every chunk of ``doc_ids`` as a candidate, the documents' chunks taking turns (each document's
    first chunks ranked high), scores falling in order."""
    keys = [key for key, _ in store.bm25(" ".join(f"animal{i}" for i in range(3)), 100)]
    chunks = [c for c in store.chunks(keys) if c.doc_id in doc_ids]
    chunks.sort(key=lambda c: (c.ordinal, doc_ids.index(c.doc_id)))
    return [Candidate(chunk, score=1.0 - n / (2 * len(chunks))) for n, chunk in enumerate(chunks)]


def filled(directory: Path) -> SQLiteStore:
    """A store of three animal documents in chunks of 40 characters."""
    store = SQLiteStore(directory)
    for i in range(3):
        put(store, animal_doc(i), size=40, seed=i)
    return store


def test_a_document_removed_or_replaced_after_the_search_is_left_out(tmp_path):
    with filled(tmp_path) as store:
        candidates = ranked(store, ["animal0.md", "animal1.md", "animal2.md"])
        store.delete("animal0.md")  # the best document, gone
        put(store, animal_doc(1, paragraphs=5), size=25, seed=9, fingerprint="f2")  # another version
        trace = Trace()
        segments = SegmentExtraction(store, RSEParams()).extract(candidates, trace)
        assert {s.doc_id for s in segments} == {"animal2.md"}
        text = store.document("animal2.md").text
        assert all(s.text == text[s.start : s.end] for s in segments)
        stale = sum(c.doc_id != "animal2.md" for c in candidates)
        assert trace.get("segments").notes["stale"] == stale


class RemovingAfterSpans:
    """The store as a chunk source, whose ``victim`` another writer removes right after its spans were
    read (before its text is), or replaces by ``replacement`` when one is given."""

    def __init__(
        self, store: SQLiteStore, writer: SQLiteStore, victim: str, replacement: Document | None = None
    ) -> None:
        self.store, self.writer, self.victim, self.replacement = store, writer, victim, replacement

    def chunk_spans(self, doc_id: str) -> list[tuple[int, int]]:
        spans = self.store.chunk_spans(doc_id)
        if doc_id == self.victim and self.replacement is not None:
            put(self.writer, self.replacement, size=40, seed=5, fingerprint="f2")
        elif doc_id == self.victim:
            self.writer.delete(doc_id)
        return spans

    def document_text(self, doc_id: str, start: int, end: int) -> str:
        return self.store.document_text(doc_id, start, end)


def test_a_document_removed_between_its_spans_and_its_text_is_left_out(tmp_path):
    with filled(tmp_path) as store, SQLiteStore(tmp_path) as writer:
        candidates = ranked(store, ["animal0.md", "animal2.md"])
        trace = Trace()
        source = RemovingAfterSpans(store, writer, "animal0.md")
        segments = SegmentExtraction(source, RSEParams()).extract(candidates, trace)
        assert segments
        assert {s.doc_id for s in segments} == {"animal2.md"}
        assert trace.get("segments").notes["stale"] >= 1


def test_a_document_replaced_between_its_spans_and_its_text_is_left_out(tmp_path):
    """The new version has the same length, so the same chunk spans, but other words: the segment's
    text would be the new version's, which the search never ranked."""
    with filled(tmp_path) as store, SQLiteStore(tmp_path) as writer:
        candidates = ranked(store, ["animal0.md", "animal2.md"])
        old = animal_doc(0)
        same_length = doc_from_markdown_lines(
            old.id, old.text.replace("eats", "hunts"[:4]).replace("near", "past")
        )
        assert len(same_length.text) == len(old.text)
        trace = Trace()
        source = RemovingAfterSpans(store, writer, "animal0.md", same_length)
        segments = SegmentExtraction(source, RSEParams()).extract(candidates, trace)
        assert segments
        assert {s.doc_id for s in segments} == {"animal2.md"}
        assert trace.get("segments").notes["stale"] >= 1
