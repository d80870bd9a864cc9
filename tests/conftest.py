"""Shared fixtures. Model loads are session-scoped: each bundled model is loaded once per test run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
