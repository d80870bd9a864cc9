"""The jobs' journal of every server over one PostgreSQL knowledge base: a ``jobs`` table in its schema.

Why: servers over one PostgreSQL knowledge base run side by side behind a load balancer, and a client
that sent its files to one of them polls ``GET /v1/jobs/{id}`` wherever the balancer sends it. So the
journal is shared: each server records its jobs in the table, and any server answers any job.

A job left ``queued`` or ``running`` by a server that is gone (stopped, crashed, ``kill -9``, its host
lost) would read so for ever; it must read ``cancelled`` (:data:`.journal.INTERRUPTED`), and a job of a
server that is alive must never be. Each server is an *owner* (a random id recorded with its jobs) that
holds a session-level advisory lock on its id for its lifetime, on a connection of its own; PostgreSQL
releases the lock when that session ends, however the server ended. An owner whose lock another server
can take is gone: its unfinished jobs are marked ``cancelled`` (under its lock, so two servers never
race to do it), for every such owner when a server starts and whenever such a job is read.

A server whose connection to the database is lost loses its lock with it, and another may cancel its
running jobs meanwhile; it takes the lock again on its next write, and that write (the job's next state)
replaces the mark. A job is only ever written by the server that owns it.
"""

from __future__ import annotations

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

_TABLE = """
CREATE TABLE IF NOT EXISTS {s}.jobs (
    seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY, owner text NOT NULL, body json NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_seq ON {s}.jobs (seq);
"""

#: The jobs whose server may be gone.
_UNFINISHED = "body->>'status' IN ('queued', 'running')"


class PostgresJobJournal:
    """The shared journal in ``store``'s schema (see the module), keeping the newest ``keep`` jobs of all
    its servers. :class:`StoreError` when the table cannot be made or the lock taken."""

    def __init__(self, store: PostgresStore, keep: int) -> None:
        self.keep = keep
        self.owner = secrets.token_hex(8)
        self._store = store
        self._table = f"{store.schema}.jobs"
        self._lock = threading.Lock()
        self._closed = False
        try:
            store.ensure(_TABLE)
            self._conn = self._connect()
        except psycopg.Error as exc:
            raise self._unusable(exc) from None
        try:
            self._sweep()
        except psycopg.Error as exc:
            self._conn.close()
            raise self._unusable(exc) from None

    def save(self, body: dict[str, Any]) -> None:
        """See :meth:`.journal.JobJournal.save`. A job of another server with the same id is left alone."""

        def write() -> None:
            self._conn.execute(
                f"INSERT INTO {self._table} (id, owner, body) VALUES (%s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET body = excluded.body WHERE jobs.owner = excluded.owner",
                (body["id"], self.owner, json.dumps(body)),
            )
            self._conn.execute(
                f"DELETE FROM {self._table} WHERE seq <= "
                f"(SELECT seq FROM {self._table} ORDER BY seq DESC LIMIT 1 OFFSET %s)",
                (self.keep,),
            )

        self._call(f"record job {body['id']}", write)

    def get(self, job_id: str) -> dict[str, Any] | None:
        """See :meth:`.journal.JobJournal.get`: a job of a server that is gone is marked as it is read."""

        def read() -> dict[str, Any] | None:
            row = self._row(job_id)
            if row is None:
                return None
            owner, body = row
            if owner == self.owner or interrupted(body) is body or not self._cancel_if_gone(owner):
                return body
            again = self._row(job_id)  # its server is gone: the row is final now
            return None if again is None else again[1]

        return self._call(f"read job {job_id}", read)

    def recent(self, limit: int, status: str | None = None) -> list[dict[str, Any]]:
        """See :meth:`.journal.JobJournal.recent`: every server's jobs, those of servers that are gone
        marked first (so that ``status="running"`` lists none of theirs)."""

        def read() -> list[dict[str, Any]]:
            self._sweep()
            rows = self._conn.execute(
                f"SELECT body::text FROM {self._table} WHERE %(status)s::text IS NULL"
                " OR body->>'status' = %(status)s ORDER BY seq DESC LIMIT %(limit)s",
                {"status": status, "limit": limit},
            ).fetchall()
            return [dict(json.loads(text)) for (text,) in rows]

        return self._call("list the jobs", read) or []

    def close(self) -> None:
        """Stop recording and end the session (its lock with it)."""
        with self._lock:
            self._closed = True
            self._conn.close()

    def _unusable(self, exc: psycopg.Error) -> StoreError:
        """The error of a journal that cannot be opened."""
        reason = f"the jobs journal cannot be used: {self._store.scrubbed(exc)}"
        return StoreError(self._store.location, reason)

    def _connect(self) -> Any:
        """A session of its own holding this server's lock."""
        conn = self._store.session()
        conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (JOBS_LOCK, self._key(self.owner)))
        return conn

    def _key(self, owner: str) -> str:
        """The text an owner's lock is keyed on: one knowledge base's owners never meet another's."""
        return f"{self._store.schema}/{owner}"

    def _row(self, job_id: str) -> tuple[str, dict[str, Any]] | None:
        """The owner and recorded form of ``job_id``."""
        sql = f"SELECT owner, body::text FROM {self._table} WHERE id = %s"
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
        """When ``owner``'s lock is free (its server is gone), mark its unfinished jobs ``cancelled``
        while holding it; whether it was."""
        key = (JOBS_LOCK, self._key(owner))
        if not self._conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", key).fetchone()[0]:
            return False
        try:
            rows = self._conn.execute(
                f"SELECT id, body::text FROM {self._table} WHERE owner = %s AND {_UNFINISHED}", (owner,)
            ).fetchall()
            for job_id, text in rows:
                self._conn.execute(
                    f"UPDATE {self._table} SET body = %s WHERE id = %s",
                    (json.dumps(interrupted(json.loads(text))), job_id),
                )
        finally:
            self._conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", key)
        return True

    def _call(self, what: str, fn: Callable[[], T]) -> T | None:
        """``fn()`` unless closed; a lost connection is opened again (and the lock taken again)
        once; a failure is logged and answered ``None``: the journal is a record, not the ingest."""
        with self._lock:
            if self._closed:
                return None
            for attempt in (1, 2):
                try:
                    return fn()
                except psycopg.OperationalError as exc:
                    failure: BaseException = exc
                    if attempt == 2 or (not self._conn.closed and not self._conn.broken):
                        break
                    self._conn.close()
                    try:
                        self._conn = self._connect()
                    except (StoreError, psycopg.Error) as again:
                        failure = again
                        break
                except psycopg.Error as exc:
                    failure = exc
                    break
            self._failed(what, failure)
        return None

    def _failed(self, what: str, exc: BaseException) -> None:
        """Log that the journal could not ``what``."""
        reason = exc.reason if isinstance(exc, StoreError) else self._store.scrubbed(exc)
        logger.warning("the jobs journal of %s could not %s: %s", self._store.location, what, reason)
