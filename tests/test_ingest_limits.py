"""The ``[limits]`` section bounds each document at ingest: a document past a limit is one failure
naming the limit, the rest of the batch is stored, and nothing of the refused document is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chunkwise import KnowledgeBase, Models
from chunkwise.config import LimitsConfig, from_dict, load_config
from chunkwise.errors import ConfigError

#: About 2,800 characters: 15 chunks of at most 200.
LONG = "Checked bags may weigh up to 23 kg in economy on every route we fly.\n\n" * 40
SHORT = "Boarding closes 20 minutes before departure.\n"


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    long, short = tmp_path / "long.txt", tmp_path / "short.txt"
    long.write_text(LONG, encoding="utf-8")
    short.write_text(SHORT, encoding="utf-8")
    return [long, short]


def ingest(
    tmp_path: Path, embedder: Any, files: list[Path], limits: dict[str, int]
) -> tuple[Any, dict[str, int]]:
    """Ingest ``files`` with chunks of at most 200 characters under ``limits``: the report and counts."""
    config = from_dict({"chunking": {"params": {"max_size": 200}}, "limits": limits})
    with KnowledgeBase(tmp_path / "kb", config, models=Models(embedder=embedder)) as kb:
        report = kb.add(files)
        return report, kb.store.counts()


def test_defaults_are_the_parser_and_chunk_limits() -> None:
    limits = load_config().limits
    assert limits == LimitsConfig()
    assert limits.max_chunks == 10_000
    assert limits.parse_limits().max_chars == 20_000_000


def test_a_document_past_max_chunks_is_refused_and_the_batch_goes_on(
    tmp_path: Path, embedder: Any, files: list[Path]
) -> None:
    report, counts = ingest(tmp_path, embedder, files, {"max_chunks": 5})
    assert [source for source, _ in report.failed] == [str(files[0])]
    assert "over the limit of 5 chunks per document" in report.failed[0][1]
    assert len(report.added) == 1
    assert counts["documents"] == 1
    assert counts["chunks"] == 1  # the short document's one chunk; none of the refused one


def test_a_document_past_max_chars_is_refused(tmp_path: Path, embedder: Any, files: list[Path]) -> None:
    report, counts = ingest(tmp_path, embedder, files, {"max_chars": 1000})
    assert [source for source, _ in report.failed] == [str(files[0])]
    assert "exceeds the limit of 1000 characters" in report.failed[0][1]
    assert counts["documents"] == 1


def test_raised_limits_let_the_document_in(tmp_path: Path, embedder: Any, files: list[Path]) -> None:
    report, counts = ingest(tmp_path, embedder, files, {"max_chunks": 100, "max_chars": 10_000})
    assert report.failed == []
    assert counts["documents"] == 2


@pytest.mark.parametrize("key", ["max_bytes", "max_chars", "max_chunks"])
def test_a_limit_below_one_is_a_config_error_naming_it(key: str) -> None:
    with pytest.raises(ConfigError, match=f"limits.{key}: must be at least 1"):
        from_dict({"limits": {key: 0}})
