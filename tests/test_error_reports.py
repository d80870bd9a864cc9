"""Error reports name the input once: ``error: empty.txt: file is empty``, not
``error: empty.txt: empty.txt: file is empty``.

A :class:`~chunkwise.errors.SourceError` already starts its message with the source; a report that lists
the source beside the error (an ingest report, its CLI lines and JSON) takes the reason alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from chunkwise.errors import ConfigError, EmptyDocumentError, failure_reason
from chunkwise.kb import KnowledgeBase
from chunkwise.models.context import Models
from tests.support.cli import run_bounded


def test_failure_reason_drops_the_source_a_report_prints_beside_it() -> None:
    assert failure_reason(EmptyDocumentError("empty.txt", "file is empty")) == "file is empty"
    assert str(EmptyDocumentError("empty.txt", "file is empty")) == "empty.txt: file is empty"
    assert failure_reason(ConfigError("max_size must be at least 1")) == "max_size must be at least 1"


def test_ingest_reports_name_the_file_once(tmp_path: Path, embedder: object) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with KnowledgeBase(tmp_path / "kb", models=Models(embedder=embedder)) as kb:
        report = kb.add([empty])
    assert report.failed == [(str(empty), "file is empty")]


def test_parse_and_ingest_error_lines_name_the_file_once(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    parse = run_bounded("parse", str(empty))
    assert parse.stderr == f"error: {empty}: file is empty\n"
    ingest = run_bounded("ingest", str(empty), "--kb", str(tmp_path / "kb"), "--json")
    assert ingest.returncode == 2
    assert ingest.stderr == f"error: {empty}: file is empty\n"
    assert json.loads(ingest.stdout)["failed"] == [{"source": str(empty), "error": "file is empty"}]
