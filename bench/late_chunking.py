"""Late chunking: passage windows pooled from the whole chunk's token states, scored on the dev sets.

The default embeds each 64-token window of a chunk on its own (with the chunk's header in front), so a
window knows nothing of the text around it: a pronoun, a variable bound three lines up, a speaker's
earlier turn. *Late chunking* (Günther et al., "Late Chunking: Contextual Chunk Embeddings Using
Long-Context Embedding Models", 2024) runs the encoder once over the whole text and pools each passage's
vector from the token states of its span, so every passage is read in its context. bge-small reads 512
tokens, so the whole chunk (header, blank line, text: about 450 tokens at 2,000 characters) is one pass;
a window whose tokens lie past the 512th keeps its own vector.

bge-small is trained to answer its ``[CLS]`` state, not a mean of token states, so besides the late
vectors alone (``late``) the windows take the sum of their own unit vector and ``a`` times the late one,
normalised again (``blend a``). A chunk's stored vector stays the normalised mean of its windows' (the
default's rule), computed from the new ones.

The variants are written into copies of the default configuration's cached indexes (only the windows'
and chunks' vectors change, so nothing is chunked or embedded again by the evaluation), then scored as
:mod:`tune_defaults` scores its grid: the tuning part of every dev set (30% of the queries held back,
seed 0) with recall at a 1,000-token context (document recall@6 on rmc_dev), the best variant then on
the held-back part beside the default.

Run: ``.venv/bin/python bench/late_chunking.py [--data ../shared/data] [--workdir DIR]`` (the default's
indexes of ``bench/eval_all.sh`` are reused; the variants' copies go under ``DIR/late-chunking``).
Writes ``bench/results/late_chunking.json`` and prints the tables.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkwise.chunking.chunk import contextual_text
from chunkwise.chunking.tokens import get_counter
from chunkwise.config import from_dict
from chunkwise.evaluation.datasets import load_dataset
from chunkwise.evaluation.runner import index_path
from chunkwise.ingest.windows import window_spans
from chunkwise.models.config import cache_root
from chunkwise.models.context import Models
from chunkwise.models.onnx_embedder import BGE_SMALL
from chunkwise.models.onnx_session import load_tokenizer, onnx_session, pad_batch, run_session
from chunkwise.store.sqlite_schema import DB_NAME
from tune_defaults import SETS, arguments, mean, score, write_parts

RESULTS = Path(__file__).parent / "results" / "late_chunking.json"
Vector = npt.NDArray[np.float32]
#: A window pooled from fewer tokens than this (its tokens past the encoder's 512) keeps its own vector.
MIN_TOKENS = 8
#: How a window's vector is made from its own (``own``) and its late-pooled one (``late``), both unit.
VARIANTS: dict[str, Callable[[Vector, Vector], Vector]] = {
    "late": lambda own, late: late,
    "blend 1": lambda own, late: own + late,
    "blend 0.5": lambda own, late: own + 0.5 * late,
}


def unit(vector: npt.NDArray[Any]) -> Vector:
    """``vector`` scaled to length 1, as float32."""
    return np.asarray(vector / max(float(np.linalg.norm(vector)), 1e-12), dtype=np.float32)


class LateWindows:
    """Each window of a chunk pooled (mean) from bge-small's token states over the whole chunk."""

    def __init__(self) -> None:
        model = BGE_SMALL.onnx(cache_root())
        self.tokenizer = load_tokenizer(BGE_SMALL.tokenizer_dir() / "tokenizer.json", BGE_SMALL.install, 512)
        self.session = onnx_session(model, BGE_SMALL.install)
        self.counter = get_counter("minilm")

    def __call__(self, header: str, text: str) -> list[Vector | None]:
        """One late vector per window of ``text`` (the default's windows), ``None`` where its tokens fell
        past the encoder's limit."""
        spans = window_spans(text, 64, self.counter, overlap=False)
        if not spans:
            return []
        full = contextual_text(header, text)
        shift = len(full) - len(text)
        encoding = self.tokenizer.encode(full)
        states = run_session(self.session, pad_batch([encoding]))[0]
        offsets = np.array(encoding.offsets)
        real = ~np.array(encoding.special_tokens_mask, dtype=bool) & (offsets[:, 1] > offsets[:, 0])
        out: list[Vector | None] = []
        for start, end in spans:
            inside = real & (offsets[:, 0] >= start + shift) & (offsets[:, 1] <= end + shift)
            out.append(unit(states[inside].mean(axis=0)) if inside.sum() >= MIN_TOKENS else None)
        return out


