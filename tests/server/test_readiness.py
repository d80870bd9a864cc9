"""``/readyz`` answers whether the knowledge base can be read now, ``/healthz`` whether the server is up:
a PostgreSQL store that refuses a read (a lock held past the session's ``lock_timeout``) makes the
server not ready (503) while it stays alive, and ready again once the lock goes. Real servers."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from chunkwise.server import ServerSettings, create_app
from chunkwise.store.pgurl import parse
from tests.support.postgres import schema_name
from tests.support.server import error_of, running_app
from tests.test_store_postgres_refusals import impatient_url


def test_a_sqlite_knowledge_base_is_ready(client: httpx.Client) -> None:
    assert client.get("/readyz").json() == {"status": "ready"}


def test_a_store_that_refuses_reads_is_not_ready_and_the_server_stays_alive(pg_server, request) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("psycopg")
    url = impatient_url(pg_server, schema_name(request.node.name), "lock_timeout=200ms")
    schema = parse(url).schema
    app = create_app(url, settings=ServerSettings(request_timeout=60))
    with running_app(app) as base, httpx.Client(base_url=base, timeout=120) as http:
        assert http.get("/readyz").json() == {"status": "ready"}
        with pg_server.admin("appdb") as holder:
            holder.execute("BEGIN")
            holder.execute(f'LOCK TABLE "{schema}".meta IN ACCESS EXCLUSIVE MODE')
            refused = http.get("/readyz")
            assert refused.status_code == 503, refused.text
            assert error_of(refused)["type"] == "store_unavailable"
            assert http.get("/healthz").status_code == 200
            holder.execute("ROLLBACK")
        assert http.get("/readyz").json() == {"status": "ready"}


def test_readiness_needs_no_key(tmp_path: Path) -> None:
    """Like ``/healthz``, a probe carries no key (it says nothing of the documents)."""
    app = create_app(tmp_path / "kb", settings=ServerSettings(api_key="k" * 32))
    with running_app(app) as base, httpx.Client(base_url=base, timeout=120) as http:
        assert http.get("/readyz").json() == {"status": "ready"}
        assert http.get("/v1/documents").status_code == 401
