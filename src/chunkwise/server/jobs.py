"""Ingest jobs: uploads queued in a bounded queue and stored by one writer, one job at a time.

One writer is all a store takes (SQLite serialises writers anyway, and one at a time keeps the order of
jobs the order of requests), while readers search the same store on their own connection. The writer is
a process of its own (:mod:`.writer`), so ingesting never holds the readers' GIL and runs at a lower CPU
priority than searches; a thread of the server hands it one job at a time and records its progress.
Each job is one run: its own :class:`~chunkwise.models.Models` (one ledger, one budget) and one ingest
pipeline, each document in its own transaction, so a crash or ``kill -9`` leaves every document whole or
absent and a job sent again stores what is missing and skips the rest.

Jobs live in memory while they run, and in the server's journal (:mod:`.journal`) as of each change, so
a job's id keeps its answer after a restart (and, over PostgreSQL, on every server over the knowledge
base): a job the restart interrupted reads ``cancelled``, and a client sends its files again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import math
import queue
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from chunkwise.config import PipelineConfig
from chunkwise.server.journal import JobJournal
from chunkwise.server.writer import WriterProcess, failed_end

logger = logging.getLogger("chunkwise.server")

JobStatus = Literal["queued", "running", "done", "failed", "cancelled"]

#: Seconds a client is asked to wait when the queue is full and no job has finished yet.
DEFAULT_RETRY_AFTER = 5
#: The longest ``Retry-After`` the server asks for.
MAX_RETRY_AFTER = 300
#: What a client is told of a job that failed in the server rather than in the writer.
INTERNAL_FAILURE = "the ingest job failed in the server (the server's log has it); send the files again"


class QueueFullError(Exception):
    """The ingest queue holds as many jobs as it may; ``retry_after`` is a fair wait in seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the ingest queue is full; retry in {retry_after} s")
        self.retry_after = retry_after


