"""The HNSW graph of a SQLite store follows its writes: after documents are added or removed, the next
search brings the saved graph up to date (its stamp counts the chunks changed since it was last built
whole) instead of building it again, and builds it whole when it cannot prove the graph's vectors are
still the store's (a re-embedding, keys given again, a backup of the database restored), when the saved
graph is damaged, or when too much changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chunkwise.store import StoreSettings, dense
from chunkwise.store.dense import CHANGED, GRAPH, STAMP, UPDATE_SHARE
from chunkwise.store.protocol import Reembedded
from chunkwise.store.sqlite import SQLiteStore
from tests.support.documents import doc_from_markdown_lines
from tests.support.store import put, requires_usearch, restore, unit_vectors

pytestmark = requires_usearch


@pytest.fixture(autouse=True)
def update_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """No chunk left pending beside a graph (``tests/test_hnsw_pending.py`` covers them): every write is
    followed by the update of the graph that these tests are about, in this store object too."""
    monkeypatch.setattr(dense, "PENDING_LIMIT", 0)


#: Chunks per document, documents in the store at first, and the threshold that searches it through
#: its graph (with its windows read from the database).
CHUNKS, DOCUMENTS, THRESHOLD = 100, 20, 500


def doc(i: int):
    """Document ``i``: :data:`CHUNKS` chunks of 20 characters when stored by :func:`add`."""
    return doc_from_markdown_lines(f"doc{i}.md", f"Document {i:04d} line. " * CHUNKS)


def add(store: SQLiteStore, i: int, *, windowed: bool = False) -> None:
    """Store document ``i`` with vectors of its own (seed ``i``)."""
    put(store, doc(i), size=20, seed=i, windowed=windowed)


def number(doc_id: str) -> int:
    """The ``i`` of :func:`doc`'s document ``i``, from its id."""
    return int(doc_id.removeprefix("doc").removesuffix(".md"))


def filled(directory: Path, *, windowed: bool = False) -> SQLiteStore:
    """A store of :data:`DOCUMENTS` documents, searched once, so that its graph is built and saved."""
    store = SQLiteStore(directory, StoreSettings(hnsw_threshold=THRESHOLD))
    for i in range(DOCUMENTS):
        add(store, i, windowed=windowed)
    search(store)
    assert changed(directory) == 0
    return store


def search(store: SQLiteStore, k: int = 10, seed: int = 999) -> list[int]:
    """The keys a dense search through the graph returns for a random query."""
    assert store.dense_method() == "hnsw"
    return [key for key, _ in store.dense(unit_vectors(1, seed=seed)[0], k)]


def changed(directory: Path) -> int:
    """The chunks removed or added since the saved graph was last built whole, as its stamp says."""
    return int(json.loads((directory / STAMP).read_text(encoding="utf-8"))["counts"][CHANGED])


def assert_follows_the_store(store: SQLiteStore) -> None:
    """The graph holds exactly the store's chunks, each under the vector it is built from (a chunk with
    passage windows: their mean), its stamp is of the store's generation, and, without windows, searches
    through it find the exact top 10 (recall@10 of 0.95 or more over 30 queries; the random windows of
    these chunks lie nowhere near their chunk's vector, which no graph of the chunks' vectors finds well)."""
    index = store.dense_index()
    graph = index.graph()
    assert sorted(np.asarray(graph.keys).tolist()) == index.keys.tolist()
    np.testing.assert_allclose(graph.get(index.keys), index.graph_vectors(), atol=1e-6)
    stamp = json.loads((store.directory / STAMP).read_text(encoding="utf-8"))
    assert stamp["generation"] == store.generation()
    if index.has_windows:
        return
    queries = unit_vectors(30, seed=12345)
    recall = np.mean(
        [len(set(search_vector(store, q)) & {k for k, _ in index.exact(q, 10)}) / 10 for q in queries]
    )
    assert recall >= 0.95


def assert_found_by_their_own_vectors(store: SQLiteStore, rows: range | list[int]) -> None:
    """Every chunk at ``rows`` of the dense index is the top hit of a search for its own vector (a
    graph that holds other vectors under these keys finds none of them). A node no search of the graph
    reaches (about one build in eight of these 2,100-2,200 random 8-d vectors leaves one or two) is a
    stray of the graph, scored exactly beside its hits (``tests/test_hnsw_strays.py``)."""
    index = store.dense_index()
    found = [store.dense(index.matrix[row], 1)[0][0] == index.keys[row] for row in rows]
    assert all(found), found


def search_vector(store: SQLiteStore, query: np.ndarray) -> list[int]:
    """The keys of the top 10 of a dense search for ``query``."""
    return [key for key, _ in store.dense(query, 10)]


