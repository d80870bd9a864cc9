"""The knowledge base in PostgreSQL: documents, units, chunks, headers, BM25 postings and pgvector vectors.

Why a server store: several machines ingest into one knowledge base and a team searches it while they
do. ``postgresql://user@host:port/db?schema=NAME`` (see :mod:`.pgurl`) puts every table in the schema
``NAME``, so one database can hold several knowledge bases.

- **One transaction per document.** :meth:`PostgresStore.put` takes a transaction-scoped advisory lock
  on the document id, reads the stored version, and inserts the document, its units, chunks (with their
  headers), postings and vectors, or returns ``skipped`` when another writer stored the same content
  meanwhile. Writers of different documents never wait for each other except for the one-row BM25
  statistics update, the last statement of each transaction; writers of one document run one after
  the other, so four concurrent ingests of overlapping files store each document once.
- **BM25 as the SQLite store ranks it.** Both index the terms of :func:`chunkwise.terms.index_terms` and
  score with the Okapi formula of SQLite FTS5 (IDF ``ln((N - n + 0.5) / (n + 0.5))``, floored at 1e-6;
  ``K1``, ``B`` of :mod:`chunkwise.terms`). Here a postings table (term, chunk, term frequency, chunk
  length) and one row of statistics (chunks, terms) are ranked in one SQL statement, so a query sees one
  snapshot: the same top 10 as SQLite on the same chunks. At or above ``bm25s_threshold`` chunks the
  postings are ranked from a copy in this process's memory instead, with the same arithmetic, kept
  current through the generation counter that every write bumps in that row (:mod:`.pg_lexical`).
- **Vectors** live in a ``vector(d)`` column with an HNSW index (cosine; ``m``/``ef_construction`` from
  :class:`~.protocol.StoreSettings` when the table is created), passage windows' vectors in a second
  table with its own HNSW index (:mod:`chunkwise.ingest.windows`); a chunk scores its best cosine,
  whole or window. Below ``hnsw_threshold`` vectors (chunks and windows: what an exact search scans) a
  search is exact (a sequential scan); at or above it both indexes propose candidates, each then scored
  exactly with its windows, so a chunk found only through one of its windows is still found.
- **Reads never wait for writes** (MVCC); connections come from a psycopg pool of ``pool_size``.
- **Schema versions** are recorded in ``meta``; a newer schema is refused (:mod:`.schema`).

The password (from the URL, ``PGPASSWORD`` or ``.pgpass``) is handed to libpq only: messages and
:attr:`PostgresStore.location` use the URL without it, and server messages are scrubbed of it.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from chunkwise.chunking.chunk import Chunk, contextual_text
from chunkwise.document import Document, Unit, UnitKind
from chunkwise.errors import (
    ConfigError,
    NulCharacterError,
    SchemaVersionError,
    StoreAuthError,
    StoreError,
    StoreExtensionError,
    StoreOperationError,
    StoreUnavailableError,
    StoreURLError,
)
from chunkwise.models.protocols import Vectors
from chunkwise.store import pgurl
from chunkwise.store.pg_lexical import PostingsIndex
from chunkwise.store.protocol import (
    EMBEDDER_META,
    DocumentInfo,
    Reembedded,
    Status,
    StoredChunk,
    StoredDocument,
    StoredForEmbedding,
    StoreSettings,
    check_all_reembedded,
    check_put_embedder,
    check_put_widths,
    check_recorded_embedder,
    chunk_from_row,
    recorded_embedder,
    substring_bounds,
    with_vectors,
)
from chunkwise.store.schema import recorded_version, upgrade
from chunkwise.terms import K1, B, index_terms, search_terms

#: 2: ``stats.generation`` (bumped by every write) and ``stats.epoch`` (bumped by a repair); 3: the
#: ``windows`` table of passage windows' vectors; 4: ``stats.windows`` (their count) and their HNSW index.
SCHEMA_VERSION = 4

#: Advisory-lock namespaces (the first key of ``pg_advisory_xact_lock(int, int)``).
_SETUP_LOCK = 0x63770001  # schema creation, upgrades, the vector table: one at a time per database
_DOC_LOCK = 0x63770002  # one writer per (schema, document)
#: The namespace of the ingest servers' session locks (:mod:`chunkwise.server.pg_journal`).
JOBS_LOCK = 0x63770003

#: SQLSTATE classes of a connection that failed or was lost, and of the server shutting down.
_CONNECTION_STATES = ("08", "57P")
#: The first statement of a transaction whose reads must see one snapshot of the store.
_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
#: SQLSTATEs of refused credentials.
_AUTH_STATES = ("28000", "28P01")

_TABLES = """
CREATE TABLE {s}.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE {s}.stats (
    id int PRIMARY KEY CHECK (id = 1), chunks bigint NOT NULL, terms bigint NOT NULL,
    generation bigint NOT NULL DEFAULT 0, epoch bigint NOT NULL DEFAULT 0, windows bigint NOT NULL DEFAULT 0
);
INSERT INTO {s}.stats VALUES (1, 0, 0);
CREATE TABLE {s}.documents (
    doc_id text PRIMARY KEY, source text, title text, format text NOT NULL, content_hash text NOT NULL,
    fingerprint text NOT NULL, summary text NOT NULL DEFAULT '', metadata text NOT NULL, text text NOT NULL
);
CREATE TABLE {s}.units (
    doc_id text NOT NULL REFERENCES {s}.documents ON DELETE CASCADE, seq int NOT NULL,
    unit_id text NOT NULL, kind text NOT NULL, start int NOT NULL, "end" int NOT NULL, level int NOT NULL,
    parent text, page int, PRIMARY KEY (doc_id, unit_id)
);
CREATE TABLE {s}.chunks (
    chunk_key bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, chunk_id text NOT NULL,
    doc_id text NOT NULL REFERENCES {s}.documents ON DELETE CASCADE, ordinal int NOT NULL,
    start int NOT NULL, "end" int NOT NULL, text text NOT NULL, header text NOT NULL, section text NOT NULL,
    unit_ids text NOT NULL, tokens int NOT NULL, pages text, terms int NOT NULL, UNIQUE (doc_id, ordinal)
);
CREATE TABLE {s}.postings (
    term text NOT NULL, chunk_key bigint NOT NULL REFERENCES {s}.chunks ON DELETE CASCADE,
    tf int NOT NULL, dl int NOT NULL, PRIMARY KEY (term, chunk_key) INCLUDE (tf, dl)
);
CREATE INDEX postings_chunk ON {s}.postings (chunk_key);
"""

#: The passage windows' vectors (:mod:`chunkwise.ingest.windows`), several per long chunk, in the order
#: they were cut, with an HNSW index of their own: above the threshold a search takes candidates from
#: both indexes. The vector tables' DDL names its tables ``{vectors}`` and ``{windows}`` and their indexes
#: after them: the store's names (:data:`_STORE_TABLES`), or those a re-embedding builds the new tables
#: under (:data:`_NEXT_TABLES`).
_WINDOWS = """
CREATE TABLE IF NOT EXISTS {s}.{windows} (
    window_key bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    chunk_key bigint NOT NULL REFERENCES {s}.chunks ON DELETE CASCADE, embedding vector({dim}) NOT NULL
);
CREATE INDEX IF NOT EXISTS {windows}_by_chunk ON {s}.{windows} (chunk_key);
"""

#: The HNSW index of the windows' vectors (schema 4), built as the whole vectors' index is.
_WINDOWS_HNSW = """
CREATE INDEX IF NOT EXISTS {windows}_hnsw ON {s}.{windows} USING hnsw (embedding vector_cosine_ops)
    WITH (m = {m}, ef_construction = {ef_construction});
"""

#: The tables of the whole vectors and the windows' vectors, without their HNSW indexes.
_VECTOR_TABLES = (
    """
CREATE TABLE {s}.{vectors} (
    chunk_key bigint PRIMARY KEY REFERENCES {s}.chunks ON DELETE CASCADE, embedding vector({dim}) NOT NULL
);
"""
    + _WINDOWS
)

#: The HNSW indexes of both vector tables.
_VECTORS_HNSW = (
    """
CREATE INDEX {vectors}_hnsw ON {s}.{vectors} USING hnsw (embedding vector_cosine_ops)
    WITH (m = {m}, ef_construction = {ef_construction});
