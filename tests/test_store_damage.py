"""Opening a knowledge-base store that is not what it should be, and checking and repairing a damaged one.

Every location and every damage ends in a typed error naming the directory and the reason, never an
obscure SQLite failure, a hang or a silently rebuilt store; ``check()`` finds the damage the tests inject
and ``repair()`` restores search, naming every document it could not keep.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from chunkwise.errors import CorruptStoreError, StoreError
from chunkwise.store import StoreSettings, open_store
from chunkwise.store.sqlite import DB_NAME, SQLiteStore
from chunkwise.store.sqlite_files import wal_frames
from tests.support.store import (
    DOC,
    animal_doc,
    fill,
    fixed_chunks,
    leave_log,
    overwrite,
    put,
    read_only_directory,
    requires_usearch,
    unit_vectors,
)

FRAME = 24 + 4096  # a write-ahead-log frame of the default page size
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def kb(tmp_path):
    """A closed store of the travel guide and three animal documents."""
    path = tmp_path / "kb"
    with SQLiteStore(path) as store:
        put(store, DOC)
        fill(store, 3)
    return path


def execute(kb, statement):
    """Run one SQL statement on the store's database behind its back, as damage would."""
    with closing(sqlite3.connect(kb / DB_NAME)) as db:
        db.execute(statement)
        db.commit()


def words(store, query):
    """The documents BM25 finds for ``query``."""
    return {c.doc_id for c in store.chunks([key for key, _ in store.bm25(query, 10)])}


# --- locations ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("read_only", [False, True])
def test_a_location_that_is_not_a_directory_is_refused(tmp_path, read_only):
    file = tmp_path / "notes.txt"
    file.write_text("not a store")
    for location in (file, "/dev/null"):
        with pytest.raises(StoreError, match="not a directory"):
            SQLiteStore(location, read_only=read_only)
    assert file.read_text() == "not a store"


def test_an_empty_location_is_refused_not_read_as_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for location in ("", "  "):
        with pytest.raises(StoreError, match="no knowledge-base directory given"):
            open_store(location)
    assert not (tmp_path / DB_NAME).exists()


def test_reading_where_no_store_is(tmp_path):
    with pytest.raises(StoreError, match="no knowledge base here"):
        SQLiteStore(tmp_path / "none", read_only=True)
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("kind", ["directory", "fifo", "device link", "log fifo"])
def test_database_files_that_are_not_regular_files_are_refused(kb, kind):
    database, log = kb / DB_NAME, kb / f"{DB_NAME}-wal"
    if kind == "log fifo":
        os.mkfifo(log)
    else:
        database.unlink()
        {"directory": database.mkdir, "fifo": lambda: os.mkfifo(database)}.get(
            kind, lambda: database.symlink_to("/dev/zero")
        )()
    name = log.name if kind == "log fifo" else database.name
    for read_only in (False, True):
        with pytest.raises(StoreError, match=f"{name} is not a regular file"):
            SQLiteStore(kb, read_only=read_only)


def test_a_read_only_directory_is_searched_but_not_written(kb):
    with read_only_directory(kb):
        with pytest.raises(StoreError, match="read-only"):
            SQLiteStore(kb)
        with SQLiteStore(kb, StoreSettings(bm25s_threshold=1), read_only=True) as store:
            assert words(store, "animal1 plant1x3") == {"animal1.md"}  # through the in-memory bm25s index
            assert len(store.dense(unit_vectors(1)[0], 3)) == 3
            assert store.check() == []
            with pytest.raises(StoreError, match="opened read-only"):
                put(store, animal_doc(7))
            assert store.counts()["documents"] == 4
        assert sorted(p.name for p in kb.iterdir()) == [DB_NAME]  # nothing was written beside it


def test_a_read_only_directory_whose_log_holds_commits_says_what_to_do(tmp_path):
    kb = tmp_path / "kb"
    leave_log(kb, 2)
    (kb / f"{DB_NAME}-shm").unlink()  # SQLite would have to create it to read the log
    with read_only_directory(kb), pytest.raises(StoreError, match=r"holds commits .* for one ingest"):
        SQLiteStore(kb, read_only=True)
    with SQLiteStore(kb) as store:  # with write access, the commits are read back, then folded in
        assert store.counts()["documents"] == 2
    assert not (kb / f"{DB_NAME}-wal").exists()


# --- damaged database files ------------------------------------------------------------------------


def test_a_zero_byte_database_is_refused_not_rebuilt_empty(kb):
    os.truncate(kb / DB_NAME, 0)
    for options in ({}, {"read_only": True}, {"damaged_ok": True}):
        with pytest.raises(CorruptStoreError, match=r"empty \(0 bytes\).*delete kb\.sqlite and ingest"):
            SQLiteStore(kb, **options)
    assert (kb / DB_NAME).stat().st_size == 0


