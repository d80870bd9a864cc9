"""What the adapter tests share: a knowledge base of the sample documents, one of two documents with the
same content, and one text to split with every chunker (short, so the model-driven chunkers make one
model call each on the bundled models)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkwise.chunking import CHUNKERS
from chunkwise.kb import KnowledgeBase

REPO = Path(__file__).resolve().parents[2]

#: The chunkers that call a model (the bundled SmolLM2 or MiniLM): slow on two cores.
MODEL_CHUNKERS = {"semantic", "wrac", "agentic", "logprob", "sections"}
EVERY_CHUNKER = [pytest.param(n, marks=pytest.mark.slow) if n in MODEL_CHUNKERS else n for n in CHUNKERS]

#: The file :func:`twin_kb` holds twice.
TWIN_SOURCE = "tests/data/formats/accessories.md"

TEXT = (
    "# Baggage\n\nEach passenger may check one bag of 23 kg. Extra bags cost 50 EUR each.\n\n"
    "## Cabin\n\nOne cabin bag of 8 kg fits in the overhead locker. A small personal item goes under the "
    "seat in front.\n\nRepeated line.\n\nRepeated line.\n"
)


@pytest.fixture(scope="session")
def sample_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """``samples/docs`` in a knowledge base on the default (local) configuration."""
    with KnowledgeBase(tmp_path_factory.mktemp("adapters") / "kb") as kb:
        report = kb.add([REPO / "samples" / "docs"])
        assert len(report.added) == 6
        yield kb


@pytest.fixture(scope="session")
def twin_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """One Markdown file copied into ``dup/a`` and ``dup/b``: two documents whose chunks share their ids
    (chunk ids derive from the content)."""
    root = tmp_path_factory.mktemp("twins")
    for folder in ("a", "b"):
        (root / "dup" / folder).mkdir(parents=True)
        (root / "dup" / folder / "accessories.md").write_bytes((REPO / TWIN_SOURCE).read_bytes())
    with KnowledgeBase(root / "kb") as kb:
        report = kb.add([root / "dup"])
        assert len(report.added) == 2
        yield kb
