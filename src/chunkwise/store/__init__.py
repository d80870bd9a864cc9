"""Knowledge-base stores: the :class:`~.protocol.Store` protocol and its implementations.

:func:`open_store` picks the implementation from the location: a URL (``scheme://...``) by its scheme,
from :data:`SCHEMES` (``postgresql://`` and ``postgres://`` are a :class:`~.postgres.PostgresStore`);
anything else is a directory, a :class:`~.sqlite.SQLiteStore` (one SQLite file, WAL, vectors beside it in
memory), except a known scheme and ``:`` without ``//`` (``postgresql:/u:pw@h/db``): a URL mistyped, not
a directory to create, whose text (password and all) a directory's message would show. A backend
registers its scheme with :func:`register_scheme`; its module is imported only when a location names it,
so the SQLite path never imports a database driver.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from chunkwise.errors import StoreURLError
from chunkwise.store.pgurl import redact
from chunkwise.store.protocol import DocumentInfo, Store, StoredChunk, StoreSettings

__all__ = [
    "SCHEMES",
    "DocumentInfo",
    "Store",
    "StoreSettings",
    "StoredChunk",
    "is_url",
    "open_store",
    "register_scheme",
]

#: URL scheme -> ``module:class`` of the store that opens it; the class is called as
#: ``cls(location, settings, create=..., read_only=..., damaged_ok=...)``.
SCHEMES: dict[str, str] = {
    "postgresql": "chunkwise.store.postgres:PostgresStore",
    "postgres": "chunkwise.store.postgres:PostgresStore",
}

_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")


def register_scheme(scheme: str, target: str) -> None:
    """Open locations ``scheme://...`` with the store class at ``target`` (``module:class``)."""
    SCHEMES[scheme] = target


def is_url(location: str | Path) -> bool:
    """True when ``location`` is written as a URL (``scheme://...``) rather than a directory."""
    return isinstance(location, str) and _URL.match(location) is not None


def _refuse_a_url_without_slashes(location: str) -> None:
    """Raise :class:`StoreURLError` when ``location`` starts with a known scheme and ``:`` but has no
    ``//`` after them (``postgresql:/u:pw@h/db``, ``postgres:u:pw@h/db``).

    Taken for a directory, such a location would be created (``postgresql:/u:pw@h/db`` as three nested
    directories) or named, password included, in the SQLite store's message. The error shows the
    location as written without its password: it is redacted as the URL it would be with ``//``."""
    scheme, colon, rest = location.partition(":")
    if not colon or scheme.lower() not in SCHEMES:
        return
    path = rest.lstrip("/")
    slashes = rest[: len(rest) - len(path)]
    shown = f"{scheme}:{slashes}{redact(f'{scheme}://{path}')[len(scheme) + 3 :]}"
    reason = f"a store URL needs '{scheme.lower()}://' after its scheme"
    raise StoreURLError(shown, f"{reason} (a directory of this name: ./{scheme}:...)")


def open_store(
    location: str | Path,
    settings: StoreSettings | None = None,
    *,
    create: bool = True,
    read_only: bool = False,
    damaged_ok: bool = False,
) -> Store:
    """The store at ``location`` (a URL, or a knowledge-base directory), created when absent unless
    ``create`` is False or ``read_only`` (then it must exist; read-only, nothing is written to it).
    ``damaged_ok`` opens a store that shows damage, for :meth:`~.protocol.Store.check` and
    :meth:`~.protocol.Store.repair`.

    Raises:
        StoreError: the location cannot hold a store (not a directory, read-only for a writer, no store
            there for a reader, a server that does not answer or refuses the credentials), or its files
            are damaged (:class:`~chunkwise.errors.CorruptStoreError`).
        StoreURLError: the URL is malformed or its scheme unknown, or a known scheme lacks its ``//``.
    """
    options = {"create": create, "read_only": read_only, "damaged_ok": damaged_ok}
    match = _URL.match(location) if isinstance(location, str) else None
    if match is None:
        if isinstance(location, str):
            _refuse_a_url_without_slashes(location)
        from chunkwise.store.sqlite import SQLiteStore

        return SQLiteStore(location, settings, **options)
    scheme = match.group(1).lower()
    if scheme not in SCHEMES:
        raise StoreURLError(f"{scheme}://...", f"unknown store scheme; known: {', '.join(sorted(SCHEMES))}")
    module, _, name = SCHEMES[scheme].partition(":")
    store: Store = getattr(importlib.import_module(module), name)(location, settings, **options)
    return store
