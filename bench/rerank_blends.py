"""How the ``quality`` preset blends its cross-encoder with the fused ranking: a fixed share against a
share that follows the cross-encoder's confidence in each query.

The preset gives the cross-encoder (ms-marco-MiniLM-L-12-v2) a fixed share (``rerank.weight`` 0.2) of
the score of the best 10 fused candidates: trained on web questions, it judges prose well and source
code or transcripts poorly, and a larger share lost on those sets (``bench/tune_maxp.py``). A share that
rises with the cross-encoder's own confidence in a query might take its strength where it has some and
leave the fused order alone elsewhere. Each blend below replaces ``Rerank.blend`` for its run, in this
process only (the library offers only the fixed share), at several shares ``w``:

- ``fixed``: ``w`` for every query (the preset at 0.2).
- ``confidence``: ``w`` times the logistic of the head's best logit (a cross-encoder that finds no
  passage relevant leaves the order to the fusion).
- ``margin``: ``w`` times the logistic of the gap between the head's two best logits (one passage
  standing out).

Scoring follows :mod:`tune_maxp`: each dev set's queries split (30% held back, seed 0), the first
``--queries`` (100) of each part in a seeded draw, recall at a 1,000-token context (document recall@6
on rmc_dev). The best (blend, share) on the tuning part and the preset are then scored on the held-back
part. The cross-encoder's scores are cached by pair, so after ``bench/tune_maxp.py`` this runs in a few
minutes.

Run: ``.venv/bin/python bench/rerank_blends.py [--data ../shared/data] [--workdir DIR] [--queries 100]``.
Writes ``bench/results/rerank_blends.json`` and prints the tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
import numpy.typing as npt

import tune_defaults
from chunkwise.config import PipelineConfig, from_dict
from chunkwise.query.fusion import minmax
from chunkwise.query.rerank import Rerank
from tune_defaults import SETS, score, table
from tune_maxp import limited

RESULTS = Path(__file__).parent / "results" / "rerank_blends.json"
Floats = npt.NDArray[np.float64]


def logistic(value: float) -> float:
    """The logistic function."""
    return float(1.0 / (1.0 + np.exp(-value)))


def best_logit(logits: Floats) -> float:
    """The head's best logit."""
    return float(logits.max())


def margin(logits: Floats) -> float:
    """The gap between the head's two best logits (the best alone when it is the only one)."""
    top = np.sort(logits)[::-1]
    return float(top[0] - top[1]) if top.size > 1 else float(top[0])


#: Each blend: the share of the cross-encoder in a query, given the preset's ``w`` and the head's logits.
BLENDS: dict[str, tuple[Callable[[float, Floats], float], tuple[float, ...]]] = {
    "fixed": (lambda w, _: w, (0.1, 0.2, 0.3)),
    "confidence": (lambda w, logits: w * logistic(best_logit(logits)), (0.3, 0.6, 1.0)),
    "margin": (lambda w, logits: w * logistic(margin(logits)), (0.3, 0.6, 1.0)),
}


@dataclasses.dataclass(frozen=True)
class Blend:
    """A point: a blend of :data:`BLENDS` at the share ``weight``."""

    blend: str
    weight: float

    @property
    def name(self) -> str:
        """A label such as ``confidence w=0.6``."""
        return f"{self.blend} w={self.weight:g}"

    def apply(self, base: PipelineConfig) -> PipelineConfig:
        """``base`` with this share as ``rerank.weight`` (the blend reads it)."""
        return dataclasses.replace(base, rerank=dataclasses.replace(base.rerank, weight=self.weight))

    def patched(self) -> Any:
        """``Rerank.blend`` replaced by this blend, for a ``with`` block."""
        share = BLENDS[self.blend][0]

        def blend(self: Rerank, logits: npt.NDArray[np.float32], incoming: Floats) -> Floats:
            values = np.asarray(logits, dtype=np.float64)
            w = share(self.weight, values)
            return w * minmax(values) + (1.0 - w) * minmax(incoming)

        return patch.object(Rerank, "blend", blend)


def scored(points: list[Blend], part: str, base: PipelineConfig, args: Any) -> dict[str, dict[str, float]]:
    """Each point's metric on ``part`` of every set: point -> set -> metric."""
    result: dict[str, dict[str, float]] = {p.name: {} for p in points}
    for point in points:
        print(f"{point.name} on the {part} part", file=sys.stderr, flush=True)
        config = [(point.name, point.apply(base))]
        with point.patched():
            for name, (metric, _) in SETS.items():
                result[point.name][name] = score(args.data, name, part, config, args)[point.name][metric]
    return result


def main() -> None:
    """Score every blend on the tuning parts, the best and the preset on the held-back parts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--queries", type=int, default=100, help="queries scored of each part of a set")
    args = tune_defaults.arguments("", parser)
    tune_defaults.split_queries = limited(args.queries)
    base = from_dict({"preset": "quality"})
    points = [Blend(name, w) for name, (_, weights) in BLENDS.items() for w in weights]
    tuning = scored(points, "tuning", base, args)
    means = {name: sum(scores.values()) / len(scores) for name, scores in tuning.items()}
    preset = Blend("fixed", base.rerank.weight)
    chosen = max(points, key=lambda p: (means[p.name], p == preset))
    held = scored(list(dict.fromkeys([preset, chosen])), "held", base, args)
    result = {
        "queries": args.queries,
        "holdout": args.holdout,
        "seed": args.seed,
        "metrics": {name: metric for name, (metric, _) in SETS.items()},
        "tuning": [{"point": n, "scores": s, "mean": means[n]} for n, s in tuning.items()],
        "preset": preset.name,
        "chosen": chosen.name,
        "held_out": {n: {"scores": s, "mean": sum(s.values()) / len(s)} for n, s in held.items()},
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    ranked = sorted(tuning, key=lambda n: -means[n])
    lines = table("Tuning part:", ["mean", *SETS], [(n, [means[n], *tuning[n].values()]) for n in ranked])
    lines += table(
        "Held-back part:",
        ["mean", *SETS],
        [(n, [r["mean"], *r["scores"].values()]) for n, r in result["held_out"].items()],
    )
    print("\n".join(lines).strip())


if __name__ == "__main__":
    main()
