"""PostgreSQL store locations: ``postgresql://user[:password]@host[:port]/db?schema=NAME&...``.

The URL is split into what libpq reads (everything but chunkwise's own ``schema`` parameter) and the
schema that holds the knowledge base's tables (``chunkwise`` when not given), and checked before any
connection is made: an unknown scheme, a port that is not a number or a schema name that is not a plain
SQL identifier is a :class:`~chunkwise.errors.StoreURLError`. The libpq parameters reach libpq as they
were written, never re-encoded: libpq decodes each once, keeping a ``+`` a plus sign, so
``options=-c%20lock_timeout%3D2s`` sets ``lock_timeout``. The password may come from the URL, from
``PGPASSWORD`` or from a ``.pgpass`` file (libpq reads both); :attr:`PgLocation.display`, the only form
that appears in messages, never holds it, and :meth:`PgLocation.scrub` removes it from libpq's messages.

A password may be written with characters a URL reserves (``/ ? # @ : &``) left unescaped, and then
Python's URL splitter, libpq and the person who wrote it each read a different password. Redaction
therefore scans the text itself, never relying on the splitter, and hides what any of these readings
takes for a password: when the URL is ambiguous it hides more than the password, never less.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from urllib.parse import unquote, urlsplit, urlunsplit

from chunkwise.errors import StoreURLError

SCHEMES = ("postgresql", "postgres")
DEFAULT_SCHEMA = "chunkwise"
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: A URL's scheme and its ``://``; text without one is a path, which holds no password.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
#: Query parameters that carry secrets and are never shown.
_SECRET_PARAMS = frozenset({"password", "sslpassword"})
#: Characters at which libpq cuts a misplaced or badly escaped password, echoing a piece of it (the value
#: up to a bad ``%`` escape, a port read from before a ``/``, a parameter read from after a ``&``).
_CUTS = "/?#@:&%"
#: Pieces of a password shorter than this are not scrubbed from messages (they would match ordinary
#: words); the whole password is, whatever its length.
_MIN_PIECE = 4
#: The reason for each error of :func:`urllib.parse.urlsplit`, recognised by its text: that text quotes
#: the URL (the password among it), so it never reaches a message itself.
_SPLIT_PROBLEMS = (
    ("could not be cast", "the port is not a number; a / ? # or @ in a password must be percent-encoded"),
    ("out of range", "the port is out of range 0-65535"),
    ("NFKC", "the user, password or host holds a character that Unicode normalisation changes"),
    ("IPv6", "a bracketed IPv6 host is malformed"),
)


@dataclass(frozen=True, slots=True)
class PgLocation:
    """A parsed store URL: ``conninfo`` for libpq, the ``schema``, ``display`` for messages, and
    ``secrets``: every text of the URL that is or may be a password, or a piece of one that libpq may
    echo in a message, longest first."""

    conninfo: str
    schema: str
    display: str
    secrets: tuple[str, ...]

    def scrub(self, text: str) -> str:
        """``text`` (a libpq or server message) with each of :attr:`secrets` replaced by ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def _query(query: str) -> list[tuple[str, str, str]]:
    """Each ``key=value`` of a URL's query as (its text as written, the key, the value), key and value
    percent-decoded once the way libpq decodes them (a ``+`` stays a plus sign, not a space)."""
    pairs = []
    for text in query.split("&"):
        if text:
            key, _, value = text.partition("=")
            pairs.append((text, unquote(key), unquote(value)))
    return pairs


def _authority_secrets(rest: str) -> list[tuple[int, int]]:
    """Where in ``rest`` (a URL after its ``://``) an authority password may lie, as ``(start, end)``
    with ``start`` at the ``:`` before it and ``end`` at the ``@`` after it, under each reading: libpq's
    (the user information ends at the first ``@`` before any ``/``), Python's splitter's (the authority
    ends at the first ``/``, ``?`` or ``#``, its user information at its last ``@``) and the writer's, who
    may have left a ``/``, ``?``, ``#`` or ``@`` unescaped in it (from the ``:`` after the user name to
    the last ``@`` of the URL)."""
    spans = []
    first_at = rest.find("@")
    if first_at >= 0 and "/" not in rest[:first_at]:
        spans.append((rest.find(":", 0, first_at), first_at))
    authority_end = min([i for i in (rest.find(c) for c in "/?#") if i >= 0], default=len(rest))
    netloc_at = rest.rfind("@", 0, authority_end)
    if netloc_at >= 0:
        spans.append((rest.find(":", 0, netloc_at), netloc_at))
    user_end = min([i for i in (rest.find(c) for c in ":@/?#") if i >= 0], default=len(rest))
    last_at = rest.rfind("@")
    if rest.startswith(":", user_end) and last_at > user_end:
        spans.append((user_end, last_at))
    return [(start, end) for start, end in spans if start >= 0]