@pytest.mark.parametrize("windowed", [False, True], ids=["vectors", "pooled windows"])
def test_adding_or_removing_a_document_updates_the_saved_graph(tmp_path, windowed):
    """One document added, then one removed: each time the next search updates the saved graph (its
    stamp counts the chunks changed) instead of building it again; it holds the store's chunks and finds
    the exact top 10; the removed chunks never come back, not even for their own vectors; and another
    store object (another process) loads the updated graph as it is."""
    with filled(tmp_path, windowed=windowed) as store:
        add(store, DOCUMENTS, windowed=windowed)
        search(store)
        assert changed(tmp_path) == CHUNKS
        assert_follows_the_store(store)
        before = set(store.dense_index().keys.tolist())
        removed_vectors = unit_vectors(CHUNKS, seed=3)  # document 3's, as add stored them
        store.delete("doc3.md")
        removed = before - set(store.dense_index().keys.tolist())
        assert len(removed) == CHUNKS
        search(store)
        assert changed(tmp_path) == 2 * CHUNKS
        assert_follows_the_store(store)
        for vector in removed_vectors[:20]:
            assert not set(search_vector(store, vector)) & removed
        saved = (tmp_path / GRAPH).read_bytes(), (tmp_path / STAMP).read_bytes()
        expected = search(store)
    with SQLiteStore(tmp_path, StoreSettings(hnsw_threshold=THRESHOLD)) as reader:
        assert search(reader) == expected
    assert ((tmp_path / GRAPH).read_bytes(), (tmp_path / STAMP).read_bytes()) == saved


def test_a_reembedding_rebuilds_the_graph_whole(tmp_path):
    """A re-embedding keeps every chunk's key and replaces its vector, so the saved graph's keys are the
    store's: it is built whole all the same, and a chunk's new vector finds that chunk first."""
    with filled(tmp_path) as store:
        add(store, DOCUMENTS)
        search(store)
        assert changed(tmp_path) == CHUNKS
        with store.reembedding(("other", 8, "")) as session:
            for stored in session.documents():
                vectors = unit_vectors(len(stored.chunks), seed=500 + number(stored.doc.id))
                session.write(stored.doc.id, Reembedded(vectors, None, "f2"))
        search(store)
        assert changed(tmp_path) == 0
        assert_follows_the_store(store)
        assert_found_by_their_own_vectors(store, range(0, len(store.dense_index()), 97))


def test_a_reembedding_of_another_dimension_rebuilds_the_graph_whole(tmp_path):
    with filled(tmp_path) as store:
        with store.reembedding(("wider", 16, "")) as session:
            for stored in session.documents():
                vectors = unit_vectors(len(stored.chunks), 16, seed=number(stored.doc.id))
                session.write(stored.doc.id, Reembedded(vectors, None, "f2"))
        index = store.dense_index()
        assert_found_by_their_own_vectors(store, range(5, len(index), 97))
        assert changed(tmp_path) == 0
        assert index.graph().ndim == 16


def test_keys_given_again_rebuild_the_graph_whole(tmp_path):
    """The last document replaced by another of as many chunks: SQLite gives the new chunks the removed
    ones' keys, so the graph's keys are the store's again, under new vectors; it is built whole."""
    with filled(tmp_path) as store:
        keys = store.dense_index().keys.tolist()
        store.delete(f"doc{DOCUMENTS - 1}.md")
        add(store, 77)
        index = store.dense_index()
        assert index.keys.tolist() == keys
        search(store)
        assert changed(tmp_path) == 0
        assert_follows_the_store(store)
        assert_found_by_their_own_vectors(store, range(len(index) - CHUNKS, len(index), 9))


def reopened(directory: Path) -> SQLiteStore:
    """The store in ``directory``, opened again (as another process would)."""
    return SQLiteStore(directory, StoreSettings(hnsw_threshold=THRESHOLD))


def lose_a_write(directory: Path) -> tuple[list[int], int]:
    """A filled store in ``directory`` backed up, written to (document 50) and searched, so that its graph
    is saved for that write, then restored from the backup: the keys of the lost write, and the chunks
    the stamp said had changed before the restore."""
    backup = directory / "backup.sqlite"
    with filled(directory):
        pass
    shutil.copyfile(directory / "kb.sqlite", backup)
    with reopened(directory) as store:
        add(store, 50)
        search(store)
        updated = changed(directory)
        lost = store.dense_index().keys[-CHUNKS:].tolist()
    restore(directory, backup)
    return lost, updated


@pytest.mark.parametrize("after", [(60,), (60, 61)], ids=["to the lost generation", "past it"])
def test_a_restored_backup_rebuilds_the_graph_of_the_lost_writes_whole(tmp_path, after):
    """A backup of the database restored after a write whose graph was saved: the restored store numbers
    its next writes as the lost ones were and gives their chunks the lost ones' keys (SQLite's largest
    key + 1), so generation, keys and count of removals agree with the saved graph's stamp. The graph of
    the lost writes is neither loaded as it is (the same generation and keys again) nor brought up to
    date (a later generation): it is built whole, and a chunk's own vector finds that chunk."""
    lost, updated = lose_a_write(tmp_path)
    assert updated == CHUNKS
    with reopened(tmp_path) as store:
        for i in after:
            add(store, i)
        index = store.dense_index()
        assert set(lost) <= set(index.keys.tolist())  # the lost writes' keys, given again
        search(store)
        assert changed(tmp_path) == 0
        assert_follows_the_store(store)
        rows = [int(np.searchsorted(index.keys, key)) for key in lost[::9]]
        assert index.keys[rows].tolist() == lost[::9]
        assert_found_by_their_own_vectors(store, rows)


