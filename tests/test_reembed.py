"""Re-embedding a knowledge base in place (``KnowledgeBase.reembed``, ``chunkwise kb reembed``), on a real
SQLite directory and a real PostgreSQL schema, with the bundled models: the result is what a fresh
ingest with the new embedder stores, a later ingest of the same files skips them, another dimension is
taken, and a failure part-way leaves the store exactly as it was (readers see the old store meanwhile)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkwise.config import PipelineConfig, from_dict
from chunkwise.errors import ConfigError, ModelCallError, ModelError
from chunkwise.ingest.report import IngestEvent
from chunkwise.kb import KnowledgeBase, stored_config
from chunkwise.models import Models
from chunkwise.parsing import parse_file
from chunkwise.store.pgurl import parse
from chunkwise.store.sqlite import SQLiteStore
from tests.support.cli import run_chunkwise
from tests.support.fakes import CountingEmbedder, HashEmbedder

FILES = ("Baggage Allowance.md", "Boarding Process.md", "accessories.md", "Careers at CloudWay 24.md")
QUERY = "checked baggage weight"


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh knowledge base location: a directory, or a schema of the session's PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "kb")
    return str(request.getfixturevalue("pg_url"))


def other(location: str, tmp_path: Path) -> str:
    """A second fresh location of the same kind as ``location``."""
    if location.startswith("postgresql://"):
        return location.replace("schema=", "schema=fresh_")
    return str(tmp_path / "fresh")


def config(embedder: str) -> PipelineConfig:
    """The default configuration with ``embedder`` (passage windows on, as by default) and no model
    cache: a fresh ingest compared with a re-embedding computes its vectors instead of reading the
    re-embedding's back, and no other test reads vectors these batches computed."""
    return from_dict({"models": {"embedder": embedder, "cache": False}})


def files(data_dir: Path) -> list[Path]:
    """The test files in the order of their document ids, the order a re-embedding embeds them in."""
    return sorted((data_dir / "formats" / name for name in FILES), key=str)


def snapshot(location: str) -> dict[str, Any]:
    """Everything a re-embedding may touch, read straight from the database: the recorded embedder and
    configuration, the generation, and per document its fingerprint, its chunks (text, header) by ordinal
    with each one's vector bytes and its passage windows' vector bytes in order."""
    if location.startswith("postgresql://"):
        import psycopg

        where = parse(location)
        s = f'"{where.schema}"'
        with psycopg.connect(where.conninfo) as conn:
            meta = dict(conn.execute(f"SELECT key, value FROM {s}.meta").fetchall())
            generation = conn.execute(f"SELECT generation FROM {s}.stats").fetchone()[0]
            fingerprints = dict(conn.execute(f"SELECT doc_id, fingerprint FROM {s}.documents").fetchall())
            chunks = conn.execute(
                f"SELECT c.doc_id, c.ordinal, c.text, c.header, v.embedding::text FROM {s}.chunks c"
                f" JOIN {s}.vectors v USING (chunk_key) ORDER BY c.doc_id, c.ordinal"
            ).fetchall()
            windows = conn.execute(
                f"SELECT c.doc_id, c.ordinal, w.embedding::text FROM {s}.windows w JOIN {s}.chunks c"
                f" USING (chunk_key) ORDER BY c.doc_id, c.ordinal, w.window_key"
            ).fetchall()
        decode = _pg_vector
    else:
        with sqlite3.connect(Path(location) / "kb.sqlite") as db:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            generation = int(meta["generation"])
            fingerprints = dict(db.execute("SELECT doc_id, fingerprint FROM documents").fetchall())
            chunks = db.execute(
                "SELECT c.doc_id, c.ordinal, c.text, h.header, v.vector FROM chunks c JOIN headers h"
                " USING (chunk_key) JOIN vectors v USING (chunk_key) ORDER BY c.doc_id, c.ordinal"
            ).fetchall()
            windows = db.execute(
                "SELECT c.doc_id, c.ordinal, w.vector FROM windows w JOIN chunks c USING (chunk_key)"
                " ORDER BY c.doc_id, c.ordinal, w.window_key"
            ).fetchall()
        decode = _sqlite_vector
    return {
        "embedder": (meta.get("embedder"), meta.get("dim"), meta.get("embedder_version")),
        "config": json.loads(meta["pipeline_config"]),
        "generation": generation,
        "fingerprints": fingerprints,
        "chunks": [(doc, ordinal, text, header) for doc, ordinal, text, header, _ in chunks],
        "vectors": np.array([decode(row[-1]) for row in chunks]),
        "windows": [(doc, ordinal) for doc, ordinal, _ in windows],
        "window_vectors": np.array([decode(row[-1]) for row in windows]),
    }


