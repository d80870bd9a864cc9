"""Query-time alternatives to the default's hybrid retrieval, scored on the dev sets as the defaults were
tuned: fusion normalisations, pseudo-relevance feedback on the dense side, BM25's parameters and
passage-level BM25.

Each alternative replaces one function of the library for the duration of its run, in this process only
(the library offers none of them: none beat the default). Every alternative is scored at BM25 fusion
weights 0.7, 0.6 and 0.5 on the tuning part of every dev set (30% of the queries held back, seed 0; recall
at a 1,000-token context, document recall@6 on rmc_dev), on the indexes of the default configuration, so
nothing is embedded again. The table gives each alternative's best weight beside the default
(min-max fusion, BM25 weight 0.7). An alternative that led the default on the tuning part would be
scored on the held-back part next; none does.

- ``z-score``: each retriever's scores standardised over the candidates instead of min-max scaled (the
  distribution-based fusion of Qdrant and of Bruch et al., 2023, up to a shared affine map).
- ``rocchio m=M beta=B``: the query vector moved towards the mean vector of the M best fused candidates
  (``q + B * mean``, normalised), every candidate's cosine recomputed, then fused again.
- ``bm25 k1=K b=B``: Okapi BM25 with other parameters than FTS5's fixed 1.2 and 0.75.
- ``bm25 windows=N``: a chunk's BM25 is the best of its windows of N index terms, half a window apart
  (MaxP on the lexical side); ``+ chunk``: the chunk's own BM25 plus that best window's.

The BM25 alternatives rank the store's analysed terms (the FTS5 rows) with a BM25 written here; the row
``bm25 k1=1.2 b=0.75`` is that code with FTS5's parameters and reproduces the default's figures.

Run: ``.venv/bin/python bench/tune_alternatives.py [--data ../shared/data] [--workdir DIR]`` (the indexes
of ``bench/eval_all.sh`` and ``bench/tune_defaults.py`` are reused). Writes
``bench/results/tune_alternatives.json`` and prints the table.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections import defaultdict
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
import numpy.typing as npt

from bench_data import shown
from chunkwise.config import PipelineConfig, from_dict
from chunkwise.query import fusion
from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.trace import Trace
from chunkwise.store.sqlite import SQLiteStore
from chunkwise.terms import search_terms
from tune_defaults import SETS, arguments, score, table

RESULTS = Path(__file__).parent / "results" / "tune_alternatives.json"
WEIGHTS = (0.7, 0.6, 0.5)
Floats = npt.NDArray[np.float64]


@dataclasses.dataclass(frozen=True)
class Weight:
    """A grid point: BM25's share of the fusion."""

    weight: float

    @property
    def name(self) -> str:
        """A label such as ``weight=0.6``."""
        return f"weight={self.weight:g}"

    def apply(self, base: PipelineConfig) -> PipelineConfig:
        """``base`` with this fusion weight."""
        return dataclasses.replace(base, retrieval=dataclasses.replace(base.retrieval, weight=self.weight))


def standardised(values: Floats) -> Floats:
    """``values`` minus their mean, over their standard deviation (zeros when they are constant)."""
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)


def z_score_fusion(bm25: Floats, dense: Floats, weight: float = 0.5) -> Floats:
    """Weighted fusion of standardised scores."""
    return weight * standardised(bm25) + (1.0 - weight) * standardised(dense)


def rocchio(best: int, beta: float) -> AbstractContextManager[Any]:
    """Fusion, then the query vector moved towards the ``best`` fused candidates, then fusion again."""
    fuse = fusion.Fusion.__call__

    def fused_twice(self: fusion.Fusion, query: Query, candidates: list[Candidate], trace: Trace) -> Any:
        ranked = fuse(self, query, candidates, trace)
        vectors = [c.vector for c in ranked[:best] if c.vector is not None]
        if query.vector is None or not vectors:
            return ranked
        moved = np.asarray(query.vector, dtype=np.float64) + beta * np.mean(vectors, axis=0)
        moved /= np.linalg.norm(moved)
        for cand in ranked:
            if cand.vector is not None:
                cand.scores["dense"] = float(cand.vector @ moved)
        return fuse(self, query, ranked, trace)

    return patch.object(fusion.Fusion, "__call__", fused_twice)


