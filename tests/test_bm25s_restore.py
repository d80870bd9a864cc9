"""The bm25s index of a SQLite store beside a database restored from a backup: the restored store numbers
its next writes' generations, and SQLite its chunks' keys, as the lost writes' were, so the index saved
for the lost writes is never taken for the restored store's (its stamp records the generation's random
token), while a read-only store still loads the index saved for its own state."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chunkwise.store import StoreSettings
from chunkwise.store.lexical import STAMP
from chunkwise.store.sidecar import read_stamp
from chunkwise.store.sqlite import SQLiteStore
from tests.support.documents import doc_from_markdown_lines
from tests.support.store import fill, put, read_only_directory, restore

#: Animal documents in the store at first, and a threshold below their chunks: searched through bm25s.
DOCUMENTS, THRESHOLD = 10, 5


def opened(directory: Path, *, read_only: bool = False) -> SQLiteStore:
    """The store in ``directory``, searched by bm25s, opened as another process would."""
    return SQLiteStore(directory, StoreSettings(bm25s_threshold=THRESHOLD), read_only=read_only)


def found(store: SQLiteStore, query: str) -> set[str]:
    """The documents whose chunks a BM25 search for ``query`` finds."""
    return {chunk.doc_id for chunk in store.chunks([key for key, _ in store.bm25(query, 10)])}


def test_a_restored_backup_never_reuses_the_bm25s_index_of_the_lost_writes(tmp_path):
    """A backup restored after a write whose bm25s index was saved, then another write: it reaches the
    lost write's generation and gives its chunk the lost chunk's key, yet the index searched holds the
    restored store's words, not the lost ones, and ``check()`` finds nothing wrong with either sidecar."""
    backup = tmp_path.parent / f"{tmp_path.name}.backup"
    with opened(tmp_path) as store:
        fill(store, DOCUMENTS)
        assert found(store, "animal3") == {"animal3.md"}  # the bm25s index is built and saved
    shutil.copyfile(tmp_path / "kb.sqlite", backup)
    with opened(tmp_path) as store:
        put(store, doc_from_markdown_lines("x.md", "zebra zebra"), size=120)
        assert found(store, "zebra") == {"x.md"}
        lost = store.generation(), store.dense_index().keys.tolist()
    restore(tmp_path, backup)
    with opened(tmp_path) as store:
        put(store, doc_from_markdown_lines("y.md", "giraffe giraffe"), size=120)
        assert (store.generation(), store.dense_index().keys.tolist()) == lost
        assert found(store, "zebra") == set()
        assert found(store, "giraffe") == {"y.md"}
        assert found(store, "animal3") == {"animal3.md"}
        assert store.check() == []
    assert read_stamp(tmp_path / STAMP).token  # the index saved again is stamped for the restored history
    with opened(tmp_path) as again:
        assert found(again, "giraffe") == {"y.md"}


def test_a_read_only_store_searches_the_saved_bm25s_index_of_its_generation(tmp_path):
    """A store opened read-only in a directory it cannot write to searches by bm25s as the writer did,
    and its ``check()`` finds the saved index current and intact (the same token as the writer's)."""
    with opened(tmp_path) as store:
        fill(store, DOCUMENTS)
        put(store, doc_from_markdown_lines("x.md", "zebra zebra"), size=120)
        expected = store.bm25("zebra animal3", 10)
    assert read_stamp(tmp_path / STAMP).token
    with read_only_directory(tmp_path), opened(tmp_path, read_only=True) as store:
        assert store.bm25("zebra animal3", 10) == expected
        assert store.check() == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(steps=[("back up", 0, False), ("write", 1, True), ("restore", 0, False), ("write", 2, True)])
@example(
    steps=[
        ("back up", 0, False),
        ("write", 1, True),
        ("write", 3, True),
        ("restore", 0, False),
        ("write", 2, False),
        ("write", 4, True),
    ]
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["write", "back up", "restore"]), st.integers(0, 4), st.booleans()),
        min_size=1,
        max_size=8,
    )
)
def test_any_writes_and_restored_backups_leave_bm25s_finding_the_stored_words(tmp_path_factory, steps):
    """Any sequence of writes (a document of one chunk and a word of its own added, or removed when it is
    stored), backups of the database and restores of the latest backup, each through a store opened again
    and some followed by a search: after each search, each word is found in the one document that holds it
    while that document is stored, and nowhere otherwise. The examples: a restore undoes a write whose
    index was saved, and the next write reaches the same generation and key."""
    directory = tmp_path_factory.mktemp("kb")
    backup = directory.parent / f"{directory.name}.backup"
    words = ["zebra", "giraffe", "okapi", "tapir", "walrus"]
    with opened(directory) as store:
        fill(store, DOCUMENTS)
    shutil.copyfile(directory / "kb.sqlite", backup)
    stored: set[int] = set()
    backed_up: set[int] = set()
    for step, i, searched in steps:
        if step == "back up":
            shutil.copyfile(directory / "kb.sqlite", backup)
            backed_up = set(stored)
        elif step == "restore":
            restore(directory, backup)
            stored = set(backed_up)
        with opened(directory) as store:
            if step == "write" and i in stored:
                store.delete(f"{words[i]}.md")
                stored.discard(i)
            elif step == "write":
                put(store, doc_from_markdown_lines(f"{words[i]}.md", f"{words[i]} {words[i]}"), size=120)
                stored.add(i)
            for j, word in enumerate(words if searched else []):
                assert found(store, word) == ({f"{word}.md"} if j in stored else set())
