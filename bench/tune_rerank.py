"""The ``quality`` preset's passage windows, BM25 fusion weight and rerank weight, tuned on the dev sets
with a held-back split.

The cross-encoder (ms-marco-MiniLM-L-12-v2) reranks the best 20 fused candidates. At rerank weight 1 its
order alone ranks them; below 1 its min-max normalised logits are blended with the hybrid scores it
receives (:mod:`chunkwise.query.rerank`). The preset embeds passage windows, which
``bench/tune_windows.py`` found to want a smaller BM25 share in the fusion than whole-chunk vectors, so
the grid is window size x BM25 weight x rerank weight, and with BM25 at 0.5 64-token windows alone
(``retrieval.embed_whole = false``: a long chunk not embedded whole), overlapping or end to end, x
rerank weight. Each point is scored as :mod:`tune_defaults` scores its grid: on the tuning part of
every dev set (30% of the queries held back, seed 0) with recall at a 1,000-token context (document
recall@6 on rmc_dev), the best mean chosen, then only the choice and the reference (the preset as it
was: 64-token windows beside the whole chunk, BM25 weight 0.5, rerank weight 0.2) scored on the
held-back parts. Rerank weight 0 keeps the hybrid order, so its rows are the hybrid pipeline with
windows on the same queries.

The reranker's scores are cached by (query, passage), so a pair is scored by the model once.

Run: ``.venv/bin/python bench/tune_rerank.py [--data ../shared/data] [--workdir DIR]``. Writes
``bench/results/tune_rerank.json`` and prints the tables.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from chunkwise.config import PipelineConfig, from_dict
from tune_defaults import arguments, tune, write

RESULTS = Path(__file__).parent / "results" / "tune_rerank.json"
WINDOWS = (128, 64)
FUSION_WEIGHTS = (0.7, 0.5)
RERANK_WEIGHTS = (1.0, 0.6, 0.4, 0.2, 0.0)


@dataclasses.dataclass(frozen=True)
class Weights:
    """One point: the passage windows' size, BM25's share of the fusion and the reranker's share of the
    final score."""

    windows: int
    fusion: float
    rerank: float
    overlap: bool = True
    whole: bool = True

    @property
    def name(self) -> str:
        """A label such as ``windows=64 bm25 weight=0.5 rerank weight=0.4`` (``windows=64 end to end, no
        whole ...``)."""
        layout = ("" if self.overlap else " end to end") + ("" if self.whole else ", no whole")
        return f"windows={self.windows}{layout} bm25 weight={self.fusion:g} rerank weight={self.rerank:g}"

    def apply(self, base: PipelineConfig) -> PipelineConfig:
        """``base`` with these windows and weights."""
        retrieval = dataclasses.replace(
            base.retrieval,
            windows=self.windows,
            window_overlap=self.overlap,
            embed_whole=self.whole,
            weight=self.fusion,
        )
        return dataclasses.replace(
            base, retrieval=retrieval, rerank=dataclasses.replace(base.rerank, weight=self.rerank)
        )


def main() -> None:
    """Tune the windows and weights of the ``quality`` preset."""
    args = arguments(__doc__.split("\n", 1)[0])
    points = [Weights(w, f, r) for w in WINDOWS for f in FUSION_WEIGHTS for r in RERANK_WEIGHTS]
    points += [
        Weights(64, 0.5, r, overlap=overlap, whole=False) for overlap in (True, False) for r in RERANK_WEIGHTS
    ]
    # the preset as this grid tuned it: the best 20 candidates reranked (bench/tune_maxp.py moved it to 10)
    base = from_dict({"preset": "quality", "rerank": {"depth": 20}})
    write(tune(points, Weights(64, 0.5, 0.2), base, args), RESULTS)


if __name__ == "__main__":
    main()
