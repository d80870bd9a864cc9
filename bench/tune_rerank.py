"""The ``quality`` preset's rerank weight, tuned on the dev sets with a held-back split.

The cross-encoder (ms-marco-MiniLM-L-12-v2) reranks the best 20 fused candidates. At weight 1 its order
alone ranks them; below 1 its min-max normalised logits are blended with the hybrid scores it receives
(:mod:`chunkwise.query.rerank`). Each weight is scored as :mod:`tune_defaults` scores its grid: on the
tuning part of every dev set (30% of the queries held back, seed 0) with recall at a 1,000-token context
(document recall@6 on rmc_dev), the best mean chosen, then only the choice and the reference (weight 1,
the preset before this tuning) scored on the held-back parts. Weight 0 keeps the hybrid order, so its
row is the default pipeline's figure on the same queries.

The reranker's scores are cached by (query, passage), so only the first weight runs the model.

Run: ``.venv/bin/python bench/tune_rerank.py [--data ../shared/data] [--workdir DIR]``. Writes
``bench/results/tune_rerank.json`` and prints the tables.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from chunkwise.config import PipelineConfig, from_dict
from tune_defaults import arguments, tune, write

RESULTS = Path(__file__).parent / "results" / "tune_rerank.json"
WEIGHTS = (1.0, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.0)


@dataclasses.dataclass(frozen=True)
class Weight:
    """One point: the reranker's share of the final score."""

    weight: float

    @property
    def name(self) -> str:
        """A label such as ``rerank weight=0.5``."""
        return f"rerank weight={self.weight:g}"

    def apply(self, base: PipelineConfig) -> PipelineConfig:
        """``base`` with this rerank weight."""
        return dataclasses.replace(base, rerank=dataclasses.replace(base.rerank, weight=self.weight))


def main() -> None:
    """Tune the weight of the ``quality`` preset's reranker."""
    args = arguments(__doc__.split("\n", 1)[0])
    points = [Weight(w) for w in WEIGHTS]
    write(tune(points, points[0], from_dict({"preset": "quality"}), args), RESULTS)


if __name__ == "__main__":
    main()