def _sqlite_vector(blob: bytes) -> Any:
    return np.frombuffer(blob, dtype=np.float32)


def _pg_vector(text: str) -> Any:
    return np.array(json.loads(text), dtype=np.float32)


def assert_same_store(reembedded: dict[str, Any], fresh: dict[str, Any]) -> None:
    """The same chunks, windows, fingerprints and embedder, and vectors equal within 1e-5."""
    for key in ("embedder", "fingerprints", "chunks", "windows"):
        assert reembedded[key] == fresh[key], key
    assert reembedded["vectors"].shape == fresh["vectors"].shape
    assert reembedded["window_vectors"].shape == fresh["window_vectors"].shape
    assert np.allclose(reembedded["vectors"], fresh["vectors"], atol=1e-5)
    assert np.allclose(reembedded["window_vectors"], fresh["window_vectors"], atol=1e-5)


def test_reembedding_stores_what_a_fresh_ingest_with_the_new_embedder_stores(
    location: str, tmp_path: Path, data_dir: Path
) -> None:
    """MiniLM -> bge-small in place: the same chunks, windows and vectors as an ingest with bge-small, the
    recorded configuration names bge-small, the store is consistent and searches without a refusal, and
    an ingest of the same unchanged files afterwards skips every one of them."""
    with KnowledgeBase(location, config("local:minilm")) as kb:
        assert len(kb.add(files(data_dir)).added) == len(FILES)
    before = snapshot(location)
    with KnowledgeBase(location) as kb:  # the recorded configuration: MiniLM
        report = kb.reembed("local:bge-small")
        assert (report.documents, report.previous) == (len(FILES), before["embedder"][0])
        assert report.windows == len(before["windows"]) > 0
        assert kb.search(QUERY, k=3)  # this knowledge base now uses bge-small
    fresh = other(location, tmp_path)
    with KnowledgeBase(fresh, config("local:bge-small")) as kb:
        kb.add(files(data_dir))
    after = snapshot(location)
    assert_same_store(after, snapshot(fresh))
    assert not np.allclose(after["vectors"], before["vectors"], atol=1e-2)  # new vectors indeed
    assert after["generation"] > before["generation"]
    with KnowledgeBase(location, read_only=True) as kb:
        assert kb.config.models.embedder == "local:bge-small"
        assert stored_config(kb.store) == kb.config
        assert kb.store.check() == []
        hits = kb.search(QUERY, k=3)
        assert hits
        assert hits[0].doc_id.endswith("Baggage Allowance.md")
    with KnowledgeBase(location) as kb:
        again = kb.add(files(data_dir))
    assert len(again.skipped) == len(FILES)
    assert not again.added
    assert not again.replaced


def hnsw_indexes(location: str) -> dict[str, str]:
    """Table -> the dimension its HNSW index was built for, of a PostgreSQL schema's vector tables."""
    import psycopg

    where = parse(location)
    with psycopg.connect(where.conninfo) as conn:
        rows = conn.execute(
            "SELECT c.relname, format_type(a.atttypid, a.atttypmod) FROM pg_index i"
            " JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_am m ON m.oid = x.relam"
            " JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
            " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'embedding'"
            " WHERE m.amname = 'hnsw' AND n.nspname = %s",
            (where.schema,),
        ).fetchall()
    return {table: kind.removeprefix("vector(").removesuffix(")") for table, kind in rows}


