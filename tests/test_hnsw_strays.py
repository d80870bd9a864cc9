"""HNSW strays: nodes of a graph that no search reaches, found after each build and scored exactly.

usearch, like every HNSW, prunes a node's links as nodes are added; a node can lose every link into it
and then no search returns it, not even one for its own vector (4 of 4,760 chunk vectors of real
bge-small embeddings). A graph of two links per node, built one node at a time (deterministic), has
many; the product's graphs of 16 have few, but the same code finds and scores them.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.store import dense
from chunkwise.store.dense import (
    EXPANSION_SEARCH,
    STAMP,
    STRAY_DEPTH,
    STRAYS,
    WINDOW_BREADTH,
    DenseIndex,
    strays,
    usearch_index,
)
from tests.support.store import requires_usearch

#: 800 random 8-d unit vectors in a graph of two links per node leave 17 strays (none of them found by
#: a search for its own vector even 50 deep).
NODES, DIM, SPARSE = 800, 8, 2


def random_units(n: int, dim: int, seed: int) -> np.ndarray:
    """``n`` random unit vectors of ``dim`` dimensions."""
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def sparse_graph(vectors: np.ndarray, connectivity: int = SPARSE) -> Any:
    """A usearch graph of ``connectivity`` links per node holding ``vectors`` under keys 0.., added one
    at a time (the same graph each time)."""
    index = usearch_index()(
        ndim=vectors.shape[1],
        metric="cos",
        dtype="f32",
        connectivity=connectivity,
        expansion_search=EXPANSION_SEARCH,
    )
    index.add(np.arange(len(vectors), dtype=np.int64), vectors, threads=1)
    return index


class SparseIndex(DenseIndex):
    """The product's dense index over a graph of two links per node, so that it has strays."""

    def _new_graph(self) -> Any:
        return usearch_index()(
            ndim=self.matrix.shape[1],
            metric="cos",
            dtype="f32",
            connectivity=SPARSE,
            expansion_search=EXPANSION_SEARCH,
        )


def own_hits(index: Any, vectors: np.ndarray, depth: int) -> np.ndarray:
    """The keys of the first ``depth`` hits of a graph search for each of ``vectors``, a row each."""
    return np.asarray(index.search(vectors, depth).keys, dtype=np.int64).reshape(len(vectors), -1)


@requires_usearch
def test_strays_are_the_nodes_no_search_of_their_own_vector_reaches():
    vectors = random_units(NODES, DIM, seed=0)
    graph = sparse_graph(vectors)
    found = strays(graph)
    assert found.size == 17
    assert np.all(np.diff(found) > 0)
    deep = own_hits(graph, vectors[found], 50)
    assert not (deep == found[:, None]).any()  # not even 50 deep
    others = np.setdiff1d(np.arange(NODES), found)
    near = own_hits(graph, vectors[others], STRAY_DEPTH)
    assert (near == others[:, None]).any(axis=1).all()
    assert graph.expansion_search == EXPANSION_SEARCH  # the cheap first pass's breadth undone


@requires_usearch
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(min_value=1, max_value=400),
    dim=st.sampled_from([2, 8, 24]),
    connectivity=st.sampled_from([2, 3, 16]),
    seed=st.integers(min_value=0, max_value=2**16),
    twins=st.integers(min_value=0, max_value=3),
    block=st.sampled_from([7, 64, dense.STRAY_BLOCK]),
)
def test_every_node_is_a_stray_or_found_by_its_own_vector(*, n, dim, connectivity, seed, twins, block):
    """Whatever the graph: strays are sorted keys of it, none of them among the first STRAY_DEPTH hits
    of its own vector at the graph's breadth, and every other node is among them, however many nodes
    are read at a time (``block``). Nodes of the same vector (``twins`` copies of the first) are no
    strays for ranking behind each other."""
    vectors = random_units(n, dim, seed)
    vectors = np.concatenate([vectors, np.repeat(vectors[:1], twins, axis=0)])
    graph = sparse_graph(vectors, connectivity)
    with mock.patch.object(dense, "STRAY_BLOCK", block):
        found = strays(graph)
    keys = np.arange(len(vectors))
    assert np.all(np.isin(found, keys))
    assert np.all(np.diff(found) > 0)
    depth = min(STRAY_DEPTH, len(vectors))
    reached = (own_hits(graph, vectors, depth) == keys[:, None]).any(axis=1)
    assert np.array_equal(np.sort(keys[~reached]), found)


