"""Copying a knowledge base into another store (``KnowledgeBase.copy_to``, ``chunkwise kb copy``), between
a real SQLite directory and a real PostgreSQL schema, with the committed fixture documents: every
document comes across as stored (text, units, chunks, headers, fingerprint, summary, vectors, passage
windows' vectors in order) without a model call, the target ranks BM25, dense and hybrid searches as the
source does, an ingest of the same files into it skips them, an interrupted copy resumes, and a target of
another embedder is refused with nothing written. The hash embedder stands in for a model where the
model is not the point; the command-line test ingests with the bundled one."""

from __future__ import annotations

import json
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.config import PipelineConfig, from_dict
from chunkwise.errors import ConfigError
from chunkwise.ingest.copy import copy_store
from chunkwise.ingest.report import IngestEvent
from chunkwise.kb import CONFIG_META_KEY, KnowledgeBase
from chunkwise.models import Models
from chunkwise.store import Store, open_store
from chunkwise.store.pgurl import parse
from tests.support.cli import run_chunkwise
from tests.support.fakes import HashEmbedder

FILES = ("Baggage Allowance.md", "Boarding Process.md", "accessories.md", "Careers at CloudWay 24.md")
QUERIES = ("checked baggage weight", "boarding gate closes", "careers engineering roles", "phone accessories")
#: The default configuration (passage windows on, as by default), without the model cache.
CONFIG: PipelineConfig = from_dict({"models": {"cache": False}})


class Other8(HashEmbedder):
    """Another embedder to the stores: another name and another dimension."""

    name = "other-8"
    dim = 8


def files(data_dir: Path) -> list[Path]:
    """The test files in the order of their document ids, the order a copy writes them in: the chunk
    keys of source and target then follow the same order, so ties rank alike in both."""
    return sorted((data_dir / "formats" / name for name in FILES), key=str)


def hashed(location: str, config: PipelineConfig | None = CONFIG) -> KnowledgeBase:
    """The knowledge base at ``location`` with the hash embedder (its recorded configuration when
    ``config`` is ``None``)."""
    return KnowledgeBase(location, config, models=Models(embedder=HashEmbedder()))


def build(location: str, data_dir: Path) -> None:
    """Ingest the test files into ``location`` with the hash embedder."""
    with hashed(location) as kb:
        report = kb.add(files(data_dir))
    assert report.failed == []
    assert len(report.added) == len(FILES)


def contents(store: Store) -> dict[str, tuple[Any, ...]]:
    """Everything stored of each document, by id: document (text, units, metadata, content hash), chunks,
    headers, fingerprint, summary, the vectors' bytes, and the passage windows' chunks and bytes."""
    out = {}
    for info in store.documents():
        stored = store.stored_document(info.doc_id)
        owners, windows = stored.windows if stored.windows is not None else ([], np.empty(0))
        out[info.doc_id] = (
            stored.doc,
            stored.doc.content_hash,
            stored.chunks,
            stored.headers,
            stored.fingerprint,
            stored.summary,
            np.asarray(stored.vectors, dtype=np.float32).tobytes(),
            list(owners),
            np.asarray(windows, dtype=np.float32).tobytes(),
        )
    return out


def rankings(kb: KnowledgeBase) -> dict[str, list[tuple[str, float]]]:
    """Per query, the ranked chunk ids and scores of BM25, exact dense search and the hybrid query
    pipeline (BM25, dense, fusion)."""
    out: dict[str, list[tuple[str, float]]] = {}
    embedder = kb.models.embedder()
    for query in QUERIES:
        vector = np.asarray(embedder.embed([query]))[0]
        for kind, ranked in (("bm25", kb.store.bm25(query, 10)), ("dense", kb.store.dense(vector, 10))):
            ids = {c.key: c.chunk_id for c in kb.store.chunks([key for key, _ in ranked])}
            out[f"{kind}:{query}"] = [(ids[key], score) for key, score in ranked]
        out[f"hybrid:{query}"] = [(hit.chunk_id, hit.score) for hit in kb.search(query, k=10)]
    return out