def test_reembedding_takes_an_embedder_of_another_dimension(
    location: str, tmp_path: Path, data_dir: Path
) -> None:
    """384-d MiniLM -> a 16-d embedder, on a store searched through its indexes (HNSW and bm25s from the
    first chunk on): the vector tables take the new dimension (PostgreSQL's typed columns and HNSW
    indexes included), the store checks clean (the SQLite sidecars of the old vectors are not taken for
    the new ones), searches with the new embedder through the indexes and refuses the old embedder."""
    indexed = dataclasses.replace(
        config("local:minilm"),
        retrieval=dataclasses.replace(config("local:minilm").retrieval, hnsw_threshold=1, bm25s_threshold=1),
    )
    with KnowledgeBase(location, indexed) as kb:
        kb.add(files(data_dir)[:2])
        assert kb.search(QUERY, k=3)  # builds the sidecar indexes of the old vectors
        assert kb.store.dense_method() == "hnsw"
    with KnowledgeBase(location, indexed, models=Models(embedder=HashEmbedder())) as kb:
        kb.reembed()
        assert kb.store.check() == []
        assert kb.search(QUERY, k=3)
        assert kb.store.dense_method() == "hnsw"
    if location.startswith("postgresql://"):  # the new tables' HNSW indexes were built
        assert hnsw_indexes(location) == {"vectors": "16", "windows": "16"}
    fresh = other(location, tmp_path)
    with KnowledgeBase(fresh, indexed, models=Models(embedder=HashEmbedder())) as kb:
        kb.add(files(data_dir)[:2])
    assert_same_store(snapshot(location), snapshot(fresh))
    assert snapshot(location)["embedder"] == ("hash-16", "16", "")
    with KnowledgeBase(location, models=Models(embedder=HashEmbedder()), read_only=True) as kb:
        assert kb.store.check() == []
        assert kb.search(QUERY, k=3)
    with KnowledgeBase(location, indexed) as kb, pytest.raises(ConfigError, match="kb reembed"):
        kb.search(QUERY, k=3)


class FailingEmbedder(CountingEmbedder):
    """Delegates to a real embedder, until ``failing()`` says to fail: then it first runs ``meanwhile``
    (a reader's look at the store while the re-embedding's transaction is open), then raises."""

    def __init__(self, inner: Any, failing: Callable[[], bool], meanwhile: Callable[[], None]) -> None:
        super().__init__(inner)
        self.failing, self.meanwhile = failing, meanwhile

    @property
    def version(self) -> str:
        return str(getattr(self.inner, "version", ""))

    def embed(self, texts: Sequence[str]) -> Any:
        if self.failing():
            self.meanwhile()
            raise ModelCallError(self.name, "the embedding server went away", 503)
        return super().embed(texts)


def test_a_failure_part_way_leaves_the_store_exactly_as_it_was(location: str, data_dir: Path) -> None:
    """An embedder that fails once two documents have new vectors written (small embedding calls, so
    the documents are written one after another) leaves every vector, window, fingerprint, the recorded
    embedder and configuration and the generation as they were; the store checks clean and searches
    with the old embedder. At the failure, with two documents written in the open transaction, a reader
    (another connection) saw the old store and searched it with the old embedder."""
    old = config("local:minilm")
    with KnowledgeBase(location, old) as kb:
        kb.add(files(data_dir))
    before = snapshot(location)
    written: list[str] = []
    seen: list[Any] = []

    def reader_meanwhile() -> None:
        with KnowledgeBase(location, old, read_only=True) as reader:
            seen.append((reader.store.meta("embedder"), reader.search(QUERY, k=3)))

    def on_progress(event: IngestEvent) -> None:
        if event.status == "replaced":
            written.append(event.source)

    bge = Models(old.models).embedder("local:bge-small")
    failing = FailingEmbedder(bge, lambda: len(written) >= 2, reader_meanwhile)
    small_calls = dataclasses.replace(old, retrieval=dataclasses.replace(old.retrieval, embed_batch=4))
    with (
        KnowledgeBase(location, small_calls, models=Models(embedder=failing)) as kb,
        pytest.raises(ModelCallError, match="went away"),
    ):
        kb.reembed(on_progress=on_progress)
    assert len(written) == 2 < len(FILES)
    assert len(seen) == 1
    assert seen[0][0] == before["embedder"][0]
    assert seen[0][1]
    after = snapshot(location)
    assert after["vectors"].tobytes() == before["vectors"].tobytes()
    assert after["window_vectors"].tobytes() == before["window_vectors"].tobytes()
    assert {k: v for k, v in after.items() if "vectors" not in k} == {
        k: v for k, v in before.items() if "vectors" not in k
    }
    with KnowledgeBase(location, old, read_only=True) as kb:
        assert kb.store.check() == []
        assert kb.search(QUERY, k=3)[0].doc_id.endswith("Baggage Allowance.md")


