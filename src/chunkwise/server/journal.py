"""The server's record of its ingest jobs, kept so that it outlives the process: in a SQLite file here,
in the knowledge base's schema for PostgreSQL (:mod:`.pg_journal`).

Without it a restart (a deploy, a crash, ``kill -9``) made every job id unknown: a client polling its job
got 404 and could not tell whether its files were stored. The journal holds each job's JSON form
(``GET /v1/jobs/{id}``) as of its last change: queued, started, each file handled, finished. A server
that opens the journal marks the jobs that a previous process left queued or running ``cancelled``
(their uploads lived in that process's memory and are gone; what their writer committed is whole, and
a job sent again stores the rest and skips it), so every id a client was given keeps an answer. The
newest ``keep`` jobs are kept.

One server writes a SQLite journal at a time (the file is its own; two servers on one store should be
given two files; the PostgreSQL journal is shared by every server over the knowledge base). Writes are
small and few (a job's changes, not its embedding progress), each committed at once. A journal that
cannot be opened stops the server from starting (:class:`StoreError` naming the file); one that fails
later (a full disk) is logged and the jobs go on.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any, Protocol

from chunkwise.errors import StoreError
from chunkwise.store.postgres import PostgresStore
from chunkwise.store.protocol import Store
from chunkwise.store.sqlite import SQLiteStore

logger = logging.getLogger("chunkwise.server")

#: The file of a SQLite knowledge base's journal, in the knowledge base's directory.
JOURNAL_NAME = "jobs.sqlite3"

#: What a job left queued or running by a previous server process is told.
INTERRUPTED = {
    "type": "cancelled",
    "message": "the server stopped before the job ended; send the files again (what was stored is skipped)",
}


class JobJournal(Protocol):
    """Where a server records its jobs' JSON forms (``GET /v1/jobs/{id}``) as they change."""

    def save(self, body: dict[str, Any]) -> None:
        """Record a job's JSON form (``body["id"]`` names it), replacing what was recorded of it; nothing
        once the journal is closed. A failure is logged, never raised: the jobs go on."""
        ...

    def get(self, job_id: str) -> dict[str, Any] | None:
        """The recorded form of ``job_id`` (``cancelled`` if its server is gone and left it queued or
        running), ``None`` if it was never recorded or is long forgotten (or the journal is closed).
        :class:`StoreError` when the journal cannot be read: a job it holds is not answered unknown."""
        ...

    def recent(self, limit: int, status: str | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` recorded jobs (of ``status`` only, when given), newest first; the jobs of
        a server that is gone read as :meth:`get` reads them. Empty once closed; :class:`StoreError` when
        the journal cannot be read."""
        ...

    def close(self) -> None:
        """Stop recording (saves are ignored from now on) and let go of the file or connection."""
        ...


def interrupted(body: dict[str, Any]) -> dict[str, Any]:
    """A job's JSON form once its server is gone: ``cancelled`` with :data:`INTERRUPTED` if it was left
    queued or running, else as it is."""
    if body.get("status") not in ("queued", "running"):
        return body
    return {**body, "status": "cancelled", "error": INTERRUPTED, "embedding": None}


def open_journal(store: Store, keep: int, path: Path | None = None) -> JobJournal | None:
    """The jobs' journal of a server over ``store`` keeping the newest ``keep`` jobs: the SQLite file
    ``path`` when given, else ``jobs.sqlite3`` in a SQLite knowledge base's directory, else the
    ``jobs`` table of a PostgreSQL knowledge base's schema (shared by its servers); none for a store of
    another kind. :class:`StoreError` when it cannot be used."""
    if path is not None:
        return SQLiteJobJournal(path, keep)
    if isinstance(store, SQLiteStore):
        return SQLiteJobJournal(store.directory / JOURNAL_NAME, keep)
    if isinstance(store, PostgresStore):
        from chunkwise.server.pg_journal import PostgresJobJournal

        return PostgresJobJournal(store, keep)
    return None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, body TEXT NOT NULL
);
"""


class SQLiteJobJournal:
    """The jobs of a server in the SQLite file at ``path`` (created when absent), at most ``keep``."""

    def __init__(self, path: str | Path, keep: int) -> None:
        self.path = Path(path)
        self.keep = keep
        self._lock = threading.Lock()
        try:
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")  # durable if the process dies: no fsync a change
            db.execute("PRAGMA busy_timeout = 5000")
            db.executescript(_SCHEMA)
            self._interrupt_unfinished(db)
        except sqlite3.Error as exc:
            raise StoreError(
                str(self.path), f"the jobs journal cannot be used ({exc}): move it away or name another file"
            ) from None
        self._db: sqlite3.Connection | None = db

    def save(self, body: dict[str, Any]) -> None:
        """See :meth:`JobJournal.save` (a job thread may outlive the server's stop)."""
        text = json.dumps(body)
        with self._lock:
            if self._db is None:
                return
            try:
                self._db.execute(
                    "INSERT INTO jobs (id, body) VALUES (?, ?)"
                    " ON CONFLICT (id) DO UPDATE SET body = excluded.body",
                    (body["id"], text),
                )
                self._db.execute(
                    "DELETE FROM jobs WHERE seq <= (SELECT seq FROM jobs ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                    (self.keep,),
                )
            except sqlite3.Error as exc:  # a record, not the ingest: the jobs go on (a full disk, say)
                logger.warning("the jobs journal %s did not record job %s: %s", self.path, body["id"], exc)

    def get(self, job_id: str) -> dict[str, Any] | None:
        """See :meth:`JobJournal.get` (this file's jobs of a previous process were marked when it was
        opened)."""
        with self._lock:
            if self._db is None:
                return None
            try:
                row = self._db.execute("SELECT body FROM jobs WHERE id = ?", (job_id,)).fetchone()
            except sqlite3.Error as exc:
                raise self._unreadable(exc) from None
        return None if row is None else dict(json.loads(row[0]))

    def recent(self, limit: int, status: str | None = None) -> list[dict[str, Any]]:
        """See :meth:`JobJournal.recent`."""
        with self._lock:
            if self._db is None:
                return []
            try:
                rows = self._db.execute(
                    "SELECT body FROM jobs WHERE ?1 IS NULL OR json_extract(body, '$.status') = ?1"
                    " ORDER BY seq DESC LIMIT ?2",
                    (status, limit),
                ).fetchall()
            except sqlite3.Error as exc:
                raise self._unreadable(exc) from None
        return [dict(json.loads(text)) for (text,) in rows]

    def _unreadable(self, exc: sqlite3.Error) -> StoreError:
        """The error of a read that failed."""
        return StoreError(str(self.path), f"the jobs journal cannot be read: {exc}")

    def close(self) -> None:
        """Close the file (saves are ignored from now on)."""
        with self._lock:
            db, self._db = self._db, None
        if db is not None:
            db.close()

    @staticmethod
    def _interrupt_unfinished(db: sqlite3.Connection) -> None:
        """Mark the jobs a previous process left queued or running ``cancelled`` (see the module)."""
        for job_id, text in db.execute("SELECT id, body FROM jobs").fetchall():
            body = json.loads(text)
            if interrupted(body) is not body:
                db.execute("UPDATE jobs SET body = ? WHERE id = ?", (json.dumps(interrupted(body)), job_id))
