"""``kb list``, ``kb delete`` and ``ingest --prune`` through the command line (subprocesses)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.cli import run_chunkwise

NAMES = ["Baggage Allowance.md", "Boarding Process.md", "Careers at CloudWay 24.md"]


def test_list_delete_and_prune_keep_the_store_a_mirror_of_its_folder(data_dir: Path, tmp_path: Path) -> None:
    docs, other = tmp_path / "docs", tmp_path / "other"
    docs.mkdir()
    other.mkdir()
    for name in NAMES:
        shutil.copy(data_dir / "formats" / name, docs / name)
    shutil.copy(data_dir / "formats" / NAMES[0], other / "copy.md")
    added = run_chunkwise("ingest", "docs", "other", "--kb", "kb", "--json", cwd=tmp_path, check=True)
    assert len(json.loads(added.stdout)["added"]) == 4

    listed = json.loads(run_chunkwise("kb", "list", "--kb", "kb", "--json", cwd=tmp_path, check=True).stdout)
    ids = [info["doc_id"] for info in listed["documents"]]
    assert ids == [f"docs/{name}" for name in NAMES] + ["other/copy.md"]
    assert all(info["chunks"] > 0 and info["format"] == "markdown" for info in listed["documents"])

    deleted = run_chunkwise(
        "kb", "delete", "other/copy.md", "nowhere.md", "--kb", "kb", "--json", cwd=tmp_path
    )
    assert deleted.returncode == 1
    assert json.loads(deleted.stdout) == {"deleted": ["other/copy.md"], "missing": ["nowhere.md"]}
    assert deleted.stderr == "error: nowhere.md: not stored\n"

    (docs / NAMES[1]).unlink()
    pruned = run_chunkwise("ingest", "docs", "--prune", "--kb", "kb", "--json", cwd=tmp_path, check=True)
    report = json.loads(pruned.stdout)
    assert report["pruned"] == [f"docs/{NAMES[1]}"]
    assert len(report["skipped"]) == 2
    assert report["counts"]["documents"] == 2

    table = run_chunkwise("kb", "list", "--kb", "kb", cwd=tmp_path, check=True).stdout
    assert f"docs/{NAMES[0]}" in table
    assert f"docs/{NAMES[2]}" in table
    assert NAMES[1] not in table
    again = run_chunkwise("ingest", "docs", "--prune", "--kb", "kb", cwd=tmp_path, check=True).stdout
    assert again.startswith("added 0, replaced 0, skipped 2, failed 0, pruned 0; ")
