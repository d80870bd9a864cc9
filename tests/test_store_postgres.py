"""The PostgreSQL store on a real PostgreSQL 18 + pgvector started by the tests: round trips, the same BM25
and exact-dense top 10 as SQLite, concurrent writers, readers beside a writer, schema versions, check and
repair, and every bad input as a typed error without the password."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path
from urllib.parse import quote

import httpx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkwise
from chunkwise.config import from_dict
from chunkwise.errors import (
    ConfigError,
    SchemaVersionError,
    StoreAuthError,
    StoreError,
    StoreExtensionError,
    StoreUnavailableError,
    StoreURLError,
)
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from chunkwise.parsing.text import text_document
from chunkwise.server import create_app
from chunkwise.store import StoreSettings, open_store
from chunkwise.store.pg_lexical import MAX_SEGMENTS
from chunkwise.store.pgurl import parse
from chunkwise.store.postgres import WINDOW_CANDIDATES
from chunkwise.store.sqlite import SQLiteStore
from tests.support.cli import run_chunkwise
from tests.support.documents import format_docs
from tests.support.fakes import HashEmbedder
from tests.support.postgres import APP_PASSWORD, PgServer
from tests.support.server import running_app
from tests.support.store import (
    DOC,
    animal_doc,
    assert_embedder_recorded_and_checked,
    best_scores,
    best_windows,
    fixed_chunks,
    put,
    unit_vectors,
    window_owners,
)

pytest.importorskip("psycopg")


def test_round_trip_replace_delete_and_check(pg_url):
    with open_store(pg_url) as store:
        assert "postgres@" in store.location
        assert ":@" not in store.location
        chunks = put(store, DOC)
        assert store.document("guide.md").to_dict() == DOC.to_dict()
        assert store.chunk_spans("guide.md") == [(c.start, c.end) for c in chunks]
        assert store.document_text("guide.md", 10, 30) == DOC.text[10:30]
        assert store.counts() == {"documents": 1, "chunks": len(chunks), "vectors": len(chunks)}
        assert store.state("guide.md") == (DOC.content_hash, "f1")
        [info] = store.documents()
        assert (info.doc_id, info.chunks, info.title) == ("guide.md", len(chunks), "Travel guide")
        stored = store.chunks([store.bm25("refund", 1)[0][0]])[0]  # stemmed: refund finds Refunds
        assert "Refunds take" in stored.text
        assert stored.header == "Document: guide.md"
        assert stored.vector is not None
        assert stored.vector.shape == (8,)
        assert store.check() == []
        fewer = put(store, DOC, size=25, fingerprint="f2")
        assert store.counts()["chunks"] == len(fewer)
        assert store.check() == []
        assert store.delete("guide.md")
        assert not store.delete("guide.md")
        assert store.counts() == {"documents": 0, "chunks": 0, "vectors": 0}
        assert store.bm25("refunds", 3) == []
        assert store.check() == []


def test_put_skips_only_a_document_stored_alike(pg_url):
    """The same text and fingerprint under another title is a changed document: replaced, not skipped."""
    chunks = fixed_chunks(DOC, 40)
    headers, vectors = [f"Document: {DOC.id}"] * len(chunks), unit_vectors(len(chunks))
    retitled = dataclasses.replace(DOC, title="Another guide")
    with open_store(pg_url) as store:
        store.check_embedder("test", 8)
        assert store.put(DOC, chunks, headers, vectors, fingerprint="f1") == "added"
        assert store.put(DOC, chunks, headers, vectors, fingerprint="f1") == "skipped"
        assert store.put(retitled, chunks, headers, vectors, fingerprint="f1") == "replaced"
        assert store.document(DOC.id).title == "Another guide"
        assert store.put(retitled, chunks, headers, vectors, fingerprint="f1") == "skipped"


def test_put_reports_a_skip_inside_its_transaction(pg_url):
    with open_store(pg_url) as store:
        put(store, DOC)
        chunks = put(store, DOC)  # same content and fingerprint: nothing written
        assert store.counts()["chunks"] == len(chunks)
        vectors = np.zeros((len(chunks), 8), dtype=np.float32)
        headers = [""] * len(chunks)
        assert store.put(DOC, chunks, headers, vectors, fingerprint="f1") == "skipped"
        assert store.put(DOC, chunks, headers, vectors, fingerprint="f9") == "replaced"


def chunk_keys(pg_server: PgServer, schema: str) -> list[int]:
    """The keys of the chunks in ``schema``, by ordinal."""
    with pg_server.admin() as conn:
        rows = conn.execute(f'SELECT chunk_key FROM "{schema}".chunks ORDER BY ordinal').fetchall()
    return [row[0] for row in rows]


def test_passage_windows_score_their_chunk_exactly_and_through_hnsw(pg_url, pg_server):
    """A chunk scores its best cosine, whole or window, as numpy computes it: exact below the HNSW
    threshold, the same through the index at it; the windows go with their document."""
    with open_store(pg_url) as store:
        chunks = put(store, DOC, windowed=True)
        schema = parse(pg_url).schema
        keys = chunk_keys(pg_server, schema)
        assert len(keys) == len(chunks)
        for seed in range(5):
            query = unit_vectors(1, seed=10 + seed)[0]
            expected = best_scores(len(chunks), 0, query)
            order = np.argsort(-expected, kind="stable")
            found = store.dense(query, len(chunks))
            assert [key for key, _ in found] == [keys[i] for i in order]
            np.testing.assert_allclose([score for _, score in found], expected[order], rtol=1e-5)
            store.settings = StoreSettings(hnsw_threshold=1)
            try:
                assert store.dense_method() == "hnsw"
                assert store.dense(query, 2) == found[:2]
            finally:
                store.settings = StoreSettings()
        assert store.delete("guide.md")
    with pg_server.admin() as conn:
        assert conn.execute(f'SELECT count(*) FROM "{schema}".windows').fetchone()[0] == 0


def test_window_scores_are_each_chunks_best_window(pg_url, pg_server):
    """The best window cosine of some chunks, as numpy computes it; chunks without windows absent."""
    with open_store(pg_url) as store:
        put(store, DOC, windowed=True)
        keys = chunk_keys(pg_server, parse(pg_url).schema)
        query = unit_vectors(1, seed=7)[0]
        best = best_windows(keys, 0, query)
        scores = store.window_scores(query, [*keys, 10**9])
        assert set(scores) == set(best)
        for key, score in scores.items():
            assert score == pytest.approx(best[key], rel=1e-5)
        assert store.window_scores(query, []) == {}


def test_a_chunk_found_only_through_a_window_is_found_through_hnsw(pg_url):
    """Above the threshold the windows' own HNSW index proposes candidates beside the whole vectors':
    a query equal to one window of a chunk whose whole vector is far from it finds that chunk first,
    with the window's cosine, as the exact search does."""
    doc = animal_doc(1, paragraphs=60)
    with open_store(pg_url) as store:
        chunks = put(store, doc, size=30, windowed=True)
        owners = window_owners(len(chunks))
        wholes = unit_vectors(len(chunks), seed=0)
        windows = unit_vectors(len(owners), seed=100)
        # the window whose chunk's whole vector ranks lowest for it
        ranks = [int((wholes @ w > wholes[o] @ w).sum()) for o, w in zip(owners, windows, strict=True)]
        pick = int(np.argmax(ranks))
        assert ranks[pick] > 4 * WINDOW_CANDIDATES  # the whole vectors alone would not propose it
        exact = store.dense(windows[pick], 3)
        store.settings = StoreSettings(hnsw_threshold=1)
        assert store.dense_method() == "hnsw"
        found = store.dense(windows[pick], 3)
        assert found[0][0] == exact[0][0]
        assert found[0][1] == pytest.approx(1.0, abs=1e-5)
        assert store.chunks([found[0][0]])[0].text == chunks[owners[pick]].text


