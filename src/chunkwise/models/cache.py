"""Persistent, content-addressed cache of model results in SQLite.

Two tables: ``vectors`` holds one row per (embedding model, text), so a re-run embeds only texts it has
not seen; ``calls`` holds LLM and reranker results keyed by a hash of the model, the operation, its input
and its parameters. Both rows also keep the token counts of the original call, so a cache hit can be
accounted as cached tokens.

The database runs in WAL mode with a busy timeout: several processes may read and write it at once
(SQLite serialises the writers). Writes are ``INSERT OR IGNORE`` of deterministic values, so a race
between two processes computing the same entry is harmless. Each thread gets its own connection.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chunkwise.errors import ConfigError
from chunkwise.models.protocols import Vectors

SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    key TEXT PRIMARY KEY, dim INTEGER NOT NULL, vector BLOB NOT NULL, tokens INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY, value TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL
);
"""
FILE_NAME = "models.sqlite3"


def cache_key(*parts: Any) -> str:
    """SHA-256 of the canonical JSON of ``parts`` (model, operation, input, parameters)."""
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CachedCall:
    """A stored call result (JSON value) with the tokens the original call used."""

    value: Any
    input_tokens: int
    output_tokens: int


class ModelCache:
    """The SQLite cache at ``<directory>/models.sqlite3``."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory).expanduser() / FILE_NAME
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.closing(self._connect()) as connection:
                connection.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"{self.path}: cannot open the model cache: {exc}") from exc
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"ModelCache({str(self.path)!r})"

    def get_vectors(self, model: str, texts: Sequence[str]) -> dict[int, tuple[np.ndarray, int]]:
        """Cached ``(vector, tokens)`` by position in ``texts``, for the texts present."""
        keys = [cache_key(model, "embed", text) for text in texts]
        found: dict[str, tuple[np.ndarray, int]] = {}
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            rows = self._connection().execute(
                f"SELECT key, vector, tokens FROM vectors WHERE key IN ({','.join('?' * len(batch))})", batch
            )
            for key, blob, tokens in rows:
                found[key] = (np.frombuffer(blob, dtype=np.float32), int(tokens))
        return {i: found[key] for i, key in enumerate(keys) if key in found}

    def put_vectors(self, model: str, texts: Sequence[str], vectors: Vectors, tokens: Sequence[int]) -> None:
        """Store one row per text (float32 bytes and its token count)."""
        rows = [
            (
                cache_key(model, "embed", text),
                int(vector.shape[0]),
                np.asarray(vector, np.float32).tobytes(),
                n,
            )
            for text, vector, n in zip(texts, vectors, tokens, strict=True)
        ]
        with self._connection() as connection:
            connection.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?, ?)", rows)

    def get_calls(self, keys: Sequence[str]) -> dict[str, CachedCall]:
        """The stored results among ``keys``, by key (absent keys are left out)."""
        found: dict[str, CachedCall] = {}
        for start in range(0, len(keys), 500):
            batch = list(keys[start : start + 500])
            rows = self._connection().execute(
                "SELECT key, value, input_tokens, output_tokens FROM calls "
                f"WHERE key IN ({','.join('?' * len(batch))})",
                batch,
            )
            for key, value, input_tokens, output_tokens in rows:
                found[key] = CachedCall(json.loads(value), int(input_tokens), int(output_tokens))
        return found

    def put_calls(self, calls: dict[str, CachedCall]) -> None:
        """Store several call results in one transaction (values must be JSON-serialisable)."""
        rows = [
            (key, json.dumps(call.value, ensure_ascii=False), call.input_tokens, call.output_tokens)
            for key, call in calls.items()
        ]
        with self._connection() as connection:
            connection.executemany("INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?)", rows)

    def get_call(self, key: str) -> CachedCall | None:
        """The stored result for ``key``, or ``None``."""
        return self.get_calls([key]).get(key)

    def put_call(self, key: str, call: CachedCall) -> None:
        """Store a call result (must be JSON-serialisable)."""
        self.put_calls({key: call})

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._connect()
            self._local.connection = connection
        return connection

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        connection.execute("PRAGMA busy_timeout=30000")
        _use_wal(connection)
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection


#: How long a connection keeps trying to put a new cache in WAL mode while another process does.
WAL_WAIT_S = 30.0


def _use_wal(connection: sqlite3.Connection) -> None:
    """Put the cache in WAL mode, which the file keeps: later connections find it set and change nothing.
    Two processes creating the cache at the same moment can each find the other's lock while switching
    (``database is locked`` at once, the busy timeout notwithstanding), so the switch is retried."""
    deadline = time.monotonic() + WAL_WAIT_S
    while True:
        try:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
