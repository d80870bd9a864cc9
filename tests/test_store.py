"""The knowledge-base store: round trips, BM25, dense search (exact and HNSW), replace and delete,
readers beside a writer, and atomic ingest under SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.errors import ConfigError, SchemaVersionError
from chunkwise.store import StoreSettings
from chunkwise.store.dense import DenseIndex, unit_means
from chunkwise.store.lexical import LexicalIndex
from chunkwise.store.sqlite import SQLiteStore, fts_query
from tests.support.documents import doc_from_markdown_lines
from tests.support.store import DOC, fixed_chunks, put, requires_usearch, unit_vectors


def test_round_trip_and_consistency(tmp_path):
    with SQLiteStore(tmp_path / "kb") as store:
        chunks = put(store, DOC)
        assert store.document("guide.md").to_dict() == DOC.to_dict()
        assert store.chunk_spans("guide.md") == [(c.start, c.end) for c in chunks]
        assert store.document_text("guide.md", 10, 30) == DOC.text[10:30]
        assert store.counts() == {"documents": 1, "chunks": len(chunks), "vectors": len(chunks)}
        assert store.state("guide.md") == (DOC.content_hash, "f1")
        assert store.check() == []
        [info] = store.documents()
        assert (info.doc_id, info.chunks, info.title) == ("guide.md", len(chunks), "Travel guide")


def test_bm25_finds_the_chunk_and_escapes_the_query(tmp_path):
    with SQLiteStore(tmp_path / "kb") as store:
        chunks = put(store, DOC, size=60)
        hits = store.bm25("how long do refunds take?", 3)
        best = store.chunks([hits[0][0]])[0]
        assert "Refunds take" in best.text
        assert hits[0][1] > 0
        assert best.header == "Document: guide.md"
        assert chunks[best.ordinal].text == best.text
        assert store.bm25('"weird" OR NEAR(', 3) == []  # no content words left, and no syntax error
        assert fts_query('say "hi" AND x"y') == '"sai" OR "hi" OR "x" OR "y"'  # Porter stems
        assert store.bm25("refund", 3)  # Porter stemming: refund matches Refunds


def test_bm25s_sidecar_agrees_and_follows_writes(tmp_path):
    with SQLiteStore(tmp_path / "kb", StoreSettings(bm25s_threshold=None)) as fts:
        put(fts, DOC, size=60)
        expected = fts.bm25("how long do refunds take", 3)[0][0]
    with SQLiteStore(tmp_path / "kb", StoreSettings(bm25s_threshold=1)) as store:
        assert store.bm25("how long do refunds take", 3)[0][0] == expected
        assert (tmp_path / "kb" / "bm25s.json").is_file()
        assert store.bm25("zebra", 3) == []
        put(store, doc_from_markdown_lines("zoo.md", "# Zoo\nA zebra lives here."), size=60)
        [(key, score)] = store.bm25("zebra", 3)
        assert store.chunks([key])[0].doc_id == "zoo.md"
    with SQLiteStore(
        tmp_path / "kb", StoreSettings(bm25s_threshold=1)
    ) as again:  # loads the saved index of this generation
        assert again.lexical_index().generation == again.generation()
        assert again.bm25("zebra", 3) == [(key, score)]


def test_check_embedder_refuses_another_model(tmp_path):
    with SQLiteStore(tmp_path / "kb") as store:
        store.check_embedder("a", 8)
        store.check_embedder("a", 8)
        with pytest.raises(Exception, match="built with embedder 'a'"):
            store.check_embedder("b", 8)


def test_two_ingests_on_an_empty_store_cannot_both_record_their_embedder(tmp_path):
    """An ingest that finds no embedder recorded, while another process holds the writer lock to record
    its own, checks against that one once it gets the lock, instead of overwriting it."""
    with SQLiteStore(tmp_path / "kb") as store:
        refused: list[Exception] = []

        def check() -> None:
            try:
                store.check_embedder("b", 16)
            except ConfigError as exc:
                refused.append(exc)

        other = sqlite3.connect(store.path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # the other ingest holds the writer lock, about to record
            checking = threading.Thread(target=check)
            checking.start()
            time.sleep(0.5)  # this one has found the embedder missing and waits for the lock
            other.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [("embedder", "a"), ("dim", "8")])
            other.execute("COMMIT")
        finally:
            other.close()
        checking.join()
        assert len(refused) == 1
        assert "built with embedder 'a'" in str(refused[0])
        assert (store.meta("embedder"), store.meta("dim")) == ("a", "8")


def test_replace_and_delete(tmp_path):
    with SQLiteStore(tmp_path / "kb") as store:
        put(store, DOC, size=40)
        before = store.generation()
        chunks = put(store, DOC, size=25, fingerprint="f2")
        assert store.generation() == before + 1
        assert store.counts()["chunks"] == len(chunks)
        assert store.chunk_spans("guide.md") == [(c.start, c.end) for c in chunks]
        assert store.check() == []
        assert store.delete("guide.md")
        assert not store.delete("guide.md")
        assert store.counts() == {"documents": 0, "chunks": 0, "vectors": 0}
        assert store.bm25("refunds", 3) == []
        assert store.check() == []


def test_only_a_write_that_changes_something_moves_the_generation(tmp_path):
    """Readers reload their vectors (and the HNSW graph is rebuilt) when the generation moves: a delete of
    a document not stored and a put of what is stored already change nothing, and leave it."""
    with SQLiteStore(tmp_path / "kb") as store:
        put(store, DOC)
        before = store.generation()
        assert not store.delete("absent.md")
        assert store.generation() == before
        chunks = fixed_chunks(DOC, 40)
        status = store.put(
            DOC, chunks, [""] * len(chunks), unit_vectors(len(chunks), seed=5), fingerprint="f1"
        )
        assert status == "skipped"  # stored meanwhile, with the same content and fingerprint
        assert store.generation() == before
        assert store.delete("guide.md")
        assert store.generation() == before + 1


def test_dense_exact_matches_numpy(tmp_path):
    with SQLiteStore(tmp_path / "kb") as store:
        put(store, DOC, size=10)
        index = store.dense_index()
        query = unit_vectors(1, seed=7)[0]
        scores = index.matrix @ query
        expected = [int(index.keys[i]) for i in np.argsort(-scores)[:5]]
        assert [key for key, _ in index.search(query, 5)] == expected
        assert store.dense_method() == "exact"


@requires_usearch
def test_hnsw_recall_at_10(tmp_path):
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(50, 32))
    data = (centres[rng.integers(0, 50, 5000)] + 0.3 * rng.normal(size=(5000, 32))).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    keys = np.arange(1, 5001, dtype=np.int64)
    index = DenseIndex(keys, data, generation=3, directory=tmp_path)
    queries = data[rng.integers(0, 5000, 100)] + 0.05 * rng.normal(size=(100, 32)).astype(np.float32)
    recall = np.mean(
        [
            len({k for k, _ in index.search(q, 10, approximate=True)} & {k for k, _ in index.exact(q, 10)})
            / 10
            for q in queries
        ]
    )
    assert recall >= 0.95
    assert (tmp_path / "hnsw.usearch").is_file()
    reloaded = DenseIndex(keys, data, generation=3, directory=tmp_path)
    assert [k for k, _ in reloaded.search(queries[0], 10, approximate=True)] == [
        k for k, _ in index.search(queries[0], 10, approximate=True)
    ]


def windowed_chunks(
    seed: int,
) -> tuple[np.random.Generator, np.ndarray, np.ndarray, np.ndarray]:
    """600 chunks of 4 windows each, spread around the chunk's direction as a text's are (cosine about
    0.8): the random generator (for more draws), the chunk keys, each window's chunk key, the windows."""
    rng = np.random.default_rng(seed)
    keys = np.arange(1, 601, dtype=np.int64)
    owners = np.repeat(keys, 4)
    directions = np.repeat(rng.normal(size=(len(keys), 32)), 4, axis=0)
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    windows = (directions + 0.7 * rng.normal(size=directions.shape) / np.sqrt(32)).astype(np.float32)
    windows /= np.linalg.norm(windows, axis=1, keepdims=True)
    return rng, keys, owners, windows


