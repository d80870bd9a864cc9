"""Requests that would hold or misuse the server are refused with its JSON error body: a body that stops
arriving (408, the connection closed), a blank document id or preset, a tiktoken encoding the server would
have to download; and ``/healthz`` says when the ingest worker has stopped."""

from __future__ import annotations

import json
import socket
import string
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.errors import ConfigError
from chunkwise.server import ServerSettings, create_app
from tests.support.server import error_of, running_app, serve_process, upload, wait_job

#: The body timeout of the :func:`stalling_url` server, in seconds.
BODY_TIMEOUT = 1.0
#: How long a raw-socket test waits for the server's answer before it gives up (a hang guard).
HANG_GUARD_S = 120.0


@pytest.fixture(scope="module")
def stalling_url(kb_dir: Path) -> Iterator[str]:
    """A server over the shared knowledge base that waits :data:`BODY_TIMEOUT` for each part of a body."""
    app = create_app(kb_dir, settings=ServerSettings(body_timeout=BODY_TIMEOUT, request_timeout=1800))
    with running_app(app) as url:
        yield url


def _stalled(
    url: str, path: str = "/v1/search", content_type: str = "application/json", start: bytes = b'{"query":"'
) -> tuple[bytes, bytes, dict[str, str]]:
    """Send the head of a POST announcing 100 bytes of body and ``start``, its first 10, on a new
    connection; read until the server closes it. Its status line, headers and error object."""
    host, port = url.removeprefix("http://").split(":")
    head = f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: {content_type}\r\nContent-Length: 100\r\n\r\n"
    with socket.create_connection((host, int(port)), timeout=HANG_GUARD_S) as sock:
        sock.sendall(head.encode() + start)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    headers, _, body = rest.partition(b"\r\n\r\n")
    error: dict[str, str] = json.loads(body)["error"]
    return status_line, headers, error


@pytest.mark.parametrize(
    ("path", "content_type", "start"),
    [
        ("/v1/search", "application/json", b'{"query":"'),  # read by FastAPI for the request model
        ("/v1/chunk", "application/json", b'{"text": "'),  # read by the route itself
        ("/v1/documents", "multipart/form-data; boundary=xyz", b"--xyz\r\nCon"),  # by the form parser
    ],
)
def test_a_body_shorter_than_its_length_gets_408_and_the_connection_closes(
    stalling_url: str, path: str, content_type: str, start: bytes
) -> None:
    status_line, headers, error = _stalled(stalling_url, path, content_type, start)
    assert status_line.startswith(b"HTTP/1.1 408"), (status_line, error)
    assert b"connection: close" in headers.lower()
    assert error == {"type": "body_timeout", "message": "the request body did not arrive within 1 s"}


def test_chunkwise_serve_takes_the_body_timeout(tmp_path: Path) -> None:
    with serve_process("--kb", str(tmp_path / "kb"), "--body-timeout", "0.5") as (url, _):
        status_line, _, error = _stalled(url)
    assert status_line.startswith(b"HTTP/1.1 408"), (status_line, error)
    assert error["message"] == "the request body did not arrive within 0.5 s"


def test_bodies_that_keep_arriving_are_read_whole(stalling_url: str, data_dir: Path) -> None:
    """The timeout is for each part of a body, not the whole of it: a body sent in parts, each within the
    timeout but all of them together past it, is read; so are a large JSON text and an upload."""

    def slowly() -> Iterator[bytes]:
        yield b'{"query": "'
        for _ in range(4):
            time.sleep(BODY_TIMEOUT / 3)
            yield b"bags "
        yield b'"}'

    with httpx.Client(base_url=stalling_url, timeout=600) as http:
        slow = http.post("/v1/search", content=slowly(), headers={"Content-Type": "application/json"})
        assert slow.status_code == 200, slow.text
        large = http.post("/v1/chunk", json={"text": "word " * 1_000_000, "chunker": "fixed"})
        assert large.status_code == 200, large.text[:500]
        doc = data_dir / "formats" / "accessories.md"
        job = http.post("/v1/documents", files=upload(doc))
        assert job.status_code == 202, job.text
        assert wait_job(http, job.json()["id"])["status"] == "done"
        # A request with no body at all is never timed: a keep-alive connection serves the next one.
        assert http.get("/healthz").status_code == 200


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blank=st.text(alphabet=string.whitespace + "\u00a0\u2003\u3000", min_size=1, max_size=8))
def test_a_blank_document_id_or_preset_is_refused_naming_the_field(client: httpx.Client, blank: str) -> None:
    chunk = client.post("/v1/chunk", json={"text": "a text", "doc_id": blank})
    assert chunk.status_code == 422, chunk.text
    assert error_of(chunk) == {"type": "invalid_request", "message": "doc_id: must not be blank"}
    segments = client.post("/v1/segments", json={"query": "bags", "preset": blank})
    assert segments.status_code == 422, segments.text
    assert error_of(segments) == {"type": "invalid_request", "message": "preset: must not be blank"}


def test_a_padded_document_id_is_kept_as_it_is(client: httpx.Client) -> None:
    chunk = client.post("/v1/chunk", json={"text": "a text", "doc_id": " a.md "})
    assert chunk.status_code == 200, chunk.text
    assert chunk.json()["doc_id"] == " a.md "


def test_a_tiktoken_encoding_the_server_lacks_is_refused_not_downloaded(
    client: httpx.Client, offline_tiktoken: Path
) -> None:
    """An encoding missing from tiktoken's cache (an empty one here) is refused with 422 naming it; the
    server never fetches it (a fetch would fail fast at the closed proxy port, and would fill the cache)."""
    for encoding in ("p50k_edit", "no_such_encoding"):
        params = {"unit": f"tiktoken:{encoding}", "max_size": 50}
        for response in (
            client.post("/v1/chunk", json={"text": "a text", "params": params}),
            client.post(
                "/v1/chunk", files=[("file", ("a.md", b"# A\n\ntext"))], data={"params": json.dumps(params)}
            ),
        ):
            assert response.status_code == 422, response.text
            error = error_of(response)
            assert error["type"] == "invalid_request"
            assert error["message"].startswith(f"params: unit: the tiktoken encoding {encoding!r} is not")
    assert list(offline_tiktoken.iterdir()) == []


def test_healthz_answers_503_once_the_ingest_worker_has_stopped(tmp_path: Path) -> None:
    app = create_app(tmp_path / "kb")
    with running_app(app) as url, httpx.Client(base_url=url, timeout=600) as http:
        assert http.get("/healthz").json() == {"status": "ok", "queue": 0}
        worker = app.state.service.jobs
        # The worker thread ends on the queue's end marker, as it would on an error it could not survive.
        worker._queue.put(None)
        worker._thread.join(HANG_GUARD_S)
        health = http.get("/healthz")
        assert health.status_code == 503, health.text
        assert error_of(health) == {
            "type": "unhealthy",
            "message": "the ingest worker has stopped: no job would run",
        }


@pytest.mark.parametrize("name", ["body_timeout", "request_timeout", "max_upload_bytes"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0, -1.0])
def test_settings_that_are_not_a_positive_number_are_refused(name: str, value: float) -> None:
    """NaN passes a ``<= 0`` check: as a timeout it made every request body fail with a 500."""
    with pytest.raises(ConfigError, match=f"^{name} must be a positive number, got "):
        ServerSettings(**{name: value})
