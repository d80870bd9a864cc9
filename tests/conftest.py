"""Shared fixtures. Model loads are session-scoped: each bundled model is loaded once per test run."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.transformers_server import RunningServer, serve_smollm2

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The committed fixtures (deterministic excerpts of the shared data, licences in README)."""
    return DATA


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    """The bundled all-MiniLM-L6-v2 embedder, loaded once."""
    from chunkwise.models.local_embedder import LocalEmbedder

    return LocalEmbedder()


def _private_model_cache() -> None:
    """Point the model cache at a directory of this test run, removed when the run ends; a cache
    directory set by the caller is used as it is and kept."""
    if "CHUNKWISE_CACHE_DIR" in os.environ:
        return
    directory = tempfile.mkdtemp(prefix="chunkwise-test-cache-")
    os.environ["CHUNKWISE_CACHE_DIR"] = directory
    atexit.register(shutil.rmtree, directory, ignore_errors=True)


_private_model_cache()


@pytest.fixture(scope="session")
def llm():  # type: ignore[no-untyped-def]
    """The bundled SmolLM2-135M-Instruct (``LocalLLM``, no cache, no accounting), loaded once."""
    from chunkwise.models.local_llm import LocalLLM

    return LocalLLM()


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """``transformers serve`` with the bundled SmolLM2 on 127.0.0.1, started once per session
    (:func:`tests.support.transformers_server.serve_smollm2`)."""
    with serve_smollm2(tmp_path_factory.mktemp("transformers-serve")) as server:
        yield server


@pytest.fixture(scope="session")
def pg_server():  # type: ignore[no-untyped-def]
    """A real PostgreSQL with pgvector for the session (``tests/support/postgres.py``)."""
    from tests.support.postgres import start_server

    yield from start_server()


@pytest.fixture
def pg_url(pg_server, request) -> str:  # type: ignore[no-untyped-def]
    """A store URL of a fresh schema on the session's server, for this test alone."""
    from tests.support.postgres import schema_name

    return str(pg_server.url(schema_name(request.node.name)))


@pytest.fixture
def offline_tiktoken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty tiktoken cache, and proxies at a closed port: a fetch fails at once, reaching nothing."""
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    return cache