def test_another_sqlite_database_is_not_taken_for_a_store(tmp_path):
    (tmp_path / "kb").mkdir()
    execute(tmp_path / "kb", "CREATE TABLE notes (body TEXT)")
    with pytest.raises(StoreError, match="a SQLite database, but not a knowledge base"):
        SQLiteStore(tmp_path / "kb")


def test_an_overwritten_header_is_refused(kb):
    overwrite(kb / DB_NAME, 0, b"\0" * 100)
    with pytest.raises(CorruptStoreError, match="not a SQLite database"):
        SQLiteStore(kb, read_only=True)


def test_a_truncated_database_is_refused_then_checked_and_repaired(tmp_path):
    kb = tmp_path / "kb"
    with SQLiteStore(kb) as store:
        fill(store, 30)
    database = kb / DB_NAME
    truncated = database.stat().st_size - 4 * 4096  # the pages written last: some documents lose rows
    os.truncate(database, truncated)
    with pytest.raises(CorruptStoreError, match=r"kb\.sqlite is truncated"):
        SQLiteStore(kb)
    with SQLiteStore(kb, read_only=True, damaged_ok=True) as store:
        problems = store.check()
    assert problems[0].startswith("kb.sqlite is truncated")
    assert any(p.startswith("integrity") for p in problems)
    with SQLiteStore(kb, damaged_ok=True) as store:
        done = store.repair()
        kept = {info.doc_id for info in store.documents()}
        removed = {line.split()[1] for line in done if line.startswith("removed ")}
        assert kept | removed == {f"animal{i}.md" for i in range(30)}  # every document kept or named
        assert kept
        assert removed
        assert store.check() == []
        found = sorted(kept)[0]
        assert words(store, found.removesuffix(".md")) == {found}
    assert done[-1] == f"the database before the repair is kept as {DB_NAME}.bak"
    assert (kb / f"{DB_NAME}.bak").stat().st_size == truncated


