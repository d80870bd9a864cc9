"""Reproduce Chroma's chunking report on ``data/chroma`` and W-RAC's document-level table on ``data/rmc_dev``.

Part ``chroma`` (span gold, 5 retrieved chunks): recall, precision, IoU and precision-Ω, exactly as
Chroma's report defines them, for fixed-size and recursive chunking at 200/400/800 tokens without
overlap and with 50% overlap (Chroma's report used 400 tokens with 200 overlap), semantic (greedy,
similarity threshold) and cluster-semantic chunking, and chunkwise's own chunkers (sentence, structure)
and pipelines: dense-only retrieval against hybrid BM25 + dense, and the default ``fast`` pipeline
(contextual headers, hybrid, redundancy removal). Sizes are counted with the MiniLM WordPiece tokenizer
(Chroma counted cl100k tokens, which run about 10% fewer per text); embeddings are the bundled
all-MiniLM-L6-v2 (int8 ONNX), where Chroma used OpenAI text-embedding-3-large. The published figures
stand beside the measured ones, with the ratio measured/published.

Part ``rmc`` (document gold, 6 retrieved chunks): document recall@6, precision@6, MRR@6 and nDCG@6
on ``data/rmc_dev`` (two of the five organisations) beside the W-RAC paper's agentic (GPT-4.1)
chunking baseline with BGE-M3 embeddings on all five (0.927 / 0.404 / 0.873).

Every configuration runs through :func:`chunkwise.evaluation.runner.evaluate` (the code under
``chunkwise eval``), whose index cache means a configuration that differs from an earlier one only in
retrieval settings embeds nothing; the model layer's SQLite cache keeps embeddings across runs. After
each configuration the Markdown table is reprinted, and ``bench/results/reproduce_chroma.json`` (one
section per part and mode) and the recomputable evaluation report
(``bench/results/reproduce_chroma.<part>[.quick].eval.json``) are rewritten, so a long run that is
stopped keeps every finished row; ``--reprint`` prints the tables again from the JSON.

    .venv/bin/python bench/reproduce_chroma.py                  # both parts, full data
    .venv/bin/python bench/reproduce_chroma.py --part chroma    # one part
    .venv/bin/python bench/reproduce_chroma.py --quick          # deterministic subset: minutes
    .venv/bin/python bench/reproduce_chroma.py --reprint        # the tables of the last runs
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_data import add_data_option, shown
from chunkwise.cli.eval_cmd import default_workdir
from chunkwise.config import from_dict
from chunkwise.evaluation.datasets import Dataset, load_dataset, subsample
from chunkwise.evaluation.report import ConfigResult, verify
from chunkwise.evaluation.runner import evaluate
from chunkwise.models import Models, ModelsConfig

RESULTS = Path(__file__).resolve().parent / "results"
SUMMARY = RESULTS / "reproduce_chroma.json"
EMBEDDER = "local:int8"
SPAN_K = 5
DOC_K = 6
#: ``--quick`` on chroma: only the corpora under this many characters (chat logs and State of the Union:
#: 88k of the 1.44 M characters, 132 of the 472 queries) and the queries whose gold lies in them.
QUICK_MAX_DOC_CHARS = 100_000
#: ``--quick`` on rmc_dev: this many queries (drawn by :func:`subsample`, seed 0) over all documents.
QUICK_RMC_QUERIES = 150

#: Retrieval as in Chroma's report: plain embeddings of the chunk text, top k by cosine, nothing else.
DENSE_ONLY: dict[str, Any] = {
    "headers": {"enabled": False},
    "retrieval": {"bm25": False, "dense": True},
    "redundancy": {"enabled": False},
}
#: The same chunks searched by BM25 and dense, fused (same index as DENSE_ONLY: nothing re-embedded).
HYBRID: dict[str, Any] = {
    "headers": {"enabled": False},
    "retrieval": {"bm25": True, "dense": True},
    "redundancy": {"enabled": False},
}


@dataclass(frozen=True)
class Row:
    """One configuration of a table: pipeline overrides and the published figures to compare with."""

    name: str
    overrides: dict[str, Any]
    published: dict[str, float] = field(default_factory=dict)


def tokens(chunker: str, size: int, overlap: float = 0.0, **extra: Any) -> dict[str, Any]:
    """A ``[chunking]`` section measuring ``size`` in MiniLM tokens."""
    params = {"max_size": size, "overlap": overlap, "unit": "minilm", **extra}
    return {"chunking": {"name": chunker, "params": params}}


def merge(*parts: dict[str, Any]) -> dict[str, Any]:
    """Shallow-per-section merge of TOML-shaped overrides (later parts win)."""
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            out[key] = {**out.get(key, {}), **value} if isinstance(value, dict) else value
    return out


def chroma_rows() -> list[Row]:
    """The chroma table, most informative rows first (a stopped run keeps the head of the list)."""
    semantic: dict[str, Any] = {"embedder": EMBEDDER}
    return [
        Row(
            "recursive 200/0",
            merge(tokens("recursive", 200), DENSE_ONLY),
            {"recall@5": 88.1, "precision@5": 7.0, "iou@5": 6.9, "precision_omega": 29.9},
        ),
        Row(
            "cluster-semantic 200",
            merge(tokens("semantic", 200, method="cluster", **semantic), DENSE_ONLY),
            {"recall@5": 87.3, "precision@5": 8.0, "iou@5": 8.0, "precision_omega": 34.0},
        ),
        Row("fixed 200/0", merge(tokens("fixed", 200), DENSE_ONLY)),
        Row("recursive 200/0 hybrid", merge(tokens("recursive", 200), HYBRID)),
        Row("recursive 400/0", merge(tokens("recursive", 400), DENSE_ONLY)),
        Row("fixed 400/0", merge(tokens("fixed", 400), DENSE_ONLY)),
        Row("recursive 400/200", merge(tokens("recursive", 400, 0.5), DENSE_ONLY)),
        Row("fixed 400/200", merge(tokens("fixed", 400, 0.5), DENSE_ONLY)),
        Row("recursive 800/0", merge(tokens("recursive", 800), DENSE_ONLY)),
        Row("fixed 800/0", merge(tokens("fixed", 800), DENSE_ONLY)),
        Row("sentence 200", merge(tokens("sentence", 200), DENSE_ONLY)),
        Row("sentence 200 hybrid", merge(tokens("sentence", 200), HYBRID)),
        Row("structure 400", merge(tokens("structure", 400), DENSE_ONLY)),
        Row("structure 400 hybrid", merge(tokens("structure", 400), HYBRID)),
        Row("semantic 400", merge(tokens("semantic", 400, **semantic), DENSE_ONLY)),
        Row("cluster-semantic 400", merge(tokens("semantic", 400, method="cluster", **semantic), DENSE_ONLY)),
        Row("recursive 200/100", merge(tokens("recursive", 200, 0.5), DENSE_ONLY)),
        Row("fixed 200/100", merge(tokens("fixed", 200, 0.5), DENSE_ONLY)),
        Row("recursive 800/400", merge(tokens("recursive", 800, 0.5), DENSE_ONLY)),
        Row("fixed 800/400", merge(tokens("fixed", 800, 0.5), DENSE_ONLY)),
        Row("chunkwise fast pipeline", {}),
    ]


def rmc_rows() -> list[Row]:
    """The rmc_dev table; the first row carries W-RAC's agentic baseline for comparison."""
    agentic = {f"doc_recall@{DOC_K}": 0.927, f"doc_precision@{DOC_K}": 0.404, f"mrr@{DOC_K}": 0.873}
    return [
        Row("recursive 400/0", merge(tokens("recursive", 400), DENSE_ONLY), agentic),
        Row("recursive 400/0 hybrid", merge(tokens("recursive", 400), HYBRID)),
        Row("structure 400 hybrid", merge(tokens("structure", 400), HYBRID)),
        Row("sentence 200 hybrid", merge(tokens("sentence", 200), HYBRID)),
        Row("chunkwise fast pipeline", {}),
    ]


