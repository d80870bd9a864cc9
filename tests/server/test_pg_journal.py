"""The jobs' journal of the servers over one PostgreSQL knowledge base (``server/pg_journal.py``): any
server answers any server's job; a job left queued or running by a server that is gone (a process
killed with ``kill -9``, a lost connection) reads ``cancelled``, and one of a server that is alive is
never touched. Real PostgreSQL, real servers, a real process killed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from chunkwise.errors import StoreError
from chunkwise.server import create_app, pg_journal
from chunkwise.server.journal import INTERRUPTED, SQLiteJobJournal, open_journal
from chunkwise.server.pg_journal import PostgresJobJournal
from chunkwise.store import open_store
from chunkwise.store.pgurl import parse
from chunkwise.store.postgres import JOBS_LOCK, PostgresStore
from tests.support.server import PATIENCE_S, running_app, serve_process, upload, wait_job


def job(job_id: str, status: str) -> dict[str, Any]:
    """A job's JSON form, as far as the journal cares."""
    return {"id": job_id, "status": status, "files": ["a.md"], "error": None, "embedding": {"done": 1}}


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    """A fresh PostgreSQL knowledge base."""
    with open_store(pg_url) as opened:
        assert isinstance(opened, PostgresStore)
        yield opened


def rows(pg_server, store: PostgresStore) -> dict[str, dict[str, Any]]:  # type: ignore[no-untyped-def]
    """Every job in the table, read beside the journals."""
    with pg_server.admin() as admin:
        found = admin.execute(f"SELECT id, body::text FROM {store.schema}.jobs").fetchall()
    return {job_id: json.loads(body) for job_id, body in found}


def wait_until_gone(pg_server, store: PostgresStore, owner: str) -> None:  # type: ignore[no-untyped-def]
    """Wait until the database has ended the session of ``owner``'s server (its lock is free)."""
    key = (JOBS_LOCK, f"{store.schema}/{owner}")
    deadline = time.monotonic() + PATIENCE_S
    with pg_server.admin() as admin:
        while time.monotonic() < deadline:
            if admin.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", key).fetchone()[0]:
                admin.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", key)
                return
            time.sleep(0.05)
    raise AssertionError(f"the session of {owner} did not end")


def test_the_journal_of_a_postgresql_store_is_its_table_unless_a_file_is_named(
    store: PostgresStore, tmp_path: Path
) -> None:
    journal = open_journal(store, keep=10)
    assert isinstance(journal, PostgresJobJournal)
    journal.close()
    named = open_journal(store, keep=10, path=tmp_path / "jobs.sqlite3")
    assert isinstance(named, SQLiteJobJournal)
    named.close()


