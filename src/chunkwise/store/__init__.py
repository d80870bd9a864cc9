"""The embedded knowledge-base store: one directory, one SQLite database (WAL), vectors beside it in
memory. See :class:`~chunkwise.store.database.Store`."""

from chunkwise.store.database import DocumentInfo, Store
from chunkwise.store.dense import DenseIndex

__all__ = ["DenseIndex", "DocumentInfo", "Store"]
