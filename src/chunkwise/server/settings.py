"""The limits and the key a server runs with."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from chunkwise.errors import ConfigError

#: Hosts taken for loopback without resolving them.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """What ``chunkwise serve`` enforces.

    ``api_key``: the bearer key every ``/v1`` and ``/metrics`` request must carry (``None``: no key).
    ``max_upload_bytes``: the largest request body (an upload or a JSON text), refused with 413 above it.
    ``request_timeout``: seconds a request may take before it is answered with 504 (the work it started
    holds one of the ``readers`` slots until it ends: at its next model call, or its end when it calls
    none). ``queue_size``: ingest jobs waiting
    behind the running one; a full queue answers 429 with ``Retry-After``. Uploads wait in memory, so
    ``queue_size × max_upload_bytes`` bounds what they hold. ``readers``: requests (search, segments,
    answer, chunk) computed at once; others wait for a slot within their timeout. ``keep_jobs``: finished
    jobs remembered for ``GET /v1/jobs/{id}``, oldest forgotten first. ``body_timeout``: seconds the
    server waits for the next part of a request body before it answers 408 and closes the connection (a
    client that announces more bytes than it sends would otherwise hold the connection for ever).
    ``jobs_file``: the SQLite file of the jobs' journal (:mod:`chunkwise.server.journal`), so that a
    job's id keeps its answer after a restart; ``None``: ``jobs.sqlite3`` in a SQLite knowledge base's
    directory, the ``jobs`` table of a PostgreSQL knowledge base's schema, shared by every server over
    it (:mod:`chunkwise.server.pg_journal`).
    """

    api_key: str | None = None
    max_upload_bytes: int = 32 * 2**20
    request_timeout: float = 120.0
    queue_size: int = 8
    readers: int = 4
    keep_jobs: int = 1000
    body_timeout: float = 30.0
    jobs_file: Path | None = None

    def __post_init__(self) -> None:
        if self.api_key is not None and not self.api_key.strip():
            raise ConfigError("the API key is empty")
        positive = {
            "max_upload_bytes": self.max_upload_bytes,
            "request_timeout": self.request_timeout,
            "queue_size": self.queue_size,
            "readers": self.readers,
            "keep_jobs": self.keep_jobs,
            "body_timeout": self.body_timeout,
        }
        for name, value in positive.items():
            if not (math.isfinite(value) and value > 0):  # NaN passes a ``<= 0`` check, and the CLI's range
                raise ConfigError(f"{name} must be a positive number, got {value}")


def is_loopback(host: str) -> bool:
    """True when ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    import ipaddress

    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(host: str, settings: ServerSettings) -> None:
    """:class:`ConfigError` when ``host`` is reachable from other machines and no key is set: such a
    server would let anyone ingest, delete and spend its model budget."""
    if settings.api_key is None and not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host} without an API key: set one with --api-key-env NAME "
            "or listen on 127.0.0.1"
        )
