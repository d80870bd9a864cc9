"""A PostgreSQL restart under a running server loses nothing and fails nothing once the database is
back: pooled connections are tested as they are handed out, and a job's final state whose write failed
while the database was down reaches the jobs table. A private PostgreSQL of this test's own, restarted
for real."""

from __future__ import annotations

import json
import time
from typing import Any

from chunkwise.server.pg_journal import PostgresJobJournal
from chunkwise.store import open_store, pgserver
from chunkwise.store.postgres import PostgresStore
from tests.support.postgres import start_again, start_server
from tests.support.server import PATIENCE_S


def job(job_id: str, status: str) -> dict[str, Any]:
    """A job's JSON form, as far as the journal cares."""
    return {"id": job_id, "status": status, "error": None}


def test_a_database_restart_fails_no_later_request_and_loses_no_final_state() -> None:
    servers = start_server()
    server = next(servers)
    try:
        with open_store(server.url("restarted")) as store:
            assert isinstance(store, PostgresStore)
            journal = PostgresJobJournal(store, keep=10, heartbeat=0.05)
            journal.save(job("r", "running"))
            assert store.counts()["documents"] == 0  # a connection in the pool
            pgserver.stop(server.directory)
            journal.save(job("r", "failed"))  # the database is down: logged, owed
            start_again(server)
            assert store.counts()["documents"] == 0  # the pooled connection was dead: tested, replaced
            assert store.documents() == []
            deadline = time.monotonic() + PATIENCE_S
            while (recorded := status_of(server, "r")) != "failed":
                assert time.monotonic() < deadline, f"the final state never reached the table: {recorded}"
                time.sleep(0.05)
            assert journal.get("r") == job("r", "failed")
            journal.close()
    finally:
        servers.close()


def status_of(server: Any, job_id: str) -> str | None:
    """The recorded status of ``job_id`` (``None`` while the table cannot be read)."""
    try:
        with server.admin() as admin:
            row = admin.execute('SELECT body FROM "restarted".jobs WHERE id = %s', (job_id,)).fetchone()
    except Exception:  # the server still starting
        return None
    return None if row is None else str(json.loads(row[0])["status"])