class RefusingEmbedder(HashEmbedder):
    """A 16-d embedder whose server refuses (HTTP 413) any call holding a text about boarding."""

    name = "refusing-16"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls.append(list(texts))
        if any("boarding" in text.lower() for text in texts):
            raise ModelCallError(self.name, "input too long", 413)
        return super().embed(texts)


def test_a_document_the_new_embedder_refuses_is_named_and_nothing_is_changed(
    tmp_path: Path, data_dir: Path
) -> None:
    """An ingest reports a document whose text the embedder refuses and goes on; a re-embedding cannot
    leave that document with the old embedder's vectors, so it stops with an error naming it as soon as
    the refusal is known (the documents after it are not embedded, nor paid for), and the store is as it
    was."""
    location = str(tmp_path / "kb")
    one_by_one = from_dict({"models": {"cache": False}, "retrieval": {"embed_batch": 1}})
    with KnowledgeBase(location, one_by_one, models=Models(embedder=HashEmbedder())) as kb:
        kb.add(files(data_dir))
    before = snapshot(location)
    embedder = RefusingEmbedder()
    with (
        KnowledgeBase(location, one_by_one, models=Models(embedder=embedder)) as kb,
        pytest.raises(ModelError, match=r"Boarding Process\.md: .*input too long.*nothing was re-embedded"),
    ):
        kb.reembed()
    embedded = " ".join(text for call in embedder.calls for text in call)
    assert "careers" not in embedded.lower()  # "Careers at CloudWay 24.md" comes after the refused one
    after = snapshot(location)
    assert after["vectors"].tobytes() == before["vectors"].tobytes()
    assert after["embedder"] == before["embedder"] == ("hash-16", "16", "")


def test_the_refusal_of_another_embedder_names_the_way_out(tmp_path: Path) -> None:
    """Searching with another embedder is refused with the facts as before, and the command that moves
    the store to the new embedder."""
    with SQLiteStore(tmp_path / "kb") as store:
        store.check_embedder("local:a", 8, "pkg==1.0")
        with pytest.raises(ConfigError) as caught:
            store.check_embedder("local:b", 8, "pkg==1.0", record=False)
    message = str(caught.value)
    assert "built with embedder 'local:a' (8-d, pkg==1.0), not 'local:b' (8-d, pkg==1.0)" in message
    assert "chunkwise kb reembed" in message
    assert "ingest into a new directory" in message


def test_the_cli_reembeds_and_the_store_is_searched_with_the_new_embedder(
    tmp_path: Path, data_dir: Path
) -> None:
    """``chunkwise kb reembed --kb DIR --embedder local:bge-small`` through the real command: a summary
    line, exit status 0, and a plain ``search`` afterwards uses bge-small (the recorded configuration);
    an unknown embedder is one ``error:`` line, exit status 2, and the store is left as it was."""
    kb_dir = tmp_path / "kb"
    with KnowledgeBase(kb_dir, config("local:minilm")) as kb:
        kb.add(files(data_dir)[:2])
    before = snapshot(str(kb_dir))
    cache = tmp_path / "cache"
    bad = run_chunkwise("kb", "reembed", "--kb", str(kb_dir), "--embedder", "nosuch:model", cache=cache)
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.startswith("error: ")
    assert "nosuch" in bad.stderr
    assert snapshot(str(kb_dir))["vectors"].tobytes() == before["vectors"].tobytes()
    done = run_chunkwise("kb", "reembed", "--kb", str(kb_dir), "--embedder", "local:bge-small", cache=cache)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("re-embedded 2 documents (")
    assert "bge-small" in done.stdout
    assert len(done.stdout.splitlines()) == 1
    found = run_chunkwise("search", QUERY, "--kb", str(kb_dir), "--json", cache=cache)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"]
    assert snapshot(str(kb_dir))["config"]["models"]["embedder"] == "local:bge-small"
    checked = run_chunkwise("kb", "check", "--kb", str(kb_dir), cache=cache)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.startswith("ok")


