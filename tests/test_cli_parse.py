"""``chunkwise parse`` end to end: every fixture format, the JSON contract, the table view."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from chunkwise.cli.main import app
from chunkwise.parsing import parse_file
from tests.support.cli import run_chunkwise

JSON_KEYS = {"doc_id", "title", "format", "text", "units"}
UNIT_KEYS = {"id", "kind", "level", "start", "end", "page", "parent"}


def test_parse_succeeds_on_every_fixture_and_offsets_hold(data_dir: Path) -> None:
    files = sorted((data_dir / "formats").iterdir())
    assert {f.suffix for f in files} == {".md", ".html", ".pdf", ".docx", ".pptx"}
    result = run_chunkwise("parse", "--json", *map(str, files))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [d["doc_id"] for d in docs] == [f.as_posix() for f in files]
    for path, doc in zip(files, docs, strict=True):
        assert set(doc) == JSON_KEYS
        assert doc["format"] == {".md": "markdown"}.get(path.suffix, path.suffix[1:])
        assert doc["title"]
        assert doc["units"], path.name
        in_process = parse_file(path)
        assert doc["text"] == in_process.text
        previous_end = 0
        for unit, expected in zip(doc["units"], in_process.units, strict=True):
            assert set(unit) == UNIT_KEYS
            assert previous_end <= unit["start"] < unit["end"] <= len(doc["text"])
            assert doc["text"][unit["start"] : unit["end"]] == expected.text
            assert (unit["id"], unit["kind"], unit["level"]) == (
                expected.id,
                expected.kind.value,
                expected.level,
            )
            previous_end = unit["end"]


def test_plain_text_json_is_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "note.txt"
    path.write_bytes(b"first para\r\n\r\n  second\tpara \n")
    result = CliRunner().invoke(app, ["parse", "--json", str(path)])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["text"] == "first para\r\n\r\n  second\tpara \n"
    assert [(u["start"], u["end"], u["kind"]) for u in doc["units"]] == [
        (0, 10, "paragraph"),
        (16, 27, "paragraph"),
    ]


def test_table_view_lists_units_per_file(data_dir: Path) -> None:
    md = data_dir / "formats" / "Boarding Process.md"
    html = md.with_suffix(".html")
    result = CliRunner().invoke(app, ["parse", str(md), str(html)], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    out = result.stdout
    assert f"{md.as_posix()} (markdown, 42 units" in out
    assert f"{html.as_posix()} (html, 42 units" in out
    assert "# Boarding Process with CloudWay 24" in out
    assert out.count("list_item") > 10
