"""Knowledge-base stores: the :class:`~.protocol.Store` protocol and its implementations.

:func:`open_store` picks the implementation from the location: a directory is a
:class:`~.sqlite.SQLiteStore` (one SQLite file, WAL, vectors beside it in memory).
"""

from __future__ import annotations

from pathlib import Path

from chunkwise.store.protocol import DocumentInfo, Store, StoredChunk, StoreSettings

__all__ = ["DocumentInfo", "Store", "StoreSettings", "StoredChunk", "open_store"]


def open_store(
    location: str | Path,
    settings: StoreSettings | None = None,
    *,
    read_only: bool = False,
    damaged_ok: bool = False,
) -> Store:
    """The store at ``location`` (a knowledge-base directory), created when absent unless ``read_only``
    (then it must exist, and nothing is written to it). ``damaged_ok`` opens a store whose files show
    damage, for :meth:`~.protocol.Store.check` and :meth:`~.protocol.Store.repair`.

    Raises:
        StoreError: the location cannot hold a store (not a directory, read-only for a writer, no store
            there for a reader), or its files are damaged (:class:`~chunkwise.errors.CorruptStoreError`).
    """
    from chunkwise.store.sqlite import SQLiteStore

    return SQLiteStore(location, settings, read_only=read_only, damaged_ok=damaged_ok)
