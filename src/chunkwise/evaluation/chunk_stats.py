"""Chunk-size statistics of a chunking, for the report's table and histogram.

Sizes are in characters (every chunker agrees on those; token counts depend on the tokenizer). The
report keeps every chunk's length, sorted, so a histogram can use the same bins for all configurations
(see :meth:`ChunkStats.histogram`) and any other statistic can be computed later.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class ChunkStats:
    """The sorted chunk lengths (characters) of one configuration, with their summary statistics."""

    lengths: tuple[int, ...]

    @property
    def count(self) -> int:
        """Number of chunks."""
        return len(self.lengths)

    def summary(self) -> dict[str, float]:
        """Count, mean, median, 95th percentile, min and max (zeros for an empty chunking); count, min and
        max are whole numbers."""
        if not self.lengths:
            return dict.fromkeys(("count", "mean", "median", "p95", "min", "max"), 0)
        sizes = np.asarray(self.lengths, dtype=np.float64)
        return {
            "count": len(sizes),
            "mean": float(sizes.mean()),
            "median": float(np.median(sizes)),
            "p95": float(np.percentile(sizes, 95)),
            "min": self.lengths[0],
            "max": self.lengths[-1],
        }

    def histogram(self, edges: Sequence[float]) -> list[int]:
        """Chunks per bin ``[edges[i], edges[i + 1])``, the last bin closed."""
        counts, _ = np.histogram(np.asarray(self.lengths, dtype=np.float64), bins=np.asarray(edges))
        return [int(c) for c in counts]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping: the summary, plus every length."""
        return {**self.summary(), "lengths": list(self.lengths)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkStats:
        """Inverse of :meth:`to_dict` (the summary is recomputed from the lengths)."""
        return cls(tuple(sorted(int(n) for n in data["lengths"])))


def chunk_stats(lengths: Sequence[int]) -> ChunkStats:
    """Statistics of these chunk lengths (characters)."""
    return ChunkStats(tuple(sorted(lengths)))