def test_the_hnsw_threshold_counts_windows_and_check_and_repair_keep_their_count(pg_url, pg_server):
    """An exact search scans every vector, whole or window, so the threshold counts both (kept in the
    statistics row by every write); check reports a wrong count and repair recounts it."""
    with open_store(pg_url) as store:
        chunks = put(store, DOC, size=20, windowed=True)
        vectors = len(chunks) + len(window_owners(len(chunks)))
        assert len(window_owners(len(chunks))) > 0
        for threshold, method in ((vectors, "hnsw"), (vectors + 1, "exact"), (len(chunks) + 1, "hnsw")):
            store.settings = StoreSettings(hnsw_threshold=threshold)
            assert store.dense_method() == method
        schema = parse(pg_url).schema
        with pg_server.admin() as conn:
            conn.execute(f'UPDATE "{schema}".stats SET windows = windows + 3')
        assert store.check() == ["1 window statistics that disagree with the windows"]
        assert "recounted the BM25 statistics and the windows" in store.repair()
        assert store.check() == []
        put(store, DOC, size=25, fingerprint="f2", windowed=True)  # replaced: its old windows go
        assert store.check() == []
        assert store.delete("guide.md")
        assert store.check() == []
        with pg_server.admin() as conn:
            assert conn.execute(f'SELECT chunks, windows FROM "{schema}".stats').fetchone() == (0, 0)


