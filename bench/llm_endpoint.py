"""The LLM half of chunkwise against any OpenAI-compatible endpoint, in one command.

Part 1, W-RAC against agentic chunking: both chunkers run on the first ``--docs`` Markdown documents of
``formats/`` (shortest first, so a small ``--docs`` is a cheap smoke run and a larger one adds longer
documents), with the table of :mod:`llm_chunkers`: calls, input and output tokens, cost, time, W-RAC plan
outcomes and agentic alignment failures.

Part 2, ChunkRAG's LLM relevance filter off and on: a deterministic subset of the ``rmc_dev`` set
(``--queries`` questions, their gold documents and ``--distractors`` other documents) is indexed once with
the bundled embedder, then searched with hybrid retrieval alone and with the relevance filter over the best
``--candidates`` candidates; document recall and precision at ``-k``, LLM calls, tokens and cost.

Token counts are the server's (its ``usage``), the cache is off so every call is made, and cost applies
GPT-4.1's list price to those tokens ($2 / $8 per million input / output tokens), so runs on different
endpoints compare. ``--json`` writes every figure. Data: ``--data``, else ``../shared/data`` beside the
repository.

    .venv/bin/python bench/llm_endpoint.py --llm openai:Qwen/Qwen2.5-7B-Instruct \\
        --base-url http://127.0.0.1:8000/v1 --docs 6 --json endpoint.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_data import add_data_option
from chunkwise.config import from_dict
from chunkwise.evaluation.datasets import load_dataset
from chunkwise.evaluation.runner import evaluate
from chunkwise.models import Models
from chunkwise.models.accounting import Totals
from chunkwise.models.config import ModelsConfig
from chunkwise.parsing import parse_file
from llm_chunkers import REFERENCE_PRICE, comparison_table, markdown_files, run_chunker


def chunker_rows(args: argparse.Namespace, config: ModelsConfig) -> list[dict[str, Any]]:
    """``wrac`` and ``agentic`` on each of the ``--docs`` shortest Markdown documents."""
    root = args.data / "formats"
    files = sorted(markdown_files(root), key=lambda p: (p.stat().st_size, p.as_posix()))[: args.docs]
    params = {"max_size": args.max_size, "min_size": args.max_size // 10, "unit": "chars"}
    rows: list[dict[str, Any]] = []
    for path in files:
        doc = parse_file(path, doc_id=path.relative_to(root).as_posix())
        for name in ("wrac", "agentic"):
            rows.append(run_chunker(name, doc, args.llm, params, config))
    return rows


def relevance_rows(args: argparse.Namespace, config: ModelsConfig) -> list[dict[str, Any]]:
    """Hybrid search without and with ChunkRAG's relevance filter on a subset of ``rmc_dev``."""
    dataset = load_dataset(args.data / "rmc_dev", limit=args.queries, distractors=args.distractors)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="chunkwise-endpoint-") as workdir:
        for name, enabled in (("relevance off", False), ("relevance on", True)):
            settings = {
                "chunking": {"name": "recursive", "params": {"max_size": args.max_size}},
                "rewrite": {"enabled": False},
                "rerank": {"enabled": False},
                "relevance": {"enabled": enabled, "max_candidates": args.candidates},
            }
            pipeline = dataclasses.replace(from_dict(settings, preset="chunkrag"), models=config)
            models = Models(config)  # one run: the embedder and the server's LLM, one ledger
            began = time.perf_counter()
            report = evaluate(
                dataset,
                [(name, pipeline)],
                workdir=workdir,
                metrics=[f"doc_recall@{args.k}", f"doc_precision@{args.k}"],
                k=args.k,
                depth=args.k,
                models=models,
            )
            totals = models.ledger.by_role().get("llm", Totals())
            rows.append(
                {
                    "config": name,
                    "queries": len(dataset.queries),
                    "documents": len(dataset.documents),
                    "recall": report.configs[0].metrics[f"doc_recall@{args.k}"],
                    "precision": report.configs[0].metrics[f"doc_precision@{args.k}"],
                    "calls": totals.calls,
                    "input_tokens": totals.input_tokens,
                    "output_tokens": totals.output_tokens,
                    "cost": REFERENCE_PRICE.cost(totals.input_tokens, totals.output_tokens),
                    "seconds": round(time.perf_counter() - began, 2),
                }
            )
    return rows


def relevance_table(rows: list[dict[str, Any]], k: int) -> str:
    """Markdown table of the relevance filter off and on."""
    lines = [
        f"| configuration | queries | documents | doc recall@{k} | doc precision@{k} | LLM calls "
        "| input tokens | output tokens | cost (USD, GPT-4.1 prices) | time (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        tokens = f"{r['input_tokens']} | {r['output_tokens']}"
        lines.append(
            f"| {r['config']} | {r['queries']} | {r['documents']} | {r['recall']:.3f} | {r['precision']:.3f} "
            f"| {r['calls']} | {tokens} | {r['cost']:.5f} | {r['seconds']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", required=True, help="openai:<model> (the name the server knows)")
    parser.add_argument("--base-url", help="the endpoint's /v1 URL (default: OPENAI_BASE_URL or OpenAI's)")
    parser.add_argument("--docs", type=int, default=4, help="Markdown documents for wrac vs agentic")
    parser.add_argument("--queries", type=int, default=10, help="rmc_dev questions for the relevance filter")
    parser.add_argument("--distractors", type=int, default=10, help="rmc_dev documents beyond the gold ones")
    parser.add_argument("--candidates", type=int, default=6, help="candidates the relevance filter scores")
    parser.add_argument("-k", type=int, default=6, help="documents retrieved per question")
    parser.add_argument("--max-size", type=int, default=800, help="chunk size limit (characters)")
    add_data_option(parser)
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for one answer")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    base = ModelsConfig.load()
    config = dataclasses.replace(
        base,
        llm=args.llm,
        base_url=args.base_url or base.base_url,
        timeout=args.timeout,
        cache=False,
        structured_attempts=1,
    )
    chunkers = chunker_rows(args, config)
    relevance = relevance_rows(args, config)
    print(f"LLM: {args.llm} at {config.endpoint}; chunks of at most {args.max_size} characters")
    print()
    print(comparison_table(chunkers))
    print()
    print(relevance_table(relevance, args.k))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "llm": args.llm,
                    "base_url": config.endpoint,
                    "reference_price": {"model": "gpt-4.1", "input_per_mtok": 2.0, "output_per_mtok": 8.0},
                    "chunkers": chunkers,
                    "relevance": relevance,
                },
                indent=1,
            ),
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