def assert_same_rankings(found: dict[str, list[tuple[str, float]]], expected: dict[str, Any]) -> None:
    """The same chunks in the same order for every search, scores equal within float32's precision."""
    assert found.keys() == expected.keys()
    for name, ranked in expected.items():
        assert [chunk for chunk, _ in found[name]] == [chunk for chunk, _ in ranked], name
        np.testing.assert_allclose([s for _, s in found[name]], [s for _, s in ranked], rtol=1e-5, atol=1e-6)


def sqlite_windows(location: str) -> list[tuple[str, int, bytes]]:
    """Every passage window of a SQLite store, read straight from its database: document, chunk ordinal
    and vector bytes, in each chunk's stored order."""
    with sqlite3.connect(Path(location) / "kb.sqlite") as db:
        return db.execute(
            "SELECT c.doc_id, c.ordinal, w.vector FROM windows w JOIN chunks c USING (chunk_key)"
            " ORDER BY c.doc_id, c.ordinal, w.window_key"
        ).fetchall()


def postgres_windows(url: str) -> list[tuple[str, int, bytes]]:
    """:func:`sqlite_windows` for a PostgreSQL store (vectors as float32 bytes)."""
    import psycopg

    where = parse(url)
    with psycopg.connect(where.conninfo) as conn:
        rows = conn.execute(
            f'SELECT c.doc_id, c.ordinal, w.embedding::text FROM "{where.schema}".windows w'
            f' JOIN "{where.schema}".chunks c USING (chunk_key) ORDER BY c.doc_id COLLATE "C", c.ordinal,'
            " w.window_key"
        ).fetchall()
    return [
        (doc, ordinal, np.array(json.loads(text), dtype=np.float32).tobytes()) for doc, ordinal, text in rows
    ]


def test_sqlite_to_postgres_and_back_keeps_every_document_and_every_ranking(
    tmp_path: Path, pg_url: str, data_dir: Path
) -> None:
    """A directory copied to PostgreSQL and that copied to a new directory: each holds every document
    exactly as the first (chunks, headers, fingerprints, summaries, vectors, windows), the embedder and
    configuration recorded, BM25, dense and hybrid searches rank the same chunks with the same scores,
    `kb check` finds nothing, no model was called, and an ingest of the same files skips them all."""
    first, last = str(tmp_path / "first"), str(tmp_path / "last")
    build(first, data_dir)
    with hashed(first, None) as kb:
        expected, expected_rankings = contents(kb.store), rankings(kb)
        embedder_meta = [kb.store.meta(key) for key in ("embedder", "dim", "embedder_version")]
        config = kb.store.meta(CONFIG_META_KEY)
        mark = kb.models.mark()
        report = kb.copy_to(pg_url)
        assert kb.accounting(mark)["total"]["calls"] == 0
    assert (len(report.copied), report.skipped, report.failed) == (len(FILES), [], [])
    assert report.counts == {"documents": len(FILES), "chunks": report.chunks, "vectors": report.chunks}
    with hashed(pg_url, None) as kb:
        assert kb.config == CONFIG  # the recorded configuration, which the target uses unless given one
        assert contents(kb.store) == expected
        assert_same_rankings(rankings(kb), expected_rankings)
        assert kb.store.check() == []
        kb.copy_to(last)
    with hashed(last, None) as kb:
        assert [kb.store.meta(key) for key in ("embedder", "dim", "embedder_version")] == embedder_meta
        assert kb.store.meta(CONFIG_META_KEY) == config
        assert contents(kb.store) == expected
        assert_same_rankings(rankings(kb), expected_rankings)
        assert kb.store.check() == []
    for location in (pg_url, last):
        with hashed(location, None) as kb:
            again = kb.add(files(data_dir))
        assert (again.added, again.replaced, len(again.skipped)) == ([], [], len(FILES))