def test_a_killed_servers_unfinished_jobs_read_cancelled_and_its_finished_ones_stay(
    pg_server,  # type: ignore[no-untyped-def]
    pg_url: str,
    store: PostgresStore,
) -> None:
    """A process records a queued, a running and a finished job, then is killed with SIGKILL. While it
    lives another server reads its jobs as recorded; once it is gone, a server that opens the journal
    marks the unfinished ones (before anyone reads them), and reading them says so."""
    other = PostgresJobJournal(store, keep=10, grace=0)
    script = textwrap.dedent(
        f"""
        import time
        from chunkwise.store import open_store
        from chunkwise.server.pg_journal import PostgresJobJournal
        journal = PostgresJobJournal(open_store({pg_url!r}), keep=10)
        for job_id, status in (("q", "queued"), ("r", "running"), ("d", "done")):
            journal.save({{"id": job_id, "status": status, "error": None, "embedding": {{"done": 1}}}})
        print(journal.owner, flush=True)
        time.sleep(600)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        owner = process.stdout.readline().strip()
        assert owner, "the recording process ended early"
        # its server is alive: left alone
        assert other.get("q") == {"id": "q", "status": "queued", "error": None, "embedding": {"done": 1}}
        assert other.get("r") == {"id": "r", "status": "running", "error": None, "embedding": {"done": 1}}
        assert [j["id"] for j in other.recent(10)] == ["d", "r", "q"]
        assert other.recent(10, "running") == [other.get("r")]
    finally:
        process.kill()
        process.wait()
    wait_until_gone(pg_server, store, owner)
    assert rows(pg_server, store)["r"]["status"] == "running"  # nobody has looked yet
    patient = PostgresJobJournal(store, keep=10)  # the default grace: seen a moment ago, not yet marked
    assert patient.get("r") == {"id": "r", "status": "running", "error": None, "embedding": {"done": 1}}
    patient.close()
    starting = PostgresJobJournal(store, keep=10, grace=0)  # a server starting marks them
    recorded = rows(pg_server, store)
    assert recorded["q"] == {"id": "q", "status": "cancelled", "error": INTERRUPTED, "embedding": None}
    assert recorded["r"]["status"] == "cancelled"
    assert recorded["d"] == {"id": "d", "status": "done", "error": None, "embedding": {"done": 1}}
    assert other.get("r") == recorded["r"]
    assert other.recent(10, "running") == []
    assert other.recent(2) == [recorded["d"], recorded["r"]]
    for journal in (other, starting):
        journal.close()


def test_a_lost_connection_frees_the_jobs_until_the_server_connects_again(
    pg_server,  # type: ignore[no-untyped-def]
    store: PostgresStore,
) -> None:
    """The database ends a server's session (a restart, a failover, a proxy): once the grace has passed
    its running job reads cancelled (its lock went with the session); the server's next call connects
    again, takes its lock again and records its unfinished jobs as they are, and the job's next state
    replaces them."""
    owner = PostgresJobJournal(store, keep=10)
    reader = PostgresJobJournal(store, keep=10, grace=0)
    owner.save(job("r", "running"))
    with pg_server.admin() as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (owner._conn.info.backend_pid,))
    wait_until_gone(pg_server, store, owner.owner)
    assert reader.get("r") == {**job("r", "cancelled"), "error": INTERRUPTED, "embedding": None}
    owner.save(job("s", "running"))  # connects again
    assert reader.get("r") == job("r", "running")  # recorded again as it is
    assert reader.get("s") == job("s", "running")  # the lock is held again: alive
    owner.save(job("r", "done"))
    assert reader.get("r") == job("r", "done")
    for journal in (owner, reader):
        journal.close()


def test_a_live_servers_unfinished_jobs_are_marked_seen_while_they_wait(
    pg_server,  # type: ignore[no-untyped-def]
    store: PostgresStore,
) -> None:
    """The heartbeat marks a server's queued and running jobs seen again and again (so that a server
    that lost its connection a moment ago is not taken for gone), and leaves finished ones alone."""
    journal = PostgresJobJournal(store, keep=10, heartbeat=0.05)
    journal.save(job("q", "queued"))
    journal.save(job("d", "done"))

    def seen() -> dict[str, Any]:
        with pg_server.admin() as admin:
            return dict(admin.execute(f"SELECT id, seen FROM {store.schema}.jobs").fetchall())

    first = seen()
    deadline = time.monotonic() + PATIENCE_S
    while (now := seen())["q"] == first["q"]:
        assert time.monotonic() < deadline, "the queued job was never marked seen again"
        time.sleep(0.05)
    assert now["d"] == first["d"]
    journal.close()


def test_a_job_is_written_by_its_own_server_only_and_the_newest_are_kept(store: PostgresStore) -> None:
    first = PostgresJobJournal(store, keep=3)
    second = PostgresJobJournal(store, keep=3)
    first.save(job("same", "running"))
    second.save(job("same", "done"))  # the same id from another server: not its job
    assert second.get("same") == job("same", "running")
    for n in range(4):
        (first if n % 2 else second).save(job(f"job-{n}", "done"))
    assert [first.get(f"job-{n}") is not None for n in range(4)] == [False, True, True, True]
    assert first.get("same") == job("same", "running")  # only finished jobs are trimmed
    first.close()
    first.save(job("late", "done"))  # closed: ignored
    assert first.get("job-3") is None
    assert second.get("late") is None
    second.close()


def test_a_read_only_store_cannot_hold_the_journal(pg_url: str, store: PostgresStore) -> None:
    with open_store(pg_url, read_only=True) as reader:
        assert isinstance(reader, PostgresStore)
        with pytest.raises(StoreError, match="read-only"):
            PostgresJobJournal(reader, keep=10)


@pytest.mark.slow
def test_two_servers_over_one_knowledge_base_answer_each_others_jobs(pg_url: str, data_dir: Path) -> None:
    """Two servers side by side over one PostgreSQL knowledge base, as behind a load balancer (one of
    them started by ``chunkwise serve``): a job sent to one is answered by the other as it finished."""
    md = data_dir / "formats" / "Baggage Allowance.md"
    with (
        running_app(create_app(pg_url)) as one,
        serve_process("--kb", pg_url) as (two, _),
        httpx.Client(base_url=one, timeout=600) as first,
        httpx.Client(base_url=two, timeout=600) as second,
    ):
        sent = second.post("/v1/documents", files=upload(md)).json()["id"]
        done = wait_job(second, sent)
        assert done["status"] == "done"
        assert done["result"]["added"] == [md.name]
        assert first.get(f"/v1/jobs/{sent}").json() == done
        assert first.get("/v1/jobs").json() == {"jobs": [done]}  # every server's jobs
        assert first.get("/v1/jobs/job-1-00000000").status_code == 404


@pytest.mark.slow
def test_a_server_killed_mid_job_leaves_its_job_cancelled_for_the_other_server(
    pg_url: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two servers over one knowledge base; the one storing a job is killed with SIGKILL part-way: the
    other reads the job cancelled once the grace has passed (none here), with the files handled before
    the kill, and the files sent to it again store the rest, each document once."""
    monkeypatch.setattr(pg_journal, "GRACE_S", 0.0)
    files = sorted((data_dir / "formats").iterdir())
    with running_app(create_app(pg_url)) as survivor, httpx.Client(base_url=survivor, timeout=600) as other:
        with serve_process("--kb", pg_url) as (url, process), httpx.Client(base_url=url, timeout=600) as http:
            sent = http.post("/v1/documents", files=upload(*files)).json()["id"]
            while not http.get(f"/v1/jobs/{sent}").json()["events"]:
                time.sleep(0.05)  # at least one document handled, more on their way
            assert other.get(f"/v1/jobs/{sent}").json()["status"] == "running"  # its server is alive
            process.kill()
            process.wait()
        deadline = time.monotonic() + PATIENCE_S
        while (killed := other.get(f"/v1/jobs/{sent}").json())["status"] == "running":
            assert time.monotonic() < deadline, "the killed server's job still reads running"
            time.sleep(0.05)  # until the database has ended the killed server's session
        assert killed["status"] == "cancelled"
        assert killed["error"] == INTERRUPTED
        handled = [event["source"] for event in killed["events"]]
        assert handled
        again = wait_job(other, other.post("/v1/documents", files=upload(*files)).json()["id"])
        assert again["status"] == "done"
        assert len(again["result"]["added"]) + len(again["result"]["skipped"]) == len(files)
        assert again["result"]["failed"] == []
    with open_store(pg_url) as store:
        assert store.check() == []
        assert store.counts()["documents"] == len(files)


