"""Re-embedding a knowledge-base database in place (:meth:`SQLiteStore.reembedding`): new vectors for
every chunk and passage window, and a new embedder record, inside the store's one write transaction.

Documents are read and written one at a time, so memory follows the documents the caller holds. A
vector is replaced in place (its chunk keeps its key), so :meth:`SQLiteReembedding.finish` moves the
``removals`` counter: a reader whose count has not changed would otherwise read only the rows added
since its index and keep the old vectors (:data:`~.sqlite_schema.REMOVALS_TRIGGER`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from chunkwise.document import Document
from chunkwise.store.protocol import (
    EMBEDDER_META,
    Reembedded,
    StoredForEmbedding,
    check_all_reembedded,
    check_put_widths,
    chunk_from_row,
    recorded_embedder,
)

_CHUNKS = (
    'SELECT c.chunk_id, c.start, c."end", c.text, c.section, c.unit_ids, c.tokens, c.pages, h.header'
    " FROM chunks c JOIN headers h ON h.chunk_key = c.chunk_key WHERE c.doc_id = ? ORDER BY c.ordinal"
)


def stored_for_embedding(
    db: sqlite3.Connection, doc_id: str, fingerprint: str, document: Callable[[str], Document]
) -> StoredForEmbedding:
    """``doc_id`` as stored (``document`` reads it on ``db``), with its chunks and headers by ordinal and
    the ``fingerprint`` read with it: what a re-embedding embeds again and a copy
    (:meth:`.sqlite.SQLiteStore.stored_document`) writes elsewhere."""
    rows = db.execute(_CHUNKS, (doc_id,)).fetchall()
    chunks = [chunk_from_row(doc_id, row[:-1]) for row in rows]
    return StoredForEmbedding(document(doc_id), chunks, [row[-1] for row in rows], fingerprint)


class SQLiteReembedding:
    """The :class:`~.protocol.Reembedding` of a SQLite store: ``db`` is in the store's write transaction
    (which no other writer shares until it ends), ``document`` reads a stored document on the same
    connection."""

    def __init__(
        self,
        db: sqlite3.Connection,
        location: str,
        embedder: tuple[str, int, str],
        document: Callable[[str], Document],
    ) -> None:
        self.db = db
        self.location = location
        self.embedder = embedder
        self.document = document
        self.written: set[str] = set()
        recorded = recorded_embedder(db.execute(EMBEDDER_META.format(meta="meta")).fetchall())
        self.previous = recorded[0] if recorded is not None else None
        self.total: int = db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]

    def documents(self) -> Iterator[StoredForEmbedding]:
        """Each stored document by id, with its chunks, headers and fingerprint."""
        stored = self.db.execute("SELECT doc_id, fingerprint FROM documents ORDER BY doc_id").fetchall()
        for doc_id, fingerprint in stored:
            yield stored_for_embedding(self.db, doc_id, fingerprint, self.document)

    def write(self, doc_id: str, new: Reembedded) -> None:
        """Replace the vectors and passage windows of ``doc_id`` and its fingerprint."""
        name, dim, _ = self.embedder
        windows = new.windows[1] if new.windows is not None else None
        check_put_widths(self.location, doc_id, dim, name, vectors=new.vectors, windows=windows)
        keys = [
            row[0]
            for row in self.db.execute(
                "SELECT chunk_key FROM chunks WHERE doc_id = ? ORDER BY ordinal", (doc_id,)
            )
        ]
        if len(new.vectors) != len(keys):
            raise ValueError(f"{doc_id}: {len(keys)} chunks, {len(new.vectors)} vectors")
        self.db.executemany(
            "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
            [(key, _blob(vector)) for key, vector in zip(keys, new.vectors, strict=True)],
        )
        self.db.execute(
            "DELETE FROM windows WHERE chunk_key IN (SELECT chunk_key FROM chunks WHERE doc_id = ?)",
            (doc_id,),
        )
        if new.windows is not None:
            owners, vectors = new.windows
            self.db.executemany(
                "INSERT INTO windows (chunk_key, vector) VALUES (?, ?)",
                [(keys[owner], _blob(vector)) for owner, vector in zip(owners, vectors, strict=True)],
            )
        self.db.execute("UPDATE documents SET fingerprint = ? WHERE doc_id = ?", (new.fingerprint, doc_id))
        self.written.add(doc_id)

    def finish(self, meta: Mapping[str, str] | None) -> None:
        """Record the embedder and ``meta``, and move the ``removals`` counter (see the module docstring);
        :class:`~chunkwise.errors.StoreError` unless every document was written."""
        check_all_reembedded(self.location, self.total, len(self.written))
        name, dim, version = self.embedder
        recorded = {**(meta or {}), "embedder": name, "dim": str(dim), "embedder_version": version}
        self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(recorded.items()))
        self.db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'removals'")


def _blob(vector: object) -> bytes:
    """A vector as the ``vectors`` and ``windows`` tables hold it: float32 bytes."""
    return np.asarray(vector, dtype=np.float32).tobytes()
