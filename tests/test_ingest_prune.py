"""Which stored documents ``ingest --prune`` deletes: ids inside the folders given whose files are gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkwise.ingest.prune import stale_documents


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "kept.md").write_text("still here")
    return tmp_path


def test_ids_inside_a_folder_whose_files_are_gone_are_stale(in_tmp: Path) -> None:
    stored = ["docs/a.md", "docs/sub/gone.md", "docs/kept.md", "docsx/c.md", "other/d.md", "upload.pdf"]
    assert stale_documents(stored, [Path("./docs/")], walked={"docs/a.md"}) == ["docs/sub/gone.md"]


def test_a_file_read_by_the_walk_is_never_stale_even_when_its_id_is_escaped(in_tmp: Path) -> None:
    """A file name that is not UTF-8 has an id with ``\\xNN`` escapes, which names no path on disk."""
    assert stale_documents(["docs/caf\\xe9.md"], [Path("docs")], walked={"docs/caf\\xe9.md"}) == []


def test_inside_the_current_folder_any_relative_id_that_stays_in_it_counts(in_tmp: Path) -> None:
    stored = ["a.md", "../up.md", "/abs/x.md", "https://example.com/y", "sub/c.md", "docs/kept.md", ".."]
    assert stale_documents(stored, [Path(".")], walked={"a.md"}) == ["sub/c.md"]


def test_nothing_is_stale_without_folders(in_tmp: Path) -> None:
    assert stale_documents(["docs/gone.md"], [], walked=set()) == []
