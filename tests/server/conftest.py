"""The knowledge base and the server the server tests share: the bundled sample documents, ingested once
through the command line, served by a real uvicorn on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chunkwise.server import ServerSettings, create_app
from tests.support.cli import run_chunkwise
from tests.support.server import running_app

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``samples/docs`` ingested (document ids ``samples/docs/...``, as the README shows them)."""
    kb = tmp_path_factory.mktemp("server") / "kb"
    run_chunkwise("ingest", "samples/docs", "--kb", str(kb), check=True, cwd=REPO)
    return kb


@pytest.fixture(scope="session")
def server_url(kb_dir: Path) -> Iterator[str]:
    """The base URL of a server (no key, default limits but a long request timeout: the bundled SmolLM2
    plans W-RAC chunks slowly on two shared cores) over :func:`kb_dir`."""
    with running_app(create_app(kb_dir, settings=ServerSettings(request_timeout=1800))) as url:
        yield url


@pytest.fixture
def client(server_url: str) -> Iterator[httpx.Client]:
    """An HTTP client of :func:`server_url`."""
    with httpx.Client(base_url=server_url, timeout=600) as http:
        yield http
