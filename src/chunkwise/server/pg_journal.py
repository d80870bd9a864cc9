"""The jobs' journal of every server over one PostgreSQL knowledge base: a ``jobs`` table in its schema.

Why: servers over one PostgreSQL knowledge base run side by side behind a load balancer, and a client
that sent its files to one of them polls ``GET /v1/jobs/{id}`` wherever the balancer sends it. So the
journal is shared: each server records its jobs in the table, and any server answers any job.

A job left ``queued`` or ``running`` by a server that is gone (stopped, crashed, ``kill -9``, its host
lost) would read so for ever; it must read ``cancelled`` (:data:`.journal.INTERRUPTED`), and a job of a
server that is alive must never be. Each server is an *owner* (a random id recorded with its jobs):

- it holds a session-level advisory lock on its id for its lifetime, on a connection of its own, which
  PostgreSQL releases when that session ends, however the server ended;
- a thread of its own records its unfinished jobs again (marking them *seen*) every
  :data:`HEARTBEAT_S` seconds, with any final state whose write failed, and after a lost connection (a
  database restart, a failover) connects again, takes its lock again and records them as they are.

An owner's unfinished jobs are marked ``cancelled`` once another server can take its lock *and* they
have not been seen for :data:`GRACE_S` seconds (under its lock, so that two servers never race to do
it): at a server's start and whenever such jobs are read. So a database restart, after which every
server connects again within a heartbeat, cancels nothing. A job is only ever written by the server
that owns it; the newest ``keep`` finished jobs are kept (running ones never trimmed).

The session is set never to end for being idle (``idle_session_timeout``), and to wait at most
:data:`LOCK_TIMEOUT` for a row or :data:`STATEMENT_TIMEOUT` for a statement. It needs a session-level
lock, so a connection pooler between the server and PostgreSQL must pool by session (PgBouncer's
``pool_mode = session``), not by transaction.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from chunkwise.errors import StoreError
from chunkwise.server.journal import interrupted
from chunkwise.store.postgres import JOBS_LOCK, PostgresStore

logger = logging.getLogger("chunkwise.server")

T = TypeVar("T")

#: Seconds between the marks of a server's unfinished jobs as seen (and its checks of its connection).
HEARTBEAT_S = 10.0
#: Seconds an unfinished job of a server whose lock is free stays as recorded before it reads
#: ``cancelled``: long enough for a live server to connect again after a database restart.
GRACE_S = 60.0
#: How long the journal's statements may wait for a row lock, and run at all.
LOCK_TIMEOUT, STATEMENT_TIMEOUT = "10s", "30s"
#: How many owner ids a server tries before it gives up taking a lock (another session holding one is
#: a hash collision of two ids, or this server's own former session not yet ended by the database).
OWNER_TRIES = 8

_TABLE = """
CREATE TABLE IF NOT EXISTS {s}.jobs (
    seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY, owner text NOT NULL,
    status text NOT NULL, seen timestamptz NOT NULL DEFAULT now(), body text NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_seq ON {s}.jobs (seq);
"""

#: The statuses of a job whose server may be gone.
_UNFINISHED = "status IN ('queued', 'running')"


class PostgresJobJournal:
    """The shared journal in ``store``'s schema (see the module), keeping the newest ``keep`` finished
    jobs of all its servers. ``heartbeat`` and ``grace``: see :data:`HEARTBEAT_S` and :data:`GRACE_S`.
    :class:`StoreError` when the table cannot be made or the lock taken."""

    def __init__(
        self, store: PostgresStore, keep: int, *, heartbeat: float | None = None, grace: float | None = None
    ) -> None:
        self.keep = keep
        self.grace = GRACE_S if grace is None else grace
        heartbeat = HEARTBEAT_S if heartbeat is None else heartbeat
        self.owner = secrets.token_hex(8)
        self._store = store
        self._table = f"{store.schema}.jobs"
        self._lock = threading.Lock()
        self._closed = threading.Event()
        # the latest form of each job not yet known to be recorded for good: unfinished ones (written
        # again by the heartbeat and after a lost connection) and any whose last write failed
        self._owed: dict[str, dict[str, Any]] = {}
        try:
            store.ensure("jobs", _TABLE)
            self._conn = self._connect()
        except psycopg.Error as exc:
            raise self._unusable(exc) from None
        try:
            self._sweep()
        except psycopg.Error as exc:
            self._conn.close()
            raise self._unusable(exc) from None
        self._beat = threading.Thread(
            target=self._heartbeat, args=(heartbeat,), name="chunkwise-jobs-heartbeat", daemon=True
        )
        self._beat.start()

    def save(self, body: dict[str, Any]) -> None:
        """See :meth:`.journal.JobJournal.save`. A job of another server with the same id is left alone."""

        def write() -> None:
            self._write(body)
            self._conn.execute(
                f"DELETE FROM {self._table} WHERE id IN (SELECT id FROM {self._table} WHERE NOT {_UNFINISHED}"
                " ORDER BY seq DESC OFFSET %s FOR UPDATE SKIP LOCKED)",
                (self.keep,),
            )

        with self._lock:
            self._owed[body["id"]] = body  # until it is written (for good, once finished)
        try:
            self._call(write)
        except StoreError as exc:  # a record, not the ingest: the jobs go on
            logger.warning("the jobs journal could not record job %s: %s", body["id"], exc)

    def get(self, job_id: str) -> dict[str, Any] | None:
        """See :meth:`.journal.JobJournal.get`: a job of a server that is gone is marked as it is read.
        :class:`StoreError` when the database cannot be read (not a job that is not there)."""

        def read() -> dict[str, Any] | None:
            row = self._row(job_id)
            if row is None:
                return None
            owner, body = row
            if owner == self.owner or interrupted(body) is body or not self._cancel_if_gone(owner):
                return body
            again = self._row(job_id)  # read again: its server is gone, the row is final now
            return None if again is None else again[1]

        return self._call(read)

    def recent(self, limit: int, status: str | None = None) -> list[dict[str, Any]]:
        """See :meth:`.journal.JobJournal.recent`: every server's jobs, those of servers that are gone
        marked first (so that ``status="running"`` lists none of theirs). :class:`StoreError` when the
        database cannot be read."""

        def read() -> list[dict[str, Any]]:
            self._sweep()
            rows = self._conn.execute(
                f"SELECT body FROM {self._table} WHERE %(status)s::text IS NULL OR status = %(status)s"
                " ORDER BY seq DESC LIMIT %(limit)s",
                {"status": status, "limit": limit},
            ).fetchall()
            return [dict(json.loads(text)) for (text,) in rows]

        return self._call(read) or []

    def close(self) -> None:
        """Stop recording and end the session (its lock with it)."""
        self._closed.set()
        with self._lock:
            self._conn.close()
        self._beat.join()

    def _unusable(self, exc: psycopg.Error) -> StoreError:
        """The error of a journal that cannot be opened."""
        reason = f"the jobs journal cannot be used: {self._store.scrubbed(exc)}"
        return StoreError(self._store.location, reason)

    def _connect(self) -> Any:
        """A session of its own holding this server's lock. When the lock is taken (this server's former
        session, not yet ended by the database, or another id of the same hash), the server becomes
        another owner and takes its jobs along."""
        conn = self._store.session()
        try:
            self._configure(conn)
            for _ in range(OWNER_TRIES):
                key = (JOBS_LOCK, self._key(self.owner))
                if conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", key).fetchone()[0]:
                    break
                former, self.owner = self.owner, secrets.token_hex(8)
                conn.execute(f"UPDATE {self._table} SET owner = %s WHERE owner = %s", (self.owner, former))
            else:
                raise StoreError(self._store.location, "the jobs journal could not take a lock of its own")
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _configure(conn: Any) -> None:
        """The session's limits (see the module); ``idle_session_timeout`` where the server has it."""
        conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
        with contextlib.suppress(psycopg.errors.UndefinedObject):  # before 14: sessions never end for it
            conn.execute("SET idle_session_timeout = 0")

    def _key(self, owner: str) -> str:
        """The text an owner's lock is keyed on: one knowledge base's owners never meet another's."""
        return f"{self._store.schema}/{owner}"

    def _write(self, body: dict[str, Any]) -> None:
        """Record ``body`` as this server's job, seen now; a finished job is then no longer owed."""
        self._conn.execute(
            f"INSERT INTO {self._table} (id, owner, status, body) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET status = excluded.status, body = excluded.body, seen = now()"
            " WHERE jobs.owner = excluded.owner",
            (body["id"], self.owner, body["status"], json.dumps(body)),
        )
        if interrupted(body) is body and self._owed.get(body["id"]) is body:
            del self._owed[body["id"]]

    def _flush(self) -> None:
        """Write every owed job again: the unfinished ones are marked seen, and a final state whose
        write failed (the database restarting) reaches the table."""
        for body in list(self._owed.values()):
            self._write(body)

    def _row(self, job_id: str) -> tuple[str, dict[str, Any]] | None:
        """The owner and recorded form of ``job_id``."""
        sql = f"SELECT owner, body FROM {self._table} WHERE id = %s"
        row = self._conn.execute(sql, (job_id,)).fetchone()
        return None if row is None else (str(row[0]), dict(json.loads(row[1])))

    def _sweep(self) -> None:
        """Mark the unfinished jobs of every server that is gone (:meth:`_cancel_if_gone`)."""
        owners = self._conn.execute(
            f"SELECT DISTINCT owner FROM {self._table} WHERE {_UNFINISHED} AND owner <> %s", (self.owner,)
        ).fetchall()
        for (owner,) in owners:
            self._cancel_if_gone(owner)

    def _cancel_if_gone(self, owner: str) -> bool:
        """When ``owner``'s lock is free (its server is gone), mark its unfinished jobs not seen for
        :attr:`grace` seconds ``cancelled`` while holding it; whether any was."""
        key = (JOBS_LOCK, self._key(owner))
        if not self._conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", key).fetchone()[0]:
            return False
        try:
            rows = self._conn.execute(
                f"SELECT id, body FROM {self._table} WHERE owner = %s AND {_UNFINISHED}"
                " AND seen < now() - make_interval(secs => %s)",
                (owner, self.grace),
            ).fetchall()
            for job_id, text in rows:
                self._conn.execute(
                    f"UPDATE {self._table} SET status = 'cancelled', body = %s WHERE id = %s",
                    (json.dumps(interrupted(json.loads(text))), job_id),
                )
        finally:
            self._conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", key)
        return bool(rows)

    def _heartbeat(self, every: float) -> None:
        """Until closed: mark this server's unfinished jobs seen, connecting again when the connection
        was lost (see the module)."""
        while not self._closed.wait(every):
            try:
                self._call(self._flush)
            except StoreError as exc:
                logger.warning("the jobs journal could not mark its jobs seen: %s", exc)

    def _call(self, fn: Callable[[], T]) -> T | None:
        """``fn()`` under the connection's lock; ``None`` once closed. A lost connection is opened again
        (the lock taken again and the owed jobs recorded again) and ``fn`` tried once
        more; a failure is a :class:`StoreError` (the message without the URL's password)."""
        with self._lock:
            if self._closed.is_set():
                return None
            try:
                return fn()
            except psycopg.OperationalError as exc:
                if not self._conn.closed and not self._conn.broken:
                    raise self._failed(exc) from None
            except psycopg.Error as exc:
                raise self._failed(exc) from None
            self._conn.close()
            try:
                self._conn = self._connect()
                self._flush()
                return fn()
            except psycopg.Error as exc:
                raise self._failed(exc) from None

    def _failed(self, exc: psycopg.Error) -> StoreError:
        """The error of a journal call that failed."""
        return StoreError(self._store.location, f"the jobs journal failed: {self._store.scrubbed(exc)}")
