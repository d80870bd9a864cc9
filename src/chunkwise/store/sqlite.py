"""The knowledge-base database: documents, units, chunks, headers and vectors in one SQLite file.

Why SQLite: one file, no server, transactions. Ingesting a document is ONE transaction (its row, units,
chunks, headers, vectors and BM25 postings), so a crash or ``kill -9`` leaves the whole document or none
of it. WAL mode lets readers keep searching while one writer ingests; every write that changes the data
bumps a ``generation`` counter, which tells readers (in this process or another) to reload the vector
matrix (a write that finds nothing to do leaves it, so nothing is reloaded or rebuilt for it).

Why FTS5 for BM25: FTS5 postings live in the same transaction as the chunks, so the lexical index can
never disagree with the chunk table, and adding or deleting a document touches only its own rows (Okapi
BM25, k1 = 1.2, b = 0.75). FTS5 indexes the terms of :func:`chunkwise.terms.index_terms` (folded and
stemmed in Python, joined by spaces, split again by FTS5's ``ascii`` tokenizer, which keeps them as they
are), so every store ranks the same terms the same way. Its query time grows with the store, so large
stores answer BM25 queries from a bm25s sidecar built from these rows (:mod:`.lexical`);
``bench/pipeline_latency.py`` has the measurements behind the switch.

Schema 2 changed the FTS5 rows from raw text (FTS5's own Porter tokenizer) to analysed terms; a schema-1
store is upgraded when opened for writing (its FTS5 table rebuilt from the stored chunks and headers), and
a newer schema is refused (:mod:`.schema`).

Opening is defensive, because the directory comes from the user: a location that is not a directory,
database files that are not regular files, a 0-byte or overwritten database and a damaged write-ahead log
are refused with a :class:`~chunkwise.errors.StoreError` naming the directory and the reason
(:mod:`.sqlite_files` inspects the files before SQLite touches them). A new database is built under a
temporary name and linked into place, so ``kb.sqlite`` always holds a whole schema and a 0-byte one is
damage, never a store being created. A store opened ``read_only`` uses a read-only SQLite connection (and
keeps the sidecar indexes in memory), so a read-only or immutable directory can still be searched. Any
SQLite failure later (a damaged page, a lock held too long) is raised as a ``StoreError`` too;
``check()`` lists the damage and ``repair()`` rebuilds the store from what can be read
(:mod:`.sqlite_repair`).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np

from chunkwise.chunking.chunk import Chunk
from chunkwise.document import Document, Unit, UnitKind
from chunkwise.errors import ChunkwiseError, ConfigError, CorruptStoreError, SchemaVersionError, StoreError
from chunkwise.models.protocols import Vectors
from chunkwise.store import dense, lexical
from chunkwise.store.dense import DenseIndex
from chunkwise.store.lexical import LexicalIndex
from chunkwise.store.protocol import (
    EMBEDDER_META,
    DocumentInfo,
    Status,
    StoredChunk,
    StoredDocument,
    StoreSettings,
    check_put_embedder,
    check_put_widths,
    check_recorded_embedder,
    recorded_embedder,
    substring_bounds,
    with_vectors,
)
from chunkwise.store.row_buffer import RowBuffer
from chunkwise.store.schema import recorded_version, upgrade
from chunkwise.store.sidecar import Keys, stamp_state
from chunkwise.store.sqlite_files import check_usable, damage, shm_path, wal_frames, wal_path
from chunkwise.store.sqlite_reembed import SQLiteReembedding, stored_for_embedding
from chunkwise.store.sqlite_repair import check_database, salvage
from chunkwise.store.sqlite_schema import (
    COMPLETION,
    DB_NAME,
    SCHEMA_VERSION,
    complete_schema,
    create_schema,
    fts_body,
    installed,
    rebuild_fts,
)
from chunkwise.terms import search_terms

__all__ = ["DB_NAME", "SQLiteStore", "fts_body", "fts_query"]

#: Seconds a connection waits for another process's write lock before it gives up.
BUSY_TIMEOUT = 60.0
#: SQLite's error names for a damaged file, and the messages that say so without one.
CORRUPT_ERRORS = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
CORRUPT_MESSAGES = ("malformed", "not a database", "vtable constructor failed")
#: How to go on after damage, for the messages that report it.
REPAIR_HINT = "`chunkwise kb check` lists the damage and `chunkwise kb repair` rebuilds what can be kept"
#: How many values one SQL statement binds at most (SQLite before 3.32 allows 999).
SQL_VARIABLES = 900
#: How many times a dense search starts again on a newer generation when a write lands before it has
#: read its passage windows (:meth:`SQLiteStore.dense`); the last try holds the store's lock.
SEARCH_TRIES = 3
#: The sidecar indexes beside the database, as ``(saved index, stamp)``.
SIDECARS = ((lexical.FOLDER, lexical.STAMP), (dense.GRAPH, dense.STAMP))


def _ready(db: sqlite3.Connection, *, damaged: bool = False) -> sqlite3.Connection:
    """``db`` set up (cascading deletes on, a sync per checkpoint rather than per commit) once it has read
    the schema: SQLite opens files lazily, so a file it cannot read fails here, not at the first query.
    Closed again if it cannot. ``damaged``: read a truncated file as far as it goes (SQLite refuses a
    file shorter than its header says unless the schema is writable; nothing here writes the schema)."""
    try:
        if damaged:
            db.execute("PRAGMA writable_schema=ON")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        db.close()
        raise
    return db


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: the query's search terms, each quoted, joined by OR (``""`` if none)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in search_terms(text))


class _GenerationMovedError(StoreError):
    """A window read for an index of an older generation than the store's (a write landed since the index
    was read): its chunk keys may now name other chunks, so the search must start again."""


class SQLiteStore:
    """One knowledge-base directory. Thread-safe for one process (a lock serialises use of the connection);
    open one :class:`SQLiteStore` per process, as many processes as needed (one writer at a time).

    ``create``: make the directory and an empty database when there is none (else the database must
    exist). ``read_only``: never write (searching a read-only or immutable directory); the database must
    exist, in the current schema (an older one is upgraded by the first store opened for writing).
    ``damaged_ok``: open despite damage the files show (a truncated database, a damaged write-ahead log)
    so that :meth:`check` can report it and :meth:`repair` mend it; anything else raises
    :class:`~chunkwise.errors.CorruptStoreError` for it.
    """

    def __init__(
        self,
        directory: str | Path,
        settings: StoreSettings | None = None,
        *,
        create: bool = True,
        read_only: bool = False,
        damaged_ok: bool = False,
    ) -> None:
        if not str(directory).strip():
            raise StoreError(repr(str(directory)), "no knowledge-base directory given")
        self.directory = Path(directory)
        self.path = self.directory / DB_NAME
        self.settings = settings or StoreSettings()
        self.read_only = read_only
        self._create_ok = create and not read_only
        self._damaged_ok = damaged_ok
        self._lock = threading.RLock()
        self._dense: DenseIndex | None = None
        self._dense_removals: str | None = None
        # the dense index's arrays, grown in place as chunks are added (keys, vectors, windows' owners
        # and vectors)
        self._grown: dict[str, RowBuffer[Any]] = {
            part: RowBuffer() for part in ("keys", "matrix", "owners", "windows")
        }
        self._lexical: LexicalIndex | None = None
        self._open_directory()
        check_usable(self.path, self.location)
        #: Damage the files showed when the store was opened (reported by :meth:`check`).
        self.damage = damage(self.path) if self.path.exists() else []
        if self.damage and not damaged_ok:
            raise CorruptStoreError(self.location, f"{self.damage[0]}; {REPAIR_HINT}")
        if self._create_ok and not self.path.exists():
            self._create()
        try:
            self._db = self._connect()
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc
        try:
            self._check_schema()
        except ChunkwiseError:
            self._db.close()
            raise

    def _check_schema(self) -> None:
        """Raise unless the database is a knowledge base of the supported schema, upgrading an older one
        (a damaged one opened ``damaged_ok`` whose version cannot be read is let through, with the damage
        recorded; so is an older one, which :meth:`repair` rebuilds in the current schema)."""
        if not self._rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"):
            raise StoreError(self.location, f"{DB_NAME} is a SQLite database, but not a knowledge base")
        try:
            version = recorded_version(self.location, self.meta("schema_version"))
        except CorruptStoreError as exc:
            if not self._damaged_ok:
                raise
            self.damage.append(f"the schema version cannot be read ({exc.__cause__ or exc.reason})")
            return
        if version < SCHEMA_VERSION and (self.read_only or (self._damaged_ok and self.damage)):
            # upgrading writes (and reads every chunk): not on a read-only store, nor on a damaged one,
            # which repair() rebuilds in the current schema
            reason = (
                f"store schema {version} is older than the supported {SCHEMA_VERSION}: `chunkwise kb repair` "
                "or an ingest, with write access, upgrades it"
            )
            if not self._damaged_ok:
                raise SchemaVersionError(self.location, reason)
            self.damage.append(reason)
            return
        try:
            upgrade(self.location, version, SCHEMA_VERSION, {1: self._upgrade_1})
        except CorruptStoreError as exc:
            if not self._damaged_ok:
                raise
            self.damage.append(f"the upgrade from store schema {version} failed ({exc.reason})")
            return
        if self.read_only or (self._damaged_ok and self.damage):
            return  # nothing is written to a damaged store before repair() copies what it can read
        if self._installed() != COMPLETION:  # a store made by an earlier release
            with self._write(bump=False) as db:
                complete_schema(db)
        if not self.store_id():  # made before stores had ids: the first writer gives it one
            with self._write(bump=False) as db:
                db.execute("INSERT OR IGNORE INTO meta VALUES ('store_id', ?)", (uuid.uuid4().hex,))

    def _installed(self) -> frozenset[str]:
        """Which of the tables and triggers that stores made by earlier releases lack the database has
        (:func:`.sqlite_schema.installed`)."""
        with self._lock:
            try:
                return installed(self._db)
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc

    def _upgrade_1(self) -> None:
        """Schema 1 -> 2: FTS5 rows of analysed terms instead of raw text (see the module docstring)."""
        with self._write() as db:
            rebuild_fts(db)
            db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")

    def _open_directory(self) -> None:
        """Check the location is a directory this store can use (creating it to write), else raise."""
        if self.directory.exists() and not self.directory.is_dir():
            raise StoreError(self.location, "not a directory")
        if not self._create_ok and not self.path.exists():
            raise StoreError(self.location, "no knowledge base here (ingest documents into it first)")
        if self.read_only:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(self.location, f"cannot create the directory: {exc.strerror}") from None
        if not os.access(self.directory, os.W_OK) or (
            self.path.exists() and not os.access(self.path, os.W_OK)
        ):
            raise StoreError(
                self.location, "read-only: it can be searched, but writing to it needs write access"
            )

    def _create(self) -> None:
        """Build an empty database under a temporary name and link it into place: ``kb.sqlite`` appears
        whole or not at all, and when two processes create it at once, the first link wins."""
        fresh = self.path.with_name(f"{DB_NAME}.{os.getpid()}.{threading.get_ident()}.new")
        try:
            with closing(sqlite3.connect(fresh, isolation_level=None)) as db:
                db.execute("PRAGMA journal_mode=WAL")
                create_schema(db)
            try:
                os.link(fresh, self.path)
            except FileExistsError:
                pass  # another process created it first; use that one
            except OSError:  # a file system without hard links: a rename cannot refuse to replace
                if not self.path.exists():
                    os.replace(fresh, self.path)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(self.location, f"cannot create {DB_NAME}: {exc}") from None
        finally:
            for leftover in (fresh, wal_path(fresh), shm_path(fresh)):
                leftover.unlink(missing_ok=True)

    def _connect(self) -> sqlite3.Connection:
        """The connection: read-write, or read-only. SQLite reads a WAL database through its ``-shm``
        file, which a read-only directory may lack and cannot get; with no commit waiting in the log, the
        file is then read as immutable."""
        options: dict[str, Any] = {
            "timeout": BUSY_TIMEOUT,
            "isolation_level": None,
            "check_same_thread": False,
        }
        damaged = self._damaged_ok and bool(self.damage)
        if not self.read_only:
            return _ready(sqlite3.connect(self.path, **options), damaged=damaged)
        uri = self.path.resolve().as_uri()
        try:
            return _ready(sqlite3.connect(f"{uri}?mode=ro", uri=True, **options), damaged=damaged)
        except sqlite3.OperationalError:
            if os.access(self.directory, os.W_OK):
                raise
            if wal_frames(wal_path(self.path))[0]:
                raise StoreError(
                    self.location,
                    f"read-only, and {wal_path(self.path).name} holds commits that SQLite can only read with "
                    "write access to the directory: allow it for one ingest or `chunkwise kb repair`, which "
                    f"fold them into {DB_NAME}",
                ) from None
            return _ready(sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, **options), damaged=damaged)

    def _failure(self, exc: sqlite3.Error) -> StoreError:
        """The :class:`StoreError` to raise for a failed SQLite call."""
        message = str(exc)
        name = getattr(exc, "sqlite_errorname", "") or ""
        if name.startswith(CORRUPT_ERRORS) or any(sign in message for sign in CORRUPT_MESSAGES):
            return CorruptStoreError(self.location, f"{DB_NAME} is damaged ({message}); {REPAIR_HINT}")
        if name.startswith("SQLITE_READONLY"):
            return StoreError(self.location, f"read-only ({message}): writing to it needs write access")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return StoreError(
                self.location, f"{message}: another process kept it locked for {BUSY_TIMEOUT:.0f} s"
            )
        return StoreError(self.location, message)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()

    @property
    def keeps_windows(self) -> bool:
        """Passage windows are kept (the ``windows`` table)."""
        return True

    @property
    def location(self) -> str:
        """The knowledge-base directory."""
        return str(self.directory)

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self, *, bump: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE`` takes the writer lock at once); a data write that
        changed rows bumps the generation, so readers reload their vectors. One that changed none (a
        delete of a document not stored, a put skipped because the document was stored meanwhile) leaves
        it as it was: every reader would reload its vectors, and the HNSW graph be rebuilt, for nothing.
        A SQLite failure rolls it back and is raised as a :class:`StoreError`."""
        if self.read_only:
            raise StoreError(self.location, "opened read-only: nothing can be written to it")
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc
            try:
                changes = self._db.total_changes  # rows changed by this connection, triggers included
                yield self._db
                if bump and self._db.total_changes != changes:
                    self._db.execute(
                        "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
                    )
                self._db.execute("COMMIT")
            except BaseException as exc:
                with suppress(sqlite3.Error):  # SQLite may have rolled back already
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._failure(exc) from exc
                raise

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc

    def meta(self, key: str) -> str | None:
        """A value of the ``meta`` table."""
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Set a value of the ``meta`` table (its own transaction)."""
        with self._write(bump=False) as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """The number of committed writes that changed the data so far (moves whenever any process
        changes it; a put skipped or a delete of nothing is no change)."""
        return int(self.meta("generation") or 0)

    def check_embedder(self, name: str, dim: int, version: str = "", *, record: bool = True) -> None:
        """:class:`ConfigError` if vectors of another embedder (name, dimension or package version) fill
        this store: their cosines with this one's vectors mean nothing. An empty store records the
        embedder when ``record`` (ingest); a search (``record=False``) only checks. Stores written before
        versions were recorded are checked by name and dimension.

        Recording reads the store again inside its write transaction (which holds the writer lock), so
        of two ingests that start on an empty store with different embedders, the second checks against
        the first's instead of overwriting it (the store would hold vectors of two sizes)."""
        if record and self.meta("embedder") is None:
            with self._write(bump=False) as db:
                taken = db.execute("SELECT 1 FROM meta WHERE key = 'embedder'").fetchone() is not None
                if not taken:
                    db.execute("INSERT INTO meta VALUES ('embedder', ?)", (name,))
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(dim),))
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder_version', ?)", (version,))
            if not taken:
                return
        recorded = recorded_embedder(self._rows(EMBEDDER_META.format(meta="meta")))
        if recorded is not None:
            check_recorded_embedder(self.location, recorded, (name, dim, version), "directory")

    @contextmanager
    def reembedding(
        self, embedder: tuple[str, int, str], meta: Mapping[str, str] | None = None
    ) -> Iterator[SQLiteReembedding]:
        """A re-embedding in ONE write transaction (:class:`~.sqlite_reembed.SQLiteReembedding`): readers
        on other connections (other processes, other store objects) see the old store until it commits,
        writers wait for it (up to :data:`BUSY_TIMEOUT`), threads sharing this store object wait for it
        whatever they do (they share its connection), and an error rolls all of it back. The generation
        moves, so every reader reloads its vectors and the sidecar indexes are built again."""
        with self._write() as db:
            session = SQLiteReembedding(db, self.location, embedder, self.document)
            yield session
            session.finish(meta)

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
        windows: tuple[Sequence[int], Vectors] | None = None,
        embedder: tuple[str, int, str] | None = None,
    ) -> Status:
        """Store ``doc`` with its chunks, headers and vectors, replacing any earlier version, atomically.

        Returns what was committed: ``added``, ``replaced``, or ``skipped`` when the same content,
        fingerprint and stored fields (:meth:`Document.stored_alike`) were stored meanwhile (by another
        writer). ``windows``: the passage windows' vectors,
        each with the index of its chunk in ``chunks``. Vectors of another size than the recorded
        embedder's are refused before anything is written (:func:`.check_put_widths`), and vectors of
        another ``embedder`` than the one recorded when the write transaction begins (the store was
        re-embedded meanwhile) in it (:func:`.check_put_embedder`)."""
        if not len(chunks) == len(headers) == vectors.shape[0]:
            raise ValueError("chunks, headers and vectors must have one entry each per chunk")
        dim = self.meta("dim")
        if dim is not None:
            check_put_widths(
                self.location,
                doc.id,
                int(dim),
                self.meta("embedder") or "",
                vectors=vectors,
                windows=windows[1] if windows is not None else None,
            )
        with self._write() as db:
            recorded = recorded_embedder(db.execute(EMBEDDER_META.format(meta="meta")).fetchall())
            check_put_embedder(self.location, doc.id, recorded, embedder)
            stored = db.execute(
                "SELECT content_hash, fingerprint FROM documents WHERE doc_id = ?", (doc.id,)
            ).fetchone()
            same = stored is not None and tuple(stored) == (doc.content_hash, fingerprint)
            if same and self.document(doc.id).stored_alike(doc):  # read in this transaction
                return "skipped"
            replaced = self._delete(db, doc.id)
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
            keys: list[int] = []
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
                keys.append(int(key or 0))
                db.execute("INSERT INTO headers VALUES (?, ?)", (key, header))
                db.execute(
                    "INSERT INTO vectors VALUES (?, ?)", (key, np.asarray(vector, dtype=np.float32).tobytes())
                )
                db.execute(
                    "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)", (key, fts_body(header, chunk.text))
                )
            if windows is not None:
                owners, window_vectors = windows
                db.executemany(
                    "INSERT INTO windows (chunk_key, vector) VALUES (?, ?)",
                    [
                        (keys[owner], np.asarray(vector, dtype=np.float32).tobytes())
                        for owner, vector in zip(owners, window_vectors, strict=True)
                    ],
                )
        return "replaced" if replaced else "added"

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

    def stored_document(self, doc_id: str) -> StoredDocument:
        """Everything stored of ``doc_id``, read in one read transaction (see
        :meth:`.protocol.Store.stored_document`); ``KeyError`` if absent, :class:`CorruptStoreError`
        for a chunk without a vector or a vector not of the recorded dimension."""
        with self._lock, self._snapshot():
            try:
                row = self._db.execute(
                    "SELECT fingerprint, summary FROM documents WHERE doc_id = ?", (doc_id,)
                ).fetchone()
                if row is None:
                    raise KeyError(doc_id)
                stored = stored_for_embedding(self._db, doc_id, row[0], self.document)
                vectors = self._db.execute(
                    "SELECT c.chunk_key, v.vector FROM chunks c LEFT JOIN vectors v USING (chunk_key)"
                    " WHERE c.doc_id = ? ORDER BY c.ordinal",
                    (doc_id,),
                ).fetchall()
                windows = []  # a store of an earlier release opened read-only has no windows table
                if "windows" in self._installed():
                    windows = self._db.execute(
                        "SELECT w.chunk_key, w.vector FROM windows w JOIN chunks c USING (chunk_key)"
                        " WHERE c.doc_id = ? ORDER BY w.window_key",
                        (doc_id,),
                    ).fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc
            return with_vectors(
                self.location,
                stored,
                summary=row[1],
                vectors=vectors,
                windows=windows,
                matrix=lambda rows: self._vector_rows(rows)[1],
            )

    def document_spans(self, doc_id: str) -> tuple[Document, list[tuple[int, int]]]:
        """The stored document and its chunks' spans, read in one read transaction (see
        :meth:`.protocol.Store.document_spans`); ``KeyError`` if absent."""
        with self._lock, self._snapshot():
            return self.document(doc_id), self.chunk_spans(doc_id)

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
        """Every problem of the store, empty when none: damage the files showed when it was opened,
        SQLite's integrity check, the FTS5 index read whole, orphaned rows, every document read back with
        its chunks' offsets checked against its text and a header and a vector of the right size per
        chunk (:func:`~.sqlite_repair.check_database`), and the sidecar indexes that claim the current
        generation checked against their stamps. It reads, never writes."""
        with self._lock:
            problems = list(self.damage)
            problems += check_database(self._db, int(self._meta_or("dim", "0")))
            try:
                index = self.dense_index()
            except StoreError:
                return problems  # the vectors cannot be read: reported above, and no sidecar can be checked
            for saved, stamp in SIDECARS:
                state = stamp_state(
                    self.directory / stamp,
                    index.generation,
                    index.keys,
                    self.directory / saved,
                    store=index.store,
                    token=index.token,
                )
                if state.problem:
                    problems.append(state.problem)
            return problems

    def store_id(self) -> str:
        """The database's random id, which the sidecars' stamps name ("" for a store made before ids were
        recorded and opened read-only: its sidecars are told apart by generation and keys alone)."""
        return self._meta_or("store_id", "")

    def _meta_or(self, key: str, default: str) -> str:
        """A ``meta`` value, ``default`` when it is unset or cannot be read."""
        try:
            return self.meta(key) or default
        except StoreError:
            return default

    def repair(self) -> list[str]:
        """Rebuild the store from the rows it can read: every document that reads back whole and exact is
        copied into a new database whose FTS5 index is built from the copied rows, the sidecar indexes
        are rebuilt for the new generation, and the new database replaces the old. Returns what was done,
        with every document that could not be kept named (so that ingesting its file again restores it).
        The old database is kept as ``kb.sqlite.bak`` when anything was lost, a damaged write-ahead log as
        ``kb.sqlite-wal.damaged``. Nothing else may use the store meanwhile: another open connection
        stops the repair before the swap, with the store unchanged."""
        if self.read_only:
            raise StoreError(self.location, "opened read-only: it cannot be repaired")
        with self._lock:
            done: list[str] = []
            wal = wal_path(self.path)
            log_problem = wal_frames(wal)[1]
            if log_problem:
                kept = wal.with_name(wal.name + ".damaged")
                shutil.copyfile(wal, kept)
                done.append(
                    f"{wal.name} was damaged ({log_problem}): a copy is kept as {kept.name}; ingest the "
                    "files you added last again"
                )
            fresh = self.path.with_name(DB_NAME + ".repair")
            fresh.unlink(missing_ok=True)
            generation = int(self._meta_or("generation", "0")) + 1
            try:
                result = salvage(self._db, fresh, generation)
                lost = bool(self.damage or result.removed or result.notes)
                self._swap(fresh, keep_old=lost)
            finally:
                fresh.unlink(missing_ok=True)
            done += result.notes + result.removed
            done.append(
                f"kept {result.documents} documents ({result.chunks} chunks) and rebuilt the full-text index"
            )
            if lost:
                done.append(f"the database before the repair is kept as {DB_NAME}.bak")
            done += self._rebuild_sidecars()
            return done

    def _swap(self, fresh: Path, *, keep_old: bool) -> None:
        """Put the repaired database ``fresh`` in place of the open one (kept as ``.bak`` if
        ``keep_old``) and connect to it."""
        self._db.close()
        if wal_path(self.path).exists():  # the last connection to close deletes the log: one is still open
            self._db = self._connect()
            raise StoreError(self.location, "another process has it open: stop it and run the repair again")
        if keep_old:
            os.replace(self.path, self.path.with_name(DB_NAME + ".bak"))
        os.replace(fresh, self.path)
        self.damage = []
        self._db = self._connect()
        self._dense = self._lexical = None
        self._dense_removals = None
        self._grown = {part: RowBuffer() for part in self._grown}

    def _rebuild_sidecars(self) -> list[str]:
        """Delete the sidecar indexes and build again those the store's size calls for."""
        for saved, stamp in SIDECARS:
            for path in (
                self.directory / saved,
                self.directory / stamp,
                *self.directory.glob(f"{saved}.*tmp"),
            ):
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
        size, built = len(self.dense_index()), []
        threshold = self.settings.bm25s_threshold
        if threshold is not None and size >= threshold:
            self.lexical_index()
            built.append("rebuilt the bm25s index")
        if self.dense_method() == "hnsw":
            self.dense_index().graph()
            built.append("rebuilt the HNSW graph")
        return built

    # --- search ----------------------------------------------------------------------------------

    def bm25(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best chunk keys by BM25 over header + text, with positive scores (higher is better):
        FTS5 below ``bm25s_threshold`` chunks, the bm25s sidecar (:mod:`.lexical`) at or above it;
        nothing for ``k`` of 0 or less."""
        if k <= 0:  # nothing wanted (FTS5 reads LIMIT -1 as no limit, bm25s refuses it)
            return []
        threshold = self.settings.bm25s_threshold
        if threshold is not None and len(self.dense_index()) >= threshold:
            return self.lexical_index().search(query, k)
        match = fts_query(query)
        if not match:
            return []
        rows = self._rows(
            "SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY s, rowid"
            " LIMIT ?",
            (match, k),
        )
        return [(int(key), -float(score)) for key, score in rows]

    def lexical_index(self) -> LexicalIndex:
        """The bm25s index of the current generation (loaded or built on first use after a write), over
        the analysed terms of every chunk's header + text (the FTS5 rows). Its generation, chunk keys,
        store id and generation token are those the dense index read (:meth:`dense_index`), so both
        sidecars are stamped for the same state of the store. The saved index is looked for first,
        without reading the rows; when it must be built, the dense index is brought up to date and the
        rows read in one read transaction, ended before the build: a write that another process commits
        meanwhile cannot give the index another generation's rows than its stamp names."""
        index = self.dense_index()
        if self._lexical is not None and self._lexical.generation == index.generation:
            return self._lexical
        found = LexicalIndex.saved(
            self.directory, index.generation, index.keys, store=index.store, token=index.token
        )
        if found is None:
            with self._lock, self._snapshot():
                index = self.dense_index()  # the state the rows are of (a write may have landed since)
                rows = [
                    (int(key), str(body))
                    for key, body in self._rows("SELECT rowid, body FROM chunks_fts ORDER BY rowid")
                ]
            found = LexicalIndex.build(
                self.directory,
                index.generation,
                rows,
                save=not self.read_only,
                store=index.store,
                token=index.token,
            )
        self._lexical = found
        return found

    def dense_index(self) -> DenseIndex:
        """The vectors (and passage windows) of the current generation, brought up to date when any
        process has written since: only the rows of chunks added since are read while no vector was
        removed (and the HNSW graph in memory, if any, serves on, the added chunks scored exactly beside
        its hits: :meth:`.DenseIndex.follow`), every row otherwise. At or above ``hnsw_threshold``
        chunks the windows are not held: the index reads them from the database when a search needs them
        (:meth:`_window_reader`)."""
        if self._dense is not None and self._dense.generation == self.generation():
            return self._dense
        with self._lock, self._snapshot():
            removals, generation = self.meta("removals"), self.generation()
            old = previous = self._dense
            if old is None or not len(old) or removals is None or removals != self._dense_removals:
                old = None  # every row is read again
            after: tuple[int, ...] = () if old is None else (int(old.keys[-1]),)
            since = " WHERE chunk_key > ?" if after else ""  # the rows added since the old index
            keys, matrix = self._vector_rows(
                self._rows(f"SELECT chunk_key, vector FROM vectors{since} ORDER BY chunk_key", after)
            )
            # into buffers with room to spare, so that the next generation's new rows are written
            # after these without copying them (a full read is copied into a new buffer once)
            keys = self._grown["keys"].extend(old.keys if old is not None else keys[:0], keys)
            matrix = self._grown["matrix"].extend(old.matrix if old is not None else matrix[:0], matrix)
            parts = self._installed()
            complete = "windows" in parts  # a store of an earlier release opened read-only has none
            on_disk = complete and self._graph_searched(len(keys))
            owners, window_matrix = self._vector_rows([])
            if not complete or on_disk:  # no window held in memory: their buffers go
                self._grown["owners"], self._grown["windows"] = RowBuffer(), RowBuffer()
            orphans = 0
            if complete and not on_disk:
                held = old is not None and not old.windows_on_disk  # the old index's windows, and those since
                owners, window_matrix = self._vector_rows(
                    self._rows(
                        f"SELECT chunk_key, vector FROM windows{since if held else ''} ORDER BY window_key",
                        after if held else (),
                    )
                )
                before = (
                    (old.owners, old.windows) if held and old is not None else (owners[:0], window_matrix[:0])
                )
                owners = self._grown["owners"].extend(before[0], owners)
                window_matrix = self._grown["windows"].extend(before[1], window_matrix)
                orphans = int(np.count_nonzero(~np.isin(owners, keys)))
            elif on_disk:
                orphans = self._rows(
                    "SELECT COUNT(*) FROM windows w WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE"
                    f" v.chunk_key = w.chunk_key){' AND w.chunk_key > ?' if after else ''}",
                    after,
                )[0][0]
            if orphans:
                raise CorruptStoreError(
                    self.location, f"{orphans} passage windows belong to no stored vector; {REPAIR_HINT}"
                )
            stored_windows = on_disk and bool(self._rows("SELECT EXISTS (SELECT 1 FROM windows)")[0][0])
            token = self._token(generation) if "generations" in parts else ""
            self._dense = DenseIndex(
                keys,
                matrix,
                generation,
                self.directory,
                save=not self.read_only,
                windows=(owners, window_matrix),
                read_windows=self._window_reader(generation) if stored_windows else None,
                store=self.store_id(),
                removals=int(removals) if removals is not None else None,
                token=token,
                lineage=self._lineage(generation, token) if token else None,
            )
            if old is not None:  # only chunks added since: its graph serves, the new ones scored exactly
                self._dense.follow(old)
            elif previous is not None:
                self._dense.succeed(previous)
            self._dense_removals = removals
        return self._dense

    def _token(self, generation: int) -> str:
        """The token the store holds for ``generation`` ("" when none: a generation made before tokens
        were recorded, or no longer among the latest; :data:`.sqlite_schema.GENERATIONS_TABLE`)."""
        rows = self._rows("SELECT token FROM generations WHERE generation = ?", (generation,))
        return str(rows[0][0]) if rows else ""

    def _lineage(self, generation: int, token: str) -> dense.Lineage:
        """For the index of ``generation``, whose token is ``token``: the token the store's history holds
        for an earlier generation ("" when none). Both are read in one statement, and the earlier one
        counts only while the database still holds ``token`` for ``generation``: a database replaced
        since the index was read (a backup restored) may hold tokens of another history."""

        def token_of(earlier: int) -> str:
            tokens = dict(
                self._rows(
                    "SELECT generation, token FROM generations WHERE generation IN (?, ?)",
                    (earlier, generation),
                )
            )
            return str(tokens.get(earlier, "")) if tokens.get(generation) == token else ""

        return token_of

    def _window_reader(self, generation: int) -> dense.WindowReader:
        """Reads the passage windows of chunk keys from the database for the index of ``generation``, in
        a read transaction that must see that generation: a search holds one around its index
        (:meth:`_current_index`), so a window read is always of its index's generation. An index kept
        past a write and used directly gets a :class:`StoreError` instead of another generation's
        windows (a chunk key may then name another chunk)."""

        def read(keys: Keys) -> tuple[Keys, Vectors]:
            rows: list[Any] = []
            with self._lock, self._snapshot():
                if self.generation() != generation:
                    raise _GenerationMovedError(
                        self.location, "the store changed since its vectors were read: search again"
                    )
                wanted = keys.tolist()
                for start in range(0, len(wanted), SQL_VARIABLES):
                    part = wanted[start : start + SQL_VARIABLES]
                    marks = ",".join("?" * len(part))
                    rows += self._rows(
                        f"SELECT chunk_key, vector FROM windows WHERE chunk_key IN ({marks})"
                        " ORDER BY chunk_key, window_key",
                        part,
                    )
            return self._vector_rows(rows)

        return read

    @contextmanager
    def _current_index(self) -> Iterator[DenseIndex]:
        """The dense index to search; when it reads passage windows from the database, inside one read
        transaction (with the lock held) in which it is of the generation the transaction sees."""
        index = self.dense_index()
        if not index.windows_on_disk:
            yield index
            return
        with self._lock, self._snapshot():
            yield self.dense_index()

    def _vector_rows(self, rows: Sequence[Any]) -> tuple[Keys, Vectors]:
        """The keys and the vector matrix of ``(chunk_key, vector)`` rows; :class:`CorruptStoreError`
        when a vector is not of the stored dimension."""
        dim = int(self.meta("dim") or 0)
        wrong = sum(len(r[1]) != 4 * dim for r in rows)
        if wrong:
            raise CorruptStoreError(
                self.location, f"{wrong} stored vectors are not of {dim} floats; {REPAIR_HINT}"
            )
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
        return keys, matrix

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction: the reads inside see the same committed state (the caller holds the
        lock; inside a write transaction, that one is the snapshot)."""
        if self._db.in_transaction:
            yield
            return
        try:
            self._db.execute("BEGIN")
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc
        try:
            yield
        except BaseException:
            with suppress(sqlite3.Error):  # SQLite may have ended the transaction already
                self._db.execute("ROLLBACK")
            raise
        with suppress(sqlite3.Error):  # a read transaction: nothing to lose if it has ended
            self._db.execute("COMMIT")

    def dense(self, vector: Vectors, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest chunk keys by cosine (a chunk with passage windows: its best vector): exact
        below ``hnsw_threshold`` chunks, through the HNSW graph at or above it (see
        :meth:`.DenseIndex.search`). :class:`ConfigError` when ``vector`` is not of the stored vectors'
        size (another embedder).

        An index that reads its passage windows from the database searches without the store's lock (a
        first search after a write brings the graph up to date, or builds it whole, which takes minutes
        at 100k chunks, and the other threads of the store go on meanwhile); when a write lands before
        its windows are read, the search starts again on the new generation, and its last try holds the
        lock and one read transaction throughout (:meth:`_current_index`), so writes that keep landing
        cannot fail it."""
        for _ in range(SEARCH_TRIES - 1):
            try:
                return self._dense_search(self.dense_index(), vector, k)
            except _GenerationMovedError:
                continue
        with self._current_index() as index:
            return self._dense_search(index, vector, k)

    def _dense_search(self, index: DenseIndex, vector: Vectors, k: int) -> list[tuple[int, float]]:
        """:meth:`dense` on ``index``."""
        dim = index.matrix.shape[1]
        if len(index) and vector.shape != (dim,):
            raise ConfigError(
                f"{self.directory}: the query vector has {vector.size} dimensions, the stored vectors "
                f"{dim}; search with the embedder that built the store ({self.meta('embedder')})"
            )
        return index.search(vector, k, approximate=self._graph_searched(len(index)))

    def dense_method(self) -> str:
        """``hnsw`` when the store holds at least ``settings.hnsw_threshold`` chunks, else ``exact``."""
        return "hnsw" if self._graph_searched(len(self.dense_index())) else "exact"

    def _graph_searched(self, chunks: int) -> bool:
        """Whether a store of ``chunks`` chunks is searched through its HNSW graph (and leaves its passage
        windows in the database): at or above ``settings.hnsw_threshold``."""
        return chunks >= self.settings.hnsw_threshold

    def window_scores(self, vector: Vectors, keys: Sequence[int]) -> dict[int, float]:
        """Each of ``keys``' best passage-window cosine to ``vector`` (chunks without windows absent)."""
        with self._current_index() as index:
            return index.window_scores(vector, keys)

    def chunks(self, keys: Sequence[int]) -> list[StoredChunk]:
        """The chunks of ``keys`` with their vectors (in the given order; keys no longer stored are
        skipped; ``vector`` is ``None`` for a chunk removed between the two reads)."""
        if not keys:
            return []
        marks = ",".join("?" * len(keys))
        rows = self._rows(
            'SELECT c.chunk_key, c.doc_id, c.start, c."end", c.chunk_id, c.text, h.header, c.ordinal'
            f" FROM chunks c JOIN headers h ON h.chunk_key = c.chunk_key WHERE c.chunk_key IN ({marks})",
            list(keys),
        )
        by_key = {row[0]: row for row in rows}
        found = [by_key[k] for k in keys if k in by_key]
        # the index may be of a later generation than the rows: a vector is looked up by its key
        vectors = self.dense_index().vectors_of(np.array([row[0] for row in found], dtype=np.int64))
        return [
            StoredChunk(doc_id, start, end, key, chunk_id, text, header, ordinal, vector)
            for (key, doc_id, start, end, chunk_id, text, header, ordinal), vector in zip(
                found, vectors, strict=True
            )
        ]

    def chunk_spans(self, doc_id: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each chunk of ``doc_id``, by ordinal."""
        return [
            (s, e)
            for s, e in self._rows(
                'SELECT start, "end" FROM chunks WHERE doc_id = ? ORDER BY ordinal', (doc_id,)
            )
        ]

    def document_text(self, doc_id: str, start: int, end: int) -> str:
        """``document.text[start:end]`` (sliced in SQL: substr counts characters, 1-based; offsets as
        :func:`~chunkwise.store.protocol.substring_bounds` takes them)."""
        first, length = substring_bounds(start, end)
        query = "SELECT substr(text, ?, ?) FROM documents WHERE doc_id = ?"
        rows = self._rows(query, (first, length, doc_id))
        if not rows:
            raise KeyError(doc_id)
        return str(rows[0][0])
