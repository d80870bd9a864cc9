"""``bench/llm_endpoint.py`` end to end against the real local server (``transformers serve``), small.

Two documents for W-RAC against agentic chunking and one question for the relevance filter: enough to
show the command runs against any endpoint and that its token counts are the ones the server reported.
The data are the committed fixtures laid out as the shared data set is (``formats/<org>/md``,
``rmc_dev``), the documents cut to their first paragraphs so that a 135M model on two CPU cores writes
the agentic baseline's copy of them in seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.transformers_server import RecordingProxy, RunningServer

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

#: Characters kept of each fixture document (whole paragraphs up to this length).
EXCERPT_CHARS = 500


def small_data(data_dir: Path, root: Path) -> Path:
    """The fixtures in the shared data set's layout: two short Markdown documents and ``rmc_mini``."""
    md = root / "formats" / "CloudWay-24" / "md"
    md.mkdir(parents=True)
    for path in sorted((data_dir / "formats").glob("*.md"))[:2]:
        paragraphs = path.read_text(encoding="utf-8").split("\n\n")
        kept = [paragraphs[0]]
        for paragraph in paragraphs[1:]:
            if len("\n\n".join([*kept, paragraph])) > EXCERPT_CHARS:
                break
            kept.append(paragraph)
        (md / path.name).write_text("\n\n".join(kept) + "\n", encoding="utf-8")
    (root / "rmc_dev").symlink_to(data_dir / "eval" / "rmc_mini", target_is_directory=True)
    return root


def test_llm_endpoint_bench_on_the_local_server(
    real_server: RunningServer, data_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "endpoint.json"
    data = small_data(data_dir, tmp_path / "data")
    with RecordingProxy(real_server.base_url) as proxy:
        command = [
            sys.executable,
            str(REPO / "bench" / "llm_endpoint.py"),
            "--llm",
            f"openai:{real_server.model}",
        ]
        options = ["--base-url", proxy.base_url, "--data", str(data), "--docs", "2"]
        options += ["--queries", "1", "--distractors", "1", "--max-size", "300"]
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
