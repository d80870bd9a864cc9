"""A SQLite store made by an earlier release, which lacks what later releases added to the schema (the
passage windows' table, the trigger that counts removed vectors with its counter, the store's random id,
the generations' tokens): opened read-only it is searched and copied as it is, without writing to it;
opened for writing it gets what it lacks, and its HNSW graph then follows its writes."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import numpy as np

from chunkwise.ingest.copy import copy_store
from chunkwise.store import StoreSettings, dense, lexical, open_store
from chunkwise.store.dense import CHANGED, STAMP
from chunkwise.store.sidecar import read_stamp
from chunkwise.store.sqlite import DB_NAME, SQLiteStore
from tests.support.documents import doc_from_markdown_lines
from tests.support.store import put, read_only_directory, requires_usearch, unit_vectors

#: Documents of :data:`CHUNKS` chunks each, and a threshold that searches them through the HNSW graph.
DOCUMENTS, CHUNKS, THRESHOLD = 12, 25, 200


def doc(i: int):
    """Document ``i``: :data:`CHUNKS` chunks of 20 characters when stored by :func:`made_earlier`."""
    return doc_from_markdown_lines(f"doc{i}.md", f"Document {i:04d} line. " * CHUNKS)


def made_earlier(directory: Path) -> None:
    """A store of :data:`DOCUMENTS` documents as a release before passage windows left it: written by
    this one, then stripped of what the earlier one never made (its schema version, 2, is this one's)."""
    with SQLiteStore(directory) as store:
        for i in range(DOCUMENTS):
            put(store, doc(i), size=20, seed=i)
    with closing(sqlite3.connect(directory / DB_NAME)) as db, db:
        db.execute("DROP TRIGGER count_removals")
        db.execute("DROP TRIGGER record_generation")
        db.execute("DROP TABLE windows")
        db.execute("DROP TABLE generations")
        db.execute("DELETE FROM meta WHERE key IN ('removals', 'store_id')")


def schema_names(directory: Path) -> set[str]:
    """The names of the tables, indexes and triggers of the database."""
    with closing(sqlite3.connect(directory / DB_NAME)) as db:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master")}


def test_a_store_of_an_earlier_release_is_copied_read_only_without_windows(tmp_path):
    """``kb copy`` opens its source read-only: every document comes across with its chunks and vectors
    (and no passage windows, which that store cannot hold), and the source is not written to."""
    source, target = tmp_path / "old", tmp_path / "new"
    made_earlier(source)
    before = schema_names(source), (source / DB_NAME).read_bytes()
    report = copy_store(open_store(source, read_only=True), open_store(target))
    assert (len(report.copied), report.failed, report.windows) == (DOCUMENTS, [], 0)
    with SQLiteStore(source, read_only=True) as old, SQLiteStore(target) as new:
        assert [d.doc_id for d in new.documents()] == [d.doc_id for d in old.documents()]
        assert len(new.documents()) == DOCUMENTS
        for info in old.documents():
            copied, stored = new.stored_document(info.doc_id), old.stored_document(info.doc_id)
            np.testing.assert_array_equal(copied.vectors, stored.vectors)
            assert copied.windows is None
            assert stored.windows is None
        query = unit_vectors(1, seed=77)[0]
        assert found(new, query) == found(old, query)
    assert (schema_names(source), (source / DB_NAME).read_bytes()) == before


@requires_usearch
def test_a_read_only_store_of_an_earlier_release_builds_its_graph_in_memory(tmp_path):
    """In a read-only directory, the graph of a store without generations' tokens is built in memory on
    each opening, and searches through it find each chunk by its own vector."""
    made_earlier(tmp_path)
    mode = tmp_path.stat().st_mode
    os.chmod(tmp_path, stat.S_IRUSR | stat.S_IXUSR)
    try:
        with SQLiteStore(tmp_path, StoreSettings(hnsw_threshold=THRESHOLD), read_only=True) as store:
            index = store.dense_index()
            assert store.dense_method() == "hnsw"
            assert index.token == ""
            for row in range(0, len(index), 23):
                assert store.dense(index.matrix[row], 1)[0][0] == index.keys[row]
    finally:
        os.chmod(tmp_path, mode)
    assert not (tmp_path / STAMP).exists()


@requires_usearch
def test_a_store_of_an_earlier_release_opened_for_writing_gets_generation_tokens(tmp_path, monkeypatch):
    """Opened for writing, the store gets what it lacks; its current generation has no token (no write
    drew one), so a graph saved for it is built whole after the next write, and the write after that
    brings the graph up to date (at once: no chunk left pending beside the graph in this store object)."""
    monkeypatch.setattr(dense, "PENDING_LIMIT", 0)
    made_earlier(tmp_path)
    settings = StoreSettings(hnsw_threshold=THRESHOLD)
    with SQLiteStore(tmp_path, settings) as store:
        assert {"windows", "count_removals", "generations", "record_generation"} <= schema_names(tmp_path)
        assert store.dense_index().token == ""
        store.dense(unit_vectors(1, seed=1)[0], 5)
        put(store, doc(DOCUMENTS), size=20, seed=DOCUMENTS)
        assert store.dense_index().token
        store.dense(unit_vectors(1, seed=1)[0], 5)
        assert changed(tmp_path) == 0
        put(store, doc(DOCUMENTS + 1), size=20, seed=DOCUMENTS + 1)
        index = store.dense_index()
        graph = index.graph()
        assert changed(tmp_path) == CHUNKS
        assert sorted(np.asarray(graph.keys).tolist()) == index.keys.tolist()
        np.testing.assert_allclose(graph.get(index.keys), index.graph_vectors(), atol=1e-6)


def test_a_store_of_an_earlier_release_is_searched_by_bm25s_read_only_and_for_writing(tmp_path):
    """Without generations' tokens, a read-only store in a directory it cannot write to builds its bm25s
    index in memory and finds each document by its own word; opened for writing, its index is saved
    without a token until a write draws one, and follows that write."""
    made_earlier(tmp_path)
    settings = StoreSettings(bm25s_threshold=1)
    with read_only_directory(tmp_path), SQLiteStore(tmp_path, settings, read_only=True) as store:
        for i in range(DOCUMENTS):
            assert lexically_found(store, f"{i:04d}") == {f"doc{i}.md"}
        assert store.check() == []
    assert not (tmp_path / lexical.STAMP).exists()
    with SQLiteStore(tmp_path, settings) as store:
        assert lexically_found(store, "0003") == {"doc3.md"}
        assert read_stamp(tmp_path / lexical.STAMP).token == ""
        put(store, doc(DOCUMENTS), size=20, seed=DOCUMENTS)
        assert lexically_found(store, f"{DOCUMENTS:04d}") == {f"doc{DOCUMENTS}.md"}
        assert read_stamp(tmp_path / lexical.STAMP).token == store.dense_index().token != ""
        assert store.check() == []


def lexically_found(store: SQLiteStore, query: str) -> set[str]:
    """The documents whose chunks a BM25 search for ``query`` finds."""
    return {chunk.doc_id for chunk in store.chunks([key for key, _ in store.bm25(query, 10)])}


def found(store: SQLiteStore, query: np.ndarray) -> list[tuple[str, int]]:
    """The chunks (document and ordinal: the copy gives them keys of its own) a dense search finds."""
    return [(c.doc_id, c.ordinal) for c in store.chunks([key for key, _ in store.dense(query, 5)])]


def changed(directory: Path) -> int:
    """The chunks removed or added since the saved graph was last built whole, as its stamp says."""
    return int(json.loads((directory / STAMP).read_text(encoding="utf-8"))["counts"][CHANGED])
