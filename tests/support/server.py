"""The real server in tests: uvicorn on 127.0.0.1 (any free port) in a thread, or ``chunkwise serve`` in a
subprocess, and the HTTP helpers the server tests share."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx
import uvicorn

#: How long a test waits for a server to start or a job to finish before it gives up (a hang guard,
#: not a performance bound).
PATIENCE_S = 300.0


@contextmanager
def running_app(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 in a thread; yields its base URL, stops it on exit."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + PATIENCE_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(PATIENCE_S)


def free_port() -> int:
    """A port nothing listens on now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def serve_process(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``chunkwise serve ARGS... --port N`` as a subprocess (in ``cwd``); yields its base URL and the
    process once ``/healthz`` answers, and stops it (SIGTERM, then SIGKILL) on exit."""
    port = free_port()
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "chunkwise", "serve", *args, "--port", str(port)],
            env=full_env,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, process, log)
            yield url, process
        finally:
            stop(process)


def stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 30 s."""
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_healthy(url: str, process: subprocess.Popen[str] | None = None, log: IO[str] | None = None) -> None:
    """Wait until ``url``/healthz answers 200 (raising, with the server's output, if ``process`` exits
    first)."""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            output = ""
            if log is not None:
                log.seek(0)
                output = log.read()
            raise RuntimeError(f"the server exited with {process.returncode}: {output}")
        try:
            if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the server did not answer /healthz")


def wait_job(client: httpx.Client, job_id: str) -> dict[str, Any]:
    """Poll ``GET /v1/jobs/{id}`` until the job has finished; its last state."""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").raise_for_status().json()
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.05)
    raise RuntimeError(f"job {job_id} did not finish")


def error_of(response: httpx.Response) -> dict[str, str]:
    """The ``error`` object of a JSON error response (asserting its shape and that no traceback leaked)."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"type", "message"}, body
    assert "Traceback" not in response.text
    error: dict[str, str] = body["error"]
    return error


def upload(*paths: Path, field: str = "files") -> list[tuple[str, tuple[str, bytes]]]:
    """Multipart ``files=`` for httpx: each path under ``field`` with its own name."""
    return [(field, (path.name, path.read_bytes())) for path in paths]


def without_timings(value: Any) -> Any:
    """``value`` with every timing and latency field dropped, so two runs of one request compare equal."""
    if isinstance(value, dict):
        return {
            k: without_timings(v)
            for k, v in value.items()
            if not re.fullmatch(r"seconds|latency_s|embed_seconds", k)
        }
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def writer_processes(pid: int) -> list[int]:
    """The ingest writer processes (:mod:`chunkwise.server.writer`) that process ``pid`` started: its
    children started by ``multiprocessing``'s spawn (Linux's /proc; empty elsewhere)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue  # it ended while we looked
        if parent == pid and b"spawn_main" in command:
            found.append(int(stat.parent.name))
    return found