"""
    + _WINDOWS_HNSW
)

#: The vector tables with their HNSW indexes, as an ingest makes them when it records the embedder.
_VECTORS = _VECTOR_TABLES + _VECTORS_HNSW

#: The names of the store's vector tables, as the DDL above takes them.
_STORE_TABLES = {"vectors": "vectors", "windows": "windows"}
#: The names a re-embedding builds the new vector tables under, beside the store's (see
#: :meth:`PostgresStore._finish_reembedding`): every name PostgreSQL or the DDL derives from them
#: (indexes, constraints, the identity sequence) begins with one of them and ``_``, and is renamed with
#: its table when they take the store's names.
_NEXT_TABLES = {"vectors": "vectors_next", "windows": "windows_next"}

#: The constraints, indexes and owned sequences of a table (``%(table)s``), each named with the kind of
#: object ``ALTER`` renames it as: what is renamed with a table of :data:`_NEXT_TABLES`. An index backing a
#: constraint (the primary key) is renamed with its constraint, so it is listed once, as the constraint.
_DERIVED_NAMES = """
SELECT 'CONSTRAINT', conname FROM pg_constraint WHERE conrelid = %(table)s::regclass
UNION ALL SELECT 'INDEX', c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = %(table)s::regclass
    AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = i.indrelid AND k.conindid = i.indexrelid)
UNION ALL SELECT 'SEQUENCE', c.relname FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
    WHERE d.classid = 'pg_class'::regclass AND d.refobjid = %(table)s::regclass AND c.relkind = 'S'
"""

#: Where :meth:`PostgresStore.reembedding` stages the new vectors (dropped when its transaction ends):
#: the new vector tables are filled from them at the end.
_STAGED = """
CREATE TEMPORARY TABLE reembed_vectors (chunk_key bigint PRIMARY KEY, embedding vector({dim}) NOT NULL)
    ON COMMIT DROP;
CREATE TEMPORARY TABLE reembed_windows (
    seq bigint GENERATED ALWAYS AS IDENTITY, chunk_key bigint NOT NULL, embedding vector({dim}) NOT NULL
) ON COMMIT DROP;
"""

#: The staged vectors moved into the vector tables ``{vectors}`` and ``{windows}`` (made by
#: :data:`_VECTOR_TABLES`), windows in order.
_UNSTAGE = """
INSERT INTO {s}.{vectors} (chunk_key, embedding) SELECT chunk_key, embedding FROM reembed_vectors;
INSERT INTO {s}.{windows} (chunk_key, embedding)
    SELECT chunk_key, embedding FROM reembed_windows ORDER BY seq;
"""

#: Exact dense search: each chunk scored by its best cosine, whole vector or passage window.
_DENSE_EXACT = """
SELECT chunk_key, max(score) AS best FROM (
    SELECT chunk_key, 1 - (embedding <=> %(q)s) AS score FROM {s}.vectors
    UNION ALL SELECT chunk_key, 1 - (embedding <=> %(q)s) FROM {s}.windows
) scored GROUP BY chunk_key ORDER BY best DESC, chunk_key LIMIT %(k)s
"""

#: How many nearest vectors per wanted hit each HNSW index (whole vectors, windows) proposes.
WINDOW_CANDIDATES = 4
#: pgvector's bound on ``hnsw.ef_search``: a search wanting more candidates (``k`` above 250) scans the
#: graph iteratively (pgvector 0.8's ``hnsw.iterative_scan``) instead of asking for a breadth it refuses.
MAX_EF_SEARCH = 1000

#: Dense search through the HNSW indexes: the chunks of the ``%(n)s`` nearest whole vectors and of the
#: ``%(n)s`` nearest windows, each then scored by its best cosine, whole or window, exactly.
_DENSE_HNSW = """
WITH candidates AS (
    (SELECT chunk_key FROM {s}.vectors ORDER BY embedding <=> %(q)s LIMIT %(n)s)
    UNION (SELECT chunk_key FROM {s}.windows ORDER BY embedding <=> %(q)s LIMIT %(n)s)
), whole AS (
    SELECT chunk_key, 1 - (v.embedding <=> %(q)s) AS score
    FROM candidates JOIN {s}.vectors v USING (chunk_key)
)
SELECT c.chunk_key, greatest(c.score, max(1 - (w.embedding <=> %(q)s))) AS best
FROM whole c LEFT JOIN {s}.windows w USING (chunk_key)
GROUP BY c.chunk_key, c.score ORDER BY best DESC, c.chunk_key LIMIT %(k)s
"""

#: The best window cosine of each of some chunks that have passage windows.
_WINDOW_SCORES = """
SELECT chunk_key, max(1 - (embedding <=> %(q)s)) FROM {s}.windows
WHERE chunk_key = ANY(%(keys)s) GROUP BY chunk_key
"""

#: Okapi BM25 over the postings, as SQLite FTS5's ``bm25()`` computes it, in one snapshot.
_BM25 = """
WITH s AS (
    SELECT chunks::float8 AS n, terms::float8 / chunks::float8 AS avgdl FROM {s}.stats WHERE chunks > 0
), p AS (
    SELECT term, chunk_key, tf::float8 AS f, dl::float8 AS d FROM {s}.postings WHERE term = ANY(%(terms)s)
), w AS (
    SELECT term, ln((s.n - count(*) + 0.5::float8) / (count(*) + 0.5::float8)) AS idf
    FROM p, s GROUP BY term, s.n
)
SELECT p.chunk_key, sum(
    (CASE WHEN w.idf <= 0 THEN 1e-6::float8 ELSE w.idf END)
    * ((p.f * (%(k1)s + 1.0::float8)) / (p.f + %(k1)s * (1 - %(b)s + %(b)s * p.d / s.avgdl)))
) AS score
FROM p JOIN w USING (term), s
GROUP BY p.chunk_key ORDER BY score DESC, p.chunk_key LIMIT %(k)s
"""


def _one_line(text: str, where: pgurl.PgLocation) -> str:
    """A server or libpq message on one line, every form and echoed piece of the URL's password replaced
    (see :meth:`.pgurl.PgLocation.scrub`)."""
    return where.scrub("; ".join(part.strip() for part in str(text).splitlines() if part.strip()))


def _execute_script(conn: Any, script: str) -> None:
    """Run each statement of a ``;``-separated DDL script (none of ours holds a ``;`` in a literal)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def nul_in_text(
    doc: Document, chunks: Sequence[Chunk], headers: Sequence[str], fingerprint: str, summary: str
) -> str:
    """Why ``put`` cannot store these in ``text`` columns, or ``""``: the first string that holds a NUL
    character, which PostgreSQL refuses in text (the JSON columns, the metadata and a chunk's section and
    unit ids, hold it escaped as ``\\u0000``, so it is stored there as given)."""
    named = [("id", doc.id), ("text", doc.text), ("title", doc.title or ""), ("source", doc.source or "")]
    named += [("format", doc.format), ("fingerprint", fingerprint), ("summary", summary)]
    named += [
        (f"unit {i}'s {what}", text)
        for i, u in enumerate(doc.units)
        for what, text in (("id", u.id), ("parent", u.parent or ""))
    ]
    named += [
        (f"chunk {i}'s {what}", text)
        for i, (c, h) in enumerate(zip(chunks, headers, strict=True))
        for what, text in (("id", c.id), ("text", c.text), ("header", h))
    ]
    for what, text in named:
        at = text.find("\x00")
        if at >= 0:
            return (
                f"its {what} holds a NUL character at character {at}, which PostgreSQL cannot store in text"
            )
    return ""


def storable_id(doc_id: str) -> bool:
    """False for an id holding a NUL character: no such document can be stored (see
    :meth:`PostgresStore.put`), and PostgreSQL refuses it even as a query parameter, so a lookup of it
    answers "absent" without asking, as the SQLite store answers it."""
    return "\x00" not in doc_id


def postings(header: str, text: str) -> tuple[int, Counter[str]]:
    """A chunk's BM25 length (its number of index terms) and the frequency of each term."""
    terms = index_terms(contextual_text(header, text))
    return len(terms), Counter(terms)


