"""The writer process on its own: it outlives the thread that started it (a writer restarted by the
server's job thread serves until the server stops it) and stops cleanly."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from chunkwise.config import load_config
from chunkwise.kb import KnowledgeBase
from chunkwise.server.writer import WriterProcess, _run_job
from chunkwise.store.sqlite import SQLiteStore


def test_a_writer_started_by_a_thread_that_ended_serves_and_stops_cleanly(
    tmp_path: Path, data_dir: Path
) -> None:
    """A thread starts the writer with a first job and ends; the writer still takes the next job, then
    ends with exit code 0 when stopped."""
    writer = WriterProcess(tmp_path / "kb", load_config(None))
    docs = [data_dir / "formats" / name for name in ("accessories.md", "Boarding Process.md")]
    ends: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []

    def job(path: Path) -> None:
        ends.append(writer.run([(path.name, path.read_bytes())], events.append))

    starter = threading.Thread(target=job, args=(docs[0],))  # no writer yet: this thread starts it
    starter.start()
    starter.join()
    try:
        job(docs[1])
    finally:
        writer.stop(60)
    assert [end["status"] for end in ends] == ["done", "done"], ends
    assert [e["status"] for e in events] == ["added", "added"]
    assert writer.exitcode == 0
    with SQLiteStore(tmp_path / "kb") as store:
        assert sorted(d.doc_id for d in store.documents()) == sorted(d.name for d in docs)


def test_a_stop_after_a_jobs_last_file_leaves_it_done_with_its_result(tmp_path: Path, data_dir: Path) -> None:
    """The server was told to stop as the last file of a job was stored: the job read ``cancelled`` and
    its report was dropped, though every file was handled. A stop ends a job between files only."""
    formats = data_dir / "formats"
    names = ("Boarding Process.md", "Baggage Allowance.md")
    files = [(name, (formats / name).read_bytes()) for name in names]
    stopping = threading.Event()
    stopping.set()  # a stop asked before the job's first event
    sent: list[dict[str, Any]] = []
    with KnowledgeBase(tmp_path / "kb", load_config(preset="fast")) as kb:
        last = _run_job(kb, files[:1], sent.append, stopping)
        assert (last["status"], last["error"]) == ("done", None)
        assert last["result"]["added"] == ["Boarding Process.md"]
        both = _run_job(kb, files, sent.append, stopping)  # stopped after its first of two files
        assert (both["status"], both["result"]) == ("cancelled", None)
        assert [d.doc_id for d in kb.documents()] == ["Boarding Process.md"]
    assert [(e["source"], e["status"]) for e in sent] == [
        ("Boarding Process.md", "added"),
        ("Boarding Process.md", "skipped"),
    ]