@requires_usearch
def test_above_the_threshold_windows_are_found_through_their_pooled_vectors(tmp_path):
    """With windows the graph of the chunks' vectors proposes candidates, scored exactly by their best
    vector. A chunk whose vector is the mean of its windows (``embed_whole = false``), its windows
    spread around its direction as a text's are (cosine about 0.8), is proposed for a query equal to
    any one of its windows among 600 chunks, and every hit's score is its exact best cosine."""
    rng, keys, owners, windows = windowed_chunks(4)
    pooled = windows.reshape(len(keys), 4, 32).mean(axis=1)
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    index = DenseIndex(keys, pooled, generation=1, directory=tmp_path, windows=(owners, windows))
    for pick in rng.integers(0, owners.size, 20):
        found = index.search(windows[pick], 10, approximate=True)
        assert found[0] == (int(owners[pick]), pytest.approx(1.0, abs=1e-5))
        exact = dict(index.exact(windows[pick], len(keys)))
        assert [score for _, score in found] == sorted((score for _, score in found), reverse=True)
        for key, score in found:
            assert score == pytest.approx(exact[key], abs=1e-5)
    assert (tmp_path / "hnsw.usearch").exists()
    at_one = StoreSettings(hnsw_threshold=1)
    with SQLiteStore(tmp_path / "windowed", at_one) as windowed:
        put(windowed, DOC, windowed=True)
        assert windowed.dense_method() == "hnsw"
        assert "rebuilt the HNSW graph" in windowed.repair()