class PostgresStore:
    """A knowledge base in a PostgreSQL schema (see the module docstring). Thread-safe: each call takes a
    connection from the pool. Open one per process; any number of processes may write at once.

    ``create``: create the tables when the schema holds none (else :class:`StoreError` says there is no
    knowledge base). ``read_only``: never create or write (a write raises :class:`StoreError`).
    ``damaged_ok`` is accepted for the signature every store shares: the server guards its own files, so
    there is no damage to see on opening; :meth:`check` and :meth:`repair` work on any store that opens.
    """

    def __init__(
        self,
        url: str,
        settings: StoreSettings | None = None,
        *,
        create: bool = True,
        read_only: bool = False,
        damaged_ok: bool = False,
    ) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self._where = pgurl.parse(url)
        self._settings = settings or StoreSettings()
        self._s = f'"{self._where.schema}"'
        self._dim: int | None = None
        self._postings = PostingsIndex.empty()
        self._postings_lock = threading.Lock()
        self.read_only = read_only
        with self._connect() as conn:
            try:
                self._setup(conn, create and not read_only)
            except psycopg.OperationalError as exc:
                raise self._operational(exc) from None
            except psycopg.errors.InsufficientPrivilege as exc:  # the role may not use the schema
                raise self._refused(exc) from None
        self._psycopg = psycopg
        self._pool = ConnectionPool(
            self._where.conninfo,
            min_size=1,
            max_size=self._settings.pool_size,
            configure=self._configure,
            name=f"chunkwise-{self._where.schema}",
            timeout=60.0,
            # a connection is tested as it is handed out: after a database restart or failover every
            # idle one is dead, and each would otherwise fail one request before it is replaced
            check=ConnectionPool.check_connection,
            open=True,
        )

    # --- connections -----------------------------------------------------------------------------

    @property
    def keeps_windows(self) -> bool:
        """Passage windows are kept (the ``windows`` table)."""
        return True

    @property
    def location(self) -> str:
        """The store URL without its password."""
        return self._where.display

    @property
    def settings(self) -> StoreSettings:
        """The index settings; replacing them resizes the connection pool."""
        return self._settings

    @settings.setter
    def settings(self, value: StoreSettings) -> None:
        if value.pool_size != self._settings.pool_size:
            self._pool.resize(min_size=1, max_size=value.pool_size)
        self._settings = value

    def close(self) -> None:
        """Close every pooled connection."""
        self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _failure(self, exc: Exception) -> StoreError:
        """The typed error for a failed connection (never holding the password)."""
        state = getattr(exc, "sqlstate", None) or ""
        message = _one_line(str(exc), self._where)
        lowered = message.lower()
        auth_words = ("password authentication failed", "no password supplied", "authentication failed")
        if state in _AUTH_STATES or any(word in lowered for word in auth_words):
            return StoreAuthError(self.location, f"the server refused the credentials: {message}")
        return StoreUnavailableError(self.location, f"cannot reach the database: {message}")

    def _refused(self, exc: BaseException) -> StoreError:
        """The error for an operation the role has no right to (a schema or table it may not use)."""
        return StoreError(self.location, f"the database refused the role: {_one_line(str(exc), self._where)}")

    def _connect(self, **options: int) -> Any:
        """One connection outside the pool (libpq ``options`` added), for opening the store (errors
        classified). libpq refuses a
        URL it cannot read (a bad ``%`` escape, a parameter without a value) with a ``ProgrammingError``
        that quotes the offending text, password included: it is a :class:`StoreURLError`, scrubbed
        like every other failure. So is text psycopg cannot pass on (a ``%`` escape of bytes that are
        not UTF-8, a host name that is not valid IDNA), its error text not shown: it quotes that text."""
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        try:
            conninfo = make_conninfo(self._where.conninfo, **options) if options else self._where.conninfo
            # the URL's (or PGCONNECT_TIMEOUT's) connect_timeout is read as the pool reads it (a bad
            # value fails here, at once, not after the pool's minute of retries); without one, ten seconds
            given = "connect_timeout" in conninfo_to_dict(conninfo) or "PGCONNECT_TIMEOUT" in os.environ
            if not given:
                conninfo = make_conninfo(conninfo, connect_timeout=10)
            return psycopg.connect(conninfo)
        except psycopg.ProgrammingError as exc:
            reason = _one_line(str(exc), self._where)
            raise StoreURLError(self.location, f"libpq cannot read the URL ({reason})") from None
        except UnicodeError:
            reason = "a % escape stands for bytes that are not UTF-8, or the host name is not valid IDNA"
            raise StoreURLError(self.location, f"libpq cannot read the URL ({reason})") from None
        except psycopg.Error as exc:
            raise self._failure(exc) from None

    @property
    def schema(self) -> str:
        """The knowledge base's schema, quoted for SQL (``"name"``)."""
        return self._s

    def ensure(self, table: str, ddl: str) -> None:
        """Create ``table`` of the schema with the ``;``-separated, idempotent DDL ``ddl`` (``{s}``
        standing for the schema) unless it exists: in one transaction under the setup lock, so that
        processes opening the store at once do not race to create it (``IF NOT EXISTS`` alone does not
        stop two creations of one table). A table that exists needs neither the lock (which a
        re-embedding holds for its whole run) nor the right to create in the schema."""
        if self._rows("SELECT to_regclass(%s) IS NOT NULL", (f"{self._s}.{table}",))[0][0]:
            return
        self._writable()
        with self._conn() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_SETUP_LOCK,))
            _execute_script(conn, ddl.format(s=self._s))

    def session(self) -> Any:
        """A psycopg connection of its own, outside the pool, in autocommit mode, failures typed as on
        opening: for what must hold a session (a session-level advisory lock) for a long time. TCP
        keepalives are on, so that a peer lost without a word (a half-open connection) is noticed in
        about a minute rather than hours. The caller closes it."""
        conn = self._connect(keepalives=1, keepalives_idle=30, keepalives_interval=10, keepalives_count=3)
        conn.autocommit = True
        return conn

    def scrubbed(self, exc: BaseException) -> str:
        """``exc``'s message on one line, without the URL's password: safe to show or log."""
        return _one_line(str(exc), self._where)

    def _configure(self, conn: Any) -> None:
        """Each pooled connection: pgvector's adapters (numpy arrays in and out), autocommit off."""
        from pgvector.psycopg import register_vector

        register_vector(conn)
        conn.commit()

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        """A pooled connection, committed on success; a lost server becomes a typed error, and so does an
        operation the server refused or cancelled while it stays reachable (:meth:`_operational`). A
        lost connection means the others idle in the pool were most likely lost with it (a server
        restart, a failover): they are tested and replaced at once, so that the next call gets a working
        one instead of each of them failing one more call in turn."""
        from psycopg_pool import PoolTimeout

        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise self._failure(exc) from None
        except self._psycopg.OperationalError as exc:
            error = self._operational(exc)
            if not isinstance(error, StoreOperationError):
                self._pool.check()
            raise error from None
        except self._psycopg.errors.InsufficientPrivilege as exc:  # a table the role may not read or write
            raise self._refused(exc) from None

    def _operational(self, exc: Any) -> StoreError:
        """The typed error of psycopg's ``OperationalError`` ``exc``: a lost or refused connection
        (:meth:`_failure`), or an operation the server refused or cancelled while it stays reachable, a
        lock or statement timeout, a full disk (:class:`StoreOperationError`, with its SQLSTATE), its
        message scrubbed either way."""
        state = exc.sqlstate or ""
        if not state or state.startswith(_CONNECTION_STATES):
            return self._failure(exc)
        message = _one_line(str(exc), self._where)
        return StoreOperationError(
            self.location, f"the database refused the operation (SQLSTATE {state}): {message}"
        )

    def _rows(self, sql: str, params: Any = None) -> list[Any]:
        """The rows of one statement (``{s}`` in ``sql`` is the schema), on a pooled connection."""
        with self._conn() as conn:
            return list(conn.execute(sql.format(s=self._s), params).fetchall())

    def _writable(self) -> None:
        """Raise :class:`StoreError` when the store was opened read-only."""
        if self.read_only:
            raise StoreError(self.location, "opened read-only: nothing can be written to it")

    # --- schema ----------------------------------------------------------------------------------

    def _version(self, conn: Any) -> int | None:
        """The recorded schema version, ``None`` when the schema holds no knowledge base."""
        found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{self._s}.meta",)).fetchone()[0]
        if not found:
            return None
        row = conn.execute(f"SELECT value FROM {self._s}.meta WHERE key = 'schema_version'").fetchone()
        return recorded_version(self.location, row[0] if row else None)

    def _setup(self, conn: Any, create: bool) -> None:
        """Check pgvector, create the tables if absent (under the setup lock), apply upgrades."""
        version = self._version(conn)
        conn.commit()
        if version is None:
            if not create:
                raise StoreError(self.location, "no knowledge base here (ingest documents into it first)")
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_SETUP_LOCK,))
                self._ensure_pgvector(conn)
                if self._version(conn) is None:
                    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self._s}")
                    _execute_script(conn, _TABLES.format(s=self._s))
                    conn.execute(
                        f"INSERT INTO {self._s}.meta VALUES ('schema_version', %s)", (str(SCHEMA_VERSION),)
                    )
            version = SCHEMA_VERSION
        elif version < SCHEMA_VERSION and self.read_only:
            # an upgrade writes (DDL, under the setup lock): refused as the SQLite store refuses it
            raise SchemaVersionError(
                self.location,
                f"store schema {version} is older than the supported {SCHEMA_VERSION}: an ingest, or any "
                "opening with write access, upgrades it",
            )
        else:
            self._ensure_pgvector(conn, create=not self.read_only)
            conn.commit()
        upgrade(
            self.location,
            version,
            SCHEMA_VERSION,
            {
                1: lambda: self._add_generation(conn),
                2: lambda: self._add_windows(conn),
                3: lambda: self._count_windows(conn),
            },
        )

    def _add_generation(self, conn: Any) -> None:
        """Schema 1 to 2: the generation and epoch of the statistics row (under the setup lock)."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_SETUP_LOCK,))
            if self._version(conn) == 1:
                conn.execute(
                    f"ALTER TABLE {self._s}.stats ADD COLUMN generation bigint NOT NULL DEFAULT 0,"
                    " ADD COLUMN epoch bigint NOT NULL DEFAULT 0"
                )
                conn.execute(f"UPDATE {self._s}.meta SET value = '2' WHERE key = 'schema_version'")

    def _add_windows(self, conn: Any) -> None:
        """Schema 2 to 3: the passage windows' table, beside the vector table when there is one (else it
        is created with it), under the setup lock."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_SETUP_LOCK,))
            if self._version(conn) == 2:
                dim = conn.execute(f"SELECT value FROM {self._s}.meta WHERE key = 'dim'").fetchone()
                if dim is not None:
                    _execute_script(conn, _WINDOWS.format(s=self._s, dim=int(dim[0]), **_STORE_TABLES))
                conn.execute(f"UPDATE {self._s}.meta SET value = '3' WHERE key = 'schema_version'")

    def _count_windows(self, conn: Any) -> None:
        """Schema 3 to 4: the windows' count in the statistics row and their HNSW index (when there is a
        windows table), under the setup lock."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_SETUP_LOCK,))
            if self._version(conn) == 3:
                conn.execute(f"ALTER TABLE {self._s}.stats ADD COLUMN windows bigint NOT NULL DEFAULT 0")
                if conn.execute("SELECT to_regclass(%s)", (f"{self._s}.windows",)).fetchone()[0]:
                    conn.execute(
                        f"UPDATE {self._s}.stats SET windows = (SELECT count(*) FROM {self._s}.windows)"
                    )
                    cfg = self._settings
                    _execute_script(
                        conn,
                        _WINDOWS_HNSW.format(
                            s=self._s,
                            m=cfg.hnsw_m,
                            ef_construction=cfg.hnsw_ef_construction,
                            **_STORE_TABLES,
                        ),
                    )
                conn.execute(f"UPDATE {self._s}.meta SET value = '4' WHERE key = 'schema_version'")

    def _ensure_pgvector(self, conn: Any, create: bool = True) -> None:
        """Create the ``vector`` extension when the database lacks it; :class:`StoreExtensionError` when
        it is not installed on the server, the user may not create it, or ``create`` is false (a
        read-only opening runs no DDL)."""
        import psycopg

        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return
        if not create:
            raise StoreExtensionError(
                self.location,
                "the pgvector extension ('vector') is missing from this database and a read-only opening "
                "does not create it; open the store with write access once, or run CREATE EXTENSION "
                "vector as the database owner",
            )
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            reason = _one_line(str(exc), self._where)
            raise StoreExtensionError(
                self.location,
                f"the pgvector extension ('vector') is missing from this database and "
                f"could not be created ({reason}); install pgvector on the server and run "
                "CREATE EXTENSION vector as the database owner",
            ) from None

    def meta(self, key: str) -> str | None:
        """A stored setting, ``None`` when unset."""
        rows = self._rows("SELECT value FROM {s}.meta WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Store a setting."""
        self._writable()
        self._rows(
            "INSERT INTO {s}.meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
            " RETURNING key",
            (key, value),
        )

    def check_embedder(self, name: str, dim: int, version: str = "", *, record: bool = True) -> None:
        """:class:`~chunkwise.errors.ConfigError` if vectors of another embedder (name, dimension or
        package version) fill this store. A store without an embedder records this one when ``record``
        (ingest), creating the ``vector(dim)`` table with its HNSW index under the setup lock, so that
        concurrent writers agree on one; a search (``record=False``) only checks and never writes, so it
        works on a read-only store. Stores written before versions were recorded are checked by name and
        dimension."""
        with self._conn() as conn:
            recorded = self._recorded_embedder(conn)
        if recorded is None and record:
            self._writable()
            with self._conn() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_SETUP_LOCK,))
                recorded = self._recorded_embedder(conn)
                if recorded is None:
                    cfg = self._settings
                    ddl = _VECTORS.format(
                        s=self._s,
                        dim=int(dim),
                        m=cfg.hnsw_m,
                        ef_construction=cfg.hnsw_ef_construction,
                        **_STORE_TABLES,
                    )
                    _execute_script(conn, ddl)
                    conn.execute(
                        f"INSERT INTO {self._s}.meta VALUES ('embedder', %s), ('dim', %s),"
                        " ('embedder_version', %s)",
                        (name, str(dim), version),
                    )
                    recorded = (name, str(dim), version)
        if recorded is None:
            return
        # the dimension as recorded now: a re-embedding by another store object may have changed it
        self._dim = int(recorded[1]) if recorded[1].isdigit() else self._stored_dim()
        check_recorded_embedder(self.location, recorded, (name, dim, version), "schema")

    @contextmanager
    def reembedding(
        self, embedder: tuple[str, int, str], meta: Mapping[str, str] | None = None
    ) -> Iterator[_Reembedding]:
        """A re-embedding in ONE transaction (:class:`_Reembedding`). Writers wait for it (the documents
        and the statistics are locked against writes, and the setup lock is held; a writer takes its
        lock on the documents before it reads anything: :meth:`_lock_for_writing`); readers search the
        old vectors meanwhile. The new vectors are staged in temporary tables of the new dimension; when
        the block ends, new vector tables of that dimension are built beside the store's, filled and
        indexed (:meth:`_finish_reembedding`), then swapped in, so another dimension than the old one is
        taken. Readers wait only for the swap (dropping the old tables, renaming the new ones, the
        commit), not for the new tables' fill and HNSW build."""
        self._writable()
        with self._conn() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_SETUP_LOCK,))
            conn.execute(f"LOCK TABLE {self._s}.documents, {self._s}.stats IN EXCLUSIVE MODE")
            _execute_script(conn, _STAGED.format(dim=int(embedder[1])))
            session = _Reembedding(self, conn, embedder)
            yield session
            self._finish_reembedding(conn, embedder, meta, session)
        self._dim = int(embedder[1])

    def _finish_reembedding(
        self, conn: Any, embedder: tuple[str, int, str], meta: Mapping[str, str] | None, session: _Reembedding
    ) -> None:
        """Build the new vector tables (:data:`_VECTORS`, named :data:`_NEXT_TABLES`) for the new
        dimension, fill them from the stage and index them, record the embedder and ``meta``, set the
        windows' count and move the generation, then swap the new tables in (:meth:`_swap_in`);
        :class:`StoreError` unless every document was written. The new tables are this transaction's
        alone until it commits, and the store's tables are locked against readers only from the swap on:
        the fill and the HNSW build, the long part, leave them readable."""
        s, cfg = self._s, self._settings
        name, dim, version = embedder
        check_all_reembedded(self.location, session.total, len(session.written))
        # the HNSW indexes are built once their rows are in, in one pass, not grown row by row
        _execute_script(
            conn,
            _VECTOR_TABLES.format(s=s, dim=int(dim), **_NEXT_TABLES) + _UNSTAGE.format(s=s, **_NEXT_TABLES),
        )
        _execute_script(
            conn,
            _VECTORS_HNSW.format(s=s, m=cfg.hnsw_m, ef_construction=cfg.hnsw_ef_construction, **_NEXT_TABLES),
        )
        recorded = {**(meta or {}), "embedder": name, "dim": str(dim), "embedder_version": version}
        upsert = (
            f"INSERT INTO {s}.meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
        )
        conn.cursor().executemany(upsert, list(recorded.items()))
        conn.execute(
            f"UPDATE {s}.stats SET windows = (SELECT count(*) FROM {s}.{_NEXT_TABLES['windows']}),"
            " generation = generation + 1 WHERE id = 1"
        )
        self._swap_in(conn)

    def _swap_in(self, conn: Any) -> None:
        """Drop the store's vector tables (absent in a store that never recorded an embedder) and give
        the tables of :data:`_NEXT_TABLES` their names, with every index, constraint and sequence
        derived from them: the store's tables are then named, indexed and constrained as an ingest makes
        them (:data:`_VECTORS`), and :meth:`repair`'s ``REINDEX`` finds its indexes. The drop takes the
        locks that make readers wait, until the commit: the vector tables' and the chunks' (their foreign
        keys' triggers live there), in the order a reader's statement takes them (chunks, vectors,
        windows). The drop alone takes the chunks last, holding the vector tables: a reader holding the
        chunks and waiting for the vectors would deadlock with it, and PostgreSQL would abort one of
        them, most often the re-embedding, with all its work."""
        s = self._s
        conn.execute(f"LOCK TABLE {s}.chunks IN ACCESS EXCLUSIVE MODE")
        conn.execute(f"DROP TABLE IF EXISTS {s}.{_STORE_TABLES['vectors']}, {s}.{_STORE_TABLES['windows']}")
        for key, final in _STORE_TABLES.items():
            built = _NEXT_TABLES[key]
            conn.execute(f"ALTER TABLE {s}.{built} RENAME TO {final}")
            derived = conn.execute(_DERIVED_NAMES, {"table": f"{s}.{final}"}).fetchall()
            for kind, name in derived:
                if not name.startswith(built + "_"):
                    continue
                renamed = final + name.removeprefix(built)
                if kind == "CONSTRAINT":
                    conn.execute(f'ALTER TABLE {s}.{final} RENAME CONSTRAINT "{name}" TO "{renamed}"')
                else:
                    conn.execute(f'ALTER {kind} {s}."{name}" RENAME TO "{renamed}"')

    def _recorded_embedder(self, conn: Any) -> tuple[str, str, str] | None:
        """The recorded embedder's name, dimension and version (``""`` when not recorded), read on
        ``conn``; ``None`` when no embedder is recorded."""
        return recorded_embedder(conn.execute(EMBEDDER_META.format(meta=f"{self._s}.meta")).fetchall())

    # --- documents -------------------------------------------------------------------------------

    def state(self, doc_id: str) -> tuple[str, str] | None:
        """``(content_hash, fingerprint)`` of a stored document, ``None`` if absent."""
        if not storable_id(doc_id):
            return None
        rows = self._rows("SELECT content_hash, fingerprint FROM {s}.documents WHERE doc_id = %s", (doc_id,))
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
        """Store ``doc`` with its chunks, headers and vectors, replacing any earlier version, in one
        transaction under the document's advisory lock. Returns what was committed: ``added``,
        ``replaced``, or ``skipped`` when the same content, fingerprint and stored fields
        (:meth:`Document.stored_alike`) were stored meanwhile.
        ``windows``: the passage windows' vectors, each with the index of its chunk in ``chunks``.
        ``embedder`` (name, dimension, version) is checked against the recorded one once the transaction
        holds its write lock on the documents (:func:`.check_put_embedder`): a re-embedding, which locks
        the documents against writes, is then over, and its embedder is the one recorded.

        A NUL character in a string kept as text (the document's id, text, title, source, format, a unit's
        id, a chunk's text or header, the summary, the fingerprint) raises
        :class:`~chunkwise.errors.NulCharacterError` naming the document, before anything is written:
        PostgreSQL cannot store it, and storing it altered would break the exact-provenance rule. The
        ingest pipeline refuses such documents for every store, so that all stores hold the same
        documents; a NUL in metadata is kept, escaped in its JSON."""
        if not len(chunks) == len(headers) == vectors.shape[0]:
            raise ValueError("chunks, headers and vectors must have one entry each per chunk")
        self._writable()
        if reason := nul_in_text(doc, chunks, headers, fingerprint, summary):
            raise NulCharacterError(doc.id, reason)
        self._check_put_dimension(doc.id, vectors, windows[1] if windows is not None else None)
        s = self._s
        derived = [postings(header, chunk.text) for chunk, header in zip(chunks, headers, strict=True)]
        lengths = [length for length, _ in derived]
        counts = [count for _, count in derived]
        with self._conn() as conn, conn.transaction():
            self._lock_for_writing(conn, doc.id)
            check_put_embedder(self.location, doc.id, self._recorded_embedder(conn), embedder)
            stored = conn.execute(
                f"SELECT content_hash, fingerprint FROM {s}.documents WHERE doc_id = %s", (doc.id,)
            ).fetchone()
            same = stored is not None and tuple(stored) == (doc.content_hash, fingerprint)
            if same and self._document(conn, doc.id).stored_alike(doc):
                return "skipped"
            removed = self._delete(conn, doc.id) if stored is not None else (0, 0, 0)
            conn.execute(
                f"INSERT INTO {s}.documents VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
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
            keys = [
                int(row[0])
                for row in conn.execute(
                    f"SELECT nextval(pg_get_serial_sequence('{s}.chunks', 'chunk_key'))"
                    " FROM generate_series(1, %s)",
                    (len(chunks),),
                )
            ]
            cur = conn.cursor()
            with cur.copy(
                f'COPY {s}.units (doc_id, seq, unit_id, kind, start, "end", level, parent, page) FROM STDIN'
            ) as copy:
                for seq, u in enumerate(doc.units):
                    copy.write_row(
                        (doc.id, seq, u.id, u.kind.value, u.start, u.end, u.level, u.parent, u.page)
                    )
            with cur.copy(
                f'COPY {s}.chunks (chunk_key, chunk_id, doc_id, ordinal, start, "end", text, header, section,'
                " unit_ids, tokens, pages, terms) FROM STDIN"
            ) as copy:
                for ordinal, (key, chunk, header, length) in enumerate(
                    zip(keys, chunks, headers, lengths, strict=True)
                ):
                    copy.write_row(
                        (
                            key,
                            chunk.id,
                            doc.id,
                            ordinal,
                            chunk.start,
                            chunk.end,
                            chunk.text,
                            header,
                            json.dumps(chunk.section, ensure_ascii=False),
                            json.dumps(chunk.unit_ids),
                            chunk.tokens,
                            json.dumps(chunk.pages) if chunk.pages else None,
                            length,
                        )
                    )
            self._copy_postings(conn, keys, lengths, counts)
            with cur.copy(f"COPY {s}.vectors (chunk_key, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "vector"])
                for key, vector in zip(keys, vectors, strict=True):
                    copy.write_row((key, np.asarray(vector, dtype=np.float32)))
            added = len(windows[0]) if windows is not None else 0
            if windows is not None:
                self._copy_windows(cur, [keys[owner] for owner in windows[0]], windows[1])
            self._add_stats(conn, len(chunks) - removed[0], sum(lengths) - removed[1], added - removed[2])
        return "replaced" if stored is not None else "added"

    def _check_put_dimension(self, doc_id: str, vectors: Vectors, window_vectors: Vectors | None) -> None:
        """Before :meth:`put` writes: :class:`StoreError` when no embedder is recorded (there is no vector
        table yet: :meth:`check_embedder` records one), :class:`ConfigError` naming the document when its
        vectors or windows' vectors are not of the recorded dimension (another embedder's)."""
        dim = self._stored_dim()
        if dim is None:
            raise StoreError(
                self.location, f"{doc_id}: no embedder is recorded (check_embedder records one before a put)"
            )
        embedder = self.meta("embedder") or ""
        check_put_widths(self.location, doc_id, dim, embedder, vectors=vectors, windows=window_vectors)

    def _copy_postings(
        self, conn: Any, keys: Sequence[int], lengths: Sequence[int], counts: Sequence[Counter[str]]
    ) -> None:
        """Insert the postings of chunks ``keys`` as four parallel arrays (one statement)."""
        terms: list[str] = []
        owners: list[int] = []
        tfs: list[int] = []
        dls: list[int] = []
        for key, length, count in zip(keys, lengths, counts, strict=True):
            terms.extend(count)
            tfs.extend(count.values())
            owners.extend([key] * len(count))
            dls.extend([length] * len(count))
        if terms:
            conn.execute(
                f"INSERT INTO {self._s}.postings (term, chunk_key, tf, dl)"
                " SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::int[])",
                (terms, owners, tfs, dls),
            )

    def _copy_windows(self, cur: Any, owners: Sequence[int], vectors: Vectors, table: str = "") -> None:
        """Insert passage windows' vectors, each with its chunk's key, in their order (into ``table``, by
        default the store's windows)."""
        with cur.copy(
            f"COPY {table or self._s + '.windows'} (chunk_key, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "vector"])
            for key, vector in zip(owners, vectors, strict=True):
                copy.write_row((key, np.asarray(vector, dtype=np.float32)))

    def _add_stats(self, conn: Any, chunks: int, terms: int, windows: int) -> None:
        """Move the BM25 statistics and the windows' count, and bump the generation (the last statement
        of a write: its row lock is held briefly, and orders the generations as the writes commit)."""
        conn.execute(
            f"UPDATE {self._s}.stats SET chunks = chunks + %s, terms = terms + %s, windows = windows + %s,"
            " generation = generation + 1 WHERE id = 1",
            (chunks, terms, windows),
        )

    def _lock_for_writing(self, conn: Any, doc_id: str) -> None:
        """Take what a transaction writing ``doc_id`` needs before it reads anything: the document's
        advisory lock (one writer per document), then the write lock on the documents table that its
        writes would take anyway. A re-embedding holds the documents against writes until it commits;
        a writer that had read the document's chunks first would hold what the re-embedding's last step
        needs while it waits, and the two would deadlock."""
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_DOC_LOCK, f"{self._s}/{doc_id}"))
        conn.execute(f"LOCK TABLE {self._s}.documents IN ROW EXCLUSIVE MODE")

    def _delete(self, conn: Any, doc_id: str) -> tuple[int, int, int]:
        """Delete a document (cascading to everything derived); its number of chunks, of terms and of
        passage windows."""
        chunks, terms = conn.execute(
            f"SELECT count(*), coalesce(sum(terms), 0) FROM {self._s}.chunks WHERE doc_id = %s", (doc_id,)
        ).fetchone()
        windows = 0
        if self._has_vectors():
            windows = conn.execute(
                f"SELECT count(*) FROM {self._s}.windows w JOIN {self._s}.chunks c USING (chunk_key)"
                " WHERE c.doc_id = %s",
                (doc_id,),
            ).fetchone()[0]
        conn.execute(f"DELETE FROM {self._s}.documents WHERE doc_id = %s", (doc_id,))
        return int(chunks), int(terms), int(windows)

    def delete(self, doc_id: str) -> bool:
        """Remove a document and everything derived from it; False if it was not stored."""
        self._writable()
        if not storable_id(doc_id):
            return False
        with self._conn() as conn, conn.transaction():
            self._lock_for_writing(conn, doc_id)
            exists = conn.execute(
                f"SELECT 1 FROM {self._s}.documents WHERE doc_id = %s", (doc_id,)
            ).fetchone()
            if not exists:
                return False
            chunks, terms, windows = self._delete(conn, doc_id)
            self._add_stats(conn, -chunks, -terms, -windows)
        return True

    def documents(self) -> list[DocumentInfo]:
        """Every stored document, by id."""
        rows = self._rows(
            "SELECT d.doc_id, d.source, d.title, d.format, d.content_hash, COUNT(c.chunk_key)"
            " FROM {s}.documents d LEFT JOIN {s}.chunks c ON c.doc_id = d.doc_id"
            ' GROUP BY d.doc_id ORDER BY d.doc_id COLLATE "C"'
        )
        return [DocumentInfo(*row) for row in rows]

    def document(self, doc_id: str) -> Document:
        """The stored document, units included; ``KeyError`` if absent."""
        if not storable_id(doc_id):
            raise KeyError(doc_id)
        with self._conn() as conn:
            return self._document(conn, doc_id)

    def _document(self, conn: Any, doc_id: str) -> Document:
        """:meth:`document`, read on ``conn`` (inside a transaction of its own, say)."""
        row = conn.execute(
            f"SELECT doc_id, text, title, source, format, metadata FROM {self._s}.documents"
            " WHERE doc_id = %s",
            (doc_id,),
        ).fetchone()
        if row is None:
            raise KeyError(doc_id)
        units = conn.execute(
            f'SELECT unit_id, kind, start, "end", level, parent, page FROM {self._s}.units'
            " WHERE doc_id = %s ORDER BY seq",
            (doc_id,),
        ).fetchall()
        doc_id, text, title, source, fmt, metadata = row
        return Document(
            doc_id,
            text,
            title,
            source,
            fmt,
            json.loads(metadata),
            tuple(
                Unit(uid, UnitKind(kind), start, end, text[start:end], level, parent, page)
                for uid, kind, start, end, level, parent, page in units
            ),
        )

    def _stored_for_embedding(self, conn: Any, doc_id: str, fingerprint: str) -> StoredForEmbedding:
        """``doc_id`` as stored, read on ``conn``, with its chunks and headers by ordinal and the
        ``fingerprint`` read with it: what a re-embedding embeds again and a copy
        (:meth:`stored_document`) writes elsewhere."""
        rows = conn.execute(
            'SELECT chunk_id, start, "end", text, section, unit_ids, tokens, pages, header'
            f" FROM {self._s}.chunks WHERE doc_id = %s ORDER BY ordinal",
            (doc_id,),
        ).fetchall()
        chunks = [chunk_from_row(doc_id, row[:-1]) for row in rows]
        return StoredForEmbedding(
            self._document(conn, doc_id), chunks, [row[-1] for row in rows], fingerprint
        )

    def document_spans(self, doc_id: str) -> tuple[Document, list[tuple[int, int]]]:
        """The stored document and its chunks' spans, read in one read-only transaction that sees one
        snapshot (repeatable read; see :meth:`.protocol.Store.document_spans`); ``KeyError`` if
        absent."""
        if not storable_id(doc_id):
            raise KeyError(doc_id)
        with self._conn() as conn, conn.transaction():
            conn.execute(_SNAPSHOT)
            return self._document(conn, doc_id), self._spans(conn, doc_id)

    def stored_document(self, doc_id: str) -> StoredDocument:
        """Everything stored of ``doc_id``, read in one read-only transaction that sees one snapshot
        (repeatable read; see :meth:`.protocol.Store.stored_document`), the vectors in pgvector's binary
        form, exactly as stored; ``KeyError`` if absent, :class:`CorruptStoreError` for a chunk without
        a vector."""
        if not storable_id(doc_id):
            raise KeyError(doc_id)
        s, dim = self._s, self._stored_dim()
        vector = "v.embedding" if dim is not None else "NULL"
        join = f"LEFT JOIN {s}.vectors v USING (chunk_key)" if dim is not None else ""
        with self._conn() as conn, conn.transaction():
            conn.execute(_SNAPSHOT)
            row = conn.execute(
                f"SELECT fingerprint, summary FROM {s}.documents WHERE doc_id = %s", (doc_id,)
            ).fetchone()
            if row is None:
                raise KeyError(doc_id)
            stored = self._stored_for_embedding(conn, doc_id, row[0])
            binary = conn.cursor(binary=True)
            vectors = binary.execute(
                f"SELECT c.chunk_key, {vector} FROM {s}.chunks c {join} WHERE c.doc_id = %s"
                " ORDER BY c.ordinal",
                (doc_id,),
            ).fetchall()
            windows = []
            if dim is not None:
                windows = binary.execute(
                    f"SELECT w.chunk_key, w.embedding FROM {s}.windows w JOIN {s}.chunks c USING (chunk_key)"
                    " WHERE c.doc_id = %s ORDER BY w.window_key",
                    (doc_id,),
                ).fetchall()

        def matrix(rows: Sequence[tuple[int, Any]]) -> Vectors:
            stacked = [vector.to_numpy() for _, vector in rows]
            return np.array(stacked, dtype=np.float32).reshape(len(rows), dim or 0)

        return with_vectors(
            self.location, stored, summary=row[1], vectors=vectors, windows=windows, matrix=matrix
        )

    def summary(self, doc_id: str) -> str:
        """The document summary stored with it (empty when none)."""
        if not storable_id(doc_id):
            return ""
        rows = self._rows("SELECT summary FROM {s}.documents WHERE doc_id = %s", (doc_id,))
        return str(rows[0][0]) if rows else ""

    def counts(self) -> dict[str, int]:
        """Numbers of documents, chunks and vectors."""
        vectors = "(SELECT count(*) FROM {s}.vectors)" if self._has_vectors() else "0"
        documents, chunks, stored = self._rows(
            "SELECT (SELECT count(*) FROM {s}.documents), (SELECT count(*) FROM {s}.chunks), " + vectors
        )[0]
        return {"documents": int(documents), "chunks": int(chunks), "vectors": int(stored)}

    def check(self) -> list[str]:
        """Consistency problems (empty when none): every chunk has a vector and postings that agree with
        its length, the BM25 statistics match the chunks, every document has chunks, and every chunk's
        and unit's offsets hold in its document's text (re-read document by document)."""
        problems = []
        vectors = self._has_vectors()
        checks = {
            "documents without chunks": "SELECT count(*) FROM {s}.documents d"
            " WHERE NOT EXISTS (SELECT 1 FROM {s}.chunks c WHERE c.doc_id = d.doc_id)",
            "chunks whose BM25 postings disagree with their length": "SELECT count(*) FROM {s}.chunks c"
            " LEFT JOIN (SELECT chunk_key, sum(tf) AS n, min(dl) AS lo, max(dl) AS hi FROM {s}.postings"
            " GROUP BY chunk_key) p USING (chunk_key)"
            " WHERE coalesce(p.n, 0) <> c.terms OR p.lo <> c.terms OR p.hi <> c.terms",
            "BM25 statistics that disagree with the chunks": "SELECT count(*) FROM {s}.stats t,"
            " (SELECT count(*) AS n, coalesce(sum(terms), 0) AS terms FROM {s}.chunks) c"
            " WHERE t.chunks <> c.n OR t.terms <> c.terms",
        }
        if vectors:
            checks["chunks without vector"] = (
                "SELECT count(*) FROM {s}.chunks c"
                " WHERE NOT EXISTS (SELECT 1 FROM {s}.vectors v WHERE v.chunk_key = c.chunk_key)"
            )
            checks["window statistics that disagree with the windows"] = (
                "SELECT count(*) FROM {s}.stats t, (SELECT count(*) AS n FROM {s}.windows) w"
                " WHERE t.windows <> w.n"
            )
        elif self._rows("SELECT count(*) FROM {s}.chunks")[0][0]:
            problems.append("chunks stored but no embedder recorded")
        for name, sql in checks.items():
            count = self._rows(sql)[0][0]
            if count:
                problems.append(f"{count} {name}")
        problems.extend(self._check_offsets())
        return problems

    def _check_offsets(self) -> list[str]:
        """Chunks whose text is not ``document.text[start:end]``, units outside their document."""
        bad_chunks = bad_units = 0
        for (doc_id,) in self._rows("SELECT doc_id FROM {s}.documents ORDER BY doc_id"):
            with self._conn() as conn:
                row = conn.execute(
                    f"SELECT text FROM {self._s}.documents WHERE doc_id = %s", (doc_id,)
                ).fetchone()
                if row is None:  # deleted meanwhile
                    continue
                text = row[0]
                for start, end, chunk in conn.execute(
                    f'SELECT start, "end", text FROM {self._s}.chunks WHERE doc_id = %s', (doc_id,)
                ):
                    bad_chunks += text[start:end] != chunk
                for start, end in conn.execute(
                    f'SELECT start, "end" FROM {self._s}.units WHERE doc_id = %s', (doc_id,)
                ):
                    bad_units += not 0 <= start <= end <= len(text)
        problems = []
        if bad_chunks:
            problems.append(f"{bad_chunks} chunks whose text differs from their document at their offsets")
        if bad_units:
            problems.append(f"{bad_units} units outside their document's text")
        return problems

    def repair(self) -> list[str]:
        """Rebuild the derived rows from the stored chunks and headers: every chunk's BM25 postings and
        length (document by document, each under its lock), then the BM25 statistics and the HNSW
        indexes. Vectors and offsets cannot be rebuilt here: :meth:`check` reports them (re-ingest)."""
        self._writable()
        done = []
        rebuilt = 0
        for (doc_id,) in self._rows("SELECT doc_id FROM {s}.documents ORDER BY doc_id"):
            with self._conn() as conn, conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_DOC_LOCK, f"{self._s}/{doc_id}")
                )
                rows = conn.execute(
                    f"SELECT chunk_key, header, text FROM {self._s}.chunks WHERE doc_id = %s"
                    " ORDER BY ordinal",
                    (doc_id,),
                ).fetchall()
                keys = [row[0] for row in rows]
                derived = [postings(header, text) for _, header, text in rows]
                conn.execute(f"DELETE FROM {self._s}.postings WHERE chunk_key = ANY(%s)", (keys,))
                for key, (length, _) in zip(keys, derived, strict=True):
                    conn.execute(
                        f"UPDATE {self._s}.chunks SET terms = %s WHERE chunk_key = %s", (length, key)
                    )
                self._copy_postings(conn.cursor(), keys, [d[0] for d in derived], [d[1] for d in derived])
                rebuilt += len(keys)
        done.append(f"rebuilt the BM25 postings of {rebuilt} chunks")
        vectors = self._has_vectors()
        windows = f"(SELECT count(*) FROM {self._s}.windows)" if vectors else "0"
        with self._conn() as conn, conn.transaction():
            conn.execute(f"LOCK TABLE {self._s}.stats IN EXCLUSIVE MODE")
            conn.execute(
                f"UPDATE {self._s}.stats t SET chunks = c.n, terms = c.terms, windows = {windows},"
                f" generation = generation + 1, epoch = epoch + 1 FROM (SELECT count(*) AS n,"
                f" coalesce(sum(terms), 0) AS terms FROM {self._s}.chunks) c WHERE t.id = 1"
            )
        done.append("recounted the BM25 statistics and the windows")
        if vectors:
            with self._conn() as conn:
                conn.execute(f"REINDEX INDEX {self._s}.vectors_hnsw")
                conn.execute(f"REINDEX INDEX {self._s}.windows_hnsw")
            done.append("rebuilt the HNSW indexes")
        return done

    # --- search ----------------------------------------------------------------------------------

    def bm25(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best chunk keys by Okapi BM25 over header + text (positive scores, best first, ties
        by key): in SQL below ``bm25s_threshold`` chunks, from the postings in memory at or above it;
        nothing for ``k`` of 0 or less."""
        terms = search_terms(query)
        if not terms or k <= 0:  # nothing wanted (a negative LIMIT is an error in PostgreSQL)
            return []
        threshold = self._settings.bm25s_threshold
        with self._conn() as conn:
            generation, epoch, chunks = conn.execute(
                f"SELECT generation, epoch, chunks FROM {self._s}.stats"
            ).fetchone()
            if threshold is None or chunks < threshold:
                rows = conn.execute(_BM25.format(s=self._s), {"terms": terms, "k1": K1, "b": B, "k": k})
                return [(int(key), float(score)) for key, score in rows]
            if self._postings.stamp != (generation, epoch):
                with self._postings_lock:  # one refresh at a time; a search started after it uses it
                    self._postings = self._postings.refresh(conn, self._s)
        return self._postings.search(terms, k)

    def _stored_dim(self) -> int | None:
        """The recorded embedder's dimension, ``None`` until one is recorded (with it the vector table).
        Kept once read; a re-embedding by another store object changes it, which :meth:`check_embedder`
        (before every ingest and dense search) reads anew."""
        if self._dim is None:
            dim = self.meta("dim")
            self._dim = int(dim) if dim is not None else None
        return self._dim

    def _has_vectors(self) -> bool:
        """True once an embedder is recorded and the vector table exists."""
        return self._stored_dim() is not None

    def _query_vector(self, vector: Vectors) -> np.ndarray:
        """``vector`` as pgvector takes it; :class:`ConfigError` when it is not of the stored vectors'
        dimension (another embedder's), which pgvector would refuse with a raw ``DataException``."""
        dim = self._stored_dim()
        if vector.shape != (dim,):
            raise ConfigError(
                f"{self.location}: the query vector has {vector.size} dimensions, the stored vectors {dim}; "
                f"search with the embedder that built the store ({self.meta('embedder')})"
            )
        return np.asarray(vector, dtype=np.float32)

    def _approximate(self, conn: Any) -> bool:
        """True when the store holds at least ``hnsw_threshold`` vectors, whole or window (what an exact
        search would scan): the HNSW indexes answer."""
        size = conn.execute(f"SELECT chunks + windows FROM {self._s}.stats").fetchone()[0]
        return bool(size >= self._settings.hnsw_threshold)

    def dense_method(self) -> str:
        """``hnsw`` when the store holds at least ``settings.hnsw_threshold`` vectors (chunks and passage
        windows), else ``exact``."""
        with self._conn() as conn:
            return "hnsw" if self._approximate(conn) else "exact"

    def dense(self, vector: Vectors, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest chunks by their best cosine, whole vector or passage window: a sequential scan
        below ``hnsw_threshold`` vectors (exact, ties by key); at or above it the HNSW indexes of the
        whole vectors and of the windows each propose ``WINDOW_CANDIDATES`` times ``k`` nearest, whose
        chunks are scored exactly with their windows (one transaction, so one connection). Nothing for
        ``k`` of 0 or less, as in the SQLite store."""
        if not self._has_vectors() or k <= 0:
            return []
        params = {"q": self._query_vector(vector), "k": k, "n": k * WINDOW_CANDIDATES}
        with self._conn() as conn, conn.transaction():
            if self._approximate(conn):
                breadth = max(int(self._settings.hnsw_ef_search), k * WINDOW_CANDIDATES)
                conn.execute(f"SET LOCAL hnsw.ef_search = {min(breadth, MAX_EF_SEARCH)}")
                if breadth > MAX_EF_SEARCH:  # the scan goes on past ef_search until LIMIT is met
                    conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                sql = _DENSE_HNSW
            else:
                conn.execute("SET LOCAL enable_indexscan = off")
                sql = _DENSE_EXACT
            rows = conn.execute(sql.format(s=self._s), params).fetchall()
        return [(int(key), float(score)) for key, score in rows]

    def window_scores(self, vector: Vectors, keys: Sequence[int]) -> dict[int, float]:
        """Each of ``keys``' best passage-window cosine to ``vector`` (chunks without windows absent)."""
        if not keys or not self._has_vectors():
            return {}
        params = {"q": self._query_vector(vector), "keys": list(keys)}
        rows = self._rows(_WINDOW_SCORES, params)
        return {int(key): float(score) for key, score in rows}

    def chunks(self, keys: Sequence[int]) -> list[StoredChunk]:
        """The chunks of ``keys`` with their vectors, in the given order (missing keys skipped)."""
        if not keys:
            return []
        vectors = self._has_vectors()
        vector = "v.embedding" if vectors else "NULL"
        join = "LEFT JOIN {s}.vectors v USING (chunk_key)" if vectors else ""
        rows = self._rows(
            'SELECT c.chunk_key, c.doc_id, c.start, c."end", c.chunk_id, c.text, c.header, c.ordinal, '
            + vector
            + " FROM {s}.chunks c "
            + join
            + " WHERE c.chunk_key = ANY(%s)",
            (list(keys),),
        )
        by_key = {row[0]: row for row in rows}
        return [
            StoredChunk(
                doc_id,
                start,
                end,
                key,
                chunk_id,
                text,
                header,
                ordinal,
                None if vec is None else vec.to_numpy(),
            )
            for key, doc_id, start, end, chunk_id, text, header, ordinal, vec in (
                by_key[k] for k in keys if k in by_key
            )
        ]

    def chunk_spans(self, doc_id: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each chunk of ``doc_id``, by ordinal."""
        if not storable_id(doc_id):
            return []
        with self._conn() as conn:
            return self._spans(conn, doc_id)

    def _spans(self, conn: Any, doc_id: str) -> list[tuple[int, int]]:
        """:meth:`chunk_spans`, read on ``conn``."""
        rows = conn.execute(
            f'SELECT start, "end" FROM {self._s}.chunks WHERE doc_id = %s ORDER BY ordinal', (doc_id,)
        ).fetchall()
        return [(start, end) for start, end in rows]

    def document_text(self, doc_id: str, start: int, end: int) -> str:
        """``document.text[start:end]`` (sliced in SQL: substr counts characters, 1-based; offsets as
        :func:`~chunkwise.store.protocol.substring_bounds` takes them)."""
        first, length = substring_bounds(start, end)
        if not storable_id(doc_id):
            raise KeyError(doc_id)
        rows = self._rows(
            "SELECT substr(text, %s, %s) FROM {s}.documents WHERE doc_id = %s", (first, length, doc_id)
        )
        if not rows:
            raise KeyError(doc_id)
        return str(rows[0][0])


class _Reembedding:
    """The :class:`~.protocol.Reembedding` of a PostgreSQL store: ``conn`` is in the transaction of
    :meth:`PostgresStore.reembedding`, which holds the documents locked against writes; new vectors go
    to its temporary stage tables."""

    def __init__(self, store: PostgresStore, conn: Any, embedder: tuple[str, int, str]) -> None:
        self.store = store
        self.conn = conn
        self.embedder = embedder
        self.written: set[str] = set()
        self._s = store._s
        recorded = store._recorded_embedder(conn)
        self.previous = recorded[0] if recorded is not None else None
        self.total = int(conn.execute(f"SELECT count(*) FROM {self._s}.documents").fetchone()[0])

    def documents(self) -> Iterator[StoredForEmbedding]:
        """Each stored document by id, with its chunks, headers and fingerprint."""
        stored = self.conn.execute(
            f'SELECT doc_id, fingerprint FROM {self._s}.documents ORDER BY doc_id COLLATE "C"'
        ).fetchall()
        for doc_id, fingerprint in stored:
            yield self.store._stored_for_embedding(self.conn, doc_id, fingerprint)

    def write(self, doc_id: str, new: Reembedded) -> None:
        """Stage the new vectors and passage windows of ``doc_id``, and set its fingerprint."""
        name, dim, _ = self.embedder
        windows = new.windows[1] if new.windows is not None else None
        check_put_widths(self.store.location, doc_id, dim, name, vectors=new.vectors, windows=windows)
        keys = [
            int(row[0])
            for row in self.conn.execute(
                f"SELECT chunk_key FROM {self._s}.chunks WHERE doc_id = %s ORDER BY ordinal", (doc_id,)
            )
        ]
        if len(new.vectors) != len(keys):
            raise ValueError(f"{doc_id}: {len(keys)} chunks, {len(new.vectors)} vectors")
        cur = self.conn.cursor()
        with cur.copy("COPY reembed_vectors (chunk_key, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "vector"])
            for key, vector in zip(keys, new.vectors, strict=True):
                copy.write_row((key, np.asarray(vector, dtype=np.float32)))
        if new.windows is not None:
            owners, vectors = new.windows
            self.store._copy_windows(cur, [keys[owner] for owner in owners], vectors, "reembed_windows")
        self.conn.execute(
            f"UPDATE {self._s}.documents SET fingerprint = %s WHERE doc_id = %s", (new.fingerprint, doc_id)
        )
        self.written.add(doc_id)