@requires_usearch
@pytest.mark.parametrize("windowed", [False, True], ids=["vectors", "pooled windows"])
def test_a_search_of_the_graph_finds_its_strays(tmp_path, windowed):
    """Each stray is the first hit of an approximate search for its own vector, at its exact score (1),
    through the graph alone and through the graph with passage windows; the stamp records the strays,
    and another index object (another process) loads the graph and them as they are."""
    vectors = random_units(NODES, DIM, seed=0)
    keys = np.arange(1, NODES + 1, dtype=np.int64)
    windows = None
    if windowed:  # two windows per chunk, whose mean is the chunk's vector
        spread = random_units(NODES, DIM, seed=1) * 0.2
        pair = np.stack([vectors + spread, vectors - spread], axis=1).reshape(-1, DIM)
        windows = (np.repeat(keys, 2), pair / np.linalg.norm(pair, axis=1, keepdims=True))
    index = SparseIndex(keys, vectors, generation=1, directory=tmp_path, windows=windows)
    graph = index.graph()
    found = strays(graph)
    assert found.size >= 10
    rows = np.searchsorted(keys, found)
    assert not (own_hits(graph, vectors[rows], 10) == found[:, None]).any()
    for key, row in zip(found.tolist(), rows.tolist(), strict=True):
        assert index.search(vectors[row], 5, approximate=True)[0] == (key, pytest.approx(1.0, abs=1e-5))
    stamp = tmp_path / STAMP
    assert json.loads(stamp.read_text(encoding="utf-8"))["lists"][STRAYS] == found.tolist()
    written = stamp.stat().st_mtime_ns
    reopened = SparseIndex(keys, vectors, generation=1, directory=tmp_path, windows=windows)
    key, row = int(found[0]), int(rows[0])
    assert reopened.search(vectors[row], 5, approximate=True)[0][0] == key
    assert stamp.stat().st_mtime_ns == written  # loaded, not built again


@requires_usearch
@pytest.mark.parametrize(
    "change",
    ["none recorded (an earlier release)", "keys the graph does not hold"],
)
@pytest.mark.parametrize("save", [True, False], ids=["writable", "read-only"])
def test_a_graph_stamped_without_valid_strays_is_loaded_and_its_strays_found(
    tmp_path, monkeypatch, change, save
):
    """A graph whose stamp records no strays (saved by an earlier release) or strays it does not hold
    is loaded as it is, not built again (a read-only store would build it at every opening), its strays
    found, and its stamp written again with them when the store may write."""
    vectors = random_units(NODES, DIM, seed=0)
    keys = np.arange(1, NODES + 1, dtype=np.int64)
    SparseIndex(keys, vectors, generation=1, directory=tmp_path).graph()
    stamp = tmp_path / STAMP
    body = json.loads(stamp.read_text(encoding="utf-8"))
    expected = body["lists"][STRAYS]
    if change.startswith("none"):
        del body["lists"]
    else:
        body["lists"][STRAYS] = [*expected, NODES + 7]
    stamp.write_text(json.dumps(body), encoding="utf-8")
    builds: list[int] = []
    insert = dense._insert
    monkeypatch.setattr(dense, "_insert", lambda index, k, v: builds.append(k.size) or insert(index, k, v))
    reopened = SparseIndex(keys, vectors, generation=1, directory=tmp_path, save=save)
    row = int(np.searchsorted(keys, expected[0]))
    assert reopened.search(vectors[row], 5, approximate=True)[0][0] == expected[0]
    assert builds == []
    written = json.loads(stamp.read_text(encoding="utf-8"))
    assert (written.get("lists", {}).get(STRAYS) == expected) is save
    assert written["files"] == body["files"]  # the same graph


@requires_usearch
def test_threads_that_want_the_graph_at_once_build_it_once(tmp_path, monkeypatch):
    """Searches of several threads on an index whose graph is not loaded yet: one builds it and finds
    its strays, the others wait for that graph rather than build their own."""
    vectors = random_units(NODES, DIM, seed=0)
    keys = np.arange(1, NODES + 1, dtype=np.int64)
    index = SparseIndex(keys, vectors, generation=1, directory=tmp_path)
    calls: list[int] = []
    find = dense.strays
    monkeypatch.setattr(dense, "strays", lambda graph: calls.append(1) or find(graph))
    with ThreadPoolExecutor(4) as pool:
        graphs = list(pool.map(lambda _: index.graph(), range(8)))
    assert calls == [1]
    assert all(graph is graphs[0] for graph in graphs)


@requires_usearch
def test_an_approximate_search_breaks_ties_by_chunk_key_as_the_exact_one(tmp_path):
    """Fifty chunks of one vector tie: the approximate search returns the lowest keys first, as the
    exact search (and PostgreSQL's ``ORDER BY best DESC, chunk_key``) does."""
    copies = np.repeat(random_units(1, DIM, seed=5), 50, axis=0)
    vectors = np.concatenate([random_units(NODES, DIM, seed=0), copies])
    keys = np.arange(1, len(vectors) + 1, dtype=np.int64)
    index = DenseIndex(keys, vectors, generation=1, directory=tmp_path)
    exact = [key for key, _ in index.exact(copies[0], 4)]
    assert exact == [NODES + 1, NODES + 2, NODES + 3, NODES + 4]
    assert [key for key, _ in index.search(copies[0], 4, approximate=True)] == exact


