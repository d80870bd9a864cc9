"""Paired bootstrap confidence intervals for the difference of a metric between two configurations.

Both configurations are scored on the same queries, so the per-query differences ``d_i = b_i - a_i`` carry
the comparison (the query's own difficulty cancels out). The bootstrap resamples queries with
replacement ``resamples`` times, takes the mean difference of each resample, and reports the
percentile interval (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, chapter 13; for IR
evaluation, Sakai, "Evaluating Evaluation Metrics Based on the Bootstrap", SIGIR 2006).

All resamples are drawn at once as one ``(resamples, n)`` index matrix from a seeded NumPy generator: the
same inputs and seed give the same interval on every machine. One query gives no interval: every
resample would be that query, and the zero-width interval at its difference would pass for certainty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chunkwise.errors import ConfigError


@dataclass(frozen=True, slots=True)
class DifferenceInterval:
    """Mean difference ``b - a`` over the queries and its bootstrap percentile interval."""

    difference: float
    low: float
    high: float
    confidence: float
    resamples: int
    seed: int

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies entirely on one side of zero."""
        return self.low > 0.0 or self.high < 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "difference": self.difference,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
        }


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> DifferenceInterval:
    """Interval for ``mean(b) - mean(a)``, ``a[i]`` and ``b[i]`` being the same query's values; at least
    two queries are needed (:class:`ConfigError` otherwise)."""
    if len(a) != len(b):
        raise ConfigError(f"paired bootstrap: {len(a)} values against {len(b)}; the queries must match")
    if len(a) < 2:
        raise ConfigError(f"paired bootstrap: {len(a)} queries; an interval needs at least two")
    if not 0.0 < confidence < 1.0 or resamples < 1:
        raise ConfigError("paired bootstrap: confidence must lie in (0, 1) and resamples be positive")
    diffs = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = diffs[rng.integers(0, len(diffs), size=(resamples, len(diffs)))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return DifferenceInterval(
        difference=float(diffs.mean()),
        low=float(low),
        high=float(high),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )
