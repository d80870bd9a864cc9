"""What each stage did: inputs, outputs, scores, tokens, time. One :class:`StageReport` per stage run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class StageReport:
    """One stage's account of its work.

    ``inputs``/``outputs`` count candidates in and out; ``scores`` maps chunk id to the score this stage
    gave; ``calls``/``tokens_in``/``tokens_out`` count model use; ``notes`` hold stage-specific facts
    (a threshold, a rewritten query, unparsed model replies).
    """

    stage: str
    inputs: int = 0
    outputs: int = 0
    seconds: float = 0.0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    scores: dict[str, float] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "stage": self.stage,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "seconds": round(self.seconds, 6),
            "calls": self.calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "scores": {k: round(v, 6) for k, v in self.scores.items()},
            "notes": self.notes,
        }


@dataclass(slots=True)
class Trace:
    """The ordered reports of one query's stages."""

    stages: list[StageReport] = field(default_factory=list)

    @contextmanager
    def stage(self, name: str, inputs: int = 0) -> Iterator[StageReport]:
        """Time a stage: yields its report, appends it with ``seconds`` filled in on exit."""
        report = StageReport(stage=name, inputs=inputs)
        began = time.perf_counter()
        try:
            yield report
        finally:
            report.seconds = time.perf_counter() - began
            self.stages.append(report)

    def get(self, name: str) -> StageReport:
        """The last report of stage ``name``; ``KeyError`` if it did not run."""
        for report in reversed(self.stages):
            if report.stage == name:
                return report
        raise KeyError(name)

    def names(self) -> list[str]:
        """The stages that ran, in order."""
        return [r.stage for r in self.stages]

    def totals(self) -> dict[str, float]:
        """Summed model calls, tokens and time over all stages."""
        return {
            "calls": sum(r.calls for r in self.stages),
            "tokens_in": sum(r.tokens_in for r in self.stages),
            "tokens_out": sum(r.tokens_out for r in self.stages),
            "seconds": sum(r.seconds for r in self.stages),
        }

    def to_dict(self) -> list[dict[str, Any]]:
        """The JSON form: one object per stage."""
        return [r.to_dict() for r in self.stages]
