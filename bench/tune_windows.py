"""Passage windows and the fusion weight beside them, tuned on the dev sets with a held-back split.

With ``retrieval.windows`` every chunk longer than the window is also embedded as overlapping windows,
and dense retrieval scores a chunk by its best vector (:mod:`chunkwise.ingest.windows`). A better dense
score may want a different share for BM25 in the fusion, so the grid is window size (0: off, the default
before this tuning) x BM25 weight, and 64-token windows end to end (``retrieval.window_overlap =
false``: half as many) x BM25 weight, with and without the whole chunk embedded beside its windows
(``retrieval.embed_whole``). Each point is scored as :mod:`tune_defaults` scores its grid: on the
tuning part of every dev set (30% of the queries held back, seed 0) with recall at a 1,000-token context
(document recall@6 on rmc_dev), the best mean chosen, then only the choice and the reference (no
windows, weight 0.7: the default) scored on the held-back parts.

Indexes are cached in ``--workdir`` per window size; the weights reuse them.

Run: ``.venv/bin/python bench/tune_windows.py [--data ../shared/data] [--workdir DIR]``. Writes
``bench/results/tune_windows.json`` and prints the tables.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from chunkwise.config import PipelineConfig, from_dict
from tune_defaults import arguments, tune, write

RESULTS = Path(__file__).parent / "results" / "tune_windows.json"
WINDOWS = (0, 64, 128)
WEIGHTS = (0.7, 0.6, 0.5)


@dataclasses.dataclass(frozen=True)
class Point:
    """One point: the window size in tokens (0: off), whether windows overlap, and BM25's fusion weight."""

    windows: int
    weight: float
    overlap: bool = True
    whole: bool = True

    @property
    def name(self) -> str:
        """A label such as ``windows=128 weight=0.6`` (``windows=64 end to end, no whole weight=0.5``)."""
        layout = ("" if self.overlap else " end to end") + ("" if self.whole else ", no whole")
        return f"windows={self.windows}{layout} weight={self.weight:g}"

    def apply(self, base: PipelineConfig) -> PipelineConfig:
        """``base`` with these windows and this weight."""
        retrieval = dataclasses.replace(
            base.retrieval,
            windows=self.windows,
            window_overlap=self.overlap,
            embed_whole=self.whole,
            weight=self.weight,
        )
        return dataclasses.replace(base, retrieval=retrieval)


def main() -> None:
    """Tune the default pipeline's passage windows and fusion weight."""
    args = arguments(__doc__.split("\n", 1)[0])
    points = [Point(size, weight) for size in WINDOWS for weight in WEIGHTS]
    points += [Point(64, weight, overlap=False, whole=whole) for whole in (True, False) for weight in WEIGHTS]
    write(tune(points, points[0], from_dict({}), args), RESULTS)


if __name__ == "__main__":
    main()