@dataclass
class Job:
    """One ingest request: its files, where it stands and, once finished, its report or error.

    ``events`` lists each file handled so far (source, status, chunks), so ``done`` counts them;
    ``embedding`` is the progress of the document being embedded over several calls (its source, its
    ``chunks`` and how many are ``embedded``; ``None`` between documents); ``result`` is the ingest body
    of :func:`~chunkwise.results.ingest_body` (the CLI's ``ingest --json``), with each failed file and why.
    """

    id: str
    files: list[tuple[str, bytes]] = field(repr=False)
    status: JobStatus = "queued"
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    embedding: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, str] | None = None

    def record(self, event: dict[str, Any]) -> None:
        """Take one of the writer's events: a file's outcome joins ``events``; an ``embedding`` event,
        sent between the embedding calls of a long document, is that document's progress, not a file
        done, and replaces ``embedding`` until the document's outcome."""
        if event["status"] == "embedding":
            self.embedding = event
        else:
            self.events.append(event)
            self.embedding = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``GET /v1/jobs/{id}``)."""
        return {
            "id": self.id,
            "status": self.status,
            "files": [name for name, _ in self.files],
            "done": len(self.events),
            "total": len(self.files),
            "events": list(self.events),
            "embedding": self.embedding,
            "created": self.created,
            "started": self.started,
            "finished": self.finished,
            "result": self.result,
            "error": self.error,
        }


class IngestQueue:
    """The bounded job queue, and the thread that hands its jobs to the writer process over ``location``.

    ``on_finish`` is told about every finished job and the accounting of its model calls (the server
    counts both). ``journal``, when given, records every job as it changes (and is closed by
    :meth:`stop`).
    """

    def __init__(
        self,
        location: str | Path,
        config: PipelineConfig,
        *,
        size: int,
        keep: int,
        on_finish: Callable[[Job, dict[str, Any]], None],
        journal: JobJournal | None = None,
    ) -> None:
        self.keep = keep
        self.on_finish = on_finish
        self.journal = journal
        self._writer = WriterProcess(location, config)
        self._queue: queue.Queue[Job | None] = queue.Queue(maxsize=size)
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._submitting = threading.Lock()
        self._stopping = threading.Event()
        self._durations: deque[float] = deque(maxlen=20)
        self._counter = itertools.count(1)
        self._thread = threading.Thread(target=self._work, name="chunkwise-jobs", daemon=True)

    def start(self) -> None:
        """Start the writer process and the thread that feeds it."""
        self._writer.start()
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the document being stored (a running job ends ``cancelled``); queued jobs stay
        queued and are forgotten with the process."""
        self._stopping.set()
        self._writer.stopping()
        with contextlib.suppress(queue.Full):  # a full queue: the flag alone stops the thread
            self._queue.put_nowait(None)
        self._thread.join(timeout)
        self._writer.stop(timeout)
        if self.journal is not None:
            self.journal.close()  # a thread that outlived the join saves nothing more

    @property
    def alive(self) -> bool:
        """Whether the thread that hands jobs to the writer still runs (queued jobs wait for ever
        without it)."""
        return self._thread.is_alive()

    @property
    def depth(self) -> int:
        """Jobs waiting (not counting the running one)."""
        return self._queue.qsize()

    def submit(self, files: list[tuple[str, bytes]]) -> tuple[Job, dict[str, Any]]:
        """Queue ``files`` (``(name, content)`` pairs) as one job; :class:`QueueFullError` when full. The
        job, and its JSON form as queued: what its sender is answered, since the thread that feeds the
        writer may have started it by the time the sender reads it."""
        job = Job(f"job-{next(self._counter)}-{secrets.token_hex(8)}", files)
        queued = job.to_dict()
        # Only this puts into the queue, one submission at a time: a queue not full now takes the job
        # below. Readers of the jobs (``_lock``) do not wait for the journal's write meanwhile.
        with self._submitting:
            if self._queue.full():
                raise QueueFullError(self.retry_after())
            self._record(queued)  # before the thread can take the job and record it running
            try:
                self._queue.put_nowait(job)
            except queue.Full:  # the stop's own entry came first: the server is stopping
                raise QueueFullError(self.retry_after()) from None
            with self._lock:
                self._jobs[job.id] = job
                self._forget_old()
        return job, queued

    def describe(self, job_id: str) -> dict[str, Any] | None:
        """The JSON form of the job called ``job_id`` (one of this process's, else the journal's),
        ``None`` if unknown (or long forgotten)."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is not None:
            return job.to_dict()
        return self.journal.get(job_id) if self.journal is not None else None

    def recent(self, limit: int, status: JobStatus | None = None) -> list[dict[str, Any]]:
        """The JSON forms of the newest ``limit`` jobs (of ``status`` only, when given), newest first: the
        journal's (every server's, over PostgreSQL), with this process's own as they are now (their
        embedding progress is not journalled); this process's alone without a journal."""
        with self._lock:
            mine = {job.id: job.to_dict() for job in self._jobs.values()}
        if self.journal is None:
            listed = [body for body in reversed(mine.values()) if status is None or body["status"] == status]
            return listed[:limit]
        return [
            mine[body["id"]] if mine.get(body["id"], {}).get("status") == body["status"] else body
            for body in self.journal.recent(limit, status)
        ]

    def _save(self, job: Job) -> None:
        """Record ``job`` as it is now in the journal, if there is one."""
        self._record(job.to_dict())

    def _record(self, body: dict[str, Any]) -> None:
        """Record a job's JSON form ``body`` in the journal, if there is one."""
        if self.journal is not None:
            self.journal.save(body)

    def retry_after(self) -> int:
        """Seconds until a slot is likely free: the mean duration of recent jobs, at least one second."""
        if not self._durations:
            return DEFAULT_RETRY_AFTER
        mean = sum(self._durations) / len(self._durations)
        return min(MAX_RETRY_AFTER, max(1, math.ceil(mean)))

    def _forget_old(self) -> None:
        finished = [j.id for j in self._jobs.values() if j.status not in ("queued", "running")]
        for job_id in finished[: max(0, len(self._jobs) - self.keep)]:
            del self._jobs[job_id]

    def _work(self) -> None:
        """Hand each queued job to the writer. A job that fails here, outside the writer (the writer
        cannot be restarted, a bug), ends ``failed`` and the next one is taken: the thread ending would
        leave every later job queued for ever and the queue full."""
        while not self._stopping.is_set():
            job = self._queue.get()
            if job is None:
                break
            try:
                self._run(job)
            except Exception:
                logger.exception("ingest job %s failed", job.id)
                if job.finished is None:
                    self._end(job, failed_end(INTERNAL_FAILURE, ""))

    def _run(self, job: Job) -> None:
        """Run ``job`` on the writer. Each change is journalled before a reader can see it, so a client
        never reads a state that a restart would take back."""
        job.started = time.time()
        self._save(dataclasses.replace(job, status="running"))
        job.status = "running"  # set last: a reader that sees it sees the start time

        def record(event: dict[str, Any]) -> None:
            if event["status"] != "embedding":  # a file handled, not the progress of one
                ahead = dataclasses.replace(job, events=list(job.events))
                ahead.record(event)
                self._save(ahead)
            job.record(event)

        end = self._writer.run(job.files, record)
        if end["traceback"]:
            logger.error("ingest job %s failed:\n%s", job.id, end["traceback"])
        self._end(job, end)
        self._durations.append((job.finished or 0.0) - job.started)
        self.on_finish(job, end["accounting"])

    def _end(self, job: Job, end: dict[str, Any]) -> None:
        """Record ``end`` (the writer's answer) on ``job``, journalled first; its status last, so that a
        reader that sees the job finished sees its result, error and end time too."""
        job.result, job.error = end["result"], end["error"]
        job.finished = time.time()
        job.files = [(name, b"") for name, _ in job.files]  # the uploads are stored; free their memory
        self._save(dataclasses.replace(job, status=end["status"]))
        job.status = end["status"]
