"""PostgreSQL store locations: ``postgresql://user[:password]@host[:port]/db?schema=NAME&...``.

The URL is split into what libpq reads (everything but chunkwise's own ``schema`` parameter) and the
schema that holds the knowledge base's tables (``chunkwise`` when not given), and checked before any
connection is made: an unknown scheme, a port that is not a number or a schema name that is not a plain
SQL identifier is a :class:`~chunkwise.errors.StoreURLError`. The password may come from the URL, from
``PGPASSWORD`` or from a ``.pgpass`` file (libpq reads both); :attr:`PgLocation.display`, the only form
that appears in messages, never holds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in _SECRET_PARAMS]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="/"), ""))


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
    params = parse_qsl(parts.query, keep_blank_values=True)
    schema = DEFAULT_SCHEMA
    libpq = []
    for key, value in params:
        if key == "schema":
            schema = value
        else:
            libpq.append((key, value))
    if not _IDENTIFIER.fullmatch(schema):
        raise StoreURLError(
            display, f"schema {schema!r} is not a plain identifier (lower-case letters, digits, _)"
        )
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(libpq, safe="/"), ""))
    password = parts.password or dict(params).get("password")
    return PgLocation(conninfo, schema, display, password)
