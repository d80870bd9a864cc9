"""Checking a knowledge-base database row by row, and salvaging what can be kept into a fresh one.

:func:`check_database` runs SQLite's ``integrity_check``, reads the whole FTS5 index, checks that each
FTS5 row holds its chunk's analysed terms (:func:`~.sqlite_schema.fts_body`), counts orphaned rows, and
reads every document back with its chunks, headers and vectors, checking each chunk's offsets
against the document's text (``text[start:end] == chunk text``, the exact-provenance rule). A read that
fails (a damaged page) becomes a problem line, never an exception.

:func:`salvage` copies every document that reads back whole and passes those checks into a new database,
building the FTS5 index from the copied rows; every document it cannot keep is named with the reason, so
that ingesting its file again restores it. Copying, rather than mending the old file in place, handles
a damaged page, a broken FTS5 table (which SQLite cannot even drop: "vtable constructor failed") and
inconsistent rows the same way, and leaves the old file untouched until the new one is complete.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkwise.store.sqlite_schema import (
    CHUNK_COLUMNS,
    DOCUMENT_COLUMNS,
    UNIT_COLUMNS,
    create_schema,
    fts_body,
)

#: Lines of ``PRAGMA integrity_check`` reported at most.
INTEGRITY_LINES = 20
#: Meta keys a fresh database sets itself.
OWN_META = ("schema_version", "generation")
#: ``(name, table, column, other table, other column)``: rows of ``table`` whose ``column`` value is not in
#: ``other``, which a consistent store never holds.
ORPHANS = (
    ("chunks without header", "chunks", "chunk_key", "headers", "chunk_key"),
    ("chunks without vector", "chunks", "chunk_key", "vectors", "chunk_key"),
    ("chunks without BM25 row", "chunks", "chunk_key", "chunks_fts", "rowid"),
    ("BM25 rows without chunk", "chunks_fts", "rowid", "chunks", "chunk_key"),
    ("headers without chunk", "headers", "chunk_key", "chunks", "chunk_key"),
    ("vectors without chunk", "vectors", "chunk_key", "chunks", "chunk_key"),
    ("units without document", "units", "doc_id", "documents", "doc_id"),
)
_CHUNK_SELECT = (
    "SELECT "
    + ", ".join(f"c.{column}" for column in CHUNK_COLUMNS.split(", "))
    + ", h.header, v.vector FROM chunks c LEFT JOIN headers h ON h.chunk_key = c.chunk_key"
    " LEFT JOIN vectors v ON v.chunk_key = c.chunk_key WHERE c.doc_id = ? ORDER BY c.ordinal"
)


@dataclass(slots=True)
class StoredRows:
    """Every stored row of one document: the ``documents`` row (``None`` when missing), its units, and its
    chunks by ordinal, each followed by its header and vector (``None`` where that row is missing)."""

    document: tuple[Any, ...] | None
    units: list[tuple[Any, ...]]
    chunks: list[tuple[Any, ...]]

    @property
    def source(self) -> str | None:
        """Where the document came from, when its row says."""
        return str(self.document[1]) if self.document and self.document[1] else None


def read_rows(db: sqlite3.Connection, doc_id: str) -> StoredRows:
    """The rows of ``doc_id`` (raises ``sqlite3.Error`` where a damaged page is read)."""
    document = db.execute(f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
    units = db.execute(
        f"SELECT {UNIT_COLUMNS} FROM units WHERE doc_id = ? ORDER BY rowid", (doc_id,)
    ).fetchall()
    return StoredRows(document, units, db.execute(_CHUNK_SELECT, (doc_id,)).fetchall())


def row_problems(rows: StoredRows, dim: int) -> list[str]:
    """What keeps ``rows`` from being a whole, exact document: a missing row, a chunk whose offsets do not
    give its text, a missing header or vector, a vector of another size than ``dim`` (0: unknown)."""
    if rows.document is None:
        return ["its document row is missing"]
    text = rows.document[-1]
    if not isinstance(text, str):
        return ["its text is not text"]
    if not rows.chunks:
        return ["it has no chunks"]
    found: dict[str, list[str]] = {}
    for expected, row in enumerate(rows.chunks):
        ordinal, start, end, chunk_text = row[3], row[4], row[5], row[6]
        header, vector = row[-2], row[-1]
        if ordinal != expected:
            found.setdefault("chunk ordinals out of sequence", []).append(f"{ordinal} at position {expected}")
        if not _spans(text, start, end, chunk_text):
            found.setdefault("chunks whose offsets do not match their text", []).append(
                f"chunk {ordinal} at {start}-{end}"
            )
        if header is None:
            found.setdefault("chunks without a header", []).append(f"chunk {ordinal}")
        if vector is None:
            found.setdefault("chunks without a vector", []).append(f"chunk {ordinal}")
        elif dim and len(vector) != 4 * dim:
            found.setdefault(f"vectors not of {dim} floats", []).append(f"chunk {ordinal}")
    for unit in rows.units:
        if not _spans(text, unit[3], unit[4]):
            found.setdefault("units outside the text", []).append(f"unit {unit[1]}")
    return [f"{kind}: {len(examples)} (first: {examples[0]})" for kind, examples in found.items()]


def _spans(text: str, start: Any, end: Any, expected: Any = None) -> bool:
    """``start``/``end`` are offsets into ``text`` (and give ``expected`` when it is given)."""
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text)):
        return False
    return expected is None or text[start:end] == expected


def document_ids(db: sqlite3.Connection) -> tuple[list[str], str | None]:
    """Every document id the database still names, and why the list may be incomplete (``None`` when it
    is complete). Three independent reads (the ``doc_id`` index, the table itself, the chunks) each keep
    the ids they reach before a damaged page stops them."""
    found: set[str] = set()
    failure = None
    for sql in (
        "SELECT doc_id FROM documents",
        "SELECT doc_id FROM documents NOT INDEXED",
        "SELECT DISTINCT doc_id FROM chunks",
    ):
        try:
            for (doc_id,) in db.execute(sql):
                found.add(str(doc_id))
        except sqlite3.Error as exc:
            failure = failure or str(exc)
    return sorted(found), failure


def check_database(db: sqlite3.Connection, dim: int) -> list[str]:
    """Every problem of the database behind ``db`` (see the module docstring), empty when none."""
    problems: list[str] = []

    def attempt(what: str, read: Callable[[], None]) -> None:
        try:
            read()
        except sqlite3.Error as exc:
            problems.append(f"{what}: {exc}")

    def integrity() -> None:
        rows = db.execute(f"PRAGMA integrity_check({INTEGRITY_LINES})").fetchall()
        if rows != [("ok",)]:
            problems.extend(f"integrity: {row[0]}" for row in rows)

    def fts_index() -> None:
        # fts5vocab reads every doclist of the index; a temp table works on a read-only connection too
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.kb_check_terms USING fts5vocab(main, chunks_fts, row)"
        )
        try:
            db.execute("SELECT COUNT(*), SUM(cnt) FROM temp.kb_check_terms").fetchone()
        finally:
            db.execute("DROP TABLE temp.kb_check_terms")

    def fts_terms() -> None:
        """Count the FTS5 rows that do not hold their chunk's analysed terms (an old or stale row)."""
        stale, first = 0, None
        for key, body, header, text in db.execute(
            "SELECT f.rowid, f.body, h.header, c.text FROM chunks_fts f"
            " JOIN chunks c ON c.chunk_key = f.rowid JOIN headers h ON h.chunk_key = f.rowid"
        ):
            if body != fts_body(header, text):
                stale, first = stale + 1, first if first is not None else key
        if stale:
            problems.append(f"{stale} BM25 rows that are not their chunk's terms (first: chunk key {first})")

    def windows() -> None:
        """Count passage windows without a stored vector, and of the wrong size (a store made before
        windows has no table: nothing to check)."""
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'windows'").fetchone():
            return
        orphaned = db.execute(_orphan_sql("windows", "chunk_key", "vectors", "chunk_key")).fetchone()[0]
        if orphaned:
            problems.append(f"{orphaned} passage windows without vector")
        wrong = db.execute("SELECT COUNT(*) FROM windows WHERE length(vector) != ?", (4 * dim,)).fetchone()[0]
        if wrong:
            problems.append(f"{wrong} passage windows not of {dim} floats")

    attempt("integrity check", integrity)
    attempt("full-text index", fts_index)
    attempt("full-text terms", fts_terms)
    attempt("passage windows", windows)
    for name, table, column, other, other_column in ORPHANS:

        def orphans(name: str = name, sql: str = _orphan_sql(table, column, other, other_column)) -> None:
            count = db.execute(sql).fetchone()[0]
            if count:
                problems.append(f"{count} {name}")

        attempt(name, orphans)
    ids, failure = document_ids(db)
    if failure:
        problems.append(f"the list of documents cannot be read whole: {failure}")
    for doc_id, rows_problems in _document_problems(db, ids, dim):
        problems.extend(f"{doc_id}: {problem}" for problem in rows_problems)
    return problems