def test_garbage_in_the_middle_is_found_and_repaired(kb):
    with SQLiteStore(kb) as store:
        fill(store, 30)
    size = (kb / DB_NAME).stat().st_size
    overwrite(kb / DB_NAME, size // 2 // 4096 * 4096, os.urandom(3 * 4096))
    with SQLiteStore(kb, read_only=True) as store:  # nothing shows until a damaged page is read
        assert store.check()
    with SQLiteStore(kb) as store:
        done = store.repair()
        assert store.check() == []
        assert store.counts()["documents"] + sum(line.startswith("removed ") for line in done) >= 1
        assert words(store, "travel guide") <= {"guide.md"}


def test_a_broken_fts_table_is_a_typed_error_and_repair_rebuilds_it(kb):
    execute(kb, "DROP TABLE chunks_fts_config")
    with SQLiteStore(kb) as store:
        with pytest.raises(CorruptStoreError, match="vtable constructor failed: chunks_fts"):
            store.bm25("refunds", 3)
        assert any(p.startswith("full-text index") for p in store.check())
        assert store.repair()[-1] == "kept 4 documents (22 chunks) and rebuilt the full-text index"
        assert words(store, "refunds") == {"guide.md"}
        assert store.check() == []
    assert not (kb / f"{DB_NAME}.bak").exists()  # nothing was lost, so nothing is kept


def test_deleted_fts_rows_are_found_and_rebuilt(kb):
    execute(
        kb, "DELETE FROM chunks_fts WHERE rowid IN (SELECT chunk_key FROM chunks WHERE doc_id = 'guide.md')"
    )
    with SQLiteStore(kb) as store:
        assert words(store, "refunds") == set()
        assert store.check() == [f"{len(fixed_chunks(DOC, 40))} chunks without BM25 row"]
        generation = store.generation()
        store.repair()
        assert store.generation() > generation  # other processes reload what they hold
        assert words(store, "refunds") == {"guide.md"}
        assert store.check() == []


def test_a_tampered_chunk_offset_is_found_and_its_document_named(kb):
    execute(kb, "UPDATE chunks SET start = start + 1 WHERE doc_id = 'guide.md' AND ordinal = 2")
    with SQLiteStore(kb) as store:
        [problem] = store.check()
        assert (
            problem == "guide.md: chunks whose offsets do not match their text: 1 (first: chunk 2 at 81-120)"
        )
        done = store.repair()
        assert done[0].startswith("removed guide.md (chunks whose offsets do not match their text")
        assert done[0].endswith("ingest guide.md again")
        assert store.state("guide.md") is None  # so that ingesting the file again restores it
        assert sorted(info.doc_id for info in store.documents()) == ["animal0.md", "animal1.md", "animal2.md"]
        assert store.check() == []
        put(store, DOC)
        assert words(store, "refunds") == {"guide.md"}
    assert (kb / f"{DB_NAME}.bak").exists()


# --- the write-ahead log ---------------------------------------------------------------------------


def test_a_healthy_log_is_read_back(tmp_path):
    log = leave_log(tmp_path / "kb", 5)
    assert log.stat().st_size > 10 * FRAME
    with SQLiteStore(tmp_path / "kb", read_only=True) as store:
        assert store.counts()["documents"] == 5
        assert store.check() == []


def test_a_damaged_log_is_refused_kept_and_repaired(tmp_path):
    kb = tmp_path / "kb"
    log = leave_log(kb, 5)
    overwrite(log, 32 + 20 * FRAME + 24 + 1000, os.urandom(64))  # inside a page: the checksum breaks
    damaged = log.read_bytes()
    for read_only in (False, True):
        with pytest.raises(CorruptStoreError, match=r"kb\.sqlite-wal is damaged: frame 21 of .* commit"):
            SQLiteStore(kb, read_only=read_only)
    assert log.read_bytes() == damaged  # SQLite never saw it, so it did not discard it
    with SQLiteStore(kb, read_only=True, damaged_ok=True) as store:
        assert store.check()[0].startswith("kb.sqlite-wal is damaged")
    with SQLiteStore(kb, damaged_ok=True) as store:
        done = store.repair()
        assert done[0].startswith("kb.sqlite-wal was damaged")
        kept = store.counts()["documents"]
        assert 0 < kept < 5  # the commits before the damaged frame
        assert store.check() == []
    assert (kb / f"{DB_NAME}-wal.damaged").read_bytes() == damaged
    assert SQLiteStore(kb, read_only=True).counts()["documents"] == kept


#: A process that commits a small document again and again for ``argv[2]`` seconds into the store at
#: ``argv[1]``, printing ``ready`` once it has begun.
WRITER = """
import sys, time
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from tests.support.fakes import HashEmbedder

with KnowledgeBase(sys.argv[1], models=Models(embedder=HashEmbedder())) as kb:
    end, i = time.monotonic() + float(sys.argv[2]), 0
    while time.monotonic() < end:
        i += 1
        kb.add_bytes([(f"gen{i % 3}.md", f"# Gen {i}\\n\\nLounge {i} is open.".encode())])
        if i == 3:
            print("ready", flush=True)
"""


def test_a_store_another_process_is_writing_opens_without_false_damage(tmp_path):
    """One process commits as fast as it can while this one opens the store again and again: its log,
    read without a lock while the writer appends to it or begins it again, looked damaged to two opens
    in three ("frame 291 of 1022 does not check out"), and told the user to repair a healthy store."""
    kb = tmp_path / "kb"
    SQLiteStore(kb).close()
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(kb), "8"], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "ready\n"
        opened = 0
        while writer.poll() is None:
            for read_only in (True, False):
                SQLiteStore(kb, read_only=read_only).close()  # raised CorruptStoreError
                opened += 1
    finally:
        writer.wait(60)
    assert writer.returncode == 0
    assert opened > 10
    with SQLiteStore(kb, read_only=True) as store:
        assert store.check() == []


def test_a_log_removed_between_its_size_and_its_reading_is_no_log(tmp_path, monkeypatch):
    """Another process's last connection removes the log when it closes: between reading the log's size
    and opening it, the open raised FileNotFoundError out of the store's constructor."""
    log = leave_log(tmp_path / "kb", 2)
    opened = Path.open

    def vanishing(path, *args, **kwargs):  # the log is gone by the time it is opened
        if path == log:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return opened(path, *args, **kwargs)

    monkeypatch.setattr(Path, "open", vanishing)
    assert wal_frames(log) == (0, None)


def test_a_log_with_an_overwritten_header_is_refused(tmp_path):
    log = leave_log(tmp_path / "kb", 2)
    overwrite(log, 0, b"garbage!")
    with pytest.raises(CorruptStoreError, match="not a write-ahead log header"):
        SQLiteStore(tmp_path / "kb")


# --- sidecar indexes -------------------------------------------------------------------------------


