"""Other uses of the default's passage windows at query time, and its chunk size once windows exist,
scored on the dev sets as the defaults were tuned.

The default scores a chunk by the best of its 64-token windows (the MaxP of passage retrieval) and of
its vector pooled from them. This script asks whether anything else made of the same stored windows
does better, without embedding anything again:

- ``pooled L``: a chunk's dense score is ``L x best window + (1 - L) x its pooled vector's cosine``
  (the normalised mean of its windows: the FirstP/MaxP/SumP mixtures of document ranking); ``pooled 1``
  is the best window alone;
- ``second best G`` and ``neighbour G``: the best window plus ``G`` times the second best window, or
  plus ``G`` times the better of its two neighbours, over ``1 + G`` (evidence that spans windows);
- ``cut to the best window +-1`` and ``cut to the windows within 0.03 of the best, +-1``: every
  retrieved chunk narrowed to the part of it around its best windows, so that a context of 1,000 tokens
  holds more chunks (the span metrics score the narrowed spans);
- ``reranker reads the best window +-2`` (the ``quality`` preset): the cross-encoder reads the
  chunk's text around its best dense window instead of the 192 tokens holding the most query terms.

Each alternative replaces one function of the library for the duration of its run, in this process
only, as in :mod:`tune_alternatives`; the library offers none of them (none beat what it does). Then the
default's chunk size is scored again with its windows (800 to 2,400 characters), since windows change
how a long chunk is found. Everything is scored on the tuning part of every dev set (30% of the queries
held back, seed 0): recall at a 1,000-token context, document recall@6 on rmc_dev; the alternative of
the default's with the best tuning mean is then scored on the held-back part beside the default.

Run: ``.venv/bin/python bench/windows_alternatives.py [--data ../shared/data] [--workdir DIR]`` (the
indexes of ``bench/eval_all.sh`` and the tuning scripts are reused; the chunk sizes other than 2,000
are embedded once, in a few minutes). Writes ``bench/results/windows_alternatives.json`` and prints the
tables.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
import numpy.typing as npt

from bench_data import shown
from chunkwise.chunking.tokens import get_counter
from chunkwise.config import PipelineConfig, from_dict
from chunkwise.evaluation import runner
from chunkwise.ingest.windows import window_spans
from chunkwise.kb import KnowledgeBase
from chunkwise.query import rerank, retrieve
from chunkwise.query.candidate import Candidate, Query
from chunkwise.query.trace import Trace
from chunkwise.store.dense import DenseIndex, top_k
from tune_defaults import SETS, Point, arguments, score, table

RESULTS = Path(__file__).parent / "results" / "windows_alternatives.json"
SIZES = (2000, 800, 1200, 1600, 2400)
Floats = npt.NDArray[np.float32]
#: How a chunk's windows' cosines (in order) and its pooled vector's cosine make its dense score.
RunScore = Callable[[Floats, float], float]


def pooled(share: float) -> RunScore:
    """The best window blended with the pooled vector."""
    return lambda windows, whole: share * float(windows.max()) + (1.0 - share) * whole


def second_best(extra: float) -> RunScore:
    """The best window plus ``extra`` times the second best."""

    def run_score(windows: Floats, whole: float) -> float:
        if windows.size < 2:
            return float(windows.max())
        low, high = np.partition(windows, -2)[-2:]
        return float(high + extra * low) / (1.0 + extra)

    return run_score


def neighbour(extra: float) -> RunScore:
    """Each window plus ``extra`` times the better of its neighbours, the best of those."""

    def run_score(windows: Floats, whole: float) -> float:
        if windows.size < 2:
            return float(windows.max())
        padded = np.concatenate(([-np.inf], windows, [-np.inf]))
        support = np.maximum(padded[:-2], padded[2:])
        return float((windows + extra * support).max()) / (1.0 + extra)

    return run_score


def run_scoring(run_score: RunScore) -> AbstractContextManager[Any]:
    """The stores' dense index scoring each windowed chunk with ``run_score`` (exact search and the
    scores of candidates that BM25 alone found), the retrieve stage taking those scores as they are."""

    def run_scores(index: DenseIndex, vector: Floats, runs: Sequence[int]) -> list[float]:
        return [
            run_score(
                index.windows[index._runs[r] : index._run_ends[r]] @ vector, float(index.matrix[row] @ vector)
            )
            for r, row in ((r, index._run_rows[r]) for r in runs)
        ]

    def exact(index: DenseIndex, query: Floats, k: int) -> list[tuple[int, float]]:
        vector = query.astype(np.float32)
        scores = index.matrix @ vector
        if index.owners.size:
            scores[index._run_rows] = run_scores(index, vector, range(index._runs.size))
        best = top_k(scores, k)
        return [(int(index.keys[i]), float(scores[i])) for i in best]

    def window_scores(index: DenseIndex, query: Floats, keys: Sequence[int]) -> dict[int, float]:
        if not index.owners.size or not keys:
            return {}
        wanted = np.asarray(keys, dtype=np.int64)
        at = np.minimum(np.searchsorted(index._run_keys, wanted), index._run_keys.size - 1)
        held = index._run_keys[at] == wanted
        runs = [int(r) for r in index._run_order[at[held]]]
        return dict(
            zip(wanted[held].tolist(), run_scores(index, query.astype(np.float32), runs), strict=True)
        )

    @contextmanager
    def patched() -> Iterator[None]:
        with (
            patch.object(DenseIndex, "exact", exact),
            patch.object(DenseIndex, "window_scores", window_scores),
            patch.object(retrieve, "WINDOW_MARGIN", -np.inf),
        ):
            yield

    return patched()


class WindowLookup:
    """A retrieved chunk's windows (character spans in its text, and their vectors) in the store of the
    knowledge base being evaluated, as the default ingests them (64 tokens end to end)."""

    def __init__(self, overlap: bool = False) -> None:
        self.overlap = overlap
        self.kb: KnowledgeBase | None = None
        self.counter = get_counter("minilm")

    def opened(self) -> AbstractContextManager[Any]:
        """Remember each knowledge base the evaluation opens."""
        lookup, init = self, KnowledgeBase.__init__

        def remember(kb: KnowledgeBase, *args: Any, **kwargs: Any) -> None:
            init(kb, *args, **kwargs)
            lookup.kb = kb

        return patch.object(KnowledgeBase, "__init__", remember)

    def best(
        self, cand: Candidate, vector: Floats, around: int, within: float | None = None
    ) -> tuple[int, int] | None:
        """Character offsets in the chunk's text of its best window, ``around`` windows either side,
        widened first to the windows beside it within ``within`` of its cosine (``None`` when the chunk
        has no windows)."""
        assert self.kb is not None
        index = self.kb.store.dense_index()
        at = int(np.searchsorted(index._run_keys, cand.key))
        if at >= index._run_keys.size or index._run_keys[at] != cand.key:
            return None
        run = index._run_order[at]
        spans = window_spans(cand.chunk.text, 64, self.counter, overlap=self.overlap)
        scores = index.windows[index._runs[run] : index._run_ends[run]] @ vector.astype(np.float32)
        best = int(scores.argmax())
        low = high = best
        while within is not None and low > 0 and scores[low - 1] >= scores[best] - within:
            low -= 1
        while within is not None and high < len(spans) - 1 and scores[high + 1] >= scores[best] - within:
            high += 1
        low, high = max(low - around, 0), min(high + around, len(spans) - 1)
        return spans[low][0], spans[high][1]


def cut(around: int, within: float | None = None) -> AbstractContextManager[Any]:
    """Every retrieved chunk narrowed to its best windows (:meth:`WindowLookup.best`)."""
    lookup = WindowLookup()

    def retrieved(
        kb: KnowledgeBase,
        config: PipelineConfig,
        query: str,
        depth: int,
        trace: Trace,
        *,
        vector: Floats | None,
    ) -> tuple[runner.Retrieved, ...]:
        hits = []
        for cand in kb.query.ranked(query, trace, vector)[:depth]:
            span = lookup.best(cand, vector, around, within) if vector is not None else None
            start, end = (
                (cand.start, cand.end) if span is None else (cand.start + span[0], cand.start + span[1])
            )
            hits.append(runner.Retrieved(cand.doc_id, start, end, cand.score))
        return tuple(hits)

    stack = ExitStack()
    stack.enter_context(lookup.opened())
    stack.enter_context(patch.object(runner, "_retrieve", retrieved))
    return stack


def reranker_reads_best_window(around: int) -> AbstractContextManager[Any]:
    """The rerank stage giving the cross-encoder each candidate's header and the text around its best
    dense window (the ``quality`` preset's overlapping windows) instead of the whole chunk."""
    lookup = WindowLookup(overlap=True)
    call = rerank.Rerank.__call__

    def reranked(stage: rerank.Rerank, query: Query, candidates: list[Candidate], trace: Trace) -> Any:
        if query.vector is None:
            return call(stage, query, candidates, trace)
        texts = []  # what the stage hands the reranker: the head's contextual texts, in order
        for cand in candidates[: stage.depth]:
            span = lookup.best(cand, query.vector, around)
            region = cand.text if span is None else cand.text[span[0] : span[1]]
            texts.append("\n".join(part for part in (cand.header, region) if part))
        score = stage.reranker.score

        def focused(text: str, given: Sequence[str]) -> Any:
            return score(text, texts if len(given) == len(texts) else given)

        with patch.object(stage.reranker, "score", focused):
            return call(stage, query, candidates, trace)

    stack = ExitStack()
    stack.enter_context(lookup.opened())
    stack.enter_context(patch.object(rerank.Rerank, "__call__", reranked))
    return stack


#: Each alternative: the preset it applies to and the change it makes for its run.
ALTERNATIVES: dict[str, tuple[str, Callable[[], AbstractContextManager[Any]]]] = {
    "best of the windows and the pooled vector (the default)": ("default", nullcontext),
    **{f"pooled {w:g}": ("default", lambda w=w: run_scoring(pooled(w))) for w in (1.0, 0.9, 0.7, 0.5)},
    "second best 0.2": ("default", lambda: run_scoring(second_best(0.2))),
    "neighbour 0.2": ("default", lambda: run_scoring(neighbour(0.2))),
    "cut to the best window +-1": ("default", lambda: cut(1)),
    "cut to the windows within 0.03 of the best, +-1": ("default", lambda: cut(1, 0.03)),
    "quality: reranker reads the 192 tokens with the most query terms (the preset)": ("quality", nullcontext),
    "quality: reranker reads the best window +-2": ("quality", lambda: reranker_reads_best_window(2)),
}


def scores(config: PipelineConfig, args: Any, part: str = "tuning") -> dict[str, float]:
    """``config``'s tuned metric on the ``part`` (``tuning`` or ``held``) of every dev set."""
    return {
        name: score(args.data, name, part, [("x", config)], args)["x"][metric]
        for name, (metric, _) in SETS.items()
    }


def main() -> None:
    """Score every alternative and chunk size on the tuning parts; write and print the tables."""
    args = arguments(__doc__.split("\n", 1)[0])
    rows = []
    for label, (preset, alternative) in ALTERNATIVES.items():
        print(label, file=sys.stderr, flush=True)
        with alternative():
            # the quality preset as these rows measured it: the best 20 candidates reranked (now 10)
            scored = scores(from_dict({"preset": preset, "rerank": {"depth": 20}}), args)
        rows.append({"alternative": label, "mean": sum(scored.values()) / len(scored), "scores": scored})
    # the best alternative of the default's on the tuning part, and the default, on the held-back part
    default = next(iter(ALTERNATIVES))
    best = max((r for r in rows if ALTERNATIVES[r["alternative"]][0] == "default"), key=lambda r: r["mean"])
    held = []
    for label in dict.fromkeys((default, best["alternative"])):
        print(f"{label}, held back", file=sys.stderr, flush=True)
        with ALTERNATIVES[label][1]():
            scored = scores(from_dict({}), args, "held")
        held.append({"alternative": label, "mean": sum(scored.values()) / len(scored), "scores": scored})
    sizes = []
    for point in (Point(size, "weighted", 0.5) for size in SIZES):
        print(point.name, file=sys.stderr, flush=True)
        scored = scores(point.apply(from_dict({})), args)
        sizes.append({"point": point.name, "mean": sum(scored.values()) / len(scored), "scores": scored})
    result = {
        "data": shown(args.data),
        "holdout": args.holdout,
        "seed": args.seed,
        "metrics": {name: metric for name, (metric, _) in SETS.items()},
        "alternatives": rows,
        "held_out": held,
        "sizes": sizes,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    columns = ["mean", *SETS]
    lines = table(
        "Tuning part (mean, then each set's metric):",
        columns,
        [(r["alternative"], [r["mean"], *r["scores"].values()]) for r in rows],
    )
    lines += table(
        "Held-back part, the default and the best alternative of its on the tuning part:",
        columns,
        [(r["alternative"], [r["mean"], *r["scores"].values()]) for r in held],
    )
    lines += table(
        "Chunk size with the default's windows, tuning part:",
        columns,
        [(r["point"], [r["mean"], *r["scores"].values()]) for r in sizes],
    )
    print("\n".join(lines).strip())


if __name__ == "__main__":
    main()