def late_vectors(
    database: Path, late: LateWindows
) -> dict[int, tuple[list[int], list[Vector], list[Vector | None]]]:
    """Per chunk with windows: its window keys, their stored vectors and their late vectors."""
    out = {}
    with sqlite3.connect(database) as con:
        rows = con.execute(
            "SELECT c.chunk_key, c.text, h.header FROM chunks c JOIN headers h USING (chunk_key)"
        ).fetchall()
        for key, text, header in rows:
            stored = con.execute(
                "SELECT window_key, vector FROM windows WHERE chunk_key = ? ORDER BY window_key", (key,)
            ).fetchall()
            if stored:
                lates = late(header, text)
                if len(lates) != len(stored):
                    raise SystemExit(f"{database}: chunk {key} has {len(stored)} windows, not {len(lates)}")
                own = [np.frombuffer(blob, dtype=np.float32) for _, blob in stored]
                out[key] = ([k for k, _ in stored], own, lates)
    return out


def write_variant(
    database: Path,
    vectors: dict[int, tuple[list[int], list[Vector], list[Vector | None]]],
    rule: Callable[[Vector, Vector], Vector],
) -> None:
    """Replace the windows' vectors of ``database`` by ``rule``'s, and each chunk's by their mean."""
    with sqlite3.connect(database) as con:
        for key, (window_keys, own, lates) in vectors.items():
            made = [o if lt is None else unit(rule(o, lt)) for o, lt in zip(own, lates, strict=True)]
            con.executemany(
                "UPDATE windows SET vector = ? WHERE window_key = ?",
                [(v.tobytes(), k) for v, k in zip(made, window_keys, strict=True)],
            )
            con.execute(
                "UPDATE vectors SET vector = ? WHERE chunk_key = ?",
                (unit(np.mean(made, axis=0)).tobytes(), key),
            )


def scores(args: argparse.Namespace, part: str) -> dict[str, float]:
    """The default configuration's tuned metric on ``part`` of every set, with ``args.workdir``'s indexes."""
    configs = [("default", from_dict({}))]
    return {
        name: score(args.data, name, part, configs, args)["default"][metric]
        for name, (metric, _) in SETS.items()
    }


def main() -> None:
    """Build every variant's indexes, score them on the tuning parts, the best on the held-back parts."""
    args = arguments(__doc__.split("\n", 1)[0])
    tuning = {"default": scores(args, "tuning")}  # builds the default's indexes where missing
    config = from_dict({})
    embedder = Models(config.models).embedder()
    late = LateWindows()
    sources = {
        name: index_path(args.workdir, load_dataset(args.data / name), config, embedder) for name in SETS
    }
    vectors = {name: late_vectors(path / DB_NAME, late) for name, path in sources.items()}
    workdirs = {}
    for label, rule in VARIANTS.items():
        print(label, file=sys.stderr, flush=True)
        workdir = args.workdir / "late-chunking" / label.replace(" ", "-")
        for name, source in sources.items():
            copy = workdir / "indexes" / source.name
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(source, copy)
            write_variant(copy / DB_NAME, vectors[name], rule)
        workdirs[label] = workdir
        tuning[label] = scores(argparse.Namespace(**{**vars(args), "workdir": workdir}), "tuning")
    best = max(VARIANTS, key=lambda label: mean(tuning[label]))
    held = {
        "default": scores(args, "held"),
        best: scores(argparse.Namespace(**{**vars(args), "workdir": workdirs[best]}), "held"),
    }
    write_parts(RESULTS, args, tuning, held, label="variant")


if __name__ == "__main__":
    main()
