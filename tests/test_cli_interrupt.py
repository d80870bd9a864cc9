"""Ctrl-C during ``chunkwise ingest``: one ``error: interrupted`` line, exit status 130, and a store that
holds only whole documents (each one is stored in its own transaction)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.support.cli import run_chunkwise

#: A device every write to fails.
FULL = Path("/dev/full")
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


#: The real command group and entry point with one more command, which sends itself SIGINT (what Ctrl-C
#: sends) and waits for it: a Ctrl-C that lands in a command every time, at no particular moment of
#: an ingest.
_CTRL_C_IN_A_COMMAND = """
import os, signal, time
from chunkwise.cli.main import app, run

signal.signal(signal.SIGINT, signal.default_int_handler)  # not inherited ignored from a background run

@app.command("ctrl-c")
def ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(60)

run()
"""


@pytest.mark.parametrize(
    ("stderr_to", "status"),
    [("pipe", 130), ("closed pipe", 141), ("full device", 130)],
)
def test_ctrl_c_with_a_failing_stderr(tmp_path, stderr_to, status):
    """The ``error: interrupted`` line written on a stderr whose reader has gone (``2>&1 | head``) failed
    in the command group's handling of the interrupt, and click ended the command with status 1. It ends
    with 141, quietly, as for a closed stdout; on a full device the interrupt's 130 stays."""
    if stderr_to == "full device" and not FULL.exists():
        pytest.skip("needs /dev/full, a device every write to fails")
    with ExitStack() as stack:
        if stderr_to == "pipe":
            stderr: int = subprocess.PIPE
        elif stderr_to == "full device":
            stderr = stack.enter_context(FULL.open("w")).fileno()
        else:
            read_end, stderr = os.pipe()
            os.close(read_end)
            stack.callback(os.close, stderr)
        done = subprocess.run(
            [sys.executable, "-c", _CTRL_C_IN_A_COMMAND, "ctrl-c"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=120,
            check=False,
        )
    assert (done.returncode, done.stdout) == (status, "")
    if stderr_to == "pipe":
        assert done.stderr == "error: interrupted\n"