@requires_usearch
@pytest.mark.parametrize("share", [0.1, 0.5])
def test_removing_nodes_strands_no_other(share):
    """usearch removes a node by marking it: it still leads searches on, so the strays of a graph after
    removals are its strays before, less the removed (what an update of removals alone relies on,
    instead of searching every node again)."""
    vectors = random_units(NODES, DIM, seed=3)
    graph = sparse_graph(vectors)
    before = strays(graph)
    removed = np.random.default_rng(3).choice(NODES, int(share * NODES), replace=False)
    graph.remove(removed)
    assert np.array_equal(strays(graph), np.setdiff1d(before, removed))


@requires_usearch
def test_an_update_of_removals_alone_keeps_the_recorded_strays(tmp_path):
    """A store's graph brought up to date after chunks were removed records its strays less those
    removed, without searching; after chunks were added it finds them again, and finds each."""
    vectors = random_units(NODES, DIM, seed=0)
    keys = np.arange(1, NODES + 1, dtype=np.int64)
    first = SparseIndex(keys, vectors, generation=1, directory=tmp_path, removals=0, token="t1")
    first.graph()
    recorded = json.loads((tmp_path / STAMP).read_text(encoding="utf-8"))["lists"][STRAYS]
    gone = np.asarray([*recorded[:3], 5, 6, 7], dtype=np.int64)
    kept = np.setdiff1d(keys, gone)
    tokens = {1: "t1", 2: "t2"}
    rows = np.searchsorted(keys, kept)
    second = SparseIndex(
        kept, vectors[rows], generation=2, directory=tmp_path, removals=6, token="t2", lineage=tokens.get
    )
    with mock.patch.object(dense, "strays", side_effect=AssertionError("searched every node")):
        second.graph()
    body = json.loads((tmp_path / STAMP).read_text(encoding="utf-8"))
    assert body["counts"]["changed"] == 6  # brought up to date, not built whole
    assert body["lists"][STRAYS] == recorded[3:]
    more = random_units(40, DIM, seed=9)
    grown = np.concatenate([kept, np.arange(NODES + 1, NODES + 41, dtype=np.int64)])
    third = SparseIndex(
        grown,
        np.concatenate([vectors[rows], more]),
        generation=3,
        directory=tmp_path,
        removals=6,
        token="t3",
        lineage=(tokens | {3: "t3"}).get,
    )
    graph = third.graph()
    body = json.loads((tmp_path / STAMP).read_text(encoding="utf-8"))
    assert body["counts"]["changed"] == 46
    assert body["lists"][STRAYS] == strays(graph).tolist()
    for key in body["lists"][STRAYS]:
        row = int(np.searchsorted(grown, key))
        assert third.search(third.matrix[row], 3, approximate=True)[0][0] == key


@requires_usearch
def test_a_graph_of_many_strays_scores_only_the_nearest(tmp_path, monkeypatch):
    """Three hundred chunks of one vector (copies of one text) strand most of their kind: such a graph
    has more strays than a search asks for, and a search scores (and reads the windows of) only the
    nearest of them beside the graph's proposals, while each stray is still found for its own vector."""
    copies = np.repeat(random_units(1, DIM, seed=7), 300, axis=0)
    vectors = np.concatenate([random_units(NODES, DIM, seed=0), copies])
    keys = np.arange(1, len(vectors) + 1, dtype=np.int64)
    spread = random_units(len(vectors), DIM, seed=1) * 0.2
    pair = np.stack([vectors + spread, vectors - spread], axis=1).reshape(-1, DIM)
    windows = (np.repeat(keys, 2), pair / np.linalg.norm(pair, axis=1, keepdims=True))
    index = SparseIndex(keys, vectors, generation=1, directory=tmp_path, windows=windows)
    stranded = strays(index.graph())
    k, breadth = 3, 3 * WINDOW_BREADTH
    assert stranded.size > 2 * breadth
    scored: list[int] = []
    read = index.window_scores
    monkeypatch.setattr(
        index, "window_scores", lambda v, wanted: scored.append(len(wanted)) or read(v, wanted)
    )
    for key in stranded[:: max(1, stranded.size // 10)].tolist():
        row = int(np.searchsorted(keys, key))
        found = index.search(vectors[row], k, approximate=True)
        assert found[0][1] == pytest.approx(1.0, abs=1e-5)
        if key <= NODES:  # a stray of its own vector, not one of the copies
            assert found[0][0] == key
    assert max(scored) <= 2 * breadth
