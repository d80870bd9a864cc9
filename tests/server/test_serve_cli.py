"""``chunkwise serve`` as a user runs it: the README's curl examples against a real server process, the
refusals that exit 2 with one line, and a ``kill -9`` in the middle of an ingest job, which ends the
server's writer process too, after which the store is consistent and the job can be sent again."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from chunkwise.server.journal import INTERRUPTED
from chunkwise.store.sqlite import SQLiteStore
from tests.support.cli import run_chunkwise
from tests.support.readme import console_commands, matches, readme_blocks, run_console, starts_a_server
from tests.support.server import (
    PATIENCE_S,
    free_port,
    serve_process,
    stop,
    upload,
    wait_healthy,
    wait_job,
    writer_processes,
)

REPO = Path(__file__).resolve().parents[2]
README_PORT = "localhost:8000"
KEY = "test-key-0123"


def test_non_loopback_without_a_key_and_an_unset_key_variable_are_refused(tmp_path: Path) -> None:
    kb = str(tmp_path / "kb")
    refused = run_chunkwise("serve", "--kb", kb, "--host", "0.0.0.0")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "error: refusing to listen on 0.0.0.0 without an API key: set one with --api-key-env NAME "
        "or listen on 127.0.0.1"
    ]
    unset = run_chunkwise("serve", "--kb", kb, "--api-key-env", "CHUNKWISE_TEST_UNSET_KEY")
    assert unset.returncode == 2
    assert unset.stderr.splitlines() == [
        "error: --api-key-env CHUNKWISE_TEST_UNSET_KEY: the variable is unset or empty"
    ]
    assert not (tmp_path / "kb").exists()  # refused before anything was created


def test_a_store_that_cannot_be_served_and_out_of_range_options_are_one_line(tmp_path: Path) -> None:
    """Checked before the server starts: one ``error:`` line and exit 2 (uvicorn would print a traceback
    from its start-up, or Python's socket module refuse the port), nothing served."""
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "kb.sqlite").write_bytes(b"this is not a SQLite database" * 200)
    refused = run_chunkwise("serve", "--kb", str(damaged))
    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"error: {damaged}: kb.sqlite is not a SQLite database")
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("x")
    refused = run_chunkwise("serve", "--kb", str(not_a_directory))
    assert (refused.returncode, refused.stderr.splitlines()) == (
        2,
        [f"error: {not_a_directory}: not a directory"],
    )
    for option, value in (
        ("--port", "99999"),
        ("--max-upload-mb", "inf"),
        ("--timeout", "nan"),
        ("--body-timeout", "0"),
    ):
        refused = run_chunkwise("serve", "--kb", str(tmp_path / "kb"), option, value)
        assert refused.returncode == 2, (option, refused.stderr)
        assert option in refused.stderr
    assert not (tmp_path / "kb").exists()


def test_a_jobs_journal_that_cannot_be_used_is_one_line(tmp_path: Path) -> None:
    """The default journal in the knowledge base's directory, or the one ``--jobs-file`` names, damaged
    or in a directory that does not exist: one ``error:`` line naming the file, exit 2."""
    kb = tmp_path / "kb"
    SQLiteStore(kb).close()  # an empty knowledge base
    (kb / "jobs.sqlite3").write_bytes(b"this is not a SQLite database" * 200)
    refused = run_chunkwise("serve", "--kb", str(kb))
    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"error: {kb / 'jobs.sqlite3'}: the jobs journal cannot be used (")
    missing = tmp_path / "no such directory" / "jobs.sqlite3"
    refused = run_chunkwise("serve", "--kb", str(kb), "--jobs-file", str(missing))
    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith(
        f"error: {missing}: the jobs journal cannot be used (unable to open database file)"
    )


