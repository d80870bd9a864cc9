"""The ingest writer's own process: it parses, chunks, embeds and stores the server's ingest jobs, one at a
time, on its own connection to the store.

Why a process and not a thread of the server: ingesting is CPU work (parsing and chunking hold Python's
GIL, embedding holds the cores), and in the server's process it made every search wait behind it (on two
cores, a search's p99 under a steady ingest was 20 times its p50 alone). In a process of its own the
writer shares no GIL with the readers, and it runs at a lower CPU priority (``nice``), so the operating
system gives a core to a search first and the rest to ingesting. Readers see each stored document as
soon as it commits: the store's generation counter tells them to reload (:mod:`chunkwise.store.sqlite`),
PostgreSQL reads the committed rows.

The two processes speak over a pipe. The server sends a job as its uploads, ``(name, content)`` pairs;
the writer answers with ``("event", {...})`` for each file handled (its ``source``, ``status`` and
``chunks``) and between two embedding calls inside a long document (``status`` ``embedding``, with the
``chunks`` ``embedded`` so far), and one ``("end", {...})`` per job (status, result or error, the
accounting of its model calls and, for the server's log, a bug's traceback or the whole message of an
error that names the server's files, which the client's message leaves out). The writer stops between
two documents when the server asks (``stopping``), so an interrupted job leaves each document whole or
absent, as a job sent again expects.
A second pipe is the writer's lifeline: the server never writes to it, and the writer exits the moment it
reads its end, which the operating system closes when the server's process ends however it ends (a
``kill -9`` included), mid-document if need be (SQLite and PostgreSQL roll that document's transaction
back): nothing of the server goes on writing after it is gone.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnProcess
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from chunkwise.config import PipelineConfig
from chunkwise.errors import ChunkwiseError
from chunkwise.ingest.pipeline import IngestPipeline
from chunkwise.ingest.report import IngestEvent
from chunkwise.kb import KnowledgeBase, record_config
from chunkwise.models.context import Models
from chunkwise.results import ingest_body
from chunkwise.server.errors import INTERNAL, public_message, typed_status

#: How much lower than the server the writer runs (``nice`` increment; 19 is the lowest priority).
WRITER_NICENESS = 10


class _StoppingError(Exception):
    """Raised between two documents of a running job when the server shuts down."""


class WriterProcess:
    """The writer process of one server: started with :meth:`start`, given jobs with :meth:`run`."""

    def __init__(self, location: str | Path, config: PipelineConfig) -> None:
        self.location = location
        self.config = config
        self._context = multiprocessing.get_context("spawn")
        self._stopping: Event = self._context.Event()
        self._process: SpawnProcess | None = None
        self._conn: Connection | None = None
        self._lifeline: Connection | None = None

    def start(self) -> None:
        """Start the process (a fresh one: it imports chunkwise and opens the store; the models load on
        the first job)."""
        ours, theirs = self._context.Pipe()
        watched, lifeline = self._context.Pipe(duplex=False)  # the writer reads, the server holds
        process = self._context.Process(
            target=_serve,
            args=(theirs, watched, self.location, self.config, self._stopping),
            name="chunkwise-writer",
            daemon=True,
        )
        process.start()
        theirs.close()
        watched.close()
        if self._lifeline is not None:  # a dead writer's
            self._lifeline.close()
        self._process, self._conn, self._lifeline = process, ours, lifeline

    def run(
        self, files: list[tuple[str, bytes]], on_event: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        """Store ``files`` as one job; ``on_event`` gets each file's event as it is handled. Returns the
        job's end (``status``, ``result``, ``error``, ``accounting``, ``traceback``). A writer that died
        meanwhile is restarted for the next job, and this one ends ``failed``."""
        if self._process is None or not self._process.is_alive():
            if self._stopping.is_set():
                return failed_end("the server is stopping; send the files again", "")
            self.start()
        assert self._conn is not None
        try:
            self._conn.send(files)
            while True:
                kind, body = self._conn.recv()
                if kind == "end":
                    return dict(body)
                on_event(body)
        except (EOFError, OSError):
            self._conn.close()
            code = None
            if self._process is not None:
                self._process.join(1)
                code = self._process.exitcode
            self._process = None
            return failed_end(
                "the writer process died (the server's log has it)",
                f"the writer process ended with exit code {code}",
            )

    @property
    def exitcode(self) -> int | None:
        """The process's exit code once it has ended (``None`` while it runs or before it starts)."""
        return None if self._process is None else self._process.exitcode

    def stopping(self) -> None:
        """Tell a running job to stop after the document it is storing (it still sends its end)."""
        self._stopping.set()

    def stop(self, timeout: float) -> None:
        """Stop the writer: no job after this, the running one ends after its document; wait ``timeout``
        seconds for the process to end, then end it."""
        self._stopping.set()
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
        if self._process is not None:
            self._process.join(timeout)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(timeout)
        if self._lifeline is not None:
            self._lifeline.close()


