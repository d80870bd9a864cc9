"""Chunks added after a store object loaded or built its HNSW graph are scored exactly beside the graph's
hits (``DenseIndex.follow``): the first search after a write neither inserts them into the graph nor
searches every node for strays, finds each of them, and leaves the saved graph alone; past
``PENDING_LIMIT`` chunks, or after a removal, the graph is brought up to date as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.store import StoreSettings, dense
from chunkwise.store.dense import GRAPH, STAMP
from chunkwise.store.sqlite import SQLiteStore
from tests.support.store import requires_usearch, unit_vectors
from tests.test_hnsw_update import CHUNKS, DOCUMENTS, add, changed, filled, search, search_vector

pytestmark = requires_usearch


def saved(directory: Path) -> tuple[bytes, bytes]:
    """The saved graph and its stamp."""
    return (directory / GRAPH).read_bytes(), (directory / STAMP).read_bytes()


def assert_found_by_their_own_vectors(store: SQLiteStore, keys: list[int]) -> None:
    """Each of ``keys`` is the top hit of a dense search for its own stored vector."""
    index = store.dense_index()
    rows = np.searchsorted(index.keys, keys)
    assert [store.dense(index.matrix[row], 1)[0][0] for row in rows] == keys


@pytest.mark.parametrize("windowed", [False, True], ids=["vectors", "pooled windows"])
def test_chunks_added_after_the_graph_was_loaded_are_found_without_touching_it(tmp_path, windowed):
    with filled(tmp_path, windowed=windowed) as store:
        graph, before = store.dense_index().graph(), saved(tmp_path)
        add(store, DOCUMENTS, windowed=windowed)
        add(store, DOCUMENTS + 1, windowed=windowed)
        index = store.dense_index()
        added = index.keys[-2 * CHUNKS :].tolist()
        assert index.graph() is graph  # neither updated nor built again
        assert index.pending().tolist() == added
        assert saved(tmp_path) == before  # nothing written beside the database
        if windowed:
            # proposed as the graph proposes its nodes: by the vector it would hold for them (here the
            # random windows' mean, which lies nowhere near the chunk's own vector)
            loaded = index._loaded()
            for key, vector in zip(added, index.graph_vectors(np.array(added)), strict=True):
                assert key in loaded.nearest_strays(vector, 10).tolist()
        else:  # found by their own vectors, and wherever they are among the exact top 10
            assert_found_by_their_own_vectors(store, added)
            for query in unit_vectors(20, seed=4321):
                exact = {key for key, _ in index.exact(query, 10)}
                assert exact & set(added) <= set(search_vector(store, query))


def test_past_the_limit_the_graph_is_brought_up_to_date(tmp_path, monkeypatch):
    monkeypatch.setattr(dense, "PENDING_LIMIT", CHUNKS + CHUNKS // 2)
    with filled(tmp_path) as store:
        graph = store.dense_index().graph()
        add(store, DOCUMENTS)
        search(store)
        assert store.dense_index().graph() is graph
        add(store, DOCUMENTS + 1)  # 200 pending would pass the limit
        search(store)
        index = store.dense_index()
        assert index.graph() is not graph
        assert index.pending().size == 0
        assert sorted(np.asarray(index.graph().keys).tolist()) == index.keys.tolist()
        assert changed(tmp_path) == 2 * CHUNKS  # the saved graph, updated with both documents


def test_a_removal_brings_the_graph_up_to_date(tmp_path):
    with filled(tmp_path) as store:
        add(store, DOCUMENTS)
        search(store)
        assert store.dense_index().pending().size == CHUNKS
        store.delete("doc3.md")
        search(store)
        index = store.dense_index()
        assert index.pending().size == 0
        assert sorted(np.asarray(index.graph().keys).tolist()) == index.keys.tolist()
        assert changed(tmp_path) == 2 * CHUNKS


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    limit=st.sampled_from([0, 40, 100, 1000]),
    batches=st.lists(
        st.tuples(st.lists(st.integers(30, 39), max_size=2), st.lists(st.integers(0, 39), max_size=1)),
        min_size=1,
        max_size=6,
    ),
)
def test_any_writes_leave_every_chunk_in_the_graph_or_pending(tmp_path_factory, limit, batches):
    """Any batches of documents added and removed, each followed by searches, under any limit: the graph
    and the pending chunks together are the store's chunks, apart, every search returns stored chunks
    only, and an added document's chunks are found by their own vectors."""
    directory = tmp_path_factory.mktemp("kb")
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(dense, "PENDING_LIMIT", limit)
        with SQLiteStore(directory, StoreSettings(hnsw_threshold=100)) as store:
            for i in range(30):
                add(store, i)
            for adds, removes in batches:
                for i in adds:
                    add(store, i)
                for i in removes:
                    store.delete(f"doc{i}.md")
                index = store.dense_index()
                live = set(index.keys.tolist())
                for seed in range(3):
                    assert set(search(store, k=20, seed=seed)) <= live
                held = set(np.asarray(index.graph().keys).tolist())
                pending = set(index.pending().tolist())
                assert held | pending == live
                assert not held & pending
                if adds:
                    assert_found_by_their_own_vectors(store, index.keys[-5:].tolist())


def test_an_index_never_searched_passes_the_graph_on(tmp_path):
    """An index built for another reason than a search (which method a search will use, say) follows
    the graph too, and passes it on to the next generation's."""
    with filled(tmp_path) as store:
        graph = store.dense_index().graph()
        add(store, DOCUMENTS)
        assert store.dense_method() == "hnsw"  # builds this generation's index, not its graph
        add(store, DOCUMENTS + 1)
        search(store)
        index = store.dense_index()
        assert index.graph() is graph
        assert index.pending().tolist() == index.keys[-2 * CHUNKS :].tolist()


def test_removing_pending_chunks_brings_the_saved_graph_up_to_date_without_a_whole_build(tmp_path):
    """The saved graph never held the pending chunks: their removal is not taken for a vector removed
    behind its back (which would build the graph whole)."""
    with filled(tmp_path) as store:
        add(store, DOCUMENTS)
        add(store, DOCUMENTS + 1)
        search(store)
        assert store.dense_index().pending().size == 2 * CHUNKS
        store.delete(f"doc{DOCUMENTS}.md")
        search(store)
        index = store.dense_index()
        assert index.pending().size == 0
        assert sorted(np.asarray(index.graph().keys).tolist()) == index.keys.tolist()
        assert changed(tmp_path) == CHUNKS  # updated with the other document (0: built whole)
        assert_found_by_their_own_vectors(store, index.keys[-5:].tolist())


def test_windows_held_in_memory_are_let_go_once_they_are_read_from_the_database(tmp_path):
    with SQLiteStore(tmp_path, StoreSettings(hnsw_threshold=DOCUMENTS * CHUNKS + CHUNKS)) as store:
        for i in range(DOCUMENTS):
            add(store, i, windowed=True)
        store.dense(unit_vectors(1, seed=1)[0], 5)
        assert not store.dense_index().windows_on_disk
        add(store, DOCUMENTS, windowed=True)  # past the threshold: windows read from the database
        search(store)
        assert store.dense_index().windows_on_disk
        assert store._grown["windows"]._buffer is None
        assert store._grown["owners"]._buffer is None
