"""The knowledge-base database: documents, units, chunks, headers and vectors in one SQLite file.

Why SQLite: one file, no server, transactions. Ingesting a document is ONE transaction (its row, units,
chunks, headers, vectors and BM25 postings), so a crash or ``kill -9`` leaves the whole document or none
of it. WAL mode lets readers keep searching while one writer ingests; every write bumps a
``generation`` counter, which tells readers (in this process or another) to reload the vector matrix.

Why FTS5 for BM25: FTS5 postings live in the same transaction as the chunks, so the lexical index can
never disagree with the chunk table, and adding or deleting a document touches only its own rows (Okapi
BM25, k1 = 1.2, b = 0.75, Porter stemmer over Unicode word tokens). Its query time grows with the store,
so large stores answer BM25 queries from a bm25s sidecar built from these rows (:mod:`.lexical`);
``bench/pipeline_latency.py`` has the measurements behind the switch.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chunkwise.chunking.chunk import Chunk
from chunkwise.document import Document, Unit, UnitKind
from chunkwise.errors import ConfigError
from chunkwise.models.protocols import Vectors
from chunkwise.retrieval.candidate import Candidate, contextual_text
from chunkwise.retrieval.terms import query_terms
from chunkwise.store.dense import DenseIndex
from chunkwise.store.lexical import LexicalIndex

SCHEMA_VERSION = 1
DB_NAME = "kb.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, source TEXT, title TEXT, format TEXT NOT NULL, content_hash TEXT NOT NULL,
    fingerprint TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '', metadata TEXT NOT NULL, text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS units (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE, unit_id TEXT NOT NULL,
    kind TEXT NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL, level INTEGER NOT NULL,
    parent TEXT, page INTEGER, PRIMARY KEY (doc_id, unit_id)
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_key INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE, ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, text TEXT NOT NULL, section TEXT NOT NULL,
    unit_ids TEXT NOT NULL, tokens INTEGER NOT NULL, pages TEXT, UNIQUE (doc_id, ordinal)
);
CREATE TABLE IF NOT EXISTS headers (
    chunk_key INTEGER PRIMARY KEY REFERENCES chunks(chunk_key) ON DELETE CASCADE, header TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS vectors (
    chunk_key INTEGER PRIMARY KEY REFERENCES chunks(chunk_key) ON DELETE CASCADE,
    vector BLOB NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts
    USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2');
"""


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """A stored document's identity and size (no text)."""

    doc_id: str
    source: str | None
    title: str | None
    format: str
    content_hash: str
    chunks: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "doc_id": self.doc_id,
            "source": self.source,
            "title": self.title,
            "format": self.format,
            "content_hash": self.content_hash,
            "chunks": self.chunks,
        }


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: the query's content words, each quoted, joined by OR (``""`` if none)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in query_terms(text))


