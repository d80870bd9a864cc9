"""Two processes ingest overlapping sets of files into one store at the same moment: each report lists
only what its own transactions committed, so every document is ``added`` by exactly one of them and
``skipped`` by the other, and the store holds each once, whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from chunkwise.store.sqlite import SQLiteStore

#: One ingest run. Its embedder waits, at its first call, until the other run has reached its own first
#: call: by then both have looked up every document (absent) and prepared it, so both try to store the
#: shared ones and only the store's transaction can tell which one committed them.
INGEST = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path

    from chunkwise.config import from_dict
    from chunkwise.kb import KnowledgeBase
    from chunkwise.models import Models
    from tests.support.fakes import RecordingEmbedder

    kb, me, other, *files = sys.argv[1:]

    class BarrierEmbedder(RecordingEmbedder):
        def embed(self, texts):
            if not self.calls:
                Path(me).touch()
                deadline = time.monotonic() + 120
                while not Path(other).exists():
                    if time.monotonic() > deadline:
                        raise SystemExit("the other ingest never started")
                    time.sleep(0.01)
            return super().embed(texts)

    config = from_dict({"models": {"cache": False}, "retrieval": {"embed_batch": 100000}})
    with KnowledgeBase(kb, config, models=Models(config.models, embedder=BarrierEmbedder())) as base:
        print(json.dumps(base.add(files).to_dict()))
    """
)


def test_two_ingests_at_once_each_report_what_they_committed(tmp_path, data_dir):
    files = [str(path) for path in sorted((data_dir / "formats").glob("*.md"))]
    first, second = files[:3], files[1:]
    kb, root = tmp_path / "kb", Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", INGEST, str(kb), str(tmp_path / me), str(tmp_path / other), *mine],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=root,
            env=env,
        )
        for me, other, mine in (("a", "b", first), ("b", "a", second))
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outputs]
    reports = [json.loads(out) for out, _ in outputs]
    for report, mine in zip(reports, (first, second), strict=True):
        assert sorted(report["added"] + report["skipped"]) == sorted(mine)
        assert report["replaced"] == report["failed"] == []
    added = [report["added"] for report in reports]
    assert not set(added[0]) & set(added[1])  # no document reported added twice
    assert sorted(added[0] + added[1]) == files
    shared = set(first) & set(second)
    assert set(reports[0]["skipped"]) | set(reports[1]["skipped"]) == shared  # both tried them
    assert sum(report["chunks"] for report in reports) > 0
    with SQLiteStore(kb, read_only=True) as store:
        assert sorted(info.doc_id for info in store.documents()) == files
        assert store.counts()["chunks"] == sum(report["chunks"] for report in reports)
        assert store.check() == []
