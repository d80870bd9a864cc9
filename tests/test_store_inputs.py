"""The stores given what the ingest pipeline never hands them, on a real PostgreSQL and SQLite: NUL
characters, ids with quotes, percent signs, backslashes and any Unicode, vectors of another dimension,
negative offsets and ``k``; and a PostgreSQL server that drops its connections."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.document import Document
from chunkwise.errors import (
    ConfigError,
    CorruptStoreError,
    NulCharacterError,
    StoreError,
)
from chunkwise.parsing.text import text_document
from chunkwise.store import StoreSettings, open_store
from chunkwise.store.protocol import Store
from chunkwise.store.sqlite import SQLiteStore
from tests.support.postgres import PgServer
from tests.support.store import DOC, fixed_chunks, put, unit_vectors

pytest.importorskip("psycopg")


def store_of(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    """A fresh SQLite or PostgreSQL store for this test."""
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "kb")
    return open_store(request.getfixturevalue("pg_url"))


def put_parts(
    doc: Document, *, header: str = "h", summary: str = "", fingerprint: str = "f2"
) -> dict[str, Any]:
    """What :meth:`Store.put` takes for ``doc`` in chunks of 40 characters (8-d vectors)."""
    chunks = fixed_chunks(doc, 40)
    return {
        "doc": doc,
        "chunks": chunks,
        "headers": [header] * len(chunks),
        "vectors": unit_vectors(len(chunks)),
        "fingerprint": fingerprint,
        "summary": summary,
    }


NUL_CASES = {
    "text": put_parts(text_document("guide.md", "Gates \x00 close.")),
    "title": put_parts(dataclasses.replace(DOC, title="Travel\x00guide")),
    "source": put_parts(dataclasses.replace(DOC, source="guide\x00.md")),
    "header": put_parts(DOC, header="Document:\x00"),
    "summary": put_parts(DOC, summary="A guide\x00"),
    "fingerprint": put_parts(DOC, fingerprint="f\x002"),
}


@pytest.mark.parametrize("field", sorted(NUL_CASES))
def test_a_nul_in_text_is_refused_by_name_and_nothing_is_written(field, pg_url):
    """``put`` called directly with a NUL in a string kept as text used to fail with psycopg's raw
    ``DataError`` from inside its transaction; it is now refused before anything is written with the
    ingest pipeline's typed error, naming the document and where the NUL is. The version stored before
    stays whole."""
    with open_store(pg_url) as store:
        chunks = put(store, DOC)
        before = (store.counts(), store.document("guide.md").to_dict(), store.state("guide.md"))
        with pytest.raises(NulCharacterError, match="NUL character") as caught:
            store.put(**NUL_CASES[field])
        assert caught.value.source == "guide.md"
        assert field in caught.value.reason
        assert (store.counts(), store.document("guide.md").to_dict(), store.state("guide.md")) == before
        assert store.chunk_spans("guide.md") == [(c.start, c.end) for c in chunks]
        assert store.check() == []


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_nul_in_metadata_is_stored_as_given_in_either_store(kind, tmp_path, request):
    """Metadata is kept as JSON, which escapes a NUL: both stores keep it exactly."""
    doc = dataclasses.replace(DOC, metadata={"tag\x00": ["a\x00b"]})
    with store_of(kind, tmp_path, request) as store:
        put(store, doc)
        assert store.document("guide.md").to_dict() == doc.to_dict()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_id_with_a_nul_is_absent_in_either_store(kind, tmp_path, request):
    """No document with a NUL in its id can be stored in PostgreSQL, and it refused even the lookup of
    one (raw ``DataError``: a 500 for ``DELETE /documents/a%00b``); now every lookup answers "absent"
    as SQLite answers it."""
    missing = "guide\x00.md"
    with store_of(kind, tmp_path, request) as store:
        put(store, DOC)
        assert store.state(missing) is None
        assert store.delete(missing) is False
        assert store.summary(missing) == ""
        assert store.chunk_spans(missing) == []
        with pytest.raises(KeyError):
            store.document(missing)
        with pytest.raises(KeyError):
            store.document_text(missing, 0, 3)
        assert store.counts()["documents"] == 1


DOC_IDS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=24
) | st.sampled_from(
    ["it's", 'a"b', "50%", "%s", "%(x)s", "back\\slash", "'; DROP TABLE chunks; --", "文書/ü.md"]
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc_id=DOC_IDS)
def test_any_id_round_trips_and_is_deleted_alike_in_both_stores(doc_id, pg_url, tmp_path_factory):
    """Ids are bound parameters everywhere: quotes, percent signs, backslashes and any Unicode are stored,
    read back, listed and deleted in both stores alike."""
    doc = dataclasses.replace(DOC, id=doc_id)
    with SQLiteStore(tmp_path_factory.mktemp("kb")) as lite, open_store(pg_url) as server:
        for store in (lite, server):
            put(store, doc)
            assert store.document(doc_id).to_dict() == doc.to_dict()
            assert [info.doc_id for info in store.documents()] == [doc_id]
            assert store.document_text(doc_id, 2, 9) == doc.text[2:9]
        assert server.chunk_spans(doc_id) == lite.chunk_spans(doc_id)
        assert [s for _, s in server.bm25("refunds", 3)] == pytest.approx(
            [s for _, s in lite.bm25("refunds", 3)]
        )
        for store in (lite, server):
            assert store.delete(doc_id)
            assert not store.delete(doc_id)
            assert store.counts() == {"documents": 0, "chunks": 0, "vectors": 0}


def test_vectors_of_another_dimension_are_typed_errors(pg_url):
    """A query vector of another size raised pgvector's raw ``DataException`` where SQLite raises
    :class:`ConfigError`; a put with vectors of another size raised it from inside the transaction, and
    a put before any embedder was recorded failed on the missing vector table. Each is now a typed error
    raised before anything is written."""
    with open_store(pg_url) as store:
        parts = put_parts(DOC)
        with pytest.raises(StoreError, match=r"guide\.md: no embedder is recorded"):
            store.put(**parts)
        chunks = put(store, DOC, windowed=True)
        for call in (lambda v: store.dense(v, 3), lambda v: store.window_scores(v, [1, 2, 3])):
            with pytest.raises(ConfigError, match="the query vector has 5 dimensions, the stored vectors 8"):
                call(unit_vectors(1, dim=5)[0])
        assert_wrong_widths_refused(store, len(chunks))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_put_of_vectors_of_another_dimension_is_refused_before_any_write(kind, tmp_path, request):
    """SQLite stored them, and every search after it failed on a store of vectors of two sizes
    (``CorruptStoreError``); both stores now refuse the put, naming the document."""
    with store_of(kind, tmp_path, request) as store:
        chunks = put(store, DOC, windowed=True)
        assert_wrong_widths_refused(store, len(chunks))
        assert store.dense(unit_vectors(1)[0], 2)


def assert_wrong_widths_refused(store: Store, stored_chunks: int) -> None:
    """A put of 5-d vectors, or of 5-d windows' vectors, into ``store`` of 8-d ones is a
    :class:`ConfigError` naming the document, and leaves the store as it was."""
    wrong = put_parts(dataclasses.replace(DOC, id="other.md"))
    with pytest.raises(ConfigError, match=r"other\.md: its vectors have 5 dimensions, the stored vectors 8"):
        store.put(**{**wrong, "vectors": unit_vectors(len(wrong["chunks"]), dim=5)})
    with pytest.raises(ConfigError, match=r"other\.md: its passage windows' vectors have 5 dimensions"):
        store.put(**wrong, windows=([0], unit_vectors(1, dim=5)))
    assert store.counts() == {"documents": 1, "chunks": stored_chunks, "vectors": stored_chunks}
    assert store.check() == []


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_document_text_slices_as_python_or_refuses_a_negative_offset(kind, tmp_path, request):
    """Each store sliced with its SQL ``substr``: a negative start gave ``'# '`` in PostgreSQL and
    ``'s.'`` in SQLite (Python: ``''``), and an end before the start gave SQLite the characters before
    the start. Offsets are never negative, so one is refused; an end before the start is empty."""
    with store_of(kind, tmp_path, request) as store:
        put(store, DOC)
        assert store.document_text("guide.md", 5, 2) == DOC.text[5:2] == ""
        assert store.document_text("guide.md", 2, 10**6) == DOC.text[2:]
        for start, end in ((-3, 2), (0, -1)):
            with pytest.raises(ValueError, match="offsets are not negative"):
                store.document_text("guide.md", start, end)


def terminate_clients(pg_server: PgServer) -> int:
    """End every client connection to the server but this one (as a restart or failover does)."""
    with pg_server.admin() as conn:
        return int(
            conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
            ).fetchone()[0]
        )


def test_connections_the_server_dropped_fail_no_call(pg_url, pg_server):
    """When the server drops its connections (a restart, a failover, an idle timeout), the call that met
    a dropped one raised :class:`StoreUnavailableError`, and every other connection idle in the pool
    failed one more call each, though the server answered again. Now the pool tests each connection as
    it hands it out and replaces a dead one, so no call fails."""
    with open_store(pg_url, StoreSettings(pool_size=3)) as store:
        put(store, DOC)
        query = unit_vectors(4)[0]
        expected = store.dense(query, 3), store.bm25("refunds", 3)
        for _ in range(2):
            with store._pool.connection(), store._pool.connection():  # fill the pool: three connections
                pass
            assert terminate_clients(pg_server) >= 2
            assert (store.dense(query, 3), store.bm25("refunds", 3)) == expected
        assert store.check() == []


@pytest.mark.parametrize("threshold", [10**9, 1], ids=["exact", "approximate"])
def test_k_of_zero_or_less_finds_nothing(threshold, pg_url, tmp_path):
    """A negative ``k`` reached SQL as a negative LIMIT, which PostgreSQL refuses with a raw error (dense
    search on both paths, BM25 in SQL), and SQLite's FTS5 read ``LIMIT -1`` as no limit while its bm25s
    index raised ``ValueError``; ``k`` of 0 or less now finds nothing on every path of both stores."""
    limits = StoreSettings(hnsw_threshold=threshold, bm25s_threshold=threshold)
    with SQLiteStore(tmp_path / "kb", limits) as lite, open_store(pg_url, limits) as server:
        for store in (lite, server):
            put(store, DOC, windowed=True)
        query = unit_vectors(1)[0]
        for k in (-1, 0):
            assert lite.dense(query, k) == server.dense(query, k) == []
            assert lite.bm25("refunds pets", k) == server.bm25("refunds pets", k) == []
        assert len(server.bm25("refunds pets", 2)) == len(server.dense(query, 2)) == 2


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_schema_version_that_is_no_number_is_a_damaged_store(kind, tmp_path, request):
    """``int()`` of the recorded version escaped as a raw ``ValueError`` on opening; it is damage, named."""
    with store_of(kind, tmp_path, request) as store:
        put(store, DOC)
        store.set_meta("schema_version", "two")
    with pytest.raises(CorruptStoreError, match="the recorded schema version 'two' is not a number"):
        store_of(kind, tmp_path, request)