def test_a_corrupted_bm25s_index_is_found_rebuilt_and_repaired(kb):
    settings = StoreSettings(bm25s_threshold=1)
    with SQLiteStore(kb, settings) as store:
        assert words(store, "refunds") == {"guide.md"}
    overwrite(kb / "bm25s" / "keys.npy", 130, b"\xff" * 16)
    with SQLiteStore(kb, settings) as store:
        assert store.check() == ["bm25s does not match its stamp (bm25s/keys.npy changed)"]
        assert words(store, "refunds") == {"guide.md"}  # a damaged sidecar is rebuilt, not loaded
        overwrite(kb / "bm25s.json", 0, b"{{{")
        assert store.check() == ["bm25s.json is unreadable (JSONDecodeError)"]
        assert store.repair() == [
            "kept 4 documents (22 chunks) and rebuilt the full-text index",
            "rebuilt the bm25s index",
        ]
        assert store.check() == []


@requires_usearch
def test_a_truncated_hnsw_graph_is_rebuilt_not_loaded(kb):
    settings = StoreSettings(hnsw_threshold=1)
    query = unit_vectors(1, seed=3)[0]
    with SQLiteStore(kb, settings) as store:
        expected = store.dense(query, 3)
    graph = kb / "hnsw.usearch"
    os.truncate(graph, graph.stat().st_size // 2)
    with SQLiteStore(kb, settings) as store:
        assert store.check() == ["hnsw.usearch does not match its stamp (hnsw.usearch changed)"]
        assert [key for key, _ in store.dense(query, 3)] == [key for key, _ in expected]
        assert "rebuilt the HNSW graph" in store.repair()
        assert store.check() == []


def test_a_sidecar_left_by_another_database_is_not_taken_for_this_ones(tmp_path):
    settings = StoreSettings(bm25s_threshold=1)
    kb = tmp_path / "kb"
    with SQLiteStore(kb, settings) as store:
        fill(store, 3)
        assert words(store, "animal2") == {"animal2.md"}
        generation = store.generation()
    (kb / DB_NAME).unlink()  # started over: a new database, the old sidecar still beside it
    with SQLiteStore(kb, settings) as store:
        put(store, DOC, size=25)
        while store.generation() < generation:  # each replacement is one write
            put(store, DOC, size=25, fingerprint=f"g{store.generation()}")
        assert store.generation() == generation
        assert store.check() == []  # another database's sidecar is stale, not damaged: rebuilt on use
        assert words(store, "refunds") == {"guide.md"}


@requires_usearch
def test_a_graph_left_by_another_database_is_not_taken_for_this_ones(tmp_path):
    """A new database numbers its generations and chunk keys from 1 again: the same document stored with
    other vectors has the keys and the generation of the graph left beside it, and only the store's id
    tells the two apart."""
    kb, graph, exact = tmp_path / "kb", StoreSettings(hnsw_threshold=1), StoreSettings(hnsw_threshold=10**9)
    queries = unit_vectors(5, seed=3)
    with SQLiteStore(kb, graph) as store:
        put(store, DOC, seed=0)
        store.dense(queries[0], 3)  # builds and saves the graph of these vectors
        generation = store.generation()
    for name in (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm"):
        (kb / name).unlink(missing_ok=True)
    with SQLiteStore(kb, graph) as store, SQLiteStore(kb, exact) as scan:
        put(store, DOC, seed=1)
        assert store.generation() == generation
        assert (kb / "hnsw.usearch").exists()
        for query in queries:
            found, expected = store.dense(query, 3), scan.dense(query, 3)
            assert [key for key, _ in found] == [key for key, _ in expected]
            assert [score for _, score in found] == pytest.approx([score for _, score in expected], abs=1e-5)
        assert store.check() == []


def test_repair_keeps_the_passage_windows(tmp_path):
    with SQLiteStore(tmp_path / "kb") as store:
        put(store, DOC, size=20, windowed=True)
        before = store.dense_index()
        owners, windows = before.owners.copy(), before.windows.copy()
        assert owners.size
        store.repair()
        after = store.dense_index()
        np.testing.assert_array_equal(after.owners, owners)
        np.testing.assert_array_equal(after.windows, windows)
        assert store.check() == []


def test_broken_passage_windows_are_found_refused_and_dropped_by_repair(tmp_path):
    with SQLiteStore(tmp_path / "kb") as store:
        put(store, DOC, size=20, windowed=True)
        kept = store.dense_index().owners.size
    with closing(sqlite3.connect(tmp_path / "kb" / DB_NAME)) as db:
        db.execute("INSERT INTO windows (chunk_key, vector) VALUES (999, ?)", (unit_vectors(1)[0].tobytes(),))
        db.execute("INSERT INTO windows (chunk_key, vector) VALUES (1, x'00')")
        db.commit()
    with SQLiteStore(tmp_path / "kb") as store:
        assert {"1 passage windows without vector", "1 passage windows not of 8 floats"} <= set(store.check())
        with pytest.raises(CorruptStoreError):
            store.dense_index()
        store.repair()
        assert store.check() == []
        assert store.dense_index().owners.size == kept
