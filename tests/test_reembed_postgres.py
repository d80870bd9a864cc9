"""The PostgreSQL re-embedding's new vector tables, on the session's real server: they are built, filled and
indexed beside the store's while readers go on searching the old ones (PostgreSQL's own lock timeout
says whether a reader would have waited), then swapped in named, indexed and constrained as an ingest
makes them, so that later writes cascade and searches, exact and through HNSW, find the new vectors."""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest

from chunkwise.document import Document
from chunkwise.store import StoreSettings, open_store
from chunkwise.store import postgres as pg
from chunkwise.store.pgurl import parse
from chunkwise.store.protocol import Reembedded, Store
from tests.support.postgres import PgServer
from tests.support.store import DOC, animal_doc, best_scores, fixed_chunks, put, unit_vectors, window_owners

pytest.importorskip("psycopg")

#: The documents of the tests, each with the seed of its vectors (as :func:`put` takes it) and its
#: chunk size.
DOCS: tuple[tuple[Document, int, int], ...] = ((DOC, 0, 40), (animal_doc(1), 1, 120))
#: The embedder the stores are first filled with: another dimension than :func:`put`'s ``test`` (8).
OLD = ("old", 4, "")


def put_old(store: Store) -> None:
    """Store :data:`DOCS` with 4-d vectors of the embedder :data:`OLD`, passage windows included."""
    store.check_embedder(*OLD)
    for doc, seed, size in DOCS:
        chunks = fixed_chunks(doc, size)
        owners = window_owners(len(chunks))
        store.put(
            doc,
            chunks,
            [f"Document: {doc.id}"] * len(chunks),
            unit_vectors(len(chunks), dim=4, seed=seed + 50),
            fingerprint="old",
            windows=(owners, unit_vectors(len(owners), dim=4, seed=seed + 150)),
        )


def reembed_to_test(store: Store) -> None:
    """Re-embed every document with the 8-d embedder ``test``: the vectors and windows :func:`put`
    stores for the document's seed, so that a later :func:`put` and :func:`best_scores` agree with it."""
    seeds = {doc.id: seed for doc, seed, _ in DOCS}
    with store.reembedding(("test", 8, "")) as session:
        for stored in session.documents():
            seed, n = seeds[stored.doc.id], len(stored.chunks)
            owners = window_owners(n)
            windows = (owners, unit_vectors(len(owners), seed=seed + 100))
            session.write(stored.doc.id, Reembedded(unit_vectors(n, seed=seed), windows, "f1"))


def expected_ranking(pg_server: PgServer, url: str, query: np.ndarray) -> list[tuple[int, float]]:
    """Every stored chunk's key and best cosine to ``query``, whole or window, as :func:`put` stores its
    document's vectors, best first (ties by key): what an exact search answers."""
    seeds = {doc.id: seed for doc, seed, _ in DOCS}
    with pg_server.admin() as conn:
        rows = conn.execute(
            f'SELECT doc_id, chunk_key FROM "{parse(url).schema}".chunks ORDER BY doc_id, ordinal'
        ).fetchall()
    scored = []
    for doc_id, seed in seeds.items():
        keys = [key for owner, key in rows if owner == doc_id]
        scored += zip(keys, best_scores(len(keys), seed, query).tolist(), strict=True)
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