def test_a_role_that_may_only_read_and_write_rows_runs_a_server_and_an_outage_is_an_error(
    pg_server,  # type: ignore[no-untyped-def]
    pg_url: str,
    store: PostgresStore,
) -> None:
    """Once the table exists, a server needs no right to create in the schema, nor the setup lock that
    a re-embedding holds for its whole run; and a journal that cannot reach the database answers a
    :class:`StoreError` (a 503), never "no such job"."""
    PostgresJobJournal(store, keep=10).close()  # the table, made by a role that may
    schema = parse(pg_url).schema
    role = f"dml_{schema}"[:60]
    with pg_server.admin() as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        admin.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    with pg_server.admin() as holder, open_store(pg_server.url(schema, user=role)) as limited:
        assert isinstance(limited, PostgresStore)
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(%s, 0)", (0x63770001,))  # as a re-embedding holds it
        journal = PostgresJobJournal(limited, keep=10)
        holder.execute("ROLLBACK")
        journal.save(job("r", "running"))
        assert journal.get("r") == job("r", "running")
        with pg_server.admin() as admin:
            admin.execute(f'ALTER ROLE "{role}" NOLOGIN')
            admin.execute("SELECT pg_terminate_backend(%s)", (journal._conn.info.backend_pid,))
        with pytest.raises(StoreError, match="not permitted to log in"):
            journal.get("r")
        with pytest.raises(StoreError, match="not permitted to log in"):
            journal.recent(10)
        journal.save(job("r", "done"))  # logged, not raised: the ingest goes on
        journal.close()
