"""Cost and time per pipeline stage (parse, chunk, index, retrieve, ...), for the evaluation report.

A :class:`StageCost` is one plain record: seconds, model calls, input/output tokens and money for one
stage. A run collects records from wherever it measures them (a timer around a stage, the model
accounting ledger for LLM and embedding calls) into a :class:`CostRecorder`; :func:`merge_stages` sums
records of the same stage, so the report shows one row per stage in the order stages first ran.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class StageCost:
    """What one stage spent: wall-clock ``seconds``, model ``calls``, tokens and ``cost_usd``."""

    stage: str
    seconds: float = 0.0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def plus(self, other: StageCost, stage: str | None = None) -> StageCost:
        """The sum of two records, named ``stage`` (default: this record's stage)."""
        return StageCost(
            stage=stage or self.stage,
            seconds=self.seconds + other.seconds,
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "stage": self.stage,
            "seconds": self.seconds,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageCost:
        """Inverse of :meth:`to_dict`."""
        return cls(
            stage=str(data["stage"]),
            seconds=float(data.get("seconds", 0.0)),
            calls=int(data.get("calls", 0)),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            cost_usd=float(data.get("cost_usd", 0.0)),
        )


def merge_stages(records: Iterable[StageCost]) -> tuple[StageCost, ...]:
    """One record per stage (sums), in the order each stage first appears."""
    merged: dict[str, StageCost] = {}
    for record in records:
        merged[record.stage] = merged[record.stage].plus(record) if record.stage in merged else record
    return tuple(merged.values())


def total(records: Iterable[StageCost]) -> StageCost:
    """All records summed into one, named ``"total"``."""
    result = StageCost("total")
    for record in records:
        result = result.plus(record, stage="total")
    return result


class CostRecorder:
    """Collects :class:`StageCost` records during a run; :meth:`stages` gives them merged per stage."""

    def __init__(self) -> None:
        self._records: list[StageCost] = []

    def add(self, record: StageCost) -> None:
        """Record what a stage spent (model accounting, say)."""
        self._records.append(record)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Time the ``with`` body as ``stage`` (recorded even if the body raises)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self._records.append(StageCost(stage, seconds=time.perf_counter() - started))

    def stages(self) -> tuple[StageCost, ...]:
        """The records so far, one per stage."""
        return merge_stages(self._records)