def failed_end(message: str, log: str) -> dict[str, Any]:
    """The end of a job the writer could not run: failed, ``message`` for the client, ``log`` (if any)
    for the server's log."""
    return {
        "status": "failed",
        "result": None,
        "error": {"type": "internal", "message": message},
        "accounting": {},
        "traceback": log,
    }


def _serve(
    conn: Connection, lifeline: Connection, location: str | Path, config: PipelineConfig, stopping: Event
) -> None:
    """The writer process: take jobs from ``conn`` until it closes, answer each as the module says; exit
    at once when ``lifeline`` ends (the server is gone)."""
    threading.Thread(target=_exit_with_server, args=(lifeline,), name="lifeline", daemon=True).start()
    # Ctrl-C in the server's terminal reaches this process too, and a service manager's SIGTERM may:
    # the server decides when the writer stops (after the document it is storing), not the signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    with contextlib.suppress(OSError):  # a platform or a sandbox that refuses: run at the same priority
        os.nice(WRITER_NICENESS)
    with KnowledgeBase(location, config) as kb:
        while True:
            try:
                files = conn.recv()
            except (EOFError, OSError):
                return  # the server closed the pipe or is gone
            end = _run_job(kb, files, lambda event: conn.send(("event", event)), stopping)
            try:
                conn.send(("end", end))
            except OSError:
                return


def _exit_with_server(lifeline: Connection) -> None:
    """Wait for the end of the server's side of ``lifeline`` (nothing is ever sent on it), then end this
    process without cleaning up: the document being stored is rolled back by the store."""
    with contextlib.suppress(EOFError, OSError):
        lifeline.recv_bytes()
    os._exit(0)


def _run_job(
    kb: KnowledgeBase,
    files: list[tuple[str, bytes]],
    send: Callable[[dict[str, Any]], None],
    stopping: Event,
) -> dict[str, Any]:
    """One job over ``kb``'s store with a model context of its own (one ledger, one budget)."""
    models = Models(kb.config.models)

    def on_progress(event: IngestEvent) -> None:
        body: dict[str, Any] = {"source": event.source, "status": event.status, "chunks": event.chunks}
        if event.status == "embedding":
            body["embedded"] = event.embedded
        send(body)
        # a stop ends the job between files, never after its last one: a job whose every file was
        # handled is done, with its result (it read "cancelled", its report dropped)
        if stopping.is_set() and event.done < event.total:
            raise _StoppingError

    end: dict[str, Any] = {"status": "done", "result": None, "error": None, "traceback": None}
    try:
        record_config(kb.store, kb.config)
        report = IngestPipeline(kb.store, models, kb.config).add_bytes(files, on_progress)
        end["result"] = ingest_body(report, models, kb.store)
    except _StoppingError:
        end["status"] = "cancelled"
        end["error"] = {"type": "cancelled", "message": "the server stopped; send the files again"}
    except ChunkwiseError as exc:
        end["status"] = "failed"
        end["error"] = {"type": typed_status(exc)[1], "message": public_message(exc)}
        if end["error"]["message"] != str(exc):  # it names the server's files: the log gets it whole
            end["traceback"] = str(exc)
    except Exception:  # the writer must outlive a bug in one job; the server's log gets the traceback
        end["status"] = "failed"
        end["error"] = {"type": INTERNAL[1], "message": INTERNAL[2]}
        end["traceback"] = traceback.format_exc()
    end["accounting"] = models.accounting()
    return end
