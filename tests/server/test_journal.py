"""Ingest jobs outlive the server: a job's id keeps its answer after a restart, and a job the restart
interrupted reads ``cancelled`` (real servers over one knowledge base, one after the other)."""

from __future__ import annotations

from pathlib import Path

import httpx

from chunkwise.server import ServerSettings, create_app
from chunkwise.server.journal import INTERRUPTED, JOURNAL_NAME, SQLiteJobJournal
from tests.support.server import error_of, running_app, upload, wait_job


def test_a_finished_job_reads_the_same_after_a_restart(tmp_path: Path, data_dir: Path) -> None:
    kb = tmp_path / "kb"
    md = data_dir / "formats" / "Baggage Allowance.md"
    with running_app(create_app(kb)) as url, httpx.Client(base_url=url, timeout=600) as http:
        job = wait_job(http, http.post("/v1/documents", files=upload(md)).json()["id"])
    assert job["status"] == "done"
    assert job["result"]["added"] == [md.name]
    assert (kb / JOURNAL_NAME).is_file()
    with running_app(create_app(kb)) as url, httpx.Client(base_url=url, timeout=600) as http:
        assert http.get(f"/v1/jobs/{job['id']}").json() == job
        unknown = http.get("/v1/jobs/job-1-00000000")
        assert unknown.status_code == 404
        assert error_of(unknown)["type"] == "not_found"


def test_a_job_the_restart_interrupted_reads_cancelled(tmp_path: Path, data_dir: Path) -> None:
    """Two jobs sent, the server stopped at once: the first ends after the document it is storing, the
    second never starts; after a restart neither reads queued or running, and the second says to send
    its files again."""
    kb = tmp_path / "kb"
    files = sorted((data_dir / "formats").iterdir())
    journal = tmp_path / "elsewhere" / "jobs.sqlite3"
    journal.parent.mkdir()
    settings = ServerSettings(jobs_file=journal)
    with (
        running_app(create_app(kb, settings=settings)) as url,
        httpx.Client(base_url=url, timeout=600) as http,
    ):
        first = http.post("/v1/documents", files=upload(*files)).json()["id"]
        second = http.post("/v1/documents", files=upload(files[0])).json()["id"]
    assert not (kb / JOURNAL_NAME).exists()  # the named file, not the default
    with (
        running_app(create_app(kb, settings=settings)) as url,
        httpx.Client(base_url=url, timeout=600) as http,
    ):
        interrupted = http.get(f"/v1/jobs/{second}").json()
        assert interrupted["status"] == "cancelled"
        assert interrupted["error"] == INTERRUPTED
        assert interrupted["files"] == [files[0].name]
        earlier = http.get(f"/v1/jobs/{first}").json()
        assert earlier["status"] in ("cancelled", "done")
        # the listing reads the journal: the previous process's jobs, newest first
        assert http.get("/v1/jobs").json() == {"jobs": [interrupted, earlier]}
        assert http.get("/v1/jobs", params={"limit": 1}).json() == {"jobs": [interrupted]}
        assert http.get("/v1/jobs", params={"status": "running"}).json() == {"jobs": []}
        assert interrupted in http.get("/v1/jobs", params={"status": "cancelled"}).json()["jobs"]
        for wrong in ({"limit": 0}, {"limit": 1001}, {"status": "stuck"}):
            refused = http.get("/v1/jobs", params=wrong)
            assert refused.status_code == 422, wrong
            assert error_of(refused)["type"] == "invalid_request"


def test_the_journal_keeps_the_newest_jobs_and_ignores_saves_once_closed(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite3"
    journal = SQLiteJobJournal(path, keep=3)
    for n in range(5):
        journal.save({"id": f"job-{n}", "status": "done" if n % 2 else "running", "error": None})
    journal.save({"id": "job-2", "status": "done", "error": None})  # an update keeps its place
    assert [journal.get(f"job-{n}") is not None for n in range(5)] == [False, False, True, True, True]
    journal.close()
    journal.save({"id": "job-9", "status": "done", "error": None})
    assert journal.get("job-4") is None
    reopened = SQLiteJobJournal(path, keep=3)
    assert reopened.get("job-9") is None
    assert reopened.get("job-2") == {"id": "job-2", "status": "done", "error": None}
    assert reopened.get("job-3") == {"id": "job-3", "status": "done", "error": None}
    assert reopened.get("job-4") == {
        "id": "job-4",
        "status": "cancelled",
        "error": INTERRUPTED,
        "embedding": None,
    }
    assert [job["id"] for job in reopened.recent(10)] == ["job-4", "job-3", "job-2"]  # newest first
    assert [job["id"] for job in reopened.recent(10, "done")] == ["job-3", "job-2"]
    assert reopened.recent(1, "cancelled") == [reopened.get("job-4")]
    reopened.close()
    assert reopened.recent(10) == []
