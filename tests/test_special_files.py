"""Only regular files are read, and never past the size limit: devices, pipes, sockets, directories.

Each special file ends in a typed error naming the path as given and its kind, in the library and through
the CLI (one line, exit status 2, under ``ulimit -v 4000000``); a named pipe is never opened, so nothing
blocks; a file whose size the file system misreports is still read only up to the limit.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkwise.errors import FileTooLargeError, NotRegularFileError
from chunkwise.ingest.paths import expand_paths
from chunkwise.parsing import ParseLimits, parse_file
from chunkwise.parsing.files import read_file
from tests.support.cli import run_bounded

DEVICE = Path("/dev/zero")


@pytest.fixture
def specials(tmp_path: Path) -> Iterator[dict[Path, str]]:
    """Special files (and links to them), each with the kind its error must name."""
    (tmp_path / "link.txt").symlink_to(DEVICE)
    os.mkfifo(tmp_path / "f.txt")
    (tmp_path / "x.pdf").mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "s.md"))
    try:
        yield {
            DEVICE: "character device",
            Path("/dev/null"): "character device",
            tmp_path / "link.txt": "character device",
            tmp_path / "f.txt": "named pipe",
            tmp_path / "s.md": "socket",
            tmp_path / "x.pdf": "directory",
        }
    finally:
        server.close()


def test_special_files_are_refused_by_kind(specials: dict[Path, str]) -> None:
    for path, kind in specials.items():
        with pytest.raises(NotRegularFileError) as caught:
            parse_file(path, limits=ParseLimits(max_bytes=1_000_000))
        assert caught.value.source == path.as_posix()
        assert caught.value.reason == f"not a regular file ({kind})"


def test_a_symlink_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    target = tmp_path / "real.md"
    target.write_text("# Title\n\nBody.\n", encoding="utf-8")
    link = tmp_path / "alias.md"
    link.symlink_to(target)
    doc = parse_file(link)
    assert doc.id == link.as_posix()
    assert doc.text == "# Title\n\nBody."


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs procfs")
def test_reading_stops_at_the_limit_when_the_size_is_misreported() -> None:
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0  # procfs reports 0 bytes; the content is over a kilobyte
    with pytest.raises(FileTooLargeError, match="more than 100 bytes read"):
        read_file(status, "status", max_bytes=100)
    assert read_file(status, "status", max_bytes=1_000_000).startswith(b"Name:")


def test_a_folder_lists_its_special_files_for_parsing_to_report(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    (folder / "sub.md").mkdir(parents=True)  # a directory with a document's name is walked, not listed
    (folder / "sub.md" / "inner.md").write_text("inner", encoding="utf-8")
    (folder / "a.md").write_text("a", encoding="utf-8")
    os.mkfifo(folder / "f.txt")
    (folder / "skip.bin").write_bytes(b"\x00")
    assert expand_paths([folder]) == [folder / "a.md", folder / "f.txt", folder / "sub.md" / "inner.md"]


def test_cli_parse_reports_each_special_file_on_one_line(specials: dict[Path, str], tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text("# Good\n\nFine.\n", encoding="utf-8")
    paths = [*specials, good]
    done = run_bounded("parse", "--json", "--max-bytes", "1000000", *map(str, paths), timeout=120)
    assert done.returncode == 2
    expected = [f"error: {path.as_posix()}: not a regular file ({kind})" for path, kind in specials.items()]
    assert done.stderr.splitlines() == expected
    assert [json.loads(line)["doc_id"] for line in done.stdout.splitlines()] == [good.as_posix()]


def test_cli_ingest_reports_a_named_pipe_inside_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ok.md").write_text("# Fine\n\nSome text to store.\n", encoding="utf-8")
    pipe = folder / "f.txt"
    os.mkfifo(pipe)
    done = run_bounded("ingest", str(folder), "--kb", str(tmp_path / "kb"), "--json", timeout=300)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: {pipe.as_posix()}: not a regular file (named pipe)"]
    report = json.loads(done.stdout)
    assert report["added"] == [(folder / "ok.md").as_posix()]
    assert report["failed"] == [{"source": str(pipe), "error": "not a regular file (named pipe)"}]