def test_the_readme_curl_examples(tmp_path: Path) -> None:
    """The README block that starts with ``chunkwise serve``: the server is started as written (on a free
    port instead of 8000), with the README's knowledge base, and every curl line prints what it shows."""
    blocks = [body for lang, body in readme_blocks() if lang == "console" and starts_a_server(body)]
    assert len(blocks) == 1
    (serve, _), *commands = console_commands(blocks[0])
    for name in ("tests", "samples"):
        (tmp_path / name).symlink_to(REPO / name)
    run_chunkwise("ingest", "samples/docs", "--kb", "my-kb", check=True, cwd=tmp_path)
    args = shlex.split(serve)[2:]  # after "chunkwise serve"
    env = {"CHUNKWISE_API_KEY": KEY}
    with serve_process(*args, env=env, cwd=tmp_path) as (url, _):
        address = url.removeprefix("http://")
        for command, expected in commands:
            result = run_console(command.replace(README_PORT, address), tmp_path, {**os.environ, **env})
            assert result.returncode == 0, f"{command}\n{result.stderr}"
            assert matches(expected, result.stdout), (
                f"{command}\nexpected:\n{expected}\nprinted:\n{result.stdout}"
            )


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from Linux's /proc")
def test_kill_9_mid_ingest_leaves_a_consistent_store_and_the_job_can_be_sent_again(
    tmp_path: Path, data_dir: Path
) -> None:
    kb = tmp_path / "kb"
    files = sorted((data_dir / "formats").iterdir())
    with serve_process("--kb", str(kb)) as (url, process), httpx.Client(base_url=url, timeout=600) as http:
        job = http.post("/v1/documents", files=upload(*files)).json()
        writers = writer_processes(process.pid)
        assert len(writers) == 1  # the writer process, started with the server
        while not http.get(f"/v1/jobs/{job['id']}").json()["events"]:
            time.sleep(0.05)  # at least one document handled, more on their way
        process.kill()
        process.wait()
    deadline = time.monotonic() + 60
    while Path(f"/proc/{writers[0]}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{writers[0]}").exists(), "the writer outlived the server"
    with SQLiteStore(kb) as store:
        assert store.check() == []
        stored = store.counts()["documents"]
    assert 0 < stored <= len(files)
    with serve_process("--kb", str(kb)) as (url, _), httpx.Client(base_url=url, timeout=600) as http:
        killed = http.get(f"/v1/jobs/{job['id']}").json()  # the journal's record, as of the kill
        assert killed["status"] == "cancelled"
        assert killed["error"] == INTERRUPTED
        handled = [event["source"] for event in killed["events"]]
        assert handled  # what was handled before the kill is listed
        assert set(handled) <= {path.name for path in files}
        again = wait_job(http, http.post("/v1/documents", files=upload(*files)).json()["id"])
        result = again["result"]
        assert again["status"] == "done"
        assert len(result["skipped"]) == stored  # what was committed before the kill is whole
        assert len(result["added"]) + len(result["skipped"]) == len(files)
        assert result["failed"] == []
    with SQLiteStore(kb) as store:
        assert store.check() == []
        assert store.counts()["documents"] == len(files)


def test_connections_held_open_past_max_connections_get_503_not_a_dead_server(tmp_path: Path) -> None:
    """Clients that open connections and send nothing hold them (the server times none out): past
    ``--max-connections`` a request is answered 503 at once instead of the process running out of file
    descriptors, and the server answers again once they close."""
    kb = tmp_path / "kb"
    with serve_process("--kb", str(kb), "--max-connections", "4") as (url, _):
        host, port = url.removeprefix("http://").split(":")
        idle = [socket.create_connection((host, int(port))) for _ in range(4)]
        try:
            time.sleep(0.5)  # the server has accepted them
            with httpx.Client(base_url=url, timeout=30) as http:
                assert http.get("/healthz").status_code == 503
        finally:
            for connection in idle:
                connection.close()
        time.sleep(0.5)
        with httpx.Client(base_url=url, timeout=30) as http:
            assert http.get("/healthz").status_code == 200


def test_sigterm_stops_the_server_cleanly_with_status_143(tmp_path: Path) -> None:
    """``kill`` (SIGTERM), as a service manager stops a server: uvicorn shuts down gracefully, the
    writer process ends, and the process exits 143 through Python's exit handlers, so nothing is
    reported leaked (it died of the re-raised signal before, and multiprocessing's resource tracker
    warned of the writer's semaphores on every stop)."""
    kb = tmp_path / "kb"
    SQLiteStore(kb).close()
    port = free_port()
    with (tmp_path / "serve.log").open("w+") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "chunkwise", "serve", "--kb", str(kb), "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            wait_healthy(f"http://127.0.0.1:{port}", process, log)
            writers = writer_processes(process.pid)
            process.terminate()
            assert process.wait(PATIENCE_S) == 128 + signal.SIGTERM
        finally:
            stop(process)
        log.seek(0)
        output = log.read()
    assert "Application shutdown complete" in output
    assert "leaked" not in output, output
    assert writers
    assert not [pid for pid in writers if Path(f"/proc/{pid}").exists()]
