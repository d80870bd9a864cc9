"""A store location that starts with a known scheme and ``:`` but lacks the ``//`` (``postgresql:/u:pw@h/db``,
``postgres:u:pw@h/db``) is a mistyped URL: a :class:`StoreURLError` saying so, without the password, and
never a SQLite directory created under that name or named, password included, in a message."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.errors import StoreURLError
from chunkwise.store import open_store
from tests.support.cli import run_chunkwise

PASSWORD = "secretpw"
#: Any text (no lone surrogates) with a snowman, which keeps it from matching a message's words by chance.
_PASSWORDS = st.text(st.characters(exclude_categories=("Cs",)), max_size=12).map(lambda text: text + "\u2603")


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        (f"postgresql:/u:{PASSWORD}@h/db", "postgresql:/u@h/db"),
        (f"postgres:u:{PASSWORD}@h/db", "postgres:u@h/db"),
        (f"PostgreSQL:u:{PASSWORD}@h/db", "PostgreSQL:u@h/db"),
        (f"postgres:/u@h/db?password={PASSWORD}", "postgres:/u@h/db"),
        ("postgresql:db", "postgresql:db"),
    ],
)
@pytest.mark.parametrize("mode", ["create", "read_only"])
def test_a_scheme_without_slashes_is_a_url_error(location, shown, mode, tmp_path, monkeypatch):
    """Such a location was opened as a directory: created, nested, under the working directory (or, to
    read, named in the SQLite store's "no knowledge base" message with its password)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreURLError) as caught:
        open_store(location, read_only=mode == "read_only")
    assert caught.value.location == shown
    scheme = location.partition(":")[0].lower()
    assert f"needs '{scheme}://'" in caught.value.reason
    assert PASSWORD not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_named_like_a_scheme_is_still_opened_by_its_path(tmp_path, monkeypatch):
    """``./postgres:notes`` (as the error suggests) and a :class:`~pathlib.Path` are directories."""
    monkeypatch.chdir(tmp_path)
    open_store("./postgres:notes").close()
    open_store(Path("postgresql:kb")).close()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["postgres:notes", "postgresql:kb"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    prefix=st.sampled_from(["postgresql:", "postgresql:/", "postgres:", "postgres:/"]),
    password=_PASSWORDS,
    as_parameter=st.booleans(),
)
def test_no_password_reaches_the_message(prefix, password, as_parameter, tmp_path, monkeypatch):
    """Any text as the password, in the authority or as a ``password`` parameter: the error neither
    holds it nor creates anything."""
    monkeypatch.chdir(tmp_path)
    rest = f"u@h/db?password={password}" if as_parameter else f"u:{password}@h/db"
    with pytest.raises(StoreURLError) as caught:
        open_store(prefix + rest)
    assert password not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_the_cli_shows_one_error_line_without_the_password(tmp_path):
    done = run_chunkwise("kb", "list", "--kb", f"postgresql:/u:{PASSWORD}@h/db", cwd=tmp_path, timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("error: postgresql:/u@h/db: a store URL needs 'postgresql://'")
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert PASSWORD not in done.stderr
    assert list(tmp_path.iterdir()) == []
