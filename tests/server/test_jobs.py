"""The job queue's thread on its own, with the real writer process: a job that fails outside the writer
ends ``failed`` and the queue goes on with the next one."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from chunkwise.config import load_config
from chunkwise.server.jobs import INTERNAL_FAILURE, IngestQueue, Job
from chunkwise.server.writer import WriterProcess


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
        first = jobs.submit([(doc.name, doc.read_bytes())])
        second = jobs.submit([(doc.name, doc.read_bytes())])
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