def test_an_ingest_begun_before_a_reembedding_stores_no_vectors_after_it(
    location: str, data_dir: Path
) -> None:
    """An ingest checks its embedder when it begins; a re-embedding committed before it stores a document
    must not leave that document's vectors, the former embedder's, among the new one's, where no search
    can compare them. The store checks the embedder again inside the transaction that would store it."""
    first, later = files(data_dir)[:2]
    with KnowledgeBase(location, config("local:minilm")) as kb:
        kb.add([first])
        fingerprint = kb.ingest.begin()  # an ingest of `later` begins: its embedder is checked here
        item = kb.ingest.prepare(parse_file(later))
        texts = [item.text(row) for row in item.embedded]
        vectors = item.vectors(kb.models.embedder().embed(texts))
        with KnowledgeBase(location, config("local:bge-small")) as other:
            other.reembed()  # commits before the ingest stores `later`
        with pytest.raises(ConfigError, match="was not stored: the knowledge base was re-embedded with"):
            kb.ingest.store_prepared(item, vectors, fingerprint)
        assert kb.store.state(item.doc.id) is None
        assert kb.store.check() == []
        assert len(kb.store.documents()) == 1


class Pausing(HashEmbedder):
    """A 16-d embedder of another name whose first call runs ``meanwhile`` (a writer starting), then
    waits for it to reach the store."""

    name = "pausing-16"

    def __init__(self, meanwhile: Callable[[], None]) -> None:
        self.meanwhile: Callable[[], None] | None = meanwhile

    def embed(self, texts: Sequence[str]) -> Any:
        if self.meanwhile is not None:
            start, self.meanwhile = self.meanwhile, None
            start()
            time.sleep(1.5)  # the writer reads the stored document and waits on the re-embedding's locks
        return super().embed(texts)


def test_a_writer_meeting_a_reembedding_waits_for_it_and_stores_nothing_stale(
    pg_url: str, data_dir: Path
) -> None:
    """A document replaced while PostgreSQL re-embeds: the writer waits for the re-embedding without
    holding what its last step needs (it once read the document's chunks first, and the two deadlocked,
    PostgreSQL killing one of them), then finds another embedder recorded and stores nothing."""
    plain = from_dict({"models": {"cache": False}})
    with KnowledgeBase(pg_url, plain, models=Models(embedder=HashEmbedder())) as kb:
        kb.add(files(data_dir)[:2])
        first = kb.store.document(kb.store.documents()[0].doc_id)
    outcome: dict[str, Any] = {}

    def write() -> None:
        changed = dataclasses.replace(first, text=first.text + "\n\nA sentence added about baggage.")
        with KnowledgeBase(pg_url, plain, models=Models(embedder=HashEmbedder())) as kb:
            try:
                outcome["writer"] = kb.add_documents([changed])
            except Exception as exc:  # what reaches the caller, whatever its type
                outcome["writer"] = exc

    writer = threading.Thread(target=write)
    with KnowledgeBase(pg_url, plain, models=Models(embedder=Pausing(writer.start))) as kb:
        report = kb.reembed()
    writer.join(60)
    assert report.documents == 2
    result = outcome["writer"]
    reason = str(result) if isinstance(result, Exception) else " ".join(r for _, r in result.failed)
    assert "was not stored: the knowledge base was re-embedded with 'pausing-16'" in reason
    with KnowledgeBase(pg_url, plain, models=Models(embedder=Pausing(lambda: None)), read_only=True) as kb:
        assert kb.store.check() == []
        assert kb.store.document(first.id).text == first.text