def assert_ranks(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    """The same chunks in the same order, scores equal within float32's precision."""
    assert [key for key, _ in found] == [key for key, _ in expected]
    np.testing.assert_allclose([s for _, s in found], [s for _, s in expected], rtol=1e-5)


def test_readers_search_the_old_vectors_while_the_new_tables_are_filled_and_indexed(
    pg_url: str, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paused once the new tables' HNSW indexes are built (the long part, before the swap), the
    re-embedding's open transaction lets a reader whose statements give up after a 2 s lock wait
    search the old vectors, exactly and through HNSW, and read chunks with their vectors: no lock it
    holds by then keeps a reader out (dropping the store's tables first held them exclusively from the
    fill to the commit). After the commit the store searches the new vectors."""
    query = unit_vectors(1, dim=4, seed=7)[0]
    # libpq's options, as PostgreSQL's switches: -c name=value, written without a space
    impatient = f"{pg_url}&options={quote('-clock_timeout=2s')}"
    with open_store(pg_url) as store, open_store(impatient, read_only=True) as reader:
        put_old(store)
        exact = reader.dense(query, 3)
        reader.settings = StoreSettings(hnsw_threshold=1)
        approximate = reader.dense(query, 3)
        seen: list[Any] = []
        build = pg._execute_script

        def reading_once_indexed(conn: Any, script: str) -> None:
            build(conn, script)
            if "USING hnsw" not in script:
                return
            try:  # the reader's own connections, outside the re-embedding's transaction
                reader.settings = StoreSettings()
                found = [reader.dense(query, 3)]
                reader.settings = StoreSettings(hnsw_threshold=1)
                found.append(reader.dense(query, 3))
                found.append([np.shape(c.vector) for c in reader.chunks([k for k, _ in exact])])
                seen.append(found)
            except Exception as exc:  # what a waiting reader meets: its lock timeout
                seen.append(exc)

        monkeypatch.setattr(pg, "_execute_script", reading_once_indexed)
        reembed_to_test(store)
        monkeypatch.undo()
        assert seen == [[exact, approximate, [(4,)] * 3]]
        assert approximate == exact
        assert store.check() == []
        query8 = unit_vectors(1, seed=7)[0]
        assert_ranks(store.dense(query8, 3), expected_ranking(pg_server, pg_url, query8)[:3])


def catalog(pg_server: PgServer, url: str) -> dict[str, list[tuple[Any, ...]]]:
    """What PostgreSQL's catalogue says of a store's schema, its name written ``S``: every relation's name
    and kind (tables, indexes, sequences), and of the vector tables each column (type, NOT NULL,
    identity, default), constraint (kind, definition) and index (definition)."""
    schema = parse(url).schema
    queries = {
        "relations": "SELECT c.relname, c.relkind FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(s)s",
        "columns": "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
        " a.attidentity, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a"
        " JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
        " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
        " WHERE n.nspname = %(s)s AND c.relname IN ('vectors', 'windows') AND a.attnum > 0"
        " AND NOT a.attisdropped",
        "constraints": "SELECT c.relname, k.conname, k.contype, pg_get_constraintdef(k.oid)"
        " FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %(s)s AND c.relname IN ('vectors', 'windows')",
        "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes"
        " WHERE schemaname = %(s)s AND tablename IN ('vectors', 'windows')",
    }
    with pg_server.admin() as conn:
        return {
            name: sorted(
                tuple(v.replace(schema, "S") if isinstance(v, str) else v for v in row)
                for row in conn.execute(sql, {"s": schema}).fetchall()
            )
            for name, sql in queries.items()
        }


def stored_vectors(pg_server: PgServer, url: str) -> dict[str, Any]:
    """The recorded settings, the statistics row, and every vector and window vector as text, by key."""
    s = f'"{parse(url).schema}"'
    with pg_server.admin() as conn:
        return {
            "meta": sorted(conn.execute(f"SELECT key, value FROM {s}.meta").fetchall()),
            "stats": conn.execute(f"SELECT * FROM {s}.stats").fetchall(),
            "vectors": conn.execute(
                f"SELECT chunk_key, embedding::text FROM {s}.vectors ORDER BY 1"
            ).fetchall(),
            "windows": conn.execute(f"SELECT * FROM {s}.windows ORDER BY window_key").fetchall(),
        }


def test_the_new_tables_are_swapped_in_as_an_ingest_makes_them_and_take_later_writes(
    pg_url: str, pg_server: PgServer
) -> None:
    """Re-embedded from 4 to 8 dimensions, the store's vector tables are those a fresh ingest of 8-d
    vectors makes, to the names of their indexes, constraints and identity sequence, and nothing the
    re-embedding built is left under another name. Searches, exact and through HNSW, rank the new
    vectors; a replaced and a deleted document take their vectors and windows with them (the foreign
    keys cascade), and the store searches, checks and repairs (its HNSW indexes found by name) after."""
    fresh_url = pg_url.replace("schema=", "schema=fresh_")
    with open_store(fresh_url) as fresh:
        for doc, seed, size in DOCS:
            put(fresh, doc, size=size, seed=seed, windowed=True)
    query = unit_vectors(1, seed=3)[0]
    with open_store(pg_url) as store:
        put_old(store)
        reembed_to_test(store)
        assert catalog(pg_server, pg_url) == catalog(pg_server, fresh_url)
        indexes = {(table, name) for table, name, _ in catalog(pg_server, pg_url)["indexes"]}
        assert indexes == {
            ("vectors", "vectors_pkey"),
            ("vectors", "vectors_hnsw"),
            ("windows", "windows_pkey"),
            ("windows", "windows_by_chunk"),
            ("windows", "windows_hnsw"),
        }
        assert store.check() == []
        expected = expected_ranking(pg_server, pg_url, query)
        assert_ranks(store.dense(query, 5), expected[:5])
        store.settings = StoreSettings(hnsw_threshold=1)
        assert store.dense_method() == "hnsw"
        assert_ranks(store.dense(query, 5), expected[:5])

        shorter = put(store, DOC, size=25, seed=0, fingerprint="f2", windowed=True)
        assert store.delete(DOCS[1][0].id)
        rows, expected = stored_vectors(pg_server, pg_url), expected_ranking(pg_server, pg_url, query)
        keys = sorted(key for key, _ in expected)  # the chunks left: the replaced document's
        assert len(keys) == len(shorter)
        assert [key for key, _ in rows["vectors"]] == keys
        assert sorted(owner for _, owner, _ in rows["windows"]) == sorted(
            keys[i] for i in window_owners(len(shorter))
        )
        assert store.check() == []
        assert_ranks(store.dense(query, 5), expected[:5])
        store.settings = StoreSettings()
        assert_ranks(store.dense(query, 5), expected[:5])
        assert "rebuilt the HNSW indexes" in store.repair()
        assert store.check() == []


def test_an_interrupt_after_the_swap_before_the_commit_leaves_the_store_as_it_was(
    pg_url: str, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C once the new tables have taken the store's names, before the commit: the old tables, their
    vectors, the recorded embedder and the statistics are as they were, nothing the re-embedding built is
    left, and the store searches with the old embedder."""
    with open_store(pg_url) as store:
        put_old(store)
        before = catalog(pg_server, pg_url), stored_vectors(pg_server, pg_url)
        query = unit_vectors(1, dim=4, seed=5)[0]
        found = store.dense(query, 3)
        swap = pg.PostgresStore._swap_in

        def interrupted(self: pg.PostgresStore, conn: Any) -> None:
            swap(self, conn)
            raise KeyboardInterrupt

        monkeypatch.setattr(pg.PostgresStore, "_swap_in", interrupted)
        with pytest.raises(KeyboardInterrupt):
            reembed_to_test(store)
        monkeypatch.undo()
        assert (catalog(pg_server, pg_url), stored_vectors(pg_server, pg_url)) == before
        assert store.check() == []
        assert store.dense(query, 3) == found


def test_a_reader_holding_the_chunks_when_the_swap_begins_reads_the_vectors_and_neither_fails(
    pg_url: str, pg_server: PgServer
) -> None:
    """A reader's statement that has locked the chunks and goes on to the vectors (as
    :meth:`~chunkwise.store.postgres.PostgresStore.chunks` does), met by the swap: dropping the old
    tables needs the chunks exclusively too (their foreign keys' triggers live there), and it once took
    them last, holding the vector tables while it waited, so the two deadlocked and PostgreSQL aborted
    one, most likely the re-embedding, with all its work. Stretched here into a transaction that holds
    the chunks while the swap waits for them: the reader reads the old vectors and commits, then the
    re-embedding commits."""
    schema = parse(pg_url).schema
    with open_store(pg_url) as store:
        put_old(store)
        outcome: dict[str, Any] = {}

        def reembed() -> None:
            try:
                reembed_to_test(store)
                outcome["reembedding"] = "committed"
            except Exception as exc:  # what reaches the caller, whatever its type
                outcome["reembedding"] = exc

        with pg_server.admin() as reader, pg_server.admin() as watcher:
            reader.execute("SET lock_timeout = '10s'")
            reader.execute("BEGIN")
            chunks = reader.execute(f'SELECT count(*) FROM "{schema}".chunks').fetchone()[0]
            thread = threading.Thread(target=reembed)
            thread.start()
            for _ in range(300):  # until the swap waits for the chunks
                waiting = watcher.execute(
                    "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                    " JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE NOT l.granted AND n.nspname = %s AND c.relname = 'chunks'",
                    (schema,),
                ).fetchone()[0]
                if waiting or not thread.is_alive():
                    break
                time.sleep(0.1)
            assert waiting == 1
            try:
                vectors = reader.execute(f'SELECT count(*) FROM "{schema}".vectors').fetchone()[0]
                windows = reader.execute(f'SELECT count(*) FROM "{schema}".windows').fetchone()[0]
                reader.execute("COMMIT")
                outcome["reader"] = (vectors, windows)
            except Exception as exc:  # a deadlock or the lock timeout
                outcome["reader"] = exc
                reader.execute("ROLLBACK")
            thread.join(60)
        sizes = [len(fixed_chunks(doc, size)) for doc, _, size in DOCS]
        assert outcome == {
            "reader": (chunks, sum(len(window_owners(n)) for n in sizes)),
            "reembedding": "committed",
        }
        assert store.meta("dim") == "8"
        assert store.check() == []
