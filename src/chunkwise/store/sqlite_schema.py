"""The tables of a knowledge-base database, and how a new database gets them.

One file holds everything: ``meta`` (schema version, store generation, count of removed vectors,
embedder and dimension, the recorded configuration), ``generations`` (a random token for each recent
generation: :data:`GENERATIONS_TABLE`), ``documents`` (with their canonical text),
``units``, ``chunks`` (offsets into the document text, and the text itself), ``headers`` and ``vectors``
(one row per chunk) and the FTS5 table ``chunks_fts`` over header + text. Everything but the FTS5 table
and the sidecar indexes beside the file is stored data; those are derived, and ``repair`` rebuilds them
from it.

FTS5 indexes the terms of :func:`chunkwise.terms.index_terms` (folded and stemmed in Python, joined by
spaces, split again by FTS5's ``ascii`` tokenizer, which keeps them as they are: :func:`fts_body`), so
every store ranks the same terms the same way. Schema 2 changed the FTS5 rows from raw text (FTS5's own
Porter tokenizer) to these terms; a schema-1 store is upgraded when opened for writing
(:func:`rebuild_fts`).
"""

from __future__ import annotations

import sqlite3
import uuid

from chunkwise.chunking.chunk import contextual_text
from chunkwise.terms import index_terms

SCHEMA_VERSION = 2
DB_NAME = "kb.sqlite"

#: The lexical index: FTS5 over analysed terms, which its ``ascii`` tokenizer leaves as they are.
FTS_TABLE = "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(body, tokenize = 'ascii')"

SCHEMA = f"""
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
{FTS_TABLE};
"""

#: The passage windows' vectors (:mod:`chunkwise.ingest.windows`), several per long chunk, in the order
#: of their chunk's text. Installed in every store opened for writing (:func:`complete_schema`).
WINDOWS_TABLE = """
CREATE TABLE IF NOT EXISTS windows (
    window_key INTEGER PRIMARY KEY,
    chunk_key INTEGER NOT NULL REFERENCES chunks(chunk_key) ON DELETE CASCADE,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS windows_by_chunk ON windows (chunk_key)
"""

#: Counts, in ``meta``'s ``removals``, the vectors ever removed. A reader whose count has not changed
#: knows every vector it holds is still stored as it was, so it reads only the rows added since: those
#: with keys above its largest (SQLite gives a new row the largest key + 1; it reuses a key only after
#: the rows with the largest keys were removed, which this counts). Installed in every store opened for
#: writing (:func:`complete_schema`); a store without it is read whole after each write.
REMOVALS_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS count_removals AFTER DELETE ON vectors BEGIN "
    "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'removals'; END"
)

#: How many of the latest generations keep their token (:data:`GENERATIONS_TABLE`). A sidecar stamped
#: for an older generation is built whole instead of being brought up to date: each generation is a write
#: that changed something, so 10,000 of them are at least as many changed chunks as the tenth of a
#: 100k-chunk store past which the HNSW graph is built whole anyway (:data:`.dense.UPDATE_SHARE`); the
#: table stays below 1 MB.
GENERATIONS_KEPT = 10_000
#: A new random token: 128 bits, as hex.
NEW_TOKEN = "lower(hex(randomblob(16)))"