def _parameter_secrets(rest: str) -> list[tuple[int, int]]:
    """Where in ``rest`` a secret query parameter lies, as ``(start, end)`` from the ``?`` or ``&``
    before its key to the end of its value. Every ``?`` and ``&`` is taken for a separator, and pieces
    without a ``=`` after a secret value belong to it (a password holding an unescaped ``&``, which libpq
    would echo as a parameter without a value)."""
    spans: list[tuple[int, int]] = []
    separators = [i for i, c in enumerate(rest) if c in "?&"] + [len(rest)]
    in_secret = False
    for start, end in pairwise(separators):
        key, equals, _ = rest[start + 1 : end].partition("=")
        if in_secret and not equals:
            spans[-1] = (spans[-1][0], end)
            continue
        in_secret = bool(equals) and unquote(key).lower() in _SECRET_PARAMS
        if in_secret:
            spans.append((start, end))
    return spans


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` in order, overlapping or touching ones joined."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _pieces(secret: str) -> set[str]:
    """``secret`` as written and percent-decoded, and each piece of either form that libpq may echo on
    its own: the text before and after each of :data:`_CUTS` (at least :data:`_MIN_PIECE` long)."""
    pieces = set()
    for form in {secret, unquote(secret)}:
        pieces.add(form)
        for i, c in enumerate(form):
            if c in _CUTS:
                pieces.update(p for p in (form[:i], form[i + 1 :]) if len(p) >= _MIN_PIECE)
    pieces.discard("")
    return pieces


def _split(url: str) -> tuple[str, str, list[tuple[int, int]], list[tuple[int, int]]]:
    """``url``'s scheme with its ``://``, the rest, and the spans of the rest that may hold a password
    (see :func:`_authority_secrets`) or a secret parameter (see :func:`_parameter_secrets`); a text
    without a scheme is a path, all of it the rest, with no secret."""
    match = _SCHEME.match(url)
    if match is None:
        return "", url, [], []
    rest = url[match.end() :]
    return url[: match.end()], rest, _authority_secrets(rest), _parameter_secrets(rest)


def secrets(url: str) -> tuple[str, ...]:
    """Every text of ``url`` that is or may be a password, and the pieces of it that libpq may echo
    (see :func:`_pieces`), longest first, so that a longer one is replaced before a piece of it."""
    _, rest, authority, parameters = _split(url)
    values = [rest[start + 1 : end] for start, end in authority]
    values += [rest[start:end].partition("=")[2] for start, end in parameters]
    pieces = set().union(*(_pieces(value) for value in values))
    return tuple(sorted(pieces, key=lambda piece: (-len(piece), piece)))


def redact(url: str) -> str:
    """``url`` without a password (in the authority or as a query parameter); other text unchanged.

    Works on the text as written, whether or not it is a well-formed URL: the ``:`` and password before
    the host are dropped, and each ``password``/``sslpassword`` parameter with its value. Where readings
    differ (see :func:`_authority_secrets`) everything any of them could take for a password goes."""
    head, rest, authority, parameters = _split(url)
    kept = [head]
    at = 0
    for start, end in _merged(authority + parameters):
        kept.append(rest[at:start])
        at = end
        if "?" in rest[start:end] and rest.startswith("&", end):
            kept.append("?")
            at += 1
    kept.append(rest[at:])
    return "".join(kept)


def _split_problem(exc: ValueError) -> str:
    """What is wrong with a URL that :func:`urllib.parse.urlsplit` refused, in words of our own: its
    message quotes the URL, password included."""
    text = str(exc)
    for marker, problem in _SPLIT_PROBLEMS:
        if marker in text:
            return problem
    return "it cannot be split into user, host, port and database"


def _libpq_text(url: str) -> bool:
    """Whether libpq can be given ``url``: not if it holds a NUL (libpq would read the text before it
    only, a password cut short) or a lone surrogate (it cannot be encoded; the command line makes one of
    each byte that is not UTF-8)."""
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in url


def parse(url: str) -> PgLocation:
    """The location of ``url``; :class:`StoreURLError` names what is wrong (without the password)."""
    display = redact(url)
    if not _libpq_text(url):
        raise StoreURLError(display, "the URL holds a NUL character or undecodable bytes (a lone surrogate)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError as exc:
        raise StoreURLError(display, f"malformed PostgreSQL URL ({_split_problem(exc)})") from None
    if parts.scheme not in SCHEMES:
        raise StoreURLError(display, "not a PostgreSQL URL (expected postgresql://user@host:port/db)")
    if not parts.hostname and not parts.path.strip("/"):
        raise StoreURLError(display, "a PostgreSQL URL needs a host or a database name")
    schema = DEFAULT_SCHEMA
    libpq = []
    for text, key, value in _query(parts.query):
        if key == "schema":
            schema = value
        else:
            libpq.append(text)
    if not _IDENTIFIER.fullmatch(schema):
        raise StoreURLError(
            display, f"schema {schema!r} is not a plain identifier (lower-case letters, digits, _)"
        )
    if schema.startswith("pg_") or schema == "information_schema":
        raise StoreURLError(display, f"schema {schema!r} is a name PostgreSQL keeps for its own schemas")
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, "&".join(libpq), ""))
    return PgLocation(conninfo, schema, display, secrets(url))