def test_documents_stored_under_another_configuration_are_ingested_again_after_it(
    location: str, data_dir: Path
) -> None:
    """A re-embedding embeds as its own configuration does (here without passage windows); a document
    stored under another one (with windows) no longer holds what that configuration stores, so a later
    ingest with it must not skip the document."""
    windowed = from_dict({"models": {"cache": False}})
    whole = from_dict({"models": {"cache": False}, "retrieval": {"windows": 0}})
    chosen = files(data_dir)[:2]
    with KnowledgeBase(location, windowed, models=Models(embedder=HashEmbedder())) as kb:
        assert len(kb.add(chosen).added) == 2
    with KnowledgeBase(location, whole, models=Models(embedder=HashEmbedder())) as kb:
        kb.reembed()
        states = [kb.store.state(d.doc_id) for d in kb.store.documents()]
        assert all(state is not None and state[1].startswith("stale:") for state in states)
    with KnowledgeBase(location, windowed, models=Models(embedder=HashEmbedder())) as kb:
        again = kb.add(chosen)
        assert len(again.replaced) == 2
        assert not again.skipped
        assert kb.store.check() == []


def test_another_open_store_follows_a_change_of_dimension(pg_url: str, data_dir: Path) -> None:
    """A knowledge base open while another one re-embeds the store to another dimension: its next search
    with the new embedder works, and one with the former embedder is refused with a typed error (it
    once kept the former dimension, letting the former width through to pgvector's raw error)."""
    small = from_dict({"models": {"cache": False}, "retrieval": {"windows": 0}})
    with KnowledgeBase(pg_url, config("local:minilm"), models=Models(embedder=HashEmbedder())) as kb:
        kb.add(files(data_dir)[:2])
    with KnowledgeBase(pg_url, small, models=Models(embedder=HashEmbedder())) as reader:
        assert reader.search(QUERY, k=2)  # reads and keeps the 16-d dimension
        with KnowledgeBase(pg_url, config("local:minilm")) as kb:
            kb.reembed()  # to 384 dimensions
        with pytest.raises(ConfigError, match="built with embedder"):
            reader.search(QUERY, k=2)
        assert reader.store.dense(np.ones(384, dtype=np.float32) / np.sqrt(384), 2)


def test_the_reembeddings_tokens_are_reported_and_stay_in_the_accounting(
    tmp_path: Path, data_dir: Path
) -> None:
    """MiniLM -> bge-small with the bundled models: the report carries the embedder's calls and tokens
    (bge-small counts them), the same as an ingest with bge-small pays for the same files (the same
    texts in the same calls), at no cost (a local model is free); and the knowledge base's accounting
    still holds them after it rebuilt its model context for bge-small."""
    location = str(tmp_path / "kb")
    with KnowledgeBase(location, config("local:minilm")) as kb:
        kb.add(files(data_dir)[:2])
    with KnowledgeBase(location) as kb:
        report = kb.reembed("local:bge-small")
        spent = kb.accounting()
    with KnowledgeBase(other(location, tmp_path), config("local:bge-small")) as kb:
        kb.add(files(data_dir)[:2])
        ingested = kb.accounting()["by_role"]["embedder"]
    embedded = report.accounting["by_role"]["embedder"]
    for key in ("calls", "cache_hits", "input_tokens", "output_tokens", "cost"):
        assert embedded[key] == ingested[key], key
    assert embedded["input_tokens"] > 0
    assert embedded["cost"] == 0
    assert report.accounting["total"] == embedded
    assert spent["total"] == embedded  # after the model context was built again
    assert report.to_dict()["accounting"] == report.accounting


#: Dollars per million tokens of the priced embedders below: 0.001 $ a token.
EMBEDDING_PRICE = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}


