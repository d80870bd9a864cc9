"""Knowledge-base stores: the :class:`~.protocol.Store` protocol and its implementations.

:func:`open_store` picks the implementation from the location: a directory is a
:class:`~.sqlite.SQLiteStore` (one SQLite file, WAL, vectors beside it in memory).
"""

from __future__ import annotations

from pathlib import Path

from chunkwise.store.protocol import DocumentInfo, Store, StoredChunk, StoreSettings

__all__ = ["DocumentInfo", "Store", "StoreSettings", "StoredChunk", "open_store"]


def open_store(location: str | Path, settings: StoreSettings | None = None) -> Store:
    """The store at ``location`` (a knowledge-base directory), created when absent."""
    from chunkwise.store.sqlite import SQLiteStore

    return SQLiteStore(location, settings)