@requires_usearch
def test_the_graph_leads_to_windows_even_when_chunks_were_embedded_whole(tmp_path):
    """With the whole chunk embedded beside its windows (``embed_whole = true``, the ``quality``
    preset) the stored vector need not lie near the windows: here it is unrelated to them. The graph is
    built from each chunk's windows' mean all the same, so a query equal to one window finds its chunk
    first (proposals by the whole vectors would reach it about one time in six); a graph stamped before
    that rule (no variant) is rebuilt, not loaded."""
    rng, keys, owners, windows = windowed_chunks(5)
    whole = rng.normal(size=(len(keys), 32)).astype(np.float32)
    whole /= np.linalg.norm(whole, axis=1, keepdims=True)
    index = DenseIndex(keys, whole, generation=1, directory=tmp_path, windows=(owners, windows))
    for pick in rng.integers(0, owners.size, 20):
        found = index.search(windows[pick], 10, approximate=True)
        assert found[0] == (int(owners[pick]), pytest.approx(1.0, abs=1e-5))
    stamp = tmp_path / "hnsw.json"
    body = json.loads(stamp.read_text(encoding="utf-8"))
    assert body["variant"] == "pooled windows"
    del body["variant"]
    stamp.write_text(json.dumps(body), encoding="utf-8")
    reopened = DenseIndex(keys, whole, generation=1, directory=tmp_path, windows=(owners, windows))
    assert reopened.search(windows[0], 1, approximate=True)[0][0] == 1
    assert json.loads(stamp.read_text(encoding="utf-8"))["variant"] == "pooled windows"


