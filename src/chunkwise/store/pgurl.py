"""PostgreSQL store locations: ``postgresql://user[:password]@host[:port]/db?schema=NAME&...``.

The URL is split into what libpq reads (everything but chunkwise's own ``schema`` parameter) and the
schema that holds the knowledge base's tables (``chunkwise`` when not given), and checked before any
connection is made: an unknown scheme, a port that is not a number or a schema name that is not a plain
SQL identifier is a :class:`~chunkwise.errors.StoreURLError`. The libpq parameters reach libpq as they
were written, never re-encoded: libpq decodes each once, keeping a ``+`` a plus sign, so
``options=-c%20lock_timeout%3D2s`` sets ``lock_timeout``. The password may come from the URL, from
``PGPASSWORD`` or from a ``.pgpass`` file (libpq reads both); :attr:`PgLocation.display`, the only form
that appears in messages, never holds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

from chunkwise.errors import StoreURLError

SCHEMES = ("postgresql", "postgres")
DEFAULT_SCHEMA = "chunkwise"
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: Query parameters that carry secrets and are never shown.
_SECRET_PARAMS = frozenset({"password", "sslpassword"})


@dataclass(frozen=True, slots=True)
class PgLocation:
    """A parsed store URL: ``conninfo`` for libpq, the ``schema``, and ``display`` for messages."""

    conninfo: str
    schema: str
    display: str
    password: str | None


def _query(query: str) -> list[tuple[str, str, str]]:
    """Each ``key=value`` of a URL's query as (its text as written, the key, the value), key and value
    percent-decoded once the way libpq decodes them (a ``+`` stays a plus sign, not a space)."""
    pairs = []
    for text in query.split("&"):
        if text:
            key, _, value = text.partition("=")
            pairs.append((text, unquote(key), unquote(value)))
    return pairs


def redact(url: str) -> str:
    """``url`` without a password (in the authority or as a query parameter); other text unchanged."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
    except ValueError:
        return "<malformed URL>"
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}@{host}"
    query = "&".join(text for text, key, _ in _query(parts.query) if key not in _SECRET_PARAMS)
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def parse(url: str) -> PgLocation:
    """The location of ``url``; :class:`StoreURLError` names what is wrong (without the password)."""
    display = redact(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError as exc:
        raise StoreURLError(display, f"malformed PostgreSQL URL ({exc})") from None
    if parts.scheme not in SCHEMES:
        raise StoreURLError(display, "not a PostgreSQL URL (expected postgresql://user@host:port/db)")
    if not parts.hostname and not parts.path.strip("/"):
        raise StoreURLError(display, "a PostgreSQL URL needs a host or a database name")
    params = _query(parts.query)
    schema = DEFAULT_SCHEMA
    libpq = []
    for text, key, value in params:
        if key == "schema":
            schema = value
        else:
            libpq.append(text)
    if not _IDENTIFIER.fullmatch(schema):
        raise StoreURLError(
            display, f"schema {schema!r} is not a plain identifier (lower-case letters, digits, _)"
        )
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, "&".join(libpq), ""))
    password = parts.password or {key: value for _, key, value in params}.get("password")
    return PgLocation(conninfo, schema, display, password)
