"""``bench/llm_endpoint.py`` end to end against the real local server (``transformers serve``), small.

Two documents for W-RAC against agentic chunking and one question for the relevance filter: enough to
show the command runs against any endpoint and that its token counts are the ones the server reported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.transformers_server import RecordingProxy, RunningServer

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DATA.is_dir(), reason="the shared data set is not beside this checkout"),
]


def test_llm_endpoint_bench_on_the_local_server(real_server: RunningServer, tmp_path: Path) -> None:
    out = tmp_path / "endpoint.json"
    with RecordingProxy(real_server.base_url) as proxy:
        command = [
            sys.executable,
            str(REPO / "bench" / "llm_endpoint.py"),
            "--llm",
            f"openai:{real_server.model}",
        ]
        options = ["--base-url", proxy.base_url, "--docs", "2", "--queries", "1", "--distractors", "1"]
        result = subprocess.run(
            [*command, *options, "--candidates", "2", "--json", str(out)],
            capture_output=True,
            text=True,
            check=False,
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        reported = proxy.usage()
        requests = len(proxy.exchanges)
    lines = result.stdout.splitlines()
    assert any(line.startswith("| wrac | 2 |") for line in lines)
    assert any(line.startswith("| agentic | 2 |") for line in lines)
    assert any(line.startswith("| relevance on | 1 |") for line in lines)
    figures = json.loads(out.read_text())
    chunkers, relevance = figures["chunkers"], figures["relevance"]
    assert [row["chunker"] for row in chunkers] == ["wrac", "agentic", "wrac", "agentic"]
    assert all(not row["violations"] for row in chunkers)
    assert [row["config"] for row in relevance] == ["relevance off", "relevance on"]
    assert relevance[0]["calls"] == 0
    assert 0 < relevance[1]["calls"] <= 3 * 2  # three steps per scored candidate
    rows = [*chunkers, *relevance]
    assert sum(row["calls"] for row in rows) == requests
    assert (sum(r["input_tokens"] for r in rows), sum(r["output_tokens"] for r in rows)) == reported