@requires_usearch
@pytest.mark.parametrize("worker_saves", ["before the graph moves in", "between the move and the stamp"])
def test_graph_saves_that_interleave_neither_fail_nor_stamp_another_graph(
    tmp_path, monkeypatch, worker_saves
):
    """Server workers sharing a store may save the graph at once, one of them a generation behind. Each
    builds under a name of its own, so one's move never takes the other's file; and a stamp vouches only
    for the bytes its writer built, so a lagging worker's graph moved in just before another's stamp is
    built again by the next process, not loaded as the current generation's."""
    rng = np.random.default_rng(0)
    data = rng.normal(size=(60, 16)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    keys = np.arange(1, 61, dtype=np.int64)
    lagging = DenseIndex(keys[:50], data[:50], generation=3, directory=tmp_path)  # read before the write
    current = DenseIndex(keys, data, generation=4, directory=tmp_path)
    real_replace, moves = os.replace, []

    def replace(src, dst):
        moves.append(dst)
        if len(moves) == 1 and worker_saves == "before the graph moves in":
            run_in_thread(lagging.graph)
        real_replace(src, dst)
        if len(moves) == 1 and worker_saves == "between the move and the stamp":
            run_in_thread(lagging.graph)

    monkeypatch.setattr(os, "replace", replace)
    assert current.search(data[0], 1, approximate=True)[0][0] == 1
    monkeypatch.undo()
    later = DenseIndex(keys, data, generation=4, directory=tmp_path)  # the next process
    found = [later.search(vector, 1, approximate=True)[0][0] for vector in data]
    assert found == keys.tolist()
    assert not list(tmp_path.glob("*.tmp"))


def test_windows_stored_apart_from_their_chunks_other_windows_still_score_it(tmp_path):
    """A store may hand over a chunk's windows in any order (``put`` does not require them together):
    each of a chunk's windows still scores it, in exact search and in ``window_scores`` alike."""
    e = np.eye(4, dtype=np.float32)
    keys, wholes = np.array([1, 2], dtype=np.int64), e[[1, 1]]
    owners = np.array([1, 2, 1], dtype=np.int64)  # chunk 1's windows on either side of chunk 2's
    index = DenseIndex(keys, wholes, generation=1, directory=tmp_path, windows=(owners, e[[2, 3, 0]]))
    for query, chunk in ((e[2], 1), (e[0], 1), (e[3], 2)):
        assert dict(index.exact(query, 2))[chunk] == pytest.approx(1.0)
        assert index.window_scores(query, [chunk]) == {chunk: pytest.approx(1.0)}
    assert index.exact(e[0], 0) == index.search(e[0], 0, approximate=True) == index.exact(e[0], -1) == []


def test_bm25s_saves_that_interleave_neither_fail_nor_leave_their_scratch(tmp_path, monkeypatch):
    """Two workers saving the bm25s folder at once: the one whose move comes second finds the other's
    folder in place (a folder cannot replace one that holds files), keeps its index in memory and drops
    its copy; the saved one serves the next process."""
    keys = np.arange(1, 41, dtype=np.int64)
    rows = [(int(key), f"term{key} common") for key in keys]
    real_replace, moves = os.replace, []

    def replace(src, dst):
        moves.append(dst)
        if len(moves) == 1:  # another worker saves the same index just before this one moves its own in
            run_in_thread(lambda: LexicalIndex.build(tmp_path, 1, rows))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    first = LexicalIndex.build(tmp_path, 1, rows)
    monkeypatch.undo()
    assert first.search("term7", 1)[0][0] == 7
    later = LexicalIndex.saved(tmp_path, 1, keys)
    assert later is not None  # the saved index is loaded, not rebuilt
    assert later.search("term9", 1)[0][0] == 9
    assert not list(tmp_path.glob("*.tmp"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=40), st.integers(0, 2**32 - 1))
def test_unit_means_is_each_owners_normalised_mean_in_any_row_order(owners, seed):
    """What ingest pools a chunk's vector with and the graph is built from: for owners in any order, each
    owner's rows summed (their mean points the same way) and scaled to unit length; zeros for none."""
    vectors = np.random.default_rng(seed).normal(size=(len(owners), 4)).astype(np.float32)
    expected = np.zeros((7, 4))
    for row, owner in enumerate(owners):
        expected[owner] += vectors[row]
    lengths = np.linalg.norm(expected, axis=1, keepdims=True)
    expected = np.divide(expected, lengths, out=np.zeros_like(expected), where=lengths > 1e-12)
    assert np.allclose(unit_means(vectors, owners, 7), expected, atol=1e-5)


def run_in_thread(work) -> None:
    """Run ``work`` in another thread (another worker) and wait for it."""
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()


def test_second_store_sees_writes_and_reads_during_a_write(tmp_path):
    writer = SQLiteStore(tmp_path / "kb")
    put(writer, DOC)
    generation = writer.generation()
    reader = SQLiteStore(tmp_path / "kb")
    assert reader.generation() == generation  # opening is not a write
    assert len(reader.dense_index()) == writer.counts()["chunks"]
    other = doc_from_markdown_lines("other.md", "# Other\nSeven hundred parrots live here.")
    put(writer, other)
    assert len(reader.dense_index()) == writer.counts()["chunks"]  # reloaded: the generation moved
    results: list[int] = []
    with writer._write() as db:  # hold the write lock, as an ingest does
        db.execute("DELETE FROM chunks_fts")

        def read() -> None:
            results.append(len(reader.bm25("parrots", 5)))
            with SQLiteStore(tmp_path / "kb") as late:  # opening needs no write lock either
                results.append(len(late.bm25("parrots", 5)))

        thread = threading.Thread(target=read)
        thread.start()
        thread.join(10)
        db.execute("ROLLBACK")
        db.execute("BEGIN")
    assert results == [1, 1]  # the readers saw the last committed state, without waiting
    writer.close()
    reader.close()


CRASH_WRITER = textwrap.dedent(
    """
    import os
    import signal
    import sys

    import numpy as np

    from chunkwise.chunking.chunk import make_chunk
    from chunkwise.document import Document
    from chunkwise.store.sqlite import SQLiteStore

    store = SQLiteStore(sys.argv[1])
    store.check_embedder("test", 8)
    crash_doc = int(sys.argv[3]) if len(sys.argv) > 3 else -1
    rng = np.random.default_rng(0)
    for i in range(int(sys.argv[2])):
        n = 300 + i
        if i == crash_doc:
            inserted = []

            def die_halfway(statement, n=n, inserted=inserted):
                # Called by SQLite for each statement, inside put()'s transaction.
                if statement.startswith("INSERT INTO chunks "):
                    inserted.append(statement)
                    if len(inserted) == n // 2:
                        os.kill(os.getpid(), signal.SIGKILL)

            store._db.set_trace_callback(die_halfway)
        text = "".join(f"word{i}x{j} " for j in range(n))
        doc = Document(f"doc{i}", text)
        size = len(text) // n
        chunks = [make_chunk(doc, j * size, len(text) if j == n - 1 else (j + 1) * size) for j in range(n)]
        vectors = rng.normal(size=(n, 8)).astype(np.float32)
        store.put(doc, chunks, [""] * n, vectors, fingerprint="f")
        print(i, flush=True)
    """
)


@pytest.mark.parametrize("crash_doc", [0, 2, 9])
def test_sigkill_mid_ingest_leaves_whole_documents(tmp_path, crash_doc):
    """The writer kills itself halfway through the chunk rows of document ``crash_doc``, inside its
    transaction: the store holds exactly the documents before it, each whole, and a re-run completes."""
    script = tmp_path / "writer.py"
    script.write_text(CRASH_WRITER)
    kb = tmp_path / "kb"
    crashed = subprocess.run(
        [sys.executable, str(script), str(kb), "12", str(crash_doc)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert crashed.stdout.split() == [str(i) for i in range(crash_doc)]
    with SQLiteStore(kb) as store:
        assert store.check() == []
        docs = store.documents()
        assert sorted(info.doc_id for info in docs) == sorted(f"doc{i}" for i in range(crash_doc))
        for info in docs:
            assert info.chunks == 300 + int(info.doc_id[3:])  # every stored document is whole
        assert bool(store.bm25("word0x0", 3)) == (crash_doc > 0)
    done = subprocess.run(
        [sys.executable, str(script), str(kb), "12"], capture_output=True, text=True, check=True
    )
    assert done.stdout.split()[-1] == "11"
    with SQLiteStore(kb) as store:
        assert len(store.documents()) == 12
        assert store.check() == []


def _downgrade_to_schema_1(store):
    """Rewrite ``store``'s FTS5 table as schema 1 had it: raw header + text under FTS5's Porter tokenizer."""
    with store._write() as db:
        db.execute("DROP TABLE chunks_fts")
        db.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(body, tokenize = 'porter unicode61')")
        db.execute(
            "INSERT INTO chunks_fts (rowid, body) SELECT chunk_key, header || char(10) || text"
            " FROM chunks JOIN headers USING (chunk_key)"
        )
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")


def test_schema_1_is_upgraded_and_a_newer_schema_refused(tmp_path):
    """A schema-1 store (FTS5 over raw text with its own Porter tokenizer) is rebuilt on opening: its
    rows become the shared analyser's terms, so both stores rank alike; a newer schema is refused. A
    read-only opening cannot upgrade it: it is refused, and ``check`` names the old schema."""
    with SQLiteStore(tmp_path / "kb", StoreSettings(bm25s_threshold=None)) as store:
        put(store, DOC, size=60)
        expected = store.bm25("how long do refunds take", 3)
        _downgrade_to_schema_1(store)
    with pytest.raises(SchemaVersionError, match="schema 1 is older than the supported 2"):
        SQLiteStore(tmp_path / "kb", read_only=True)
    with SQLiteStore(tmp_path / "kb", read_only=True, damaged_ok=True) as store:
        assert store.check()[0].startswith("store schema 1 is older than the supported 2")
        assert "3 BM25 rows that are not their chunk's terms (first: chunk key 1)" in store.check()
    with SQLiteStore(tmp_path / "kb", StoreSettings(bm25s_threshold=None)) as store:
        assert store.meta("schema_version") == "2"
        assert store.check() == []
        assert store.bm25("how long do refunds take", 3) == expected
        assert store.repair() == ["kept 1 documents (3 chunks) and rebuilt the full-text index"]
        assert store.bm25("how long do refunds take", 3) == expected
        store.set_meta("schema_version", "3")
    with pytest.raises(SchemaVersionError, match="schema 3 is newer than the supported 2"):
        SQLiteStore(tmp_path / "kb")


GRAPH_THEN_ONNX = """
import numpy as np
from pathlib import Path
import sys
from chunkwise.store.dense import DenseIndex

data = np.eye(4, dtype=np.float32)
index = DenseIndex(np.arange(1, 5, dtype=np.int64), data, generation=1, directory=Path(sys.argv[1]))
assert index.search(data[0], 1, approximate=True)[0][0] == 1
import onnxruntime  # the order that crashed: usearch loaded first
print("ok")
"""


@requires_usearch
def test_an_hnsw_graph_opened_before_the_onnx_embedder_does_not_crash(tmp_path):
    command = [sys.executable, "-c", GRAPH_THEN_ONNX, str(tmp_path)]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def _docs(n: int) -> list:
    return [
        doc_from_markdown_lines(f"d{i}.md", f"# Doc {i}\n" + f"Line {i} of the store test. " * (3 + i % 4))
        for i in range(n)
    ]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.sampled_from(["put", "delete"]), st.integers(0, 4), st.integers(0, 3)), max_size=12)
)
def test_a_reader_kept_up_to_date_holds_what_a_fresh_reader_reads(tmp_path_factory, operations):
    """After any sequence of puts (new documents and new versions) and deletes by another connection, a
    long-lived reader's vectors and passage windows equal those of a reader opened afresh: reading only
    the added rows never keeps a removed vector, nor an old vector under a reused key."""
    docs = _docs(5)
    kb = tmp_path_factory.mktemp("kb")
    with SQLiteStore(kb) as writer, SQLiteStore(kb) as reader:
        put(writer, docs[0])
        reader.dense_index()
        for op, i, seed in operations:
            if op == "put":
                put(
                    writer,
                    docs[i],
                    size=20 + 10 * seed,
                    seed=seed,
                    fingerprint=f"f{seed}",
                    windowed=seed % 2 == 1,
                )
            else:
                writer.delete(docs[i].id)
            held = reader.dense_index()
            with SQLiteStore(kb) as fresh:
                expected = fresh.dense_index()
                np.testing.assert_array_equal(held.keys, expected.keys)
                np.testing.assert_array_equal(held.matrix, expected.matrix)
                np.testing.assert_array_equal(held.owners, expected.owners)
                np.testing.assert_array_equal(held.windows, expected.windows)