def test_the_cli_reports_what_a_priced_remote_reembedding_cost(tmp_path: Path, data_dir: Path) -> None:
    """``kb reembed`` to a priced embedder served over HTTP on 127.0.0.1: ``--json`` carries the calls,
    the tokens the server counted and their cost, and the summary line says them too."""
    from tests.support.openai_server import OpenAIServer, word_count

    kb_dir = str(tmp_path / "kb")
    with OpenAIServer() as server:
        models = {
            "embedder": "openai:emb-a",
            "base_url": server.base_url,
            "cache": False,
            "prices": {"emb-a": EMBEDDING_PRICE, "emb-b": EMBEDDING_PRICE},
        }
        with KnowledgeBase(kb_dir, from_dict({"models": models})) as kb:
            kb.add(files(data_dir)[:2])
        server.requests.clear()
        done = run_chunkwise("kb", "reembed", "--kb", kb_dir, "--embedder", "openai:emb-b", "--json")
        assert done.returncode == 0, done.stderr
        # every embedding call, the one that learns the new model's dimension included
        calls = [r.json["input"] for r in server.requests]
        assert ["dimension probe"] in calls
        server.requests.clear()
        summary = run_chunkwise("kb", "reembed", "--kb", kb_dir, "--embedder", "openai:emb-a")
    assert summary.returncode == 0, summary.stderr
    total = json.loads(done.stdout)["accounting"]["total"]
    tokens = sum(word_count(text) for call in calls for text in call)
    assert (total["calls"], total["input_tokens"]) == (len(calls), tokens)
    assert tokens > 0
    assert total["cost"] == pytest.approx(tokens * 0.001)
    assert summary.stdout.startswith("re-embedded 2 documents (")
    assert f"model calls: {total['calls']} (+0 cached), input tokens: {tokens}, " in summary.stdout
    assert f"cost: ${tokens * 0.001:.6f}\n" in summary.stdout


class Named(HashEmbedder):
    """The 16-d hash embedder under another name (another embedder to the store)."""

    def __init__(self, name: str) -> None:
        self.name = name


class AnotherWriterFirst:
    """A store whose re-embedding transaction opens only after ``meanwhile`` ran: another writer's change,
    committed after the re-embedding began, before its transaction took the store."""

    def __init__(self, store: Any, meanwhile: Callable[[], None]) -> None:
        self.store, self.meanwhile = store, meanwhile

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def reembedding(self, *args: Any, **kwargs: Any) -> Any:
        self.meanwhile()
        return self.store.reembedding(*args, **kwargs)


def test_what_another_writer_committed_before_the_transaction_is_what_is_reembedded(
    location: str, data_dir: Path
) -> None:
    """Another process moves the store to another embedder and adds a document just before the
    re-embedding's transaction opens: the re-embedding reports that embedder as the one it replaced,
    counts the added document in its progress, and gives every document the new embedder's fingerprint
    (they were that embedder's, not stale), so an ingest of the same files afterwards skips them all.
    Read before the transaction, the embedder it replaced was the former one and every document was
    marked stale."""
    plain = from_dict({"models": {"cache": False}})
    chosen = files(data_dir)[:3]
    with KnowledgeBase(location, plain, models=Models(embedder=HashEmbedder())) as kb:
        kb.add(chosen[:2])

    def meanwhile() -> None:
        with KnowledgeBase(location, plain, models=Models(embedder=Named("between-16"))) as writer:
            writer.reembed()
            writer.add(chosen[2:])

    events: list[IngestEvent] = []
    with KnowledgeBase(location, plain, models=Models(embedder=Named("last-16"))) as kb:
        kb.store = AnotherWriterFirst(kb.store, meanwhile)  # type: ignore[assignment]
        report = kb.reembed(on_progress=events.append)
        fingerprint = kb.ingest.fingerprint("last-16")
        states = [kb.store.state(info.doc_id) for info in kb.documents()]
    assert (report.previous, report.documents) == ("between-16", 3)
    assert (events[-1].done, events[-1].total) == (3, 3)
    assert [state[1] for state in states if state is not None] == [fingerprint] * 3
    with KnowledgeBase(location, plain, models=Models(embedder=Named("last-16"))) as kb:
        again = kb.add(chosen)
        assert len(again.skipped) == 3
        assert kb.store.check() == []
