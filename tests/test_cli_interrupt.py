"""Ctrl-C during ``chunkwise ingest``: one ``error: interrupted`` line, exit status 130, and a store that
holds only whole documents (each one is stored in its own transaction)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli import run_chunkwise

#: Documents to ingest: far more than are stored before the interrupt is sent.
COPIES = 400


def _stored_documents(database: Path) -> int:
    """How many documents the store has committed so far (0 before it exists)."""
    if not database.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
            return int(connection.execute("SELECT count(*) FROM documents").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is still being created
        return 0


def test_ctrl_c_during_ingest_exits_130_with_one_line_and_keeps_whole_documents(data_dir, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    # Every line of each copy is its own, so each document is embedded anew (identical copies come from
    # the embedding cache): the ingest takes a while after the first document, and the signal lands in it.
    lines = (data_dir / "formats" / "Boarding Process.md").read_text(encoding="utf-8").splitlines()
    for i in range(COPIES):
        text = "\n".join(f"{line} (copy {i})" if line.strip() else line for line in lines)
        (folder / f"copy {i:03d}.md").write_text(text, encoding="utf-8")
    kb = tmp_path / "kb"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    # A test run started in the background has SIGINT ignored, and a child inherits that (a Python
    # started so keeps ignoring it: the ingest would run to its end, exit status 0). A handled signal is
    # not inherited: with Python's own handler here for the moment, the child starts with the default.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "chunkwise", "ingest", str(folder), "--kb", str(kb)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        while _stored_documents(kb / "kb.sqlite") == 0 and process.poll() is None:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "error: interrupted"
    assert out == ""
    stored = _stored_documents(kb / "kb.sqlite")
    assert 0 < stored < COPIES
    with sqlite3.connect(f"file:{kb / 'kb.sqlite'}?mode=ro", uri=True) as connection:
        bare = connection.execute(
            "SELECT count(*) FROM documents d"
            " WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.doc_id = d.doc_id)"
        ).fetchone()[0]
    assert bare == 0
    check = run_chunkwise("kb", "check", "--kb", str(kb))
    assert check.returncode == 0, check.stdout
    assert check.stdout.startswith(f"ok: {stored} documents")