def test_schema_3_is_upgraded_with_a_windows_count_and_index(pg_url, pg_server):
    """A store of schema 3 (windows without a count or an HNSW index) is refused read-only; opened with
    write access it gets both, the count taken from its windows."""
    with open_store(pg_url) as store:
        chunks = put(store, DOC, windowed=True)
    schema = parse(pg_url).schema
    with pg_server.admin() as conn:
        conn.execute(f'ALTER TABLE "{schema}".stats DROP COLUMN windows')
        conn.execute(f'DROP INDEX "{schema}".windows_hnsw')
        conn.execute(f"UPDATE \"{schema}\".meta SET value = '3' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="store schema 3 is older than the supported 4"):
        open_store(pg_url, read_only=True)
    with open_store(pg_url) as store:
        assert store.meta("schema_version") == "4"
        assert store.check() == []
    with pg_server.admin() as conn:
        assert conn.execute(f'SELECT windows FROM "{schema}".stats').fetchone() == (
            len(window_owners(len(chunks))),
        )
        assert conn.execute("SELECT to_regclass(%s)", (f'"{schema}".windows_hnsw',)).fetchone()[0]


WINDOWED = from_dict({"retrieval": {"windows": 64}})


@pytest.fixture(scope="module")
def twin_stores(tmp_path_factory, pg_server, embedder, data_dir):
    """The committed formats fixtures and the rmc_mini corpus, ingested into SQLite and PostgreSQL with
    passage windows of 64 tokens."""
    from chunkwise.parsing.text import text_document

    corpus = [
        json.loads(line)
        for line in (data_dir / "eval" / "rmc_mini" / "corpus.jsonl").read_text().splitlines()
        if line.strip()
    ]
    docs = format_docs(data_dir) + [text_document(d["doc_id"], d["text"]) for d in corpus]
    url = pg_server.url("twins")
    stores = []
    for location in (tmp_path_factory.mktemp("sqlite"), url):
        kb = KnowledgeBase(location, WINDOWED, models=Models(embedder=embedder))
        report = kb.add_documents(docs)
        assert not report.failed
        stores.append(kb)
    yield stores
    for kb in stores:
        kb.close()


def queries(data_dir: Path) -> list[str]:
    found = []
    for name in ("rmc_mini", "xquad_mini"):
        lines = (data_dir / "eval" / name / "queries.jsonl").read_text().splitlines()
        found += [json.loads(line)["query"] for line in lines if line.strip()]
    return found


def test_both_stores_rank_alike(twin_stores, data_dir, embedder, pg_server):
    """Identical BM25 top 10 (chunk ids and scores) and identical exact-dense top 10 (passage windows
    included), then identical hybrid search hits, on every query of the test data sets."""
    sqlite, postgres = twin_stores
    assert sqlite.store.counts() == postgres.store.counts()
    with pg_server.admin() as conn:
        windows = conn.execute('SELECT count(*) FROM "twins".windows').fetchone()[0]
    assert windows == sqlite.store.dense_index().owners.size > sqlite.store.counts()["chunks"]
    assert postgres.store.dense_method() == "exact"

    def ids(store, hits):
        by_key = {c.key: c.chunk_id for c in store.chunks([k for k, _ in hits])}
        return [by_key[k] for k, _ in hits]

    for query in queries(data_dir)[::3]:
        lexical = [kb.store.bm25(query, 10) for kb in twin_stores]
        assert ids(sqlite.store, lexical[0]) == ids(postgres.store, lexical[1]), query
        assert [s for _, s in lexical[0]] == pytest.approx([s for _, s in lexical[1]], rel=1e-9)
        vector = embedder.embed([query])[0]
        dense = [kb.store.dense(vector, 10) for kb in twin_stores]
        assert ids(sqlite.store, dense[0]) == ids(postgres.store, dense[1]), query
        hits = [kb.query.search(query, k=5, vector=vector) for kb in twin_stores]
        assert [h.chunk_id for h in hits[0]] == [h.chunk_id for h in hits[1]], query
        # a window's cosine is computed by each store (float32 in numpy, pgvector's own sums)
        assert [h.score for h in hits[0]] == pytest.approx([h.score for h in hits[1]], abs=1e-6)


def test_bm25_in_memory_ranks_as_the_sql(twin_stores, data_dir):
    """At or above ``bm25s_threshold`` chunks (forced to 1 here) the postings are ranked in memory: the
    same chunks, order and scores as the SQL ranking, on every query of the test data sets."""
    _, postgres = twin_stores
    store = postgres.store
    questions = [*queries(data_dir), "the of and", "zzzunknown", "baggage baggage bags"]
    store.settings = StoreSettings(bm25s_threshold=None)
    in_sql = [store.bm25(query, 10) for query in questions]
    store.settings = StoreSettings(bm25s_threshold=1)
    try:
        in_memory = [store.bm25(query, 10) for query in questions]
    finally:
        store.settings = StoreSettings()
    assert any(in_sql)
    for query, memory, sql in zip(questions, in_memory, in_sql, strict=True):
        assert [key for key, _ in memory] == [key for key, _ in sql], query
        assert [score for _, score in memory] == pytest.approx([score for _, score in sql], rel=1e-12)


def test_bm25_in_memory_follows_other_writers(pg_url, pg_server):
    """A reader's in-memory postings follow what other connections commit after it was built: added,
    replaced and deleted documents, a document committed late with a lower chunk key than ones already
    indexed (keys are taken before commit), and postings rewritten by a repair."""
    from chunkwise.parsing.text import text_document

    other = text_document("other.md", "Lost luggage claims are filed within 21 days at the desk.")
    with (
        open_store(pg_url) as writer,
        open_store(pg_url, StoreSettings(bm25s_threshold=1)) as reader,
        open_store(pg_url, StoreSettings(bm25s_threshold=None)) as sql,
    ):

        def same(query: str) -> list[tuple[int, float]]:
            found = reader.bm25(query, 10)
            expected = sql.bm25(query, 10)
            assert [k for k, _ in found] == [k for k, _ in expected], query
            assert [s for _, s in found] == pytest.approx([s for _, s in expected], rel=1e-12)
            return found

        put(writer, DOC)
        assert same("refunds")
        assert not same("luggage")
        put(writer, other)
        assert len(same("luggage")) == 1
        assert same("refunds")  # the statistics moved: every score is recomputed
        for i in range(MAX_SEGMENTS + 2):  # a segment of postings per refresh, joined past the limit
            put(writer, text_document(f"note{i}.md", f"Refunds note {i}: refunds of parcels."))
            assert same("refunds parcels")
            assert len(same("parcels")) == min(i + 1, 10)
        put(writer, DOC, size=25, fingerprint="f2")  # replaced: new chunk keys, the old ones masked
        assert {k for k, _ in same("refunds")} <= {c.key for c in writer.chunks(range(1, 100))}
        schema = parse(pg_url).schema
        with pg_server.admin() as slow:  # a writer that took its chunk key before the next put
            slow.autocommit = False
            key = slow.execute(
                f"SELECT nextval(pg_get_serial_sequence('\"{schema}\".chunks', 'chunk_key'))"
            ).fetchone()[0]
            put(writer, text_document("third.md", "Pets travel in the cabin."))
            assert same("pets")
            slow.execute(
                f"INSERT INTO \"{schema}\".documents VALUES ('late.md', NULL, NULL, 'text', 'h', 'f', '',"
                " '{}', 'Zebras fly late')"
            )
            slow.execute(
                f"INSERT INTO \"{schema}\".chunks VALUES (%s, 'c', 'late.md', 0, 0, 15, 'Zebras fly late',"
                " '', '[]', '[]', 3, NULL, 3)",
                (key,),
            )
            slow.execute(
                f"INSERT INTO \"{schema}\".postings VALUES ('zebra', %s, 1, 3), ('fli', %s, 1, 3),"
                " ('late', %s, 1, 3)",
                (key, key, key),
            )
            assert not same("zebras")  # not committed yet
            slow.execute(
                f'UPDATE "{schema}".stats SET chunks = chunks + 1, terms = terms + 3,'
                " generation = generation + 1"
            )
            slow.commit()
        assert [k for k, _ in same("zebras")] == [key]
        assert writer.delete("other.md")
        assert not same("luggage")
        with pg_server.admin() as conn:
            conn.execute(f"DELETE FROM \"{schema}\".postings WHERE term = 'refund'")
        writer.repair()  # postings rewritten in place: the reader rebuilds
        assert same("refunds")
        assert same("weigh")
        assert writer.delete("guide.md")
        assert not same("weigh")


def test_tied_scores_rank_by_chunk_key_in_both_stores(pg_url, tmp_path):
    """Two copies of a document have the same vectors, so every chunk ties with its copy: both stores
    rank a tie by chunk key (the first copy first), and a shorter list is the start of a longer one."""
    copy = dataclasses.replace(DOC, id="copy.md")
    with SQLiteStore(tmp_path / "kb") as lite, open_store(pg_url) as server:
        for store in (lite, server):
            count = len(put(store, DOC))
            put(store, copy)
        query = unit_vectors(count)[0]  # the first chunk's vector: it and its copy score 1
        for k in (1, 2, 3, 4):
            ranked = [[key for key, _ in store.dense(query, k)] for store in (lite, server)]
            assert ranked[0] == ranked[1], k
            assert ranked[0][:2] == [1, count + 1][:k]
        assert lite.dense(query, 4)[:1] == lite.dense(query, 1)


def test_hnsw_search_at_the_threshold(twin_stores, embedder):
    _, postgres = twin_stores
    store = postgres.store
    exact = store.dense(embedder.embed(["checked baggage weight"])[0], 10)
    everything = store.dense(embedder.embed(["checked baggage weight"])[0], 300)
    store.settings = StoreSettings(hnsw_threshold=1, hnsw_ef_search=200)
    try:
        assert store.dense_method() == "hnsw"
        approximate = store.dense(embedder.embed(["checked baggage weight"])[0], 10)
        # past pgvector's ef_search bound of 1,000 (k x WINDOW_CANDIDATES): an iterative scan, not an error
        wide = store.dense(embedder.embed(["checked baggage weight"])[0], 300)
    finally:
        store.settings = StoreSettings()
    assert len({k for k, _ in approximate} & {k for k, _ in exact}) >= 9
    assert 300 * WINDOW_CANDIDATES > 1000
    assert len(wide) == len(everything)
    assert len({k for k, _ in wide} & {k for k, _ in everything}) >= 0.9 * len(everything)


WRITER = textwrap.dedent(
    """
    import sys
    from chunkwise.kb import KnowledgeBase
    from chunkwise.models import Models
    from tests.support.fakes import HashEmbedder

    with KnowledgeBase(sys.argv[1], models=Models(embedder=HashEmbedder())) as kb:
        report = kb.add(sys.argv[2:])
    print(len(report.added), len(report.skipped), len(report.failed))
    """
)


def snapshot(url: str) -> tuple[dict[str, int], list[dict[str, object]], dict[str, list[tuple[int, int]]]]:
    """What a store holds, without its row keys: counts, documents, and every document's chunk spans."""
    with open_store(url, create=False) as store:
        assert store.check() == []
        docs = store.documents()
        return (
            store.counts(),
            [d.to_dict() for d in docs],
            {d.doc_id: store.chunk_spans(d.doc_id) for d in docs},
        )


def test_four_concurrent_writers_store_what_one_serial_writer_does(tmp_path, pg_server):
    files = []
    for i in range(16):
        path = tmp_path / "docs" / f"note{i:02}.md"
        path.parent.mkdir(exist_ok=True)
        body = "\n\n".join(f"Paragraph {j} of note {i}: item{i}x{j} travels with bag{j}." for j in range(30))
        path.write_text(f"# Note {i}\n\n{body}\n")
        files.append(str(path))
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    root = Path(__file__).resolve().parent.parent
    concurrent = pg_server.url("concurrent")
    sets = [files[(4 * w) % 16 :][:10] + files[: max(0, 4 * w - 6)] for w in range(4)]  # overlapping
    assert len({f for s in sets for f in s}) == 16
    env = {**os.environ, "PYTHONPATH": str(root)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), concurrent, *chosen], env=env, stdout=subprocess.PIPE, text=True
        )
        for chosen in sets
    ]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    added = sum(int(out.split()[0]) for out in outputs)
    assert added == 16  # each document was added by exactly one writer; the others skipped it
    serial = pg_server.url("serial")
    subprocess.run([sys.executable, str(script), serial, *files], env=env, check=True, capture_output=True)
    assert snapshot(concurrent) == snapshot(serial)


