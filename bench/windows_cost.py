"""What passage windows cost at ingest: time, and vectors kept, with and without them.

Each dev set's corpus is ingested into a fresh knowledge base with the default configuration, without
windows, with windows of 64 and of 128 tokens (``retrieval.windows``), with 64-token windows end to end
(``retrieval.window_overlap = false``), and with those windows alone, a long chunk not embedded whole
(``retrieval.embed_whole = false``), the model cache off so that every vector is computed.
Prints a Markdown table and writes ``bench/results/windows_cost.json``.

Run: ``.venv/bin/python bench/windows_cost.py [--data ../shared/data] [--sets anthropic_code rmc_dev]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

from bench_data import add_data_option, shown
from chunkwise import KnowledgeBase
from chunkwise.config import from_dict
from chunkwise.evaluation.datasets import load_dataset

RESULTS = Path(__file__).parent / "results" / "windows_cost.json"
#: (window size, overlapping, whole chunks embedded) of each ingest.
LAYOUTS = ((0, True, True), (64, True, True), (128, True, True), (64, False, True), (64, False, False))


def measure(data: Path, name: str, windows: int, overlap: bool, whole: bool) -> dict[str, Any]:
    """Ingest the corpus of set ``name`` with ``windows`` (overlapping or not, beside whole chunks or
    not): chunks, windows, texts embedded, seconds."""
    docs = list(load_dataset(data / name).documents)
    retrieval = {"windows": windows, "window_overlap": overlap, "embed_whole": whole}
    config = from_dict({"retrieval": retrieval, "models": {"cache": False}})
    with tempfile.TemporaryDirectory() as tmp, KnowledgeBase(Path(tmp) / "kb", config) as kb:
        report = kb.add_documents(docs)
        index = kb.store.dense_index()
        pooled = 0 if whole else len(set(index.owners.tolist()))
        return {
            "set": name,
            "windows": windows,
            "overlap": overlap,
            "whole": whole,
            "documents": len(docs),
            "chunks": len(index),
            "window_vectors": int(index.owners.size),
            "embedded": len(index) - pooled + int(index.owners.size),
            "embed_seconds": round(report.embed_seconds, 1),
            "seconds": round(report.seconds, 1),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_data_option(parser)
    parser.add_argument("--sets", nargs="+", default=["anthropic_code", "rmc_dev"])
    args = parser.parse_args()
    rows = [measure(args.data, name, *layout) for name in args.sets for layout in LAYOUTS]
    body = {
        "data": shown(args.data),
        "rows": rows,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    RESULTS.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    print("| set | windows | chunks | window vectors | texts embedded a chunk | ingest s | embed s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        layout = ("" if row["overlap"] else " end to end") + ("" if row["whole"] else ", no whole")
        per_chunk = row["embedded"] / max(1, row["chunks"])
        print(
            f"| {row['set']} | {row['windows']}{layout} | {row['chunks']} | {row['window_vectors']} "
            f"| {per_chunk:.1f} | {row['seconds']} | {row['embed_seconds']} |"
        )


if __name__ == "__main__":
    main()
