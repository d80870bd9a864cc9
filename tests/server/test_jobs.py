"""The job queue's thread on its own, with the real writer process: a job that fails outside the writer
ends ``failed`` and the queue goes on with the next one; a job counts files done, and keeps a long
document's embedding progress apart."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from chunkwise.config import from_dict, load_config
from chunkwise.server import create_app
from chunkwise.server.jobs import INTERNAL_FAILURE, IngestQueue, Job
from chunkwise.server.writer import WriterProcess
from tests.support.server import running_app, wait_job


def wait_finished(queue: IngestQueue, job: Job, seconds: float = 300) -> Job:
    """``job`` once it has ended (the test fails after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if job.status not in ("queued", "running"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job.id} still {job.status} after {seconds} s")


def test_a_job_failing_outside_the_writer_does_not_stop_the_queue(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's ``run`` raising (as when the writer process cannot be started again) ended the thread
    that feeds the writer: that job stayed ``running`` and every later one ``queued`` for ever. Now the job
    ends ``failed`` with an internal error and the next job is stored."""
    real_run = WriterProcess.run
    calls: list[int] = []

    def failing_once(self: WriterProcess, files: Any, on_event: Any) -> dict[str, Any]:
        calls.append(len(files))
        if len(calls) == 1:
            raise OSError("cannot start the writer process")
        return real_run(self, files, on_event)

    monkeypatch.setattr(WriterProcess, "run", failing_once)
    finished: list[str] = []
    jobs = IngestQueue(
        tmp_path / "kb", load_config(None), size=4, keep=10, on_finish=lambda job, _: finished.append(job.id)
    )
    jobs.start()
    try:
        doc = data_dir / "formats" / "accessories.md"
        first, queued = jobs.submit([(doc.name, doc.read_bytes())])
        second, _ = jobs.submit([(doc.name, doc.read_bytes())])
        assert queued["status"] == "queued"
        assert queued["id"] == first.id
        wait_finished(jobs, first)
        wait_finished(jobs, second)
    finally:
        jobs.stop(60)
    assert (first.status, first.error) == ("failed", {"type": "internal", "message": INTERNAL_FAILURE})
    assert first.finished is not None
    assert first.files == [(doc.name, b"")]
    assert second.status == "done", second.error
    assert [e["status"] for e in second.events] == ["added"]
    assert finished == [second.id]
    # without a journal, the listing is this process's jobs, newest first
    assert jobs.recent(10) == [second.to_dict(), first.to_dict()]
    assert jobs.recent(1) == [second.to_dict()]
    assert jobs.recent(10, "failed") == [first.to_dict()]
    assert jobs.recent(10, "running") == []


#: A configuration that embeds a long document over many calls: small chunks, few texts per call.
MANY_CALLS = {
    "chunking": {"name": "fixed", "params": {"max_size": 40}},
    "retrieval": {"embed_batch": 4},
    "models": {"cache": False},
}


def long_markdown(lines: int = 60) -> bytes:
    """A Markdown document of ``lines`` short paragraphs: many chunks under :data:`MANY_CALLS`."""
    body = "\n\n".join(f"Paragraph {i} of the long document." for i in range(lines))
    return f"# Long\n\n{body}\n".encode()


def test_embedding_progress_is_the_documents_not_a_file_done(tmp_path: Path) -> None:
    """The writer reports each embedding call inside a long document: the job keeps it as that
    document's progress (chunks, embedded), never as a file done, so ``done`` stays within ``total``."""
    writer = WriterProcess(tmp_path / "kb", from_dict(MANY_CALLS))
    files = [("long.md", long_markdown()), ("short.md", b"# Short\n\nA short note.\n")]
    job = Job("job-1", files)
    seen: list[tuple[int, dict[str, Any] | None]] = []

    def record(event: dict[str, Any]) -> None:
        job.record(event)
        body = job.to_dict()
        seen.append((body["done"], body["embedding"]))

    try:
        end = writer.run(files, record)
    finally:
        writer.stop(60)
    assert end["status"] == "done", end
    progress = [embedding for _, embedding in seen if embedding is not None]
    assert len(progress) >= 3
    assert {(p["source"], p["status"]) for p in progress} == {("long.md", "embedding")}
    embedded = [p["embedded"] for p in progress]
    assert embedded == sorted(embedded)
    assert 0 < embedded[-1] < progress[0]["chunks"]
    assert all(done <= len(files) for done, _ in seen)
    assert [(e["source"], e["status"]) for e in job.events] == [("long.md", "added"), ("short.md", "added")]
    assert (job.to_dict()["done"], job.embedding) == (2, None)


def test_a_served_jobs_done_never_passes_its_total(tmp_path: Path) -> None:
    """Polled while a long document is embedded over many calls, a job counts files: ``done`` is within
    ``total`` at every poll and equal to it at the end."""
    app = create_app(tmp_path / "kb", config=from_dict(MANY_CALLS))
    with running_app(app) as url, httpx.Client(base_url=url, timeout=600) as http:
        job = http.post("/v1/documents", files=[("files", ("long.md", long_markdown()))]).json()
        polls = [job]
        while polls[-1]["status"] in ("queued", "running"):
            polls.append(http.get(f"/v1/jobs/{job['id']}").json())
        final = wait_job(http, job["id"])
    assert all(poll["done"] <= poll["total"] == 1 for poll in polls), [p["done"] for p in polls]
    assert final["status"] == "done", final
    assert (final["done"], final["total"], final["embedding"]) == (1, 1, None)