def test_writes_after_a_restored_backup_update_the_graph_built_for_them(tmp_path):
    """Once the graph is built for the restored history, its next write updates it as usual."""
    lose_a_write(tmp_path)
    with reopened(tmp_path) as store:
        add(store, 60)
        search(store)
        assert changed(tmp_path) == 0
        add(store, 61)
        search(store)
        assert changed(tmp_path) == CHUNKS
        assert_follows_the_store(store)


def test_a_damaged_saved_graph_is_rebuilt_whole(tmp_path):
    with filled(tmp_path) as store:
        graph = tmp_path / GRAPH
        damaged = bytearray(graph.read_bytes())
        damaged[len(damaged) // 2] ^= 0xFF
        graph.write_bytes(bytes(damaged))
        add(store, DOCUMENTS)
        search(store)
        assert changed(tmp_path) == 0
        assert_follows_the_store(store)


def test_changes_beyond_the_update_share_rebuild_the_graph_whole(tmp_path):
    """Updates accumulate in the stamp; the write that takes them past :data:`UPDATE_SHARE` of the
    store's chunks has the graph built whole, and the count starts again."""
    with filled(tmp_path) as store:
        added = 0
        while (added + CHUNKS) <= UPDATE_SHARE * (DOCUMENTS * CHUNKS + added + CHUNKS):
            add(store, DOCUMENTS + added // CHUNKS)
            added += CHUNKS
            search(store)
            assert changed(tmp_path) == added
        assert added
        add(store, DOCUMENTS + added // CHUNKS)
        search(store)
        assert changed(tmp_path) == 0
        assert_follows_the_store(store)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 39), max_size=2), st.lists(st.integers(0, 39), max_size=2)),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
)
def test_any_writes_leave_the_graph_holding_the_live_chunks(tmp_path_factory, batches, windowed):
    """Any sequence of batches (documents added, documents removed), each followed by a search: every key
    the search returns is a stored chunk's, and the graph holds exactly the store's chunks (30 documents
    of 20 chunks at first, so that a batch of one or two documents is an update, and a few add up to a
    build)."""
    directory = tmp_path_factory.mktemp("kb")
    size = 100  # characters a chunk: 20 chunks a document
    with SQLiteStore(directory, StoreSettings(hnsw_threshold=100)) as store:
        for i in range(30):
            put(store, doc(i), size=size, seed=i, windowed=windowed)
        for adds, removes in batches:
            for i in adds:
                put(store, doc(i), size=size, seed=i, windowed=windowed)
            for i in removes:
                store.delete(doc(i).id)
            index = store.dense_index()
            live = set(index.keys.tolist())
            for seed in range(3):
                assert set(search(store, k=20, seed=seed)) <= live
            assert set(np.asarray(index.graph().keys).tolist()) == live


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example([("write", [30], [], True), ("restore", [], [], False), ("write", [31, 32], [], True)])
@example([("write", [30], [], True), ("restore", [], [], False), ("write", [31], [], True)])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["write", "write", "back up", "restore"]),
            st.lists(st.integers(0, 39), max_size=2),
            st.lists(st.integers(0, 39), max_size=2),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_any_writes_and_restored_backups_leave_the_graph_holding_the_store_vectors(tmp_path_factory, steps):
    """Any sequence of batches of writes (documents added with vectors of a seed of their own, documents
    removed), backups of the database and restores of the latest backup, each through a store opened
    again and some followed by a search: after each search the graph holds exactly the store's chunks,
    each under the vector the store gives it (30 documents of 20 chunks at first, so that a batch or
    two is an update). The examples: a restore undoes a write whose graph was saved, and the next write
    reaches the same generation and keys, or passes them."""
    directory = tmp_path_factory.mktemp("kb")
    backup = directory.parent / f"{directory.name}.backup"
    size, seeds = 100, iter(range(1000, 2000))  # 20 chunks a document; each put new vectors
    with SQLiteStore(directory, StoreSettings(hnsw_threshold=100)) as store:
        for i in range(30):
            put(store, doc(i), size=size, seed=i)
    shutil.copyfile(directory / "kb.sqlite", backup)
    for step, adds, removes, searched in steps:
        if step == "back up":
            shutil.copyfile(directory / "kb.sqlite", backup)
        elif step == "restore":
            restore(directory, backup)
        with SQLiteStore(directory, StoreSettings(hnsw_threshold=100)) as store:
            if step == "write":
                for i in adds:
                    put(store, doc(i), size=size, seed=next(seeds))
                for i in removes:
                    store.delete(doc(i).id)
            if searched:
                index = store.dense_index()
                graph = index.graph()
                assert sorted(np.asarray(graph.keys).tolist()) == index.keys.tolist()
                np.testing.assert_allclose(graph.get(index.keys), index.graph_vectors(), atol=1e-6)
