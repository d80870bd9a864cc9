"""``chunkwise parse`` on every file of the shared multi-format set (375 files, five formats).

The committed fixtures hold four of these documents; this test covers all of them when the shared data
sits beside the checkout, as it does in CI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FORMATS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "formats"


@pytest.mark.skipif(not FORMATS.is_dir(), reason="the shared data set is not beside this checkout")
def test_parse_succeeds_on_every_shared_file_with_exact_offsets() -> None:
    files = sorted(str(p) for p in FORMATS.glob("*/*/*") if p.is_file())
    assert len(files) == 375
    done = subprocess.run(
        [sys.executable, "-m", "chunkwise", "parse", "--json", *files],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    documents = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(documents) == len(files)
    formats: dict[str, int] = {}
    for doc in documents:
        formats[doc["format"]] = formats.get(doc["format"], 0) + 1
        assert doc["units"], doc["doc_id"]
        for unit in doc["units"]:
            assert 0 <= unit["start"] < unit["end"] <= len(doc["text"])
            assert doc["text"][unit["start"] : unit["end"]].strip(), (doc["doc_id"], unit["id"])
    assert formats == {"markdown": 75, "html": 75, "pdf": 75, "docx": 75, "pptx": 75}
