"""The bm25s index of a SQLite store when another process commits a write after the store read the
generation and chunk keys it looks for a saved index of, before it read the rows it builds one from: the
index is built from the rows of one state of the store and stamped for that state, so searches and the
saved index agree with the database, and another process loads the saved index instead of rebuilding it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import pytest

from chunkwise.store import StoreSettings, lexical
from chunkwise.store.sidecar import keys_digest, read_stamp
from chunkwise.store.sqlite import SQLiteStore
from tests.support.documents import doc_from_markdown_lines
from tests.support.store import fill, put

#: Animal documents in the store at first, and a threshold below their chunks: searched through bm25s.
DOCUMENTS, THRESHOLD = 10, 5

#: Each write another process commits: what it does, a query, and the documents that query then finds.
WRITES: dict[str, tuple[Callable[[SQLiteStore], object], str, set[str]]] = {
    "put": (lambda s: put(s, doc_from_markdown_lines("x.md", "zebra zebra"), size=120), "zebra", {"x.md"}),
    "delete": (lambda s: s.delete("animal3.md"), "animal3", set()),
}


def opened(directory: Path) -> SQLiteStore:
    """The store in ``directory``, searched by bm25s, opened as another process would."""
    return SQLiteStore(directory, StoreSettings(bm25s_threshold=THRESHOLD))


def found(store: SQLiteStore, query: str) -> set[str]:
    """The documents whose chunks a BM25 search for ``query`` finds."""
    return {chunk.doc_id for chunk in store.chunks([key for key, _ in store.bm25(query, 10)])}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_write_landing_while_the_bm25s_index_is_built_is_in_the_state_its_stamp_names(
    tmp_path, monkeypatch, write
):
    """The write lands when the searching store looks for a saved index (it has read the generation and
    keys, not yet the rows): the index built is stamped for the generation whose chunks it holds, its
    first search and the next agree with the database, and a store opened afterwards loads it as saved."""
    commit, query, expected = WRITES[write]
    with opened(tmp_path) as store:
        fill(store, DOCUMENTS)
    real_stamp_state, committed = lexical.stamp_state, []

    def commit_then_stamp_state(*args: Any, **kwargs: Any) -> Any:
        """Another process's write, committed once, before the saved index's stamp is read."""
        if not committed:
            committed.append(write)
            with opened(tmp_path) as other:
                commit(other)
        return real_stamp_state(*args, **kwargs)

    with opened(tmp_path) as store:
        before = store.generation()
        monkeypatch.setattr(lexical, "stamp_state", commit_then_stamp_state)
        first = found(store, query)
        monkeypatch.undo()
        generation, keys = store.generation(), store.dense_index().keys
        assert committed == [write]
        assert generation == before + 1
        stamp = read_stamp(tmp_path / lexical.STAMP)
        assert (stamp.generation, stamp.keys) == (generation, keys_digest(keys))
        assert np.load(tmp_path / lexical.FOLDER / "keys.npy").tolist() == keys.tolist()
        assert store.lexical_index().generation == generation
        assert first == found(store, query) == expected

    def never(*args: Any, **kwargs: Any) -> None:
        pytest.fail("the saved bm25s index is loaded, not rebuilt")

    monkeypatch.setattr(bm25s.BM25, "index", never)
    with opened(tmp_path) as again:
        assert found(again, query) == expected
        assert again.check() == []