def test_reads_do_not_wait_for_a_writer(pg_url, pg_server):
    with open_store(pg_url) as store:
        put(store, DOC)
        schema = parse(pg_url).schema
        results: list[int] = []
        with pg_server.admin() as writer:
            writer.autocommit = False
            # an ingest in flight: the statistics row and a document row locked, uncommitted rows added
            writer.execute(f'UPDATE "{schema}".stats SET chunks = chunks WHERE id = 1')
            writer.execute(f"DELETE FROM \"{schema}\".documents WHERE doc_id = 'guide.md'")

            def read() -> None:
                results.append(len(store.bm25("refunds", 5)))
                results.append(len(store.dense(np.ones(8, dtype=np.float32) / 8**0.5, 3)))
                results.append(store.counts()["documents"])

            thread = threading.Thread(target=read)
            thread.start()
            thread.join(60)
            finished = not thread.is_alive()
            writer.rollback()
        thread.join()
        assert finished
        assert results == [1, 3, 1]  # the last committed state


def test_schema_versions_missing_and_read_only_store(pg_url, pg_server):
    for options in ({"create": False}, {"read_only": True}):
        with pytest.raises(StoreError, match="no knowledge base here"):
            open_store(pg_url, **options)
    open_store(pg_url).close()
    with open_store(pg_url, read_only=True, damaged_ok=True) as store:
        assert store.counts()["documents"] == 0
        assert store.check() == []
        for write in (lambda: store.set_meta("key", "value"), store.repair, lambda: put(store, DOC)):
            with pytest.raises(StoreError, match="opened read-only"):
                write()
    with pg_server.admin() as conn:
        conn.execute(f"UPDATE \"{parse(pg_url).schema}\".meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="schema 99 is newer than the supported 4"):
        open_store(pg_url)


def test_schema_1_is_upgraded_with_a_generation_and_windows(pg_url, pg_server):
    """A store of schema 1 (no generation in its statistics, no windows table) is refused read-only and
    left as it is; opened with write access it gets both, and is searched; its next ingest stores
    passage windows."""
    with open_store(pg_url) as store:
        put(store, DOC)
    schema = parse(pg_url).schema
    with pg_server.admin() as conn:
        conn.execute(
            f'ALTER TABLE "{schema}".stats DROP COLUMN generation, DROP COLUMN epoch, DROP COLUMN windows'
        )
        conn.execute(f'DROP TABLE "{schema}".windows')
        conn.execute(f"UPDATE \"{schema}\".meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="store schema 1 is older than the supported 4: an ingest"):
        open_store(pg_url, read_only=True)  # a search never writes, an upgrade's DDL neither
    with pg_server.admin() as conn:
        assert conn.execute("SELECT to_regclass(%s)", (f'"{schema}".windows',)).fetchone()[0] is None
        version = conn.execute(f"SELECT value FROM \"{schema}\".meta WHERE key = 'schema_version'").fetchone()
        assert version == ("1",)
    with open_store(pg_url, StoreSettings(bm25s_threshold=1)) as store:
        assert store.meta("schema_version") == "4"
        assert store.bm25("refunds", 3)
        assert store.dense(unit_vectors(1, seed=5)[0], 2)
        assert store.check() == []
        put(store, DOC, fingerprint="f2", windowed=True)
        assert store.check() == []
    with pg_server.admin() as conn:
        assert conn.execute(f'SELECT count(*) FROM "{schema}".windows').fetchone()[0] > 0


def test_a_read_only_opening_never_creates_the_pgvector_extension(pg_server):
    """A store whose database lost pgvector is refused read-only, naming the extension, and the extension
    is left absent; an opening with write access creates it again."""
    with pg_server.admin() as conn:
        conn.execute("CREATE DATABASE lostext")
    url = pg_server.url("kb", db="lostext")
    open_store(url).close()
    with pg_server.admin("lostext") as conn:
        conn.execute("DROP EXTENSION vector")
    with pytest.raises(StoreExtensionError, match=r"'vector'\) is missing .* a read-only opening does not"):
        open_store(url, read_only=True)
    extension = "SELECT count(*) FROM pg_extension WHERE extname = 'vector'"
    with pg_server.admin("lostext") as conn:
        assert conn.execute(extension).fetchone() == (0,)
    with open_store(url) as store:
        assert store.counts()["documents"] == 0
    with pg_server.admin("lostext") as conn:
        assert conn.execute(extension).fetchone() == (1,)


def test_embedder_name_dimension_and_version_are_recorded_and_checked(pg_url, pg_server):
    """As in SQLite: ingest records the embedder, a search only checks it (on a read-only store too), and
    another name, dimension or recorded version is refused; a store recorded without a version is
    checked by name and dimension."""
    with open_store(pg_url) as store:
        assert store.dense(np.ones(8, dtype=np.float32), 3) == []  # no vector table before a record
        assert_embedder_recorded_and_checked(store)
    with open_store(pg_url, read_only=True) as store:  # a search on a read-only store checks
        store.check_embedder("local:a", 8, "pkg==1.0", record=False)
        with pytest.raises(ConfigError, match="built with embedder"):
            store.check_embedder("local:b", 8, "pkg==1.0", record=False)
    with pg_server.admin() as conn:
        conn.execute(f"DELETE FROM \"{parse(pg_url).schema}\".meta WHERE key = 'embedder_version'")
    with open_store(pg_url, read_only=True) as store:
        store.check_embedder("local:a", 8, "pkg==2.0", record=False)
        with pytest.raises(ConfigError, match=r"built with embedder 'local:a' \(8-d\)"):
            store.check_embedder("local:a", 16, "pkg==2.0", record=False)


def test_a_read_only_store_without_an_embedder_is_searched_not_recorded(pg_url):
    """A search of a store that holds no vectors yet passes; an ingest into it is refused."""
    open_store(pg_url).close()
    with open_store(pg_url, read_only=True) as store:
        store.check_embedder("local:a", 8, "pkg==1.0", record=False)
        with pytest.raises(StoreError, match="opened read-only"):
            store.check_embedder("local:a", 8, "pkg==1.0")
        assert store.meta("embedder") is None


def test_check_finds_and_repair_rebuilds_derived_rows(pg_url, pg_server):
    with open_store(pg_url) as store:
        put(store, DOC, size=30)
        schema = parse(pg_url).schema
        with pg_server.admin() as conn:
            conn.execute(f"DELETE FROM \"{schema}\".postings WHERE term = 'refund'")
            conn.execute(f'UPDATE "{schema}".stats SET terms = terms + 5')
            conn.execute(f'UPDATE "{schema}".chunks SET start = start + 1 WHERE ordinal = 0')
        problems = store.check()
        assert any("postings disagree" in p for p in problems)
        assert any("statistics" in p for p in problems)
        assert any("differs from their document" in p for p in problems)
        done = store.repair()
        assert done[0].startswith("rebuilt the BM25 postings")
        assert store.check() == ["1 chunks whose text differs from their document at their offsets"]
        assert store.bm25("refund", 3)


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_a_nul_character_fails_its_document_alone_in_either_store(store, tmp_path, embedder, request):
    """PostgreSQL cannot store a NUL in text: a document holding one in its text, title or metadata
    (built by hand, or parsed from a string, which ``chunkwise.parse`` keeps verbatim) used to end the
    whole batch there with psycopg's ``DataError``, leaving the next documents unstored, while SQLite
    stored it. Both stores now refuse it by name, store nothing of it, and go on with the batch."""
    location = tmp_path / "kb" if store == "sqlite" else request.getfixturevalue("pg_url")
    bad = [
        text_document("text.txt", "Gates \x00 close."),
        dataclasses.replace(text_document("title.txt", "Gates close."), title="Ga\x00tes"),
        dataclasses.replace(text_document("meta.txt", "Gates close."), metadata={"tags": ["a", "b\x00"]}),
        chunkwise.parse("Lounges\x00 open early.", doc_id="parsed.txt"),
    ]
    good = text_document("good.txt", "Gates close twenty minutes before departure.")
    with KnowledgeBase(location, models=Models(embedder=embedder)) as kb:
        report = kb.add_documents([*bad, good])
        assert report.added == ["good.txt"]
        assert report.failed == [
            (
                "text.txt",
                "the document's text holds a NUL character at character 6 (not text: no store is given one)",
            ),
            (
                "title.txt",
                "the document's title holds a NUL character at character 2 (not text: no store is given one)",
            ),
            (
                "meta.txt",
                "the document's metadata['tags'][1] holds a NUL character at character 1"
                " (not text: no store is given one)",
            ),
            (
                "parsed.txt",
                "the document's text holds a NUL character at character 7 (not text: no store is given one)",
            ),
        ]
        assert [info.doc_id for info in kb.documents()] == ["good.txt"]
        assert kb.store.counts()["documents"] == 1
        assert kb.store.check() == []


def test_malformed_urls_are_typed_errors():
    for url, reason in [
        (f"postgresql://app:{APP_PASSWORD}@localhost:notaport/db", "malformed"),
        (f"postgresql://app:{APP_PASSWORD}@localhost/db?schema=Bad-Name", "not a plain identifier"),
        # PostgreSQL's own names: pg_* raised ReservedName as a traceback, information_schema was used
        ("postgresql://app@localhost/db?schema=pg_foo", "schema 'pg_foo' is a name PostgreSQL keeps"),
        ("postgresql://app@localhost/db?schema=pg_catalog", "a name PostgreSQL keeps for its own schemas"),
        ("postgresql://app@localhost/db?schema=information_schema", "a name PostgreSQL keeps"),
        ("postgresql://", "needs a host or a database"),
        ("mysql://app@localhost/db", "unknown store scheme"),
    ]:
        with pytest.raises(StoreURLError, match=reason) as caught:
            open_store(url)
        assert APP_PASSWORD not in str(caught.value)


def test_a_bad_connect_timeout_in_the_url_fails_at_once(pg_server, monkeypatch):
    """The store's first connection set its own connect_timeout over the URL's, so ``connect_timeout=abc``
    went unread there, and the pool retried the URL for a minute before blaming the network."""
    with pytest.raises(StoreURLError, match=r"libpq cannot read the URL \(.*connect_timeout"):
        open_store(pg_server.url("timeout") + "&connect_timeout=abc")
    with monkeypatch.context() as env:  # libpq's environment variable, likewise
        env.setenv("PGCONNECT_TIMEOUT", "abc")
        with pytest.raises(StoreURLError, match=r"libpq cannot read the URL \(.*connect_timeout"):
            open_store(pg_server.url("timeout"))
    # a good value is the one the connections use
    url = pg_server.url("timeout") + "&connect_timeout=5"
    with open_store(url) as store, store._pool.connection() as conn:
        assert "connect_timeout=5" in conn.info.dsn


def test_a_schema_the_role_may_not_use_is_one_error_not_a_traceback(pg_server):
    """A production role without rights on the schema: psycopg's InsufficientPrivilege escaped as a
    traceback from every command; it is a StoreError naming the store and the refusal now."""
    with open_store(pg_server.url("guarded", db="appdb")) as store:  # made by the superuser
        assert store.counts()["documents"] == 0
    with pg_server.admin("appdb") as conn:
        conn.execute("REVOKE ALL ON SCHEMA guarded FROM PUBLIC")
    url = pg_server.url("guarded", "app", APP_PASSWORD, db="appdb")
    for read_only in (False, True):
        with pytest.raises(StoreError, match="the database refused the role: permission denied for schema"):
            open_store(url, read_only=read_only)
    with pg_server.admin("appdb") as conn:  # the schema and its meta table, not the documents
        conn.execute("GRANT USAGE ON SCHEMA guarded TO app")
        conn.execute("GRANT SELECT ON guarded.meta TO app")
    refused = "the database refused the role: permission denied for table"
    with open_store(url, read_only=True) as store, pytest.raises(StoreError, match=refused):
        store.documents()


def test_libpq_parameters_reach_the_server_as_written(pg_url):
    """``options=-c%20statement_timeout%3D12345`` reached libpq re-encoded with a ``+`` for each space,
    which libpq keeps as a plus sign: the server refused ``+statement_timeout``. Each setting now applies
    on the store's connections."""
    options = quote("-c statement_timeout=12345 -c lock_timeout=2s", safe="")
    with open_store(f"{pg_url}&options={options}") as store:
        assert store.counts()["documents"] == 0
        with store._pool.connection() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone() == ("12345ms",)
            assert conn.execute("SHOW lock_timeout").fetchone() == ("2s",)


#: Characters a query value may hold unescaped, ``+`` among them (libpq reads it as a plus sign).
_QUERY_SAFE = "-._~!$'()*,;:@/?+"


@settings(max_examples=200, deadline=None)
@given(
    value=st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
    safe=st.sets(st.sampled_from(_QUERY_SAFE)),
)
def test_any_parameter_value_reaches_libpq_unchanged(value, safe):
    """Whatever a libpq parameter holds, escaped as much or as little as a URL allows, libpq reads from
    the parsed location exactly the value written (decoded once); the shown form is the URL as written."""
    from psycopg.conninfo import conninfo_to_dict

    url = f"postgresql://app@localhost:5433/db?options={quote(value, safe=''.join(safe))}&schema=kb_1"
    where = parse(url)
    assert where.schema == "kb_1"
    assert where.display == url
    assert conninfo_to_dict(where.conninfo) == {
        "user": "app",
        "host": "localhost",
        "port": "5433",
        "dbname": "db",
        "options": value,
    }


def test_credentials_from_the_url_pgpassword_and_pgpass(tmp_path, pg_server, monkeypatch):
    with open_store(pg_server.url("creds", "app", APP_PASSWORD, db="appdb")) as store:
        assert APP_PASSWORD not in store.location
    monkeypatch.setenv("PGPASSWORD", APP_PASSWORD)
    open_store(pg_server.url("creds", "app", db="appdb"), create=False).close()
    monkeypatch.delenv("PGPASSWORD")
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"*:*:appdb:app:{APP_PASSWORD}\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    open_store(pg_server.url("creds", "app", db="appdb"), create=False).close()
    monkeypatch.delenv("PGPASSFILE")
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    with pytest.raises(StoreAuthError):
        open_store(pg_server.url("creds", "app", db="appdb"), create=False)


def test_bad_servers_are_typed_errors_without_the_password(pg_server):
    wrong = "Wr0ng-" + APP_PASSWORD
    cases = [
        (f"postgresql://app:{APP_PASSWORD}@127.0.0.1:1/appdb", StoreUnavailableError, "cannot reach"),
        (pg_server.url("x", "app", wrong, db="appdb"), StoreAuthError, "refused the credentials"),
        (pg_server.url("x", "app", APP_PASSWORD, db="noext"), StoreExtensionError, "pgvector"),
    ]
    for url, error, reason in cases:
        with pytest.raises(error, match=reason) as caught:
            open_store(url)
        assert APP_PASSWORD not in str(caught.value)
        assert wrong not in str(caught.value)


def test_cli_bad_input_is_one_line_exit_2_and_never_shows_the_password(tmp_path, pg_server):
    wrong = "Wr0ng-" + APP_PASSWORD
    newer = pg_server.url("newer")
    open_store(newer).close()
    with pg_server.admin() as conn:
        conn.execute("UPDATE newer.meta SET value = '7' WHERE key = 'schema_version'")
    urls = {
        "malformed PostgreSQL URL": f"postgresql://app:{APP_PASSWORD}@localhost:99999999/appdb",
        "cannot reach": f"postgresql://app:{APP_PASSWORD}@127.0.0.1:1/appdb",
        "refused the credentials": pg_server.url("x", "app", wrong, db="appdb"),
        "pgvector": pg_server.url("x", "app", APP_PASSWORD, db="noext"),
        "newer than the supported": newer,
    }
    for reason, url in urls.items():
        done = run_chunkwise("ingest", str(tmp_path), "--kb", url, cwd=tmp_path)
        assert done.returncode == 2, (reason, done.stderr)
        assert done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert done.stderr.startswith("error: ")
        assert reason in done.stderr
        for secret in (APP_PASSWORD, wrong):
            assert secret not in done.stderr
    written = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert not any(APP_PASSWORD.encode() in data for data in written)
    assert APP_PASSWORD not in pg_server.log.read_text(errors="replace")


def test_samples_through_the_cli_same_hits_as_sqlite(tmp_path, pg_server):
    """The README's commands: ingest samples/docs into PostgreSQL (password in the URL) and into SQLite,
    then search and ask give the same hits and answer; ``kb check`` and ``kb repair`` take the URL, and a
    server over it returns the same hits; the password appears in no output, file or log."""
    root = Path(__file__).resolve().parent.parent
    url = pg_server.url("samples", "app", APP_PASSWORD, db="appdb")
    cache = tmp_path / "cache"
    outputs = []
    results = {}
    scores: dict[str, list[float]] = {}
    for name, kb in (("sqlite", str(tmp_path / "kb")), ("postgres", url)):
        ingest = run_chunkwise("ingest", str(root / "samples" / "docs"), "--kb", kb, "--json", cache=cache)
        assert ingest.returncode == 0, ingest.stderr
        question = "What should I do if my baggage is damaged?"
        search = run_chunkwise("search", question, "--kb", kb, "-k", "5", "--json", cache=cache)
        ask = run_chunkwise("ask", question, "--kb", kb, "--json", cache=cache)
        assert search.returncode == 0, search.stderr
        assert ask.returncode == 0, ask.stderr
        outputs += [ingest, search, ask]
        hits = json.loads(search.stdout)["hits"]
        answer = json.loads(ask.stdout)
        results[name] = (
            [h["chunk_id"] for h in hits],
            answer["answer"],
            [(c["doc_id"], c["start"], c["end"]) for c in answer["citations"]],
        )
        scores[name] = [h["score"] for h in hits]
    assert results["sqlite"] == results["postgres"]
    # a passage window's cosine comes from each engine's own float arithmetic (numpy, pgvector)
    assert scores["sqlite"] == pytest.approx(scores["postgres"], abs=1e-5)
    assert json.loads(outputs[3].stdout)["counts"]["documents"] == 6
    check = run_chunkwise("kb", "check", "--kb", url, cache=cache)
    assert (check.returncode, check.stdout.split(",")[0]) == (0, "ok: 6 documents"), check.stderr
    repair = run_chunkwise("kb", "repair", "--kb", url, "--json", cache=cache)
    assert repair.returncode == 0, repair.stderr
    assert json.loads(repair.stdout)["problems"] == []
    outputs += [check, repair]
    with running_app(create_app(url)) as base, httpx.Client(base_url=base, timeout=600) as http:
        served = http.post("/v1/search", json={"query": question, "k": 5}).raise_for_status().json()
    assert [h["chunk_id"] for h in served["hits"]] == results["postgres"][0]
    assert [h["score"] for h in served["hits"]] == pytest.approx(scores["postgres"], abs=1e-6)
    for done in outputs:
        assert APP_PASSWORD not in done.stdout + done.stderr
    assert not any(APP_PASSWORD.encode() in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    with pg_server.admin("appdb") as conn:
        stored = " ".join(str(row) for row in conn.execute("SELECT key, value FROM samples.meta"))
    assert APP_PASSWORD not in stored
    assert APP_PASSWORD not in pg_server.log.read_text(errors="replace")


def test_pg_start_and_stop_a_local_server(tmp_path):
    directory = Path(tempfile.mkdtemp(prefix="chunkwise-pg-cli-")) / "data"
    try:
        started = run_chunkwise("pg", "start", str(directory))
        assert started.returncode == 0, started.stderr
        url = started.stdout.strip() + "&schema=cli"
        with open_store(url) as store:
            put(store, DOC)
            assert store.counts()["documents"] == 1
        stopped = run_chunkwise("pg", "stop", str(directory))
        assert stopped.stderr.startswith("stopped")
        with pytest.raises(StoreUnavailableError):
            open_store(url)
        assert run_chunkwise("pg", "stop", str(directory)).stderr.startswith("not running")
    finally:
        run_chunkwise("pg", "stop", str(directory))
        shutil.rmtree(directory.parent, ignore_errors=True)


def test_store_url_from_the_configuration_never_shows_its_password(pg_server):
    from chunkwise.config import from_dict

    url = pg_server.url("from_config", "app", APP_PASSWORD, db="appdb")
    config = from_dict({"store": {"url": url, "pool_size": 2, "hnsw_ef_search": 64}})
    with KnowledgeBase(config=config, models=Models(embedder=HashEmbedder())) as kb:
        assert kb.store.settings.pool_size == 2
        assert kb.store.settings.hnsw_ef_search == 64
        kb.add_documents([DOC])
        assert kb.store.counts()["documents"] == 1
        recorded = kb.store.meta("pipeline_config") or ""
    assert "from_config" in json.dumps(config.to_dict())
    for text in (recorded, json.dumps(config.to_dict()), json.dumps(config.to_stored())):
        assert APP_PASSWORD not in text