def test_passage_windows_come_across_in_order(tmp_path: Path, pg_url: str, data_dir: Path) -> None:
    """A store built with the default passage windows: the target holds each chunk's windows' vectors
    in the order the source holds them, bit for bit, read straight from both databases."""
    source = str(tmp_path / "kb")
    build(source, data_dir)
    windows = sqlite_windows(source)
    assert len(windows) > len(FILES)  # the long chunks have several
    with hashed(source, None) as kb:
        report = kb.copy_to(pg_url)
    assert report.windows == len(windows)
    assert postgres_windows(pg_url) == windows


def test_an_interrupted_copy_goes_on_where_it_stopped(tmp_path: Path, pg_url: str, data_dir: Path) -> None:
    """Ctrl-C after the second document: the target holds those two whole and nothing of the others;
    the copy run again skips them, copies the rest, and the target is what one copy makes."""
    source = str(tmp_path / "kb")
    build(source, data_dir)

    def stop_after_two(event: IngestEvent) -> None:
        if event.done == 2:
            raise KeyboardInterrupt

    with hashed(source, None) as kb:
        expected = contents(kb.store)
        counts = kb.store.counts()
        with pytest.raises(KeyboardInterrupt):
            kb.copy_to(pg_url, stop_after_two)
        with open_store(pg_url, read_only=True) as target:
            first = sorted(expected)[:2]
            assert contents(target) == {doc_id: expected[doc_id] for doc_id in first}
            assert target.check() == []
        report = kb.copy_to(pg_url)
    assert report.skipped == first
    assert report.copied == sorted(expected)[2:]
    assert report.counts == counts  # no document twice
    with open_store(pg_url, read_only=True) as target:
        assert contents(target) == expected
        assert target.check() == []


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh target location: a directory, or a schema of the session's PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "target")
    return str(request.getfixturevalue("pg_url"))


def test_a_target_of_another_embedder_is_refused_with_nothing_written(
    tmp_path: Path, target: str, data_dir: Path
) -> None:
    """The target holds a document embedded by another embedder of another dimension: the copy raises a
    ConfigError naming both embedders, and the target's documents, counts, embedder and configuration
    are as they were."""
    source = str(tmp_path / "kb")
    build(source, data_dir)
    other = from_dict({"models": {"cache": False}, "chunking": {"params": {"max_size": 500}}})
    with KnowledgeBase(target, other, models=Models(embedder=Other8())) as kb:
        kb.add(files(data_dir)[:1])

    def state() -> tuple[Any, ...]:
        with open_store(target, read_only=True) as store:
            meta = [store.meta(key) for key in ("embedder", "dim", "embedder_version", CONFIG_META_KEY)]
            return meta, store.counts(), store.documents(), contents(store)

    before = state()
    with hashed(source, None) as kb, pytest.raises(ConfigError) as raised:
        kb.copy_to(target)
    assert "'other-8' (8-d)" in str(raised.value)
    assert "'hash-16' (16-d)" in str(raised.value)
    assert "nothing was copied" in str(raised.value)
    assert state() == before


def test_a_document_that_cannot_be_read_whole_fails_alone(tmp_path: Path, data_dir: Path) -> None:
    """A source document whose chunk lost its vector (damage): it is named with the reason, the target
    holds nothing of it, and the other documents are copied."""
    source, copy = str(tmp_path / "kb"), str(tmp_path / "copy")
    build(source, data_dir)
    damaged = sorted(str(path) for path in files(data_dir))[1]
    with sqlite3.connect(Path(source) / "kb.sqlite") as db:
        db.execute(
            "DELETE FROM vectors WHERE chunk_key = (SELECT chunk_key FROM chunks WHERE doc_id = ? AND"
            " ordinal = 0)",
            (damaged,),
        )
    with open_store(source, read_only=True) as store, open_store(copy) as target:
        report = copy_store(store, target)
        assert [doc_id for doc_id, _ in report.failed] == [damaged]
        assert "chunks have no vector" in report.failed[0][1]
        assert len(report.copied) == len(FILES) - 1
        assert target.state(damaged) is None
        assert target.check() == []