PARTS: dict[str, dict[str, Any]] = {
    "chroma": {
        "folder": "chroma",
        "rows": chroma_rows,
        "metrics": (f"recall@{SPAN_K}", f"precision@{SPAN_K}", f"iou@{SPAN_K}", "precision_omega"),
        "scale": 100.0,
        "published_by": "Chroma report (OpenAI text-embedding-3-large, cl100k tokens, 5 chunks)",
    },
    "rmc": {
        "folder": "rmc_dev",
        "rows": rmc_rows,
        "metrics": (f"doc_recall@{DOC_K}", f"doc_precision@{DOC_K}", f"mrr@{DOC_K}", f"ndcg@{DOC_K}"),
        "scale": 1.0,
        "published_by": "W-RAC paper, agentic GPT-4.1 chunking + BGE-M3, all five organisations",
    },
}


def load(data: Path, part: str, quick: bool) -> Dataset:
    """The part's data set (its path as results print it), or its deterministic quick subset."""
    folder = data / PARTS[part]["folder"]
    dataset = dataclasses.replace(load_dataset(folder), path=shown(folder))
    if not quick:
        return dataset
    if part == "rmc":
        return subsample(dataset, QUICK_RMC_QUERIES, seed=0, distractors=len(dataset.documents))
    kept = {doc.id for doc in dataset.documents if len(doc.text) <= QUICK_MAX_DOC_CHARS}
    return dataclasses.replace(
        dataset,
        documents=tuple(doc for doc in dataset.documents if doc.id in kept),
        queries=tuple(q for q in dataset.queries if set(q.gold_docs) <= kept),
    )


