"""A PostgreSQL store URL's password never reaches a message, even when it holds characters a URL
reserves: the redacted form and the errors of parsing are made from the text as written, never from what
Python's URL splitter makes of it, nor quote the splitter's own message."""

from __future__ import annotations

import pytest

from chunkwise.errors import StoreURLError
from chunkwise.store import open_store
from chunkwise.store.pgurl import parse, redact


@pytest.mark.parametrize("password", ["Kzq?Wvj", "Kzq/Wvj", "Kzq#Wvj", "Kzq\u2100Wvj", "Kzq:Wvj/Xq7?"])
def test_a_password_with_reserved_characters_is_hidden_and_urlsplit_is_not_quoted(password):
    """``postgresql://u:pa?ss@host/db`` was shown as itself, ``u:pa#ss`` as ``postgresql://u:pa``, with
    the splitter's own text ``Port could not be cast to integer value as 'pa'`` or ``netloc 'u:s℀cret@host'
    contains invalid characters``: now the user and host are shown, the password in no part."""
    url = f"postgresql://u:{password}@host/db"
    assert redact(url) == "postgresql://u@host/db"
    with pytest.raises(StoreURLError, match="malformed PostgreSQL URL") as caught:
        parse(url)
    message = str(caught.value)
    assert message.startswith("postgresql://u@host/db: ")
    for piece in ("Kzq", "Wvj", "Xq7", "\u2100", "cast to integer", "netloc"):
        assert piece not in message


def test_secret_parameters_are_dropped_however_written():
    assert redact("postgresql://u@h/db?password=s3cr%26t&schema=kb") == "postgresql://u@h/db?schema=kb"
    assert redact("postgresql://u@h/db?schema=kb&passw%6Frd=s3cret") == "postgresql://u@h/db?schema=kb"
    assert redact("postgresql://u@h/db?sslpassword=s3cret") == "postgresql://u@h/db"
    # An unescaped ``&`` in the value: libpq would echo the rest as a parameter without a value.
    assert redact("postgresql://u@h/db?password=s3c&ret99&schema=kb") == "postgresql://u@h/db?schema=kb"
    # Where the last ``@`` may belong to a query password, everything from the port on is hidden.
    assert redact("postgresql://h:5432/db?password=p@ssw0rd&schema=kb") == "postgresql://h?schema=kb"
    # Well-formed URLs keep every other part as written.
    url = "postgresql://app@localhost:5433/db?options=-c%20x%3D1@:&schema=kb_1"
    assert redact(url) == url
    assert redact("postgresql://app:pw@host:5432/db#frag") == "postgresql://app@host:5432/db#frag"
    assert redact("/var/kb:pw@x") == "/var/kb:pw@x"


def test_text_libpq_cannot_be_given_is_refused_before_connecting():
    """A NUL cut the password short in libpq; a lone surrogate (a byte that is not UTF-8 on the command
    line) raised ``UnicodeEncodeError`` out of the store."""
    for url in ("postgresql://u:ab\x00cdef@h/db", "postgresql://u:ab\udcffcdef@h/db"):
        with pytest.raises(StoreURLError, match="NUL character or undecodable bytes") as caught:
            open_store(url)
        assert "cdef" not in str(caught.value)
