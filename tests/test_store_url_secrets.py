"""A PostgreSQL store URL's password never reaches a message: not when it holds characters a URL reserves
(escaped or not), not when libpq refuses the URL and quotes it, not in any form libpq may echo (as
written, decoded, or the piece before a bad escape). No server is needed: the URLs name a closed port or
a socket directory that does not exist, or hold text libpq refuses before connecting."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.errors import StoreError, StoreUnavailableError, StoreURLError
from chunkwise.store import open_store
from chunkwise.store.pgurl import parse, redact
from tests.support.cli import run_chunkwise

pytest.importorskip("psycopg")

#: No server listens here, and no host name is resolved: ``host`` names a socket directory that does
#: not exist, and comes last, so it overrides whatever host a malformed authority yields.
NO_SERVER = "connect_timeout=2&host=/nonexistent-chunkwise-socket-dir"


def _messages(url: str, *, connect: bool = True) -> list[str]:
    """Every text the library shows for ``url``: its redacted form, and the error of parsing it and (if
    ``connect``) of opening a store at it (a typed :class:`StoreError` whenever it fails)."""
    texts = [redact(url)]
    for attempt in (parse, open_store) if connect else (parse,):
        try:
            attempt(url)
        except StoreError as exc:
            texts.append(str(exc))
        else:
            texts.append("")
    return texts


def _assert_hidden(password: str, texts: list[str]) -> None:
    for form in {password, quote(password, safe="", errors="surrogatepass")}:
        for text in texts:
            assert form not in text, (form, text)


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


def test_a_password_with_an_at_sign_is_hidden_under_every_reading():
    """Python's splitter takes the last ``@`` for the end of the password, libpq the first."""
    where = parse("postgresql://u:Kzq@Wvj@host/db")
    assert where.display == "postgresql://u@host/db"
    assert where.scrub("Kzq@Wvj; Kzq") == "***; ***"


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


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres@/postgres?host=/nonexistent&password=hunter2%zz",
        "postgresql://postgres:s%41cret%zz@/postgres?host=/nonexistent",
        "postgresql://postgres@/postgres?host=/nonexistent&password=s%41cr%3Fet%00xy",
        "postgresql://postgres@/postgres?host=/nonexistent&password=hunter2&99zz",
        "postgresql://postgres@/postgres?host=/nonexistent&password=hunter2%FF99zz",
        "postgresql://postgres:hunter2@%C2%80/postgres",
    ],
)
def test_a_url_libpq_cannot_read_is_a_typed_error_without_the_password(url):
    """libpq refuses a bad ``%`` escape with a ``ProgrammingError`` quoting the value as written
    (``invalid percent-encoded token: "hunter2%zz"``), which escaped the store as a raw exception: it is
    a :class:`StoreURLError` naming the redacted URL, the quoted text scrubbed. So is psycopg's own
    ``UnicodeError`` (a ``%`` escape of bytes that are not UTF-8, a host name that is not IDNA)."""
    with pytest.raises(StoreURLError, match="libpq cannot read the URL") as caught:
        open_store(url)
    message = str(caught.value)
    assert message.startswith(redact(url) + ": ")
    assert redact(url).startswith("postgresql://postgres@")
    for piece in ("hunter2", "99zz", "s%41cr", "sAcr", "cret", "et%00xy"):
        assert piece not in message


def test_every_form_libpq_may_echo_is_scrubbed():
    """The decoded query password was the only form replaced; libpq quotes the text as written, or the
    part of it before a bad escape."""
    where = parse("postgresql://u:s%41c%3Fr%3Aet%zz@h/db?password=q%2Fw%3Fe%zzrty")
    forms = ["s%41c%3Fr%3Aet%zz", "sAc?r:et%zz", "sAc?r:et", "s%41c%3Fr", "q%2Fw%3Fe%zzrty", "q/w?e%zzrty"]
    forms += ["q/w?e", "zzrty"]
    scrubbed = where.scrub(" ".join(f'"{form}"' for form in forms))
    assert scrubbed == " ".join(['"***"'] * len(forms))


def test_text_libpq_cannot_be_given_is_refused_before_connecting():
    """A NUL cut the password short in libpq; a lone surrogate (a byte that is not UTF-8 on the command
    line) raised ``UnicodeEncodeError`` out of the store."""
    for url in ("postgresql://u:ab\x00cdef@h/db", "postgresql://u:ab\udcffcdef@h/db"):
        with pytest.raises(StoreURLError, match="NUL character or undecodable bytes") as caught:
            open_store(url)
        assert "cdef" not in str(caught.value)


_RESERVED = st.sampled_from(["?", "/", "#", "@", ":", "&", "=", "%", "%41", "%zz", "%00", "%2", "+", " "])
#: Any code point, NUL and lone surrogates included (the URL is then refused, still without the password).
_ANY = st.characters(exclude_categories=())


@settings(max_examples=150, deadline=None)
@given(
    before=st.lists(st.one_of(_ANY, _RESERVED), max_size=8).map("".join),
    after=st.lists(st.one_of(_ANY, _RESERVED), max_size=8).map("".join),
    bad_escape=st.booleans(),
)
def test_no_message_holds_any_password(before, after, bad_escape):
    """Any text as the password, in the authority escaped or not, or as a ``password`` parameter: no
    message from redacting, parsing or opening a store holds it or its percent-encoded form. A snowman
    in each password (harmless anywhere in a URL) keeps it from matching a message's words by chance."""
    password = before + "\u2603" + after
    escaped = quote(password, safe="", errors="surrogatepass")
    tail = "%zz" if bad_escape else ""
    urls = [
        f"postgresql://app:{escaped}{tail}@/db?{NO_SERVER}",
        f"postgresql://app:{password}@/db?{NO_SERVER}",
        f"postgresql://app@/db?password={escaped}{tail}&{NO_SERVER}",
        f"postgresql://app@127.0.0.1:1/db?password={escaped}{tail}",
    ]
    for url in urls:
        # An unescaped ``#`` makes the rest of the URL a fragment, which is not passed to libpq: the
        # socket directory with it, so the host name would be looked up. Such a URL is not connected to.
        connect = "#" not in password or url != urls[1]
        _assert_hidden(password, _messages(url, connect=connect))


def test_a_closed_port_is_unavailable_without_the_password():
    password = "p%41ss/w?rd#Xq"
    url = f"postgresql://app:{quote(password, safe='')}@127.0.0.1:1/db?password={quote(password, safe='')}"
    with pytest.raises(StoreUnavailableError, match="cannot reach") as caught:
        open_store(url)
    _assert_hidden(password, [str(caught.value)])


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres@/postgres?host=/nonexistent&password=hunter2%zz",
        "postgresql://postgres:pa?ss%41%zz@/postgres?host=/nonexistent",
    ],
)
def test_the_cli_shows_one_error_line_exit_2_without_the_password(url, tmp_path):
    """``chunkwise kb list --kb URL`` ended in a traceback quoting the password; now one ``error:`` line
    naming the redacted URL, exit status 2, as for every store error."""
    done = run_chunkwise("kb", "list", "--kb", url, cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("error: postgresql://postgres@/postgres?host=/nonexistent: ")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    for piece in ("hunter2", "pa?ss", "ss%41", "Traceback"):
        assert piece not in done.stderr