def table(part: str, rows: list[dict[str, Any]]) -> str:
    """The Markdown table of summary rows: measured metrics, chunk count and mean size, published
    figures and the ratio measured/published."""
    metrics: tuple[str, ...] = PARTS[part]["metrics"]
    scale: float = PARTS[part]["scale"]
    digits = 1 if scale == 100.0 else 3
    head = ["configuration", "chunks", "mean chars", *metrics, "published", "ratio to published"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        stats = row["chunks"] or {"count": 0, "mean": 0.0}
        measured = [f"{row['metrics'][m] * scale:.{digits}f}" for m in metrics]
        published = row["published"]
        shown = (
            " / ".join(f"{published[m]:g}" if m in published else "—" for m in metrics) if published else ""
        )
        ratios = " / ".join(
            f"{row['metrics'][m] * scale / published[m]:.2f}" if published.get(m) else "—" for m in metrics
        )
        lines.append(
            f"| {row['name']} | {stats['count']} | {stats['mean']:.0f} | "
            + " | ".join(measured)
            + f" | {shown} | {ratios if published else ''} |"
        )
    if part == "chroma":
        lines.append("| LLM chunker (GPT-4o), not run here | | | — | — | — | — | 91.9 / — / 3.9 / — | |")
    return "\n".join(lines)


def write_summary(key: str, section: dict[str, Any]) -> None:
    """Update one section of the summary JSON under a lock (parts may run in parallel processes)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    with (Path(tempfile.gettempdir()) / "reproduce_chroma.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(SUMMARY.read_text(encoding="utf-8")) if SUMMARY.exists() else {}
        data[key] = section
        data["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform()}
        partial = SUMMARY.with_name(SUMMARY.name + ".tmp")
        partial.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        partial.replace(SUMMARY)


def run_part(data: Path, part: str, quick: bool, only: set[str] | None) -> None:
    """Evaluate every row of ``part``, reprinting the table and rewriting the JSON after each."""
    spec = PARTS[part]
    dataset = load(data, part, quick)
    suffix = ".quick" if quick else ""
    key = f"{part}{suffix}"
    models = Models(ModelsConfig(embedder=EMBEDDER))  # one model context (and ledger) for the part
    workdir = default_workdir() / f"reproduce_chroma{suffix}"
    rows = [row for row in spec["rows"]() if only is None or row.name in only]
    results: list[tuple[Row, ConfigResult]] = []
    base = {"models": {"embedder": EMBEDDER}}
    for row in rows:
        started = time.perf_counter()
        config = from_dict(merge(base, row.overrides))
        report = evaluate(
            dataset,
            [(row.name, config)],
            workdir=workdir,
            metrics=spec["metrics"],
            depth=max(SPAN_K, DOC_K),
            models=models,
        )
        results.append((row, report.configs[0]))
        seconds = time.perf_counter() - started
        sys.stderr.write(f"{key}: {row.name} done in {seconds:.0f} s\n")
        full = dataclasses.replace(report, configs=tuple(result for _, result in results))
        problems = verify(full.to_dict())
        if problems:
            raise SystemExit(f"recomputation disagrees: {problems[:3]}")
        full.write(RESULTS / f"reproduce_chroma.{part}{suffix}.eval.json")
        summary_rows = [
            {
                "name": r.name,
                "config": result.config,
                "metrics": result.metrics,
                "published": r.published,
                "chunks": result.chunks.to_dict() if result.chunks else None,
                "seconds": round(sum(c.seconds for c in result.costs), 2),
            }
            for r, result in results
        ]
        markdown = table(part, summary_rows)
        write_summary(
            key,
            {
                "dataset": full.dataset,
                "quick": quick,
                "embedder": EMBEDDER,
                "published_by": spec["published_by"],
                "rows": summary_rows,
                "complete": len(results) == len(rows),
                "table": markdown,
            },
        )
        print(f"\n## {key} ({len(results)}/{len(rows)} configurations)\n\n{markdown}\n", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=(*PARTS, "both"), default="both")
    parser.add_argument("--quick", action="store_true", help="deterministic subset (see the docstring)")
    parser.add_argument("--only", action="append", help="run only this configuration (repeatable)")
    parser.add_argument("--reprint", action="store_true", help="print the tables of the JSON, run nothing")
    add_data_option(parser)
    args = parser.parse_args()
    if args.reprint:
        for key, section in json.loads(SUMMARY.read_text(encoding="utf-8")).items():
            if key in PARTS or key.removesuffix(".quick") in PARTS:
                rows = section["rows"]
                print(f"\n## {key} ({len(rows)} configurations)\n\n{table(key.split('.')[0], rows)}\n")
        return
    parts = list(PARTS) if args.part == "both" else [args.part]
    for part in parts:
        run_part(args.data, part, args.quick, set(args.only) if args.only else None)


if __name__ == "__main__":
    main()