class OneCopy:
    """A source directory of the test files, its document ids, and what one copy of all of it holds."""

    def __init__(self, source: str, ids: list[str], state: dict[str, Any]) -> None:
        self.source, self.ids, self.state = source, ids, state

    def __repr__(self) -> str:  # what hypothesis prints of the fixture
        return f"OneCopy({self.source!r})"


@pytest.fixture(scope="module")
def one_copy(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> OneCopy:
    """The :class:`OneCopy` of the test files."""
    root = tmp_path_factory.mktemp("subsets")
    source, whole = str(root / "source"), str(root / "whole")
    build(source, data_dir)
    with hashed(source, None) as kb:
        kb.copy_to(whole)
        ids = [info.doc_id for info in kb.documents()]
    with open_store(whole, read_only=True) as store:
        return OneCopy(source, ids, _target_state(store))


def _target_state(store: Store) -> dict[str, Any]:
    """What a target holds: its documents as stored, its counts and embedder, its configuration, its
    check, and each chunk's BM25 score for every query (by chunk id, whatever order the keys are in)."""
    scores = {}
    for query in QUERIES:
        ranked = store.bm25(query, 1000)
        ids = {c.key: c.chunk_id for c in store.chunks([key for key, _ in ranked])}
        scores[query] = {ids[key]: round(score, 9) for key, score in ranked}
    return {
        "contents": contents(store),
        "counts": store.counts(),
        "meta": [store.meta(key) for key in ("embedder", "dim", "embedder_version", CONFIG_META_KEY)],
        "check": store.check(),
        "bm25": scores,
    }


@settings(max_examples=6, deadline=None)
@given(st.sets(st.integers(0, len(FILES) - 1)))
def test_a_subset_then_the_rest_makes_the_target_one_copy_makes(one_copy: OneCopy, chosen: set[int]) -> None:
    """Any subset of the documents copied first (from a knowledge base holding only them), then the
    whole source: the target holds what one copy of the whole source holds, each document once."""
    subset = sorted(one_copy.ids[index] for index in chosen)
    with tempfile.TemporaryDirectory() as root:
        part, target = f"{root}/part", f"{root}/target"
        with hashed(one_copy.source, None) as kb:
            kb.copy_to(part)
        with open_store(part) as store:
            for doc_id in one_copy.ids:
                if doc_id not in subset:
                    store.delete(doc_id)
        with hashed(part, None) as kb:
            first = kb.copy_to(target)
        with hashed(one_copy.source, None) as kb:
            rest = kb.copy_to(target)
        assert first.copied == subset
        assert rest.skipped == subset
        assert sorted(rest.copied + rest.skipped) == one_copy.ids
        with open_store(target, read_only=True) as store:
            assert _target_state(store) == one_copy.state


def test_the_command_copies_to_postgresql_and_reports_like_the_other_kb_commands(
    tmp_path: Path, pg_url: str, data_dir: Path
) -> None:
    """``chunkwise kb copy`` on a knowledge base the bundled embedder built: one summary line, the copy
    searches as the source does, `kb check` finds it sound, a second run skips everything (``--json``
    with the target's counts); a target of another embedder and a missing source are one ``error:``
    line with exit status 2, a damaged document an ``error:`` line naming it with exit status 1."""
    source = str(tmp_path / "kb")
    run_chunkwise("ingest", *map(str, files(data_dir)), "--kb", source, check=True)
    done = run_chunkwise("kb", "copy", "--kb", source, "--to", pg_url)
    assert done.returncode == 0, done.stderr
    line = re.fullmatch(
        r"copied 4, skipped 0, failed 0; (\d+) chunks, (\d+) passage windows in [\d.]+ s\. "
        r"Target: 4 documents, (\d+) chunks\.\n",
        done.stdout,
    )
    assert line is not None, done.stdout
    assert line[1] == line[3]
    assert int(line[2]) > 0
    again = run_chunkwise("kb", "copy", "--kb", source, "--to", pg_url, "--json")
    body = json.loads(again.stdout)
    assert (again.returncode, body["copied"], body["skipped"], body["failed"]) == (0, 0, 4, 0)
    assert body["counts"] == {"documents": 4, "chunks": int(line[1]), "vectors": int(line[1])}
    check = run_chunkwise("kb", "check", "--kb", pg_url)
    assert (check.returncode, check.stdout) == (0, f"ok: 4 documents, {line[1]} chunks, {line[1]} vectors\n")
    for query in QUERIES:
        hits = [
            json.loads(run_chunkwise("search", query, "--kb", where, "-k", "5", "--json", check=True).stdout)
            for where in (source, pg_url)
        ]
        assert [h["chunk_id"] for h in hits[0]["hits"]] == [h["chunk_id"] for h in hits[1]["hits"]]
        # the stores compute the scores in their own floating point: equal to float32 precision, which
        # rounding both to a fixed number of decimals does not give (0.369335 rounds either way)
        scores = [[h["score"] for h in found["hits"]] for found in hits]
        assert scores[1] == pytest.approx(scores[0], abs=1e-5)

    other = str(tmp_path / "other")
    with KnowledgeBase(other, CONFIG, models=Models(embedder=Other8())) as kb:
        kb.add(files(data_dir)[:1])
    refused = run_chunkwise("kb", "copy", "--kb", source, "--to", other)
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.startswith("error: ")
    assert refused.stderr.count("\n") == 1
    assert "'other-8' (8-d)" in refused.stderr
    missing = run_chunkwise("kb", "copy", "--kb", str(tmp_path / "none"), "--to", str(tmp_path / "x"))
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: ")
    assert "no knowledge base here" in missing.stderr

    damaged = sorted(map(str, files(data_dir)))[0]
    with sqlite3.connect(Path(source) / "kb.sqlite") as db:
        db.execute(
            "DELETE FROM vectors WHERE chunk_key = (SELECT min(chunk_key) FROM chunks WHERE doc_id = ?)",
            (damaged,),
        )
    partly = run_chunkwise("kb", "copy", "--kb", source, "--to", str(tmp_path / "partly"))
    assert partly.returncode == 1
    assert f"error: {damaged}: " in partly.stderr
    assert partly.stdout.startswith("copied 3, skipped 0, failed 1; ")


def test_a_copy_onto_its_own_store_is_refused(tmp_path: Path, pg_url: str, data_dir: Path) -> None:
    """The target is the source: by the same directory, by a relative path or a symbolic link to it, by
    the same URL. Each is a ConfigError saying nothing was copied (exit 2 from the command), and the
    store is as it was; another directory beside it is copied into."""
    source = tmp_path / "kb"
    build(str(source), data_dir)
    (tmp_path / "link").symlink_to(source, target_is_directory=True)
    with open_store(str(source), read_only=True) as store:
        before = contents(store), store.counts()
    relative = run_chunkwise("kb", "copy", "--kb", str(source), "--to", "kb", cwd=tmp_path)
    assert relative.returncode == 2
    assert relative.stderr.startswith("error: ")
    assert "is the knowledge base being copied; nothing was copied" in relative.stderr
    for same in (str(source), str(tmp_path / "link")):
        with hashed(str(source), None) as kb, pytest.raises(ConfigError, match="being copied"):
            kb.copy_to(same)
    with open_store(str(source), read_only=True) as store:
        assert (contents(store), store.counts()) == before
    with hashed(str(source), None) as kb:
        assert len(kb.copy_to(str(tmp_path / "elsewhere")).copied) == len(FILES)
    with hashed(pg_url) as kb:
        kb.add(files(data_dir)[:1])
        with pytest.raises(ConfigError, match="being copied"):
            kb.copy_to(pg_url)