#: A random token for each of the latest :data:`GENERATIONS_KEPT` generations, drawn by the write that
#: made it (the ``record_generation`` trigger fires on the ``UPDATE`` that moves the generation, whichever
#: release of chunkwise runs it) or by the creation of the database. A generation number alone does not
#: tell one history of the file from another: a database restored from a backup numbers its next writes
#: as the lost ones were, and SQLite gives their chunks the lost ones' keys. A token does: a store that
#: holds the token a sidecar's stamp names for its generation descends from the very state the sidecar
#: was built from (:mod:`.dense` brings the HNSW graph up to date only then). Installed in every store
#: opened for writing (:func:`complete_schema`); the generations before it have no token, so a sidecar
#: built for one of them is built whole again rather than brought up to date.
GENERATIONS_TABLE = f"""
CREATE TABLE IF NOT EXISTS generations (generation INTEGER PRIMARY KEY, token TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS record_generation AFTER UPDATE OF value ON meta
WHEN NEW.key = 'generation' BEGIN
    INSERT OR REPLACE INTO generations VALUES (CAST(NEW.value AS INTEGER), {NEW_TOKEN});
    DELETE FROM generations WHERE generation <= CAST(NEW.value AS INTEGER) - {GENERATIONS_KEPT};
END
"""
#: What :func:`complete_schema` installs, by its name in ``sqlite_master``.
COMPLETION = frozenset({"windows", "count_removals", "generations", "record_generation"})

#: Columns of the stored tables, in the order rows are read back and written again.
DOCUMENT_COLUMNS = "doc_id, source, title, format, content_hash, fingerprint, summary, metadata, text"
UNIT_COLUMNS = 'doc_id, unit_id, kind, start, "end", level, parent, page'
CHUNK_COLUMNS = 'chunk_key, chunk_id, doc_id, ordinal, start, "end", text, section, unit_ids, tokens, pages'


def create_schema(db: sqlite3.Connection, generation: int = 0) -> None:
    """Create the tables in ``db`` (an autocommit connection) in one transaction, with the schema
    version, the store ``generation`` with a token of its own (:data:`GENERATIONS_TABLE`) and a random
    ``store_id`` recorded (the id the stamps of the sidecar indexes name, :mod:`.sidecar`)."""
    db.execute("BEGIN IMMEDIATE")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    db.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (str(generation),))
    db.execute("INSERT OR REPLACE INTO meta VALUES ('store_id', ?)", (uuid.uuid4().hex,))
    complete_schema(db)
    db.execute(f"INSERT INTO generations VALUES (?, {NEW_TOKEN})", (generation,))
    db.execute("COMMIT")


def complete_schema(db: sqlite3.Connection) -> None:
    """Install what stores made by earlier releases lack (inside the caller's transaction): the
    :data:`WINDOWS_TABLE`, :data:`REMOVALS_TRIGGER` with its counter, and the :data:`GENERATIONS_TABLE`
    with its trigger (the current generation gets no token: it was not made by a write that drew one)."""
    for statement in WINDOWS_TABLE.split(";"):
        db.execute(statement)
    db.execute("INSERT OR IGNORE INTO meta VALUES ('removals', '0')")
    db.execute(REMOVALS_TRIGGER)
    table, trigger = GENERATIONS_TABLE.split(";", 1)
    db.execute(table)
    db.execute(trigger)


def installed(db: sqlite3.Connection) -> frozenset[str]:
    """The parts of :data:`COMPLETION` that ``db`` has (a store made by an earlier release and opened
    read-only lacks some: what reads them checks first)."""
    marks = ", ".join("?" * len(COMPLETION))
    rows = db.execute(f"SELECT name FROM sqlite_master WHERE name IN ({marks})", sorted(COMPLETION))
    return frozenset(row[0] for row in rows)


def fts_body(header: str, text: str) -> str:
    """What FTS5 indexes for a chunk: the index terms of its header + text, joined by spaces."""
    return " ".join(index_terms(contextual_text(header, text)))


def rebuild_fts(db: sqlite3.Connection) -> int:
    """Recreate the FTS5 table of ``db`` (inside the caller's transaction) from the stored chunks and
    headers; the number of rows written."""
    db.execute("DROP TABLE IF EXISTS chunks_fts")
    db.execute(FTS_TABLE)
    rows = db.execute(
        "SELECT c.chunk_key, h.header, c.text FROM chunks c JOIN headers h USING (chunk_key)"
    ).fetchall()
    db.executemany(
        "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)",
        [(key, fts_body(header, text)) for key, header, text in rows],
    )
    return len(rows)