class Store:
    """One knowledge-base directory. Thread-safe for one process (a lock serialises use of the connection);
    open one :class:`Store` per process, as many processes as needed (one writer at a time)."""

    def __init__(
        self, directory: str | Path, *, hnsw_threshold: int = 50_000, bm25s_threshold: int | None = 20_000
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.hnsw_threshold = hnsw_threshold
        self.bm25s_threshold = bm25s_threshold
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            self.directory / DB_NAME, timeout=60.0, isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        if not self._has_schema():
            with self._write(bump=False):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
        version = int(self.meta("schema_version") or 0)
        if version != SCHEMA_VERSION:
            raise ConfigError(
                f"{self.directory}: store schema {version} is not the supported {SCHEMA_VERSION}"
            )
        self._dense: DenseIndex | None = None
        self._lexical: LexicalIndex | None = None

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _has_schema(self) -> bool:
        """True when the tables exist: opening an existing store takes no write lock, so a reader can
        open it while a writer holds a long ingest transaction."""
        rows = self._rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
        return bool(rows) and self.meta("schema_version") is not None

    @contextmanager
    def _write(self, *, bump: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE`` takes the writer lock at once); a data write bumps
        the generation, so readers reload their vectors."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                if bump:
                    self._db.execute(
                        "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def meta(self, key: str) -> str | None:
        """A value of the ``meta`` table."""
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Set a value of the ``meta`` table (its own transaction)."""
        with self._write(bump=False) as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """The number of committed writes so far (changes whenever any process writes)."""
        return int(self.meta("generation") or 0)

    def check_embedder(self, name: str, dim: int, version: str = "", *, record: bool = True) -> None:
        """:class:`ConfigError` if vectors of another embedder (name, dimension or package version) fill
        this store: their cosines with this one's vectors mean nothing. An empty store records the
        embedder when ``record`` (ingest); a search (``record=False``) only checks. Stores written before
        versions were recorded are checked by name and dimension."""
        stored = self.meta("embedder")
        if stored is None:
            if record:
                with self._write(bump=False) as db:
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (name,))
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(dim),))
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder_version', ?)", (version,))
            return
        stored_dim = self.meta("dim") or "?"
        stored_version = self.meta("embedder_version")
        if stored != name or stored_dim != str(dim) or (stored_version and stored_version != version):
            built = f"{stored!r} ({stored_dim}-d{', ' + stored_version if stored_version else ''})"
            given = f"{name!r} ({dim}-d{', ' + version if version else ''})"
            raise ConfigError(
                f"{self.directory}: built with embedder {built}, not {given}; its vectors cannot be "
                "compared: search with the same embedder, or ingest into a new directory"
            )

    # --- documents -------------------------------------------------------------------------------

    def state(self, doc_id: str) -> tuple[str, str] | None:
        """``(content_hash, fingerprint)`` of a stored document, ``None`` if absent."""
        rows = self._rows("SELECT content_hash, fingerprint FROM documents WHERE doc_id = ?", (doc_id,))
        return (rows[0][0], rows[0][1]) if rows else None

    def put(
        self,
        doc: Document,
        chunks: Sequence[Chunk],
        headers: Sequence[str],
        vectors: Vectors,
        *,
        fingerprint: str,
        summary: str = "",
    ) -> None:
        """Store ``doc`` with its chunks, headers and vectors, replacing any earlier version, atomically."""
        if not len(chunks) == len(headers) == vectors.shape[0]:
            raise ValueError("chunks, headers and vectors must have one entry each per chunk")
        with self._write() as db:
            self._delete(db, doc.id)
            db.execute(
                "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    doc.id,
                    doc.source,
                    doc.title,
                    doc.format,
                    doc.content_hash,
                    fingerprint,
                    summary,
                    json.dumps(doc.metadata, ensure_ascii=False),
                    doc.text,
                ),
            )
            db.executemany(
                "INSERT INTO units VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(doc.id, u.id, u.kind.value, u.start, u.end, u.level, u.parent, u.page) for u in doc.units],
            )
            for ordinal, (chunk, header, vector) in enumerate(zip(chunks, headers, vectors, strict=True)):
                cursor = db.execute(
                    'INSERT INTO chunks (chunk_id, doc_id, ordinal, start, "end", text, section, unit_ids,'
                    " tokens, pages) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        chunk.id,
                        doc.id,
                        ordinal,
                        chunk.start,
                        chunk.end,
                        chunk.text,
                        json.dumps(chunk.section, ensure_ascii=False),
                        json.dumps(chunk.unit_ids),
                        chunk.tokens,
                        json.dumps(chunk.pages) if chunk.pages else None,
                    ),
                )
                key = cursor.lastrowid
                db.execute("INSERT INTO headers VALUES (?, ?)", (key, header))
                db.execute(
                    "INSERT INTO vectors VALUES (?, ?)", (key, np.asarray(vector, dtype=np.float32).tobytes())
                )
                db.execute(
                    "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)",
                    (key, contextual_text(header, chunk.text)),
                )

    def delete(self, doc_id: str) -> bool:
        """Remove a document and everything derived from it; False if it was not there."""
        with self._write() as db:
            return self._delete(db, doc_id)

    @staticmethod
    def _delete(db: sqlite3.Connection, doc_id: str) -> bool:
        db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT chunk_key FROM chunks WHERE doc_id = ?)", (doc_id,)
        )
        return db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,)).rowcount > 0

    def documents(self) -> list[DocumentInfo]:
        """Every stored document, by id."""
        rows = self._rows(
            "SELECT d.doc_id, d.source, d.title, d.format, d.content_hash, COUNT(c.chunk_key)"
            " FROM documents d LEFT JOIN chunks c ON c.doc_id = d.doc_id GROUP BY d.doc_id ORDER BY d.doc_id"
        )
        return [DocumentInfo(*row) for row in rows]

    def document(self, doc_id: str) -> Document:
        """The stored document, units included; ``KeyError`` if absent."""
        rows = self._rows(
            "SELECT doc_id, text, title, source, format, metadata FROM documents WHERE doc_id = ?", (doc_id,)
        )
        if not rows:
            raise KeyError(doc_id)
        doc_id, text, title, source, fmt, metadata = rows[0]
        units = tuple(
            Unit(uid, UnitKind(kind), start, end, text[start:end], level, parent, page)
            for uid, kind, start, end, level, parent, page in self._rows(
                'SELECT unit_id, kind, start, "end", level, parent, page FROM units WHERE doc_id = ?'
                " ORDER BY rowid",
                (doc_id,),
            )
        )
        return Document(doc_id, text, title, source, fmt, json.loads(metadata), units)

    def summary(self, doc_id: str) -> str:
        """The document summary stored with it (empty when none)."""
        rows = self._rows("SELECT summary FROM documents WHERE doc_id = ?", (doc_id,))
        return str(rows[0][0]) if rows else ""

    def counts(self) -> dict[str, int]:
        """Numbers of documents, chunks and vectors."""
        return {
            "documents": self._rows("SELECT COUNT(*) FROM documents")[0][0],
            "chunks": self._rows("SELECT COUNT(*) FROM chunks")[0][0],
            "vectors": self._rows("SELECT COUNT(*) FROM vectors")[0][0],
        }

    def check(self) -> list[str]:
        """Consistency problems (empty when none): every chunk has a header, a vector and a BM25 row, and
        no derived row is orphaned. The crash test relies on this."""
        problems = []
        orphans = [
            ("chunks without header", "chunks", "chunk_key", "headers", "chunk_key"),
            ("chunks without vector", "chunks", "chunk_key", "vectors", "chunk_key"),
            ("chunks without BM25 row", "chunks", "chunk_key", "chunks_fts", "rowid"),
            ("BM25 rows without chunk", "chunks_fts", "rowid", "chunks", "chunk_key"),
            ("vectors without chunk", "vectors", "chunk_key", "chunks", "chunk_key"),
            ("documents without chunks", "documents", "doc_id", "chunks", "doc_id"),
        ]
        checks = {
            name: f"SELECT COUNT(*) FROM {table} WHERE {column} NOT IN (SELECT {other_column} FROM {other})"
            for name, table, column, other, other_column in orphans
        }
        for name, sql in checks.items():
            count = self._rows(sql)[0][0]
            if count:
                problems.append(f"{count} {name}")
        integrity = self._rows("PRAGMA integrity_check")[0][0]
        if integrity != "ok":
            problems.append(f"integrity: {integrity}")
        return problems

    # --- search ----------------------------------------------------------------------------------

    def bm25(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best chunk keys by BM25 over header + text, with positive scores (higher is better):
        FTS5 below ``bm25s_threshold`` chunks, the bm25s sidecar (:mod:`.lexical`) at or above it."""
        if self.bm25s_threshold is not None and len(self.dense_index()) >= self.bm25s_threshold:
            return self.lexical_index().search(query, k)
        match = fts_query(query)
        if not match:
            return []
        rows = self._rows(
            "SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?",
            (match, k),
        )
        return [(int(key), -float(score)) for key, score in rows]

    def lexical_index(self) -> LexicalIndex:
        """The bm25s index of the current generation (loaded or built on first use after a write)."""
        generation = self.generation()
        if self._lexical is None or self._lexical.generation != generation:

            def rows() -> list[tuple[int, str]]:
                return [
                    (int(k), str(b))
                    for k, b in self._rows("SELECT rowid, body FROM chunks_fts ORDER BY rowid")
                ]

            self._lexical = LexicalIndex.open(self.directory, generation, rows)
        return self._lexical

    def dense_index(self) -> DenseIndex:
        """The vectors of the current generation (reloaded when any process has written since)."""
        generation = self.generation()
        if self._dense is None or self._dense.generation != generation:
            with self._lock:
                rows = self._db.execute("SELECT chunk_key, vector FROM vectors ORDER BY chunk_key").fetchall()
                dim = int(self.meta("dim") or 0)
            keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
            self._dense = DenseIndex(keys, matrix, generation, self.directory, self.hnsw_threshold)
        return self._dense

    def candidates(self, keys: Sequence[int]) -> list[Candidate]:
        """Candidates for chunk ``keys`` (in the given order; keys no longer stored are skipped)."""
        if not keys:
            return []
        marks = ",".join("?" * len(keys))
        rows = self._rows(
            'SELECT c.chunk_key, c.chunk_id, c.doc_id, c.start, c."end", c.text, h.header, c.ordinal'
            f" FROM chunks c JOIN headers h ON h.chunk_key = c.chunk_key WHERE c.chunk_key IN ({marks})",
            list(keys),
        )
        by_key = {row[0]: Candidate(*row) for row in rows}
        found = [by_key[k] for k in keys if k in by_key]
        index = self.dense_index()
        present = np.array([c.key for c in found], dtype=np.int64)
        if present.size and index.keys.size:
            vectors = index.rows(present)
            for cand, vector in zip(found, vectors, strict=True):
                cand.vector = vector
        return found

    def chunk_spans(self, doc_id: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each chunk of ``doc_id``, by ordinal."""
        return [
            (s, e)
            for s, e in self._rows(
                'SELECT start, "end" FROM chunks WHERE doc_id = ? ORDER BY ordinal', (doc_id,)
            )
        ]

    def document_text(self, doc_id: str, start: int, end: int) -> str:
        """``document.text[start:end]`` (sliced in SQL: substr counts characters, 1-based)."""
        rows = self._rows(
            "SELECT substr(text, ?, ?) FROM documents WHERE doc_id = ?", (start + 1, end - start, doc_id)
        )
        if not rows:
            raise KeyError(doc_id)
        return str(rows[0][0])
