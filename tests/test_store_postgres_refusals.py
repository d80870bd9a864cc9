"""A PostgreSQL server that stays up but refuses or cancels one operation (a lock wait past
``lock_timeout``, a statement past ``statement_timeout``), opening the store included: a typed
:class:`StoreOperationError` that names the store and carries the SQLSTATE (its message is scrubbed of
the password as every store error's is: ``tests/test_store_url_secrets.py``); nothing of the operation
is kept, and the store works again once the obstacle is gone. Real server (``tests/support/postgres.py``)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from chunkwise.errors import StoreError, StoreOperationError
from chunkwise.store import open_store
from chunkwise.store import postgres as pg
from chunkwise.store.pgurl import parse
from tests.support.postgres import APP_PASSWORD, PgServer, schema_name
from tests.support.store import DOC, animal_doc, put, unit_vectors

pytest.importorskip("psycopg")


def impatient_url(pg_server: PgServer, schema: str, setting: str) -> str:
    """The URL of ``schema`` in the password-protected database, for the role that must give it, whose
    sessions run with the server ``setting`` (``name=value``)."""
    url = pg_server.url(schema, user="app", password=APP_PASSWORD, db="appdb")
    return f"{url}&options={quote(f'-c{setting}', safe='')}"


def test_a_write_that_waits_past_lock_timeout_is_a_typed_error_and_keeps_nothing(pg_server, request):
    url = impatient_url(pg_server, schema_name(request.node.name), "lock_timeout=200ms")
    schema = parse(url).schema
    with open_store(url) as store:
        put(store, DOC)
        before = store.counts()
        with pg_server.admin("appdb") as holder:
            holder.execute("BEGIN")
            holder.execute(f'LOCK TABLE "{schema}".documents IN ACCESS EXCLUSIVE MODE')
            with pytest.raises(StoreOperationError) as refused:
                put(store, animal_doc(1), seed=1)
            with pytest.raises(StoreOperationError):
                store.documents()
            holder.execute("ROLLBACK")
        message = str(refused.value)
        assert isinstance(refused.value, StoreError)
        assert message.startswith(store.location)
        assert "55P03" in message
        assert "lock" in message.lower()
        assert refused.value.__cause__ is None
        assert refused.value.__suppress_context__
        assert store.counts() == before  # nothing of the refused write
        assert store.check() == []
        put(store, animal_doc(1), seed=1)  # the store works again
        assert len(store.documents()) == 2


def test_a_search_past_statement_timeout_is_a_typed_error(pg_server, request):
    schema = schema_name(request.node.name)
    plain = pg_server.url(schema, user="app", password=APP_PASSWORD, db="appdb")
    with open_store(plain) as store:
        for i in range(3):
            put(store, animal_doc(i), seed=i)
    with open_store(impatient_url(pg_server, schema, "statement_timeout=50ms"), read_only=True) as store:
        with pg_server.admin("appdb") as holder:
            holder.execute("BEGIN")
            holder.execute(f'LOCK TABLE "{schema}".vectors IN ACCESS EXCLUSIVE MODE')
            with pytest.raises(StoreOperationError) as cancelled:
                store.dense(unit_vectors(1, seed=5)[0], 3)
            holder.execute("ROLLBACK")
        assert "57014" in str(cancelled.value)
        assert len(store.dense(unit_vectors(1, seed=5)[0], 3)) == 3


def test_opening_a_store_that_waits_past_lock_timeout_is_a_typed_error(pg_server, request):
    """A new store's tables are created under a database-wide advisory lock; another session holding it
    past the opening's ``lock_timeout`` makes the opening a StoreOperationError, and nothing is created."""
    url = impatient_url(pg_server, schema_name(request.node.name), "lock_timeout=200ms")
    schema = parse(url).schema
    with pg_server.admin("appdb") as holder:
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(%s, 0)", (pg._SETUP_LOCK,))
        with pytest.raises(StoreOperationError) as refused:
            open_store(url)
        holder.execute("ROLLBACK")
        created = holder.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    assert "55P03" in str(refused.value)
    assert created == (0,)
    with open_store(url) as store:  # the lock released, it opens
        put(store, DOC)
        assert len(store.documents()) == 1