def _orphan_sql(table: str, column: str, other: str, other_column: str) -> str:
    return f"SELECT COUNT(*) FROM {table} WHERE {column} NOT IN (SELECT {other_column} FROM {other})"


def _document_problems(db: sqlite3.Connection, ids: list[str], dim: int) -> Iterator[tuple[str, list[str]]]:
    """``(doc_id, problems)`` for each document of ``ids`` with any (one document in memory at a time)."""
    for doc_id in ids:
        try:
            problems = row_problems(read_rows(db, doc_id), dim)
        except sqlite3.Error as exc:
            problems = [f"unreadable ({exc})"]
        if problems:
            yield doc_id, problems


@dataclass(slots=True)
class Salvage:
    """What :func:`salvage` kept and what it could not: ``removed`` names each document left out (with the
    reason and what to ingest again); ``notes`` say what else was lost."""

    documents: int = 0
    chunks: int = 0
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def salvage(db: sqlite3.Connection, fresh: Path, generation: int) -> Salvage:
    """Copy every whole, exact document of ``db`` into a new database at ``fresh`` (recorded as store
    ``generation``), with its FTS5 index rebuilt from the copied rows."""
    result = Salvage()
    with closing(sqlite3.connect(fresh, isolation_level=None)) as out:
        out.execute("PRAGMA journal_mode=OFF")  # a half-built copy is discarded, never opened
        create_schema(out, generation)
        out.execute("BEGIN")
        try:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.Error as exc:
            meta = {}
            result.notes.append(
                f"the settings (embedder, configuration) could not be read ({exc}); the next ingest "
                "records them again"
            )
        dim = int(meta.get("dim") or 0)
        out.executemany(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            [(k, v) for k, v in meta.items() if k not in OWN_META],
        )
        ids, failure = document_ids(db)
        if failure:
            result.notes.append(
                f"the list of documents could not be read whole ({failure}): documents only its damaged part "
                "names are lost; ingest your files again to restore them (unchanged ones are skipped)"
            )
        for doc_id in ids:
            try:
                rows = read_rows(db, doc_id)
                problems = row_problems(rows, dim)
            except sqlite3.Error as exc:
                rows, problems = None, [f"unreadable ({exc})"]
            if rows is None or problems:
                again = rows.source if rows is not None and rows.source else doc_id
                result.removed.append(f"removed {doc_id} ({problems[0]}): ingest {again} again")
                continue
            _insert(out, rows)
            _copy_windows(db, out, [row[0] for row in rows.chunks], dim)
            result.documents += 1
            result.chunks += len(rows.chunks)
        out.execute("COMMIT")
        out.execute("PRAGMA journal_mode=WAL")
    return result


