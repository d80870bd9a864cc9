"""The four LLM-driven chunkers on the bundled SmolLM2-135M, on a real Markdown excerpt.

A 135M-parameter model plans badly; what must hold every time is that its answers are checked, the
outcome of each window is recorded (with the problems found), and the chunks keep the contract.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chunkwise.chunking import get_chunker, get_counter
from chunkwise.chunking.llm_report import FALLBACK, REPAIRED, VALID, VALID_AFTER_REPROMPT, ChunkingRun
from chunkwise.document import Document
from chunkwise.parsing import parse_bytes
from tests.support.contract import check_contract

pytestmark = pytest.mark.slow

CHARS = get_counter("chars")
OUTCOMES = {VALID, VALID_AFTER_REPROMPT, REPAIRED, FALLBACK}


@pytest.fixture(scope="module")
def smol(llm: Any) -> Any:
    """The session's SmolLM2 with one structured attempt per call (the chunkers re-ask themselves)."""
    from chunkwise.models.local_llm import LocalLLM

    return LocalLLM(attempts=1)


def _excerpt(data_dir: Path, stop: str) -> Document:
    """The start of "Boarding Process.md", up to the heading ``stop`` (a deterministic subset)."""
    text = (data_dir / "formats" / "Boarding Process.md").read_text(encoding="utf-8")
    return parse_bytes(text[: text.index(stop)].encode(), "boarding-excerpt.md")


def _check(doc: Document, run: ChunkingRun, max_size: int) -> None:
    check_contract(doc, run.chunks, CHARS, max_size)
    assert run.report.windows
    for window in run.report.windows:
        assert window.outcome in OUTCOMES
        if window.outcome != VALID:
            assert window.issues, "a rejected answer must say why"


def test_wrac_on_smollm2(smol: Any, data_dir: Path) -> None:
    doc = _excerpt(data_dir, "## 3.")
    run = get_chunker("wrac", llm=smol, max_size=300, min_size=40).run(doc)
    _check(doc, run, 300)


def test_agentic_on_smollm2(smol: Any, data_dir: Path) -> None:
    doc = _excerpt(data_dir, "- **Airport")
    run = get_chunker("agentic", llm=smol, max_size=200, min_size=0).run(doc)
    _check(doc, run, 200)
    stats = run.report.stats
    assert stats["pieces"] == stats["exact"] + stats["fuzzy"] + stats["failed"]


def test_logprob_on_smollm2(smol: Any, data_dir: Path) -> None:
    text = (data_dir / "formats" / "Boarding Process.md").read_bytes()
    doc = parse_bytes(text, "boarding.md")
    run = get_chunker("logprob", llm=smol, max_size=600, min_size=50, unit="chars").run(doc)
    _check(doc, run, 600)
    assert run.curve is not None
    assert run.report.stats["marker"] == "§"  # the first candidate that is one SmolLM2 token
    # Most chosen boundaries fall at a line start: the model knows where blocks end.
    at_line_start = [c for c in run.curve.chosen if doc.text[c - 1] == "\n"]
    assert len(at_line_start) >= len(run.curve.chosen) // 2


def test_sections_on_smollm2(smol: Any, data_dir: Path) -> None:
    doc = _excerpt(data_dir, "## 3.")
    run = get_chunker("sections", llm=smol, max_size=300, min_size=0).run(doc)
    _check(doc, run, 300)
    assert all(chunk.section for chunk in run.chunks)
