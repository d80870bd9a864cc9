"""``chunkwise chunk FILE --json`` end to end, for every chunker, through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkwise.parsing import parse_file
from tests.support.cli import run_chunkwise

CHUNKERS = ["fixed", "recursive", "sentence", "structure", pytest.param("semantic", marks=pytest.mark.slow)]


@pytest.mark.parametrize("chunker", CHUNKERS)
def test_chunk_json_for_each_chunker(data_dir: Path, chunker: str) -> None:
    path = data_dir / "formats" / "Boarding Process.md"
    result = run_chunkwise(
        "chunk", str(path), "--chunker", chunker, "--max-size", "300", "--min-size", "40", "--json"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    doc = parse_file(path)
    assert report["doc_id"] == doc.id
    assert report["chunker"] == chunker
    assert report["params"]["max_size"] == 300
    assert report["params"]["min_size"] == 40
    assert report["chunks"], "no chunks"
    for row in report["chunks"]:
        assert set(row) >= {"id", "start", "end", "text", "unit_ids", "section", "tokens"}
        assert doc.text[row["start"] : row["end"]] == row["text"]
        assert len(row["text"]) == row["tokens"] <= 300
    stats = report["stats"]
    assert stats["count"] == len(report["chunks"])
    assert stats["coverage"] == 1.0
    assert stats["max_size"] <= 300


def test_chunk_tokens_overlap_and_settings(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Chunkers split text. " * 60 + "\n\n" + "第二段。很短。" * 20, encoding="utf-8")
    result = run_chunkwise(
        "chunk",
        str(path),
        "-c",
        "sentence",
        "--max-size",
        "32",
        "--unit",
        "tokens",
        "--overlap",
        "0.25",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["params"]["unit"] == "tokens"
    assert report["params"]["overlap"] == 0.25
    assert max(row["tokens"] for row in report["chunks"]) <= 32
    starts = [row["start"] for row in report["chunks"]]
    ends = [row["end"] for row in report["chunks"]]
    assert any(e > s for e, s in zip(ends, starts[1:], strict=False)), "no overlap at all"

    table = run_chunkwise("chunk", str(path), "-c", "recursive", "--set", "max_size=120")
    assert table.returncode == 0, table.stderr
    assert "coverage: 1.0" in table.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--chunker", "recursive", "--set", "nope=1"],
        ["--chunker", "recursive", "--set", "max_size"],
        ["--chunker", "nosuch"],
        ["--chunker", "fixed", "--max-size", "10", "--overlap", "20"],
    ],
)
def test_bad_options_give_one_line_and_exit_2(tmp_path: Path, args: list[str]) -> None:
    path = tmp_path / "a.txt"
    path.write_text("Some text.", encoding="utf-8")
    result = run_chunkwise("chunk", str(path), *args)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ")
    assert result.stderr.count("\n") == 1
    assert str(path) in result.stderr


def test_unreadable_file_exits_2(tmp_path: Path) -> None:
    result = run_chunkwise("chunk", str(tmp_path / "missing.md"), "--chunker", "fixed")
    assert result.returncode == 2
    assert result.stderr.startswith("error: ")
