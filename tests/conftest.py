"""Shared fixtures. Model loads are session-scoped: each bundled model is loaded once per test run."""

from __future__ import annotations

import os
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


os.environ.setdefault("CHUNKWISE_CACHE_DIR", tempfile.mkdtemp(prefix="chunkwise-test-cache-"))


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
