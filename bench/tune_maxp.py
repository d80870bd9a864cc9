"""The ``quality`` preset's cross-encoder reading the whole chunk: the best of several windows (MaxP)
against the one window that holds the most query terms, with the rerank depth and weight.

The cross-encoder (ms-marco-MiniLM-L-12-v2) reads 192 tokens of a pair, about a third of a 2,000-character
chunk. With one window a passage it reads the window holding the most query terms; with ``windows`` n it
reads up to n windows tiled over the passage and keeps the highest logit (BERT-MaxP, Dai and Callan,
2019), at up to n times the pairs. The grid is windows (1, 3, 4) x depth (10, 20) x rerank weight (0.2,
0.4, 0.6, 1), on the ``quality`` preset otherwise; three windows are the bundled
``local:ms-marco-minilm-maxp``, four a reading registered here. Scoring follows :mod:`tune_defaults`: each
dev set's queries are split (30% held back, seed 0); to keep the cross-encoder's cost to about half an hour on
two cores, the first ``--queries`` (100) of the tuning part in a seeded draw are scored, against the whole
corpus, with recall at a 1,000-token context (document recall@6 on rmc_dev); the best mean is chosen
and only it and the reference (the preset as it was: one window, depth 20, weight 0.2) are scored on
the held-back part, likewise cut to ``--queries``, with a few readings beside them (one window against
three, in the cross-encoder's own order and in the blend). The preset's depth went to 10 on these
figures; every point names its depth, so the grid scores as it did.

The reranker's scores are cached by (query, passage) and reranker name, so a pair is scored once, and
the weights and the shallower depth reuse the deeper depth's scores.

Run: ``.venv/bin/python bench/tune_maxp.py [--data ../shared/data] [--workdir DIR] [--queries 100]``.
Writes ``bench/results/tune_maxp.json`` and prints the tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

import tune_defaults
from chunkwise.config import PipelineConfig, from_dict
from chunkwise.evaluation.datasets import Dataset, subsample
from chunkwise.models.backends import BUNDLED
from tune_defaults import tune, write

RESULTS = Path(__file__).parent / "results" / "tune_maxp.json"
WINDOWS = (1, 3, 4)
DEPTHS = (20, 10)
RERANK_WEIGHTS = (0.2, 0.4, 0.6, 1.0)


@dataclasses.dataclass(frozen=True)
class Reading:
    """One point: windows read of each passage, rerank depth and the reranker's share of the score."""

    windows: int
    depth: int
    weight: float

    @property
    def name(self) -> str:
        """A label such as ``windows=3 depth=20 rerank weight=0.4``."""
        return f"windows={self.windows} depth={self.depth} rerank weight={self.weight:g}"

    def apply(self, base: PipelineConfig) -> PipelineConfig:
        """``base`` with this reranker, depth and weight."""
        reranker = {1: "local:ms-marco-minilm", 3: "local:ms-marco-minilm-maxp"}.get(
            self.windows, f"local:ms-marco-minilm-x{self.windows}"
        )
        models = dataclasses.replace(base.models, reranker=reranker)
        rerank = dataclasses.replace(base.rerank, depth=self.depth, weight=self.weight)
        return dataclasses.replace(base, models=models, rerank=rerank)


def limited(queries: int) -> Any:
    """:func:`tune_defaults.split_queries` with each part cut to ``queries`` queries (seeded draw), every
    document kept."""
    split = tune_defaults.split_queries

    def cut(dataset: Dataset, holdout: float, seed: int = 0) -> tuple[Dataset, Dataset]:
        tuning, held = split(dataset, holdout, seed)
        return tuple(  # type: ignore[return-value]
            dataclasses.replace(part, queries=subsample(part, queries, seed=seed).queries)
            for part in (tuning, held)
        )

    return cut


def main() -> None:
    """Tune how the ``quality`` preset's cross-encoder reads a passage."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--queries", type=int, default=100, help="queries scored of each part of a set")
    args = tune_defaults.arguments("", parser)
    queries = args.queries
    BUNDLED["reranker"]["ms-marco-minilm-x4"] = "tune_maxp:cross_encoder_x4"
    tune_defaults.split_queries = limited(queries)
    points = [Reading(w, d, r) for w in WINDOWS for d in DEPTHS for r in RERANK_WEIGHTS]
    base = from_dict({"preset": "quality"})
    result = tune(points, Reading(1, 20, 0.2), base, args)
    result["queries"] = queries
    result["held_out_readings"] = readings_held_back(base, args)
    write(result, RESULTS)
    print(readings_table(result["held_out_readings"]))


#: Scored on the held-back parts beside the chosen point: one window against three, in the cross-encoder's
#: own order (weight 1) and in the preset's blend at the shallower depth.
HELD_READINGS = (
    Reading(1, 20, 1.0),
    Reading(3, 20, 1.0),
    Reading(1, 10, 1.0),
    Reading(3, 10, 1.0),
    Reading(1, 10, 0.2),
    Reading(3, 10, 0.2),
)


def readings_held_back(base: PipelineConfig, args: Any) -> dict[str, dict[str, float]]:
    """Each of :data:`HELD_READINGS` on every set's held-back part: point -> set -> the set's metric."""
    configs = [(p.name, p.apply(base)) for p in HELD_READINGS]
    scores: dict[str, dict[str, float]] = {p.name: {} for p in HELD_READINGS}
    for name, (metric, _) in tune_defaults.SETS.items():
        print(f"readings on the held-back part of {name}", file=sys.stderr, flush=True)
        for point, metrics in tune_defaults.score(args.data, name, "held", configs, args).items():
            scores[point][name] = metrics[metric]
    return scores


def readings_table(scores: dict[str, dict[str, float]]) -> str:
    """The held-back readings as a Markdown table, the mean over the sets first."""
    sets = list(tune_defaults.SETS)
    rows = [(point, [sum(v.values()) / len(v), *(v[s] for s in sets)]) for point, v in scores.items()]
    return "\n".join(tune_defaults.table("Held-back part, readings:", ["mean", *sets], rows))


def cross_encoder_x4(cache_dir: Path) -> Any:
    """The bundled cross-encoder reading up to four windows of a passage."""
    from chunkwise.models.cross_encoder import OnnxCrossEncoder

    return OnnxCrossEncoder(windows=4, cache_dir=cache_dir)


if __name__ == "__main__":
    main()
