"""Scores from a chunk's surroundings, after fusion, scored on the dev sets as the defaults were tuned:
a document prior and neighbour smoothing.

A chunk's fused score says how well it alone matches the query. Two priors look around it:

- ``document prior L``: ``(1 - L) * fused + L * best / top``, where ``best`` is the best fused score among
  the candidates of the chunk's document and ``top`` the best of all: the chunks of the document that
  holds the best match rise together (hierarchical retrieval: a query is often about one document
  among many, as on rmc_dev and qmsum_val).
- ``neighbours L``: ``fused + L * max(fused of the chunk before, fused of the chunk after)`` among the
  candidates: an answer that runs over a chunk boundary, or a passage whose neighbours match too, rises.

Each replaces the fusion stage of the library for the duration of its run, in this process only (the
library offers neither: neither beat the default). Every setting is scored on the tuning part of every
dev set (30% of the queries held back, seed 0; recall at a 1,000-token context, document recall@6 on
rmc_dev) on the default configuration's indexes, so nothing is embedded again; the best setting of each
prior is then scored on the held-back parts beside the default.

Run: ``.venv/bin/python bench/tune_context_priors.py [--data ../shared/data] [--workdir DIR]`` (the
indexes of ``bench/eval_all.sh`` and ``bench/tune_defaults.py`` are reused). Writes
``bench/results/tune_context_priors.json`` and prints the tables.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any
from unittest.mock import patch

from chunkwise.config import from_dict
from chunkwise.query import fusion
from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.trace import Trace
from tune_defaults import SETS, arguments, mean, score, write_parts

RESULTS = Path(__file__).parent / "results" / "tune_context_priors.json"
LABEL = "default"


def document_prior(share: float, candidates: list[Candidate]) -> list[float]:
    """Each candidate's fused score blended with its document's best, relative to the best of all."""
    best: dict[str, float] = {}
    for cand in candidates:
        best[cand.doc_id] = max(best.get(cand.doc_id, 0.0), cand.score)
    top = max(best.values()) or 1.0
    return [(1 - share) * c.score + share * best[c.doc_id] / top for c in candidates]


def neighbours(share: float, candidates: list[Candidate]) -> list[float]:
    """Each candidate's fused score plus ``share`` of its better neighbour's among the candidates."""
    at = {(c.doc_id, c.ordinal): c.score for c in candidates}
    return [
        c.score + share * max(at.get((c.doc_id, c.ordinal - 1), 0.0), at.get((c.doc_id, c.ordinal + 1), 0.0))
        for c in candidates
    ]


def after_fusion(rescore: Callable[[list[Candidate]], list[float]]) -> AbstractContextManager[Any]:
    """The fusion stage followed by ``rescore`` of its candidates, ranked again."""
    fuse = fusion.Fusion.__call__

    def fused_then_rescored(
        self: fusion.Fusion, query: Query, candidates: list[Candidate], trace: Trace
    ) -> Any:
        ranked = fuse(self, query, candidates, trace)
        for cand, value in zip(ranked, rescore(ranked), strict=True):
            cand.score = cand.scores[self.name] = value
        return sorted(ranked, key=lambda c: -c.score)

    return patch.object(fusion.Fusion, "__call__", fused_then_rescored)


#: Each prior's settings, by family.
PRIORS: dict[str, dict[str, Callable[[], AbstractContextManager[Any]]]] = {
    "document prior": {
        f"document prior {share:g}": (lambda share=share: after_fusion(lambda c: document_prior(share, c)))
        for share in (0.1, 0.2, 0.3, 0.4, 0.5)
    },
    "neighbours": {
        f"neighbours {share:g}": (lambda share=share: after_fusion(lambda c: neighbours(share, c)))
        for share in (0.05, 0.1, 0.2)
    },
}


def scores(args: Any, part: str, alternative: Callable[[], AbstractContextManager[Any]]) -> dict[str, float]:
    """The default configuration's tuned metric on ``part`` of every set, under ``alternative``."""
    configs = [(LABEL, from_dict({}))]
    with alternative():
        return {
            name: score(args.data, name, part, configs, args)[LABEL][metric]
            for name, (metric, _) in SETS.items()
        }


def main() -> None:
    """Score every setting on the tuning parts, the best of each prior on the held-back parts."""
    args = arguments(__doc__.split("\n", 1)[0])
    tuning = {LABEL: scores(args, "tuning", nullcontext)}
    chosen = [LABEL]
    for family, settings in PRIORS.items():
        for label, alternative in settings.items():
            print(label, file=sys.stderr, flush=True)
            tuning[label] = scores(args, "tuning", alternative)
        chosen.append(max(settings, key=lambda label: (mean(tuning[label]), -list(settings).index(label))))
        print(f"{family}: {chosen[-1]}", file=sys.stderr, flush=True)
    every = {label: alt for settings in PRIORS.values() for label, alt in settings.items()}
    held = {label: scores(args, "held", every.get(label, nullcontext)) for label in chosen}
    write_parts(
        RESULTS,
        args,
        tuning,
        {label: held[label] for label in chosen},
        held_title="Held-back part, the default and each prior's best setting:",
    )


if __name__ == "__main__":
    main()