def _insert(out: sqlite3.Connection, rows: StoredRows) -> None:
    """Write one document's rows into ``out``, with its FTS5 rows built from the analysed terms of
    header + text."""
    assert rows.document is not None
    out.execute(
        f"INSERT INTO documents ({DOCUMENT_COLUMNS}) VALUES ({_marks(DOCUMENT_COLUMNS)})", rows.document
    )
    out.executemany(f"INSERT INTO units ({UNIT_COLUMNS}) VALUES ({_marks(UNIT_COLUMNS)})", rows.units)
    for row in rows.chunks:
        *chunk, header, vector = row
        out.execute(f"INSERT INTO chunks ({CHUNK_COLUMNS}) VALUES ({_marks(CHUNK_COLUMNS)})", chunk)
        out.execute("INSERT INTO headers VALUES (?, ?)", (chunk[0], header))
        out.execute("INSERT INTO vectors VALUES (?, ?)", (chunk[0], vector))
        out.execute(
            "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)", (chunk[0], fts_body(header, chunk[6]))
        )


def _copy_windows(db: sqlite3.Connection, out: sqlite3.Connection, keys: list[int], dim: int) -> None:
    """Copy the passage windows of the chunks ``keys`` that read back whole (``dim`` floats); none when
    the old database has no windows table or cannot read it (searches then use the whole-chunk vectors
    until the documents are ingested again)."""
    if not keys:
        return
    marks = ", ".join("?" * len(keys))
    try:
        rows = db.execute(
            f"SELECT chunk_key, vector FROM windows WHERE chunk_key IN ({marks}) ORDER BY window_key", keys
        ).fetchall()
    except sqlite3.Error:
        return
    out.executemany(
        "INSERT INTO windows (chunk_key, vector) VALUES (?, ?)",
        [(key, vector) for key, vector in rows if isinstance(vector, bytes) and len(vector) == 4 * dim],
    )


def _marks(columns: str) -> str:
    return ", ".join("?" * len(columns.split(", ")))
