"""A library ingest on Ray in a process not attached to Ray: it starts a local Ray instance, shuts it
down when done (no Ray process left behind), and prints nothing. Each test starts its own instance, so
none may be running in this process (tests/test_ingest_ray.py shuts its own down after its module)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from chunkwise.config import from_dict
from chunkwise.kb import KnowledgeBase

ray = pytest.importorskip("ray")

#: No embedding cache: the Ray workers must compute every vector themselves.
CONFIG = {"models": {"cache": False}}


@pytest.fixture
def no_ray():  # type: ignore[no-untyped-def]
    """This process is not attached to Ray, and it is not once the test is done."""
    assert not ray.is_initialized(), "another test left Ray running in this process"
    yield
    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Two files to ingest and one that cannot be parsed."""
    found = tmp_path / "in"
    found.mkdir()
    (found / "a.md").write_text("# Bags\n\nBags may weigh 23 kg.\n")
    (found / "b.txt").write_text("Lounges open at six.\n")
    (found / "broken.pdf").write_bytes(b"%PDF-1.7 this is not a PDF")
    return found


def ray_processes() -> list[str]:
    """The names of the Ray processes this process started (a local instance's GCS, raylet, workers)."""
    names = []
    for child in psutil.Process().children(recursive=True):
        try:
            names.append(child.name())
        except psutil.NoSuchProcess:
            continue
    return [name for name in names if "ray" in name.lower() or name == "gcs_server"]


def test_a_local_ray_started_for_an_ingest_is_shut_down_after_it(no_ray, folder, tmp_path):
    assert ray_processes() == []
    with KnowledgeBase(tmp_path / "kb", from_dict(CONFIG)) as kb:
        report = kb.add([folder], ray="auto")
        assert kb.store.counts()["documents"] == 2
    assert sorted(report.added) == [(folder / "a.md").as_posix(), (folder / "b.txt").as_posix()]
    assert not ray.is_initialized()
    assert ray_processes() == []


def test_an_ingest_on_a_ray_it_starts_prints_nothing(no_ray, folder, tmp_path, capfd):
    """Ray's own log lines, its workers' output and Ray Data's progress bars and banners stay off this
    process's stdout and stderr; a file that fails is in the report, not printed."""
    with KnowledgeBase(tmp_path / "kb", from_dict(CONFIG)) as kb:
        report = kb.add([folder], ray="auto")
    assert [source for source, _ in report.failed] == [(folder / "broken.pdf").as_posix()]
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
