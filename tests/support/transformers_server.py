"""A real OpenAI-compatible server for the tests: ``transformers serve`` with the bundled SmolLM2-135M.

``transformers serve`` cannot load the bundled GGUF file directly (its config names no architecture), so
:func:`converted_smollm2` first turns it into an ordinary model folder: the GGUF weights are loaded
(de-quantised to float32, as :class:`~chunkwise.models.local_llm.LocalLLM` loads them), copied into a model
built from the same config without the GGUF quantisation entry and with ``architectures`` set, and saved
with the tokenizer. The folder lives in the system's temporary directory, named by the GGUF file's size
and modification time, so the conversion (about 20 s) happens once per machine, not once per run; it is
written beside its final name and renamed, so an interrupted conversion leaves nothing half-written.

:func:`serve_smollm2` starts the server on 127.0.0.1 on a free port with the folder preloaded, waits for
``/health``, yields a :class:`RunningServer` (requests name the folder as their ``model``), and stops the
server afterwards. The server runs on one torch thread: on a shared 2-core machine a small model's
decoding is faster on one thread than on two (see :mod:`chunkwise.models.local_llm`).

:class:`RecordingProxy` relays requests to the server and keeps every answer, so tests can compare the
accounting with the ``usage`` the server itself reported.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from chunkwise.models.bundled import smollm2_gguf

#: Longest wait for the server to answer ``/health`` (loading the model folder takes seconds).
START_TIMEOUT_S = 180.0


def converted_smollm2(cache_root: Path | None = None) -> Path:
    """The bundled SmolLM2 GGUF as a transformers model folder, converted on first use and then reused."""
    gguf = smollm2_gguf()
    stat = gguf.stat()
    root = cache_root or Path(tempfile.gettempdir()) / "chunkwise-test-models"
    target = root / f"smollm2-135m-instruct-{stat.st_size}-{int(stat.st_mtime)}"
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.architectures = [type(loaded).__name__]
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=root))
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    try:
        staging.rename(target)
    except OSError:  # another process finished first: keep its folder
        shutil.rmtree(staging, ignore_errors=True)
    return target


@dataclass
class RunningServer:
    """A started server: ``base_url`` ends in ``/v1``; ``model`` is what requests name; ``startup_s`` is
    how long conversion (when needed) and start-up took."""

    base_url: str
    model: str
    startup_s: float
    log: Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serve_smollm2(workdir: Path) -> Iterator[RunningServer]:
    """``transformers serve`` with the converted SmolLM2 on 127.0.0.1; stopped when the block ends."""
    began = time.perf_counter()
    folder = converted_smollm2()
    port = free_port()
    log = workdir / "transformers-serve.log"
    command = [
        str(Path(sys.executable).with_name("transformers")),
        "serve",
        str(folder),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        "--dtype",
        "float32",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=workdir)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, process, log)
        yield RunningServer(f"{url}/v1", str(folder), time.perf_counter() - began, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"transformers serve exited with {process.returncode}:\n{tail}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        time.sleep(0.5)
    raise RuntimeError(f"transformers serve did not answer /health within {START_TIMEOUT_S:.0f} s")


@dataclass(frozen=True)
class Exchange:
    """One relayed request and the server's answer (``answer`` is ``None`` when it was not JSON)."""

    path: str
    request: Any
    status: int
    answer: Any


@dataclass
class RecordingProxy:
    """Relays POSTs to ``upstream`` (a ``…/v1`` URL) on a loopback port and records every exchange."""

    upstream: str
    exchanges: list[Exchange] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _relay_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The proxy's OpenAI base URL (``…/v1``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def usage(self) -> tuple[int, int]:
        """Prompt and completion tokens summed over the server's answers, as the server reported them."""
        with self._lock:
            answers = [e.answer for e in self.exchanges if isinstance(e.answer, dict)]
        usages = [a.get("usage") or {} for a in answers]
        return sum(u.get("prompt_tokens", 0) for u in usages), sum(
            u.get("completion_tokens", 0) for u in usages
        )

    def relay(self, path: str, body: bytes) -> tuple[int, bytes]:
        """Forward one POST and record it."""
        url = self.upstream.removesuffix("/v1") + path
        response = httpx.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=600)
        try:
            answer = response.json()
        except ValueError:
            answer = None
        with self._lock:
            self.exchanges.append(Exchange(path, json.loads(body or b"null"), response.status_code, answer))
        return response.status_code, response.content

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _relay_handler(proxy: RecordingProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: tests read :attr:`RecordingProxy.exchanges`."""

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, content = proxy.relay(self.path, body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

    return Handler
