"""The tables of a knowledge-base database, and how a new database gets them.

One file holds everything: ``meta`` (schema version, store generation, embedder and dimension, the
recorded configuration), ``documents`` (with their canonical text), ``units``, ``chunks`` (offsets into
the document text, and the text itself), ``headers`` and ``vectors`` (one row per chunk) and the FTS5
table ``chunks_fts`` over header + text. Everything but the FTS5 table and the sidecar indexes beside the
file is stored data; those are derived, and ``repair`` rebuilds them from it.
"""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = 1
DB_NAME = "kb.sqlite"

SCHEMA = """
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

#: Columns of the stored tables, in the order rows are read back and written again.
DOCUMENT_COLUMNS = "doc_id, source, title, format, content_hash, fingerprint, summary, metadata, text"
UNIT_COLUMNS = 'doc_id, unit_id, kind, start, "end", level, parent, page'
CHUNK_COLUMNS = 'chunk_key, chunk_id, doc_id, ordinal, start, "end", text, section, unit_ids, tokens, pages'


def create_schema(db: sqlite3.Connection, generation: int = 0) -> None:
    """Create the tables in ``db`` (an autocommit connection) in one transaction, with the schema
    version and the store ``generation`` recorded."""
    db.execute("BEGIN IMMEDIATE")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    db.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (str(generation),))
    db.execute("COMMIT")
