"""A bug in a route is a JSON 500, logged once, on a connection that stays open: on a real server."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import chunkwise.server.app as server_app
from chunkwise.server import ServerSettings, create_app
from tests.support.server import running_app


class _Records(logging.Handler):
    """Every record of the loggers it is added to."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def buggy_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A server whose ``/v1/search`` meets a bug (an ``AttributeError`` in the body it builds)."""

    def broken(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise AttributeError("'NoneType' object has no attribute 'hits'")

    monkeypatch.setattr(server_app, "search_body", broken)
    with running_app(create_app(tmp_path / "kb", settings=ServerSettings())) as url:
        yield url


def _exchange(sock: socket.socket, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` on ``sock`` and read one response: status, headers (lower-case names), body."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-body"
        body += chunk
    return int(lines[0].split()[1]), headers, body


def test_a_bug_is_a_json_500_logged_once_and_the_connection_stays_open(buggy_url: str) -> None:
    records = _Records()
    watched = [logging.getLogger(name) for name in ("chunkwise.server", "uvicorn.error", "uvicorn")]
    for logger in watched:
        logger.addHandler(records)
    address = urlsplit(buggy_url)
    payload = json.dumps({"query": "bags"}).encode()
    search = (
        b"POST /v1/search HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
    )
    try:
        with socket.create_connection((address.hostname, address.port), timeout=60) as sock:
            for _ in range(2):  # the same connection answers again after each 500
                status, headers, body = _exchange(sock, search)
                assert status == 500, body
                assert headers.get("connection", "").lower() != "close"
                assert json.loads(body) == {
                    "error": {
                        "type": "internal",
                        "message": "internal error (the server's log has the details)",
                    }
                }
            status, _, body = _exchange(sock, b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            assert status == 200, body
    finally:
        for logger in watched:
            logger.removeHandler(records)
    failures = [r for r in records.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in failures] == ["POST /v1/search failed"] * 2
    assert all(r.exc_info is not None and r.exc_info[0] is AttributeError for r in failures)