@dataclasses.dataclass
class Postings:
    """BM25 postings over passages of the store's analysed chunk terms (whole chunks or windows)."""

    owners: npt.NDArray[np.int64]
    lengths: Floats
    terms: dict[str, tuple[npt.NDArray[np.int64], Floats]]

    @classmethod
    def of(cls, rows: list[tuple[int, str]], window: int | None) -> Postings:
        """The passages of each ``(chunk key, analysed terms)`` row: the chunk, or its windows of
        ``window`` terms half a window apart when it is longer."""
        owners: list[int] = []
        lengths: list[int] = []
        counts: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        for key, body in rows:
            terms = body.split()
            if window is None or len(terms) <= window:
                spans = [(0, len(terms))]
            else:
                starts = [*range(0, len(terms) - window, window // 2), len(terms) - window]
                spans = [(start, start + window) for start in starts]
            for start, end in spans:
                for term in terms[start:end]:
                    counts[term][len(owners)] += 1
                owners.append(key)
                lengths.append(end - start)
        return cls(
            np.array(owners, dtype=np.int64),
            np.array(lengths, dtype=np.float64),
            {
                term: (np.fromiter(d.keys(), np.int64, len(d)), np.fromiter(d.values(), np.float64, len(d)))
                for term, d in counts.items()
            },
        )

    def best(self, query: str, k1: float, b: float) -> dict[int, float]:
        """Each matching chunk's best passage score (Okapi BM25 with FTS5's idf)."""
        count = len(self.owners)
        total = np.zeros(count)
        average = float(self.lengths.mean()) if count else 1.0
        for term in search_terms(query):
            if term not in self.terms:
                continue
            ids, tf = self.terms[term]
            idf = max(math.log((count - len(ids) + 0.5) / (len(ids) + 0.5)), 1e-6)
            total[ids] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * self.lengths[ids] / average))
        found: dict[int, float] = {}
        for passage in np.flatnonzero(total):
            owner = int(self.owners[passage])
            found[owner] = max(found.get(owner, 0.0), float(total[passage]))
        return found


def lexical(window: int | None, k1: float = 1.2, b: float = 0.75, plus_chunk: bool = False) -> Any:
    """The SQLite store's BM25 replaced by :class:`Postings` over chunks or windows."""
    built: dict[tuple[str, int | None], Postings] = {}

    def postings(store: SQLiteStore, size: int | None) -> Postings:
        if (store.location, size) not in built:
            rows = store._rows("SELECT rowid, body FROM chunks_fts ORDER BY rowid")
            built[(store.location, size)] = Postings.of([(int(r[0]), str(r[1])) for r in rows], size)
        return built[(store.location, size)]

    def bm25(store: SQLiteStore, query: str, k: int) -> list[tuple[int, float]]:
        found = postings(store, window).best(query, k1, b)
        if plus_chunk:
            whole = postings(store, None).best(query, k1, b)
            found = {key: value + found.get(key, 0.0) for key, value in whole.items()}
        return sorted(found.items(), key=lambda item: (-item[1], item[0]))[:k]

    return patch.object(SQLiteStore, "bm25", bm25)


ALTERNATIVES: dict[str, Callable[[], AbstractContextManager[Any]]] = {
    "default (min-max fusion)": nullcontext,
    "z-score fusion": lambda: patch.object(fusion, "weighted_fusion", z_score_fusion),
    **{
        f"rocchio m={m} beta={beta:g}": (lambda m=m, beta=beta: rocchio(m, beta))
        for m, beta in ((1, 0.5), (3, 0.5), (3, 1.0), (5, 0.3))
    },
    **{
        f"bm25 k1={k1:g} b={b:g}": (lambda k1=k1, b=b: lexical(None, k1, b))
        for k1, b in ((1.2, 0.75), (0.9, 0.4), (1.2, 0.5), (1.2, 0.9), (2.0, 0.75))
    },
    **{f"bm25 windows={n}": (lambda n=n: lexical(n)) for n in (64, 128)},
    **{f"bm25 windows={n} + chunk": (lambda n=n: lexical(n, plus_chunk=True)) for n in (64, 128)},
}


def main() -> None:
    """Score every alternative on the tuning parts; write and print the table."""
    args = arguments(__doc__.split("\n", 1)[0])
    base = from_dict({})
    points = [Weight(w) for w in WEIGHTS]
    configs = [(p.name, p.apply(base)) for p in points]
    rows = []
    for label, alternative in ALTERNATIVES.items():
        print(f"{label}", file=sys.stderr, flush=True)
        with alternative():
            scored = {name: score(args.data, name, "tuning", configs, args) for name in SETS}
        by_weight = {
            p.name: {name: scored[name][p.name][metric] for name, (metric, _) in SETS.items()} for p in points
        }
        means = {w: sum(s.values()) / len(s) for w, s in by_weight.items()}
        best = max(means, key=lambda w: means[w])
        rows.append({"alternative": label, "weight": best, "mean": means[best], "scores": by_weight[best]})
    result = {
        "data": shown(args.data),
        "holdout": args.holdout,
        "seed": args.seed,
        "metrics": {name: metric for name, (metric, _) in SETS.items()},
        "weights": list(WEIGHTS),
        "rows": rows,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = table(
        "Tuning part, each alternative at its best BM25 weight (mean, then each set's metric):",
        ["mean", *SETS],
        [(f"{r['alternative']} ({r['weight']})", [r["mean"], *r["scores"].values()]) for r in rows],
    )
    print("\n".join(lines).strip())


if __name__ == "__main__":
    main()
