"""The writer process on its own: it outlives the thread that started it (a writer restarted by the
server's job thread serves until the server stops it) and stops cleanly."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from chunkwise.config import load_config
from chunkwise.server.writer import WriterProcess
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