def test_a_reader_reads_only_the_added_rows_until_a_vector_is_removed(tmp_path):
    docs = _docs(3)
    with SQLiteStore(tmp_path / "kb") as writer, SQLiteStore(tmp_path / "kb") as reader:
        put(writer, docs[0])
        reader.dense_index()
        statements: list[str] = []
        reader._db.set_trace_callback(statements.append)
        put(writer, docs[1])
        reader.dense_index()
        reads = [s for s in statements if "FROM vectors" in s]
        assert len(reads) == 1
        assert "chunk_key >" in reads[0]
        statements.clear()
        writer.delete(docs[0].id)
        put(writer, docs[2])
        assert len(reader.dense_index()) == writer.counts()["vectors"]
        reads = [s for s in statements if "FROM vectors" in s]
        assert len(reads) == 1
        assert "chunk_key >" not in reads[0]  # a removal: every row read again


def test_a_vector_is_found_by_its_key_never_by_its_position(tmp_path):
    """A chunk whose vector the index does not hold (removed after its row was read, or lost) gets no
    vector, not its neighbour's."""
    index = DenseIndex(np.array([2, 5, 9], dtype=np.int64), unit_vectors(3), generation=1, directory=tmp_path)
    found = index.vectors_of(np.array([5, 3, 9, 10, 1], dtype=np.int64))
    assert [v is None for v in found] == [False, True, False, True, True]
    np.testing.assert_array_equal(found[0], index.matrix[1])
    np.testing.assert_array_equal(found[2], index.matrix[2])
    with SQLiteStore(tmp_path / "kb") as store:
        put(store, DOC)
        keys = [int(k) for k in store.dense_index().keys]
        store._db.execute("DELETE FROM vectors WHERE chunk_key = ?", (keys[1],))
        store._db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
        chunks = store.chunks(keys)
    assert [c.key for c in chunks] == keys
    assert [c.vector is None for c in chunks] == [False, True] + [False] * (len(keys) - 2)
