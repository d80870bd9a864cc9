"""Embedding speed per local backend, and how closely int8 ONNX agrees with fp32.

Inputs: the five documents of ``../shared/data/chroma/corpus.jsonl`` (1.4 MB) cut into consecutive
400-character chunks; ``--limit`` takes that many chunks spread evenly over the corpus (all by default).
Each backend embeds the same chunks ``--rounds`` times after a warm-up batch and the fastest round is
reported. ``tokens/s`` counts MiniLM word pieces (truncated at the model's 256-token limit, as embedded).
``chunks/CPU-s`` divides by the process CPU time instead of wall-clock time: on a shared machine it is
the steadier measure of what a backend costs.

The reference (and peer: the standard way to run this model) is sentence-transformers in fp32 with
batch 64, chunkwise's ``local:fp32`` backend; ``ratio`` is a row's speed over it. ``cos mean``/``cos min``
compare each row's vectors with the reference vectors, chunk by chunk.

With ``--llm`` the script also times the bundled SmolLM2-135M: one teacher-forced forward pass over
about 700 tokens (``logprobs``) and a 50-token greedy chat answer.

    .venv/bin/python bench/embed_speed.py                 # prints a Markdown table, writes the JSON
    .venv/bin/python bench/embed_speed.py --limit 500 --rounds 1 --llm
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench_data import add_data_option
from chunkwise.models.local_embedder import LocalEmbedder
from chunkwise.models.onnx_embedder import OnnxEmbedder
from chunkwise.models.protocols import Embedder, Message

RESULTS = Path(__file__).resolve().parent / "results" / "embed_speed.json"
CHUNK_CHARS = 400


@dataclass
class Row:
    """One backend's speed and agreement with the fp32 reference."""

    backend: str
    batch: int
    chunks: int
    seconds: float
    cpu_seconds: float
    chunks_per_s: float
    chunks_per_cpu_s: float
    tokens_per_s: float
    ratio: float
    cpu_ratio: float
    cos_mean: float
    cos_min: float


def load_chunks(corpus: Path, limit: int | None) -> list[str]:
    """Consecutive 400-character chunks of every corpus document; ``limit`` of them, evenly spaced."""
    chunks: list[str] = []
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            text = json.loads(line)["text"]
            chunks.extend(text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS))
    if limit and limit < len(chunks):
        step = len(chunks) / limit
        chunks = [chunks[int(i * step)] for i in range(limit)]
    return chunks


def best_time(work: Callable[[], Any], rounds: int) -> tuple[float, float, Any]:
    """Fastest wall-clock and process-CPU seconds of ``rounds`` runs of ``work``, and its last result."""
    best, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = work()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    return best, best_cpu, result


def measure(chunks: list[str], rounds: int) -> list[Row]:
    """Time each backend on ``chunks``; the first backend is the reference."""
    backends: list[tuple[str, int, Embedder]] = [
        ("sentence-transformers fp32", 64, LocalEmbedder(batch_size=64)),
        ("sentence-transformers fp32", 16, LocalEmbedder(batch_size=16)),
        ("onnxruntime int8", 32, OnnxEmbedder(batch_size=32)),
        ("onnxruntime int8", 8, OnnxEmbedder(batch_size=8)),
    ]
    counter = OnnxEmbedder()
    tokens = sum(counter.count_tokens(c) for c in chunks)
    rows: list[Row] = []
    reference: np.ndarray | None = None
    reference_speed = reference_cpu_speed = 0.0
    for label, batch, embedder in backends:
        embedder.embed(chunks[:batch])
        seconds, cpu_seconds, vectors = best_time(lambda e=embedder: e.embed(chunks), rounds)
        speed, cpu_speed = len(chunks) / seconds, len(chunks) / cpu_seconds
        if reference is None:
            reference, reference_speed, reference_cpu_speed = vectors, speed, cpu_speed
        cosines = np.sum(vectors * reference, axis=1)
        rows.append(
            Row(
                backend=label,
                batch=batch,
                chunks=len(chunks),
                seconds=round(seconds, 2),
                cpu_seconds=round(cpu_seconds, 2),
                chunks_per_s=round(speed, 1),
                chunks_per_cpu_s=round(cpu_speed, 1),
                tokens_per_s=round(tokens / seconds),
                ratio=round(speed / reference_speed, 2),
                cpu_ratio=round(cpu_speed / reference_cpu_speed, 2),
                cos_mean=round(float(cosines.mean()), 5),
                cos_min=round(float(cosines.min()), 5),
            )
        )
    return rows


def time_llm(chunks: list[str]) -> dict[str, float]:
    """Seconds for a ~700-token teacher-forced forward pass and a 50-token chat answer of SmolLM2-135M."""
    from chunkwise.models.local_llm import LocalLLM

    llm = LocalLLM()
    text = ""
    for chunk in chunks:
        if llm.count_tokens(text + chunk) > 700:
            break
        text += chunk
    llm.logprobs("Text:\n", text[:80])
    forward, _, _ = best_time(lambda: llm.logprobs("Text:\n", text), 3)
    question = [Message("user", "Write a long paragraph about the history of Paris.")]
    chat, _, _ = best_time(lambda: llm.chat(question, max_tokens=50), 2)
    usage = llm.last_usage
    return {
        "forward_tokens": llm.count_tokens("Text:\n" + text),
        "forward_seconds": round(forward, 2),
        "chat_output_tokens": usage.output_tokens if usage else 0,
        "chat_seconds": round(chat, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=None, help="number of chunks (default: all)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--llm", action="store_true", help="also time SmolLM2-135M")
    add_data_option(parser)
    args = parser.parse_args()
    corpus = args.data / "chroma" / "corpus.jsonl"
    chunks = load_chunks(corpus, args.limit)
    rows = measure(chunks, args.rounds)
    print(
        f"Embedding {len(chunks)} chunks of ~{CHUNK_CHARS} chars from {corpus.name}, best of {args.rounds}\n"
    )
    print(
        "| backend | batch | chunks/s | tokens/s | ratio vs fp32 b64 | chunks/CPU-s | CPU ratio "
        "| cos mean | cos min |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row.backend} | {row.batch} | {row.chunks_per_s} | {row.tokens_per_s} | {row.ratio} "
            f"| {row.chunks_per_cpu_s} | {row.cpu_ratio} | {row.cos_mean:.5f} | {row.cos_min:.5f} |"
        )
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "chunks": len(chunks),
        "rounds": args.rounds,
        "rows": [asdict(r) for r in rows],
    }
    if args.llm:
        result["llm"] = llm = time_llm(chunks)
        print(
            f"\nSmolLM2-135M: forward pass over {llm['forward_tokens']} tokens {llm['forward_seconds']} s; "
            f"{llm['chat_output_tokens']}-token chat answer {llm['chat_seconds']} s"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
