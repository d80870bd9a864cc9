"""What an LLM-driven chunker did to a document: per-window outcomes, the problems found, and counters.

An LLM's answer is never trusted: each window's answer is checked, re-asked or repaired, and the
outcome is recorded here so that the CLI (``chunkwise chunk --json``) and the benchmarks can show how
often a model planned well, not only the resulting chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chunkwise.chunking.chunk import Chunk

#: The answer passed every check as first given.
VALID = "valid"
#: The first answer broke a rule; the answer to the re-prompt naming the errors passed.
VALID_AFTER_REPROMPT = "valid_after_reprompt"
#: The answer broke rules that could not be (or were not) fixed by asking: it was repaired by rules.
REPAIRED = "repaired"
#: No usable answer: the window fell back to the document's structure or to fixed spans.
FALLBACK = "fallback"


@dataclass(frozen=True, slots=True)
class WindowReport:
    """One window of a document (``start``/``end`` are text offsets): its outcome and what was wrong.

    ``issues`` lists every problem found in the answers, first answer first; ``notes`` what was filled
    in without rejecting the answer.
    """

    index: int
    start: int
    end: int
    outcome: str
    issues: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "outcome": self.outcome,
            "issues": list(self.issues),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class ChunkingReport:
    """The record of one LLM-driven chunking run over one document; ``stats`` holds chunker counters."""

    chunker: str
    doc_id: str
    windows: tuple[WindowReport, ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)

    def outcomes(self) -> dict[str, int]:
        """How many windows ended in each outcome."""
        counts: dict[str, int] = {}
        for window in self.windows:
            counts[window.outcome] = counts.get(window.outcome, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "chunker": self.chunker,
            "doc_id": self.doc_id,
            "outcomes": self.outcomes(),
            "windows": [w.to_dict() for w in self.windows],
            "stats": dict(self.stats),
        }


@dataclass(frozen=True, slots=True)
class ChunkingRun:
    """Chunks together with the report of how they were made."""

    chunks: list[Chunk]
    report: ChunkingReport
