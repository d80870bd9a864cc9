"""The README's retrieval table, from the evaluation JSONs that ``bench/eval_all.sh`` writes.

Every figure is recomputed from the per-query rows of each run (``chunkwise.evaluation.recompute``), so
the table can add metrics the run did not list (the token budgets) without running anything again, and
a figure that disagrees with the stored aggregate fails loudly. ``s/query`` is the mean time of the
query stages (retrieval, fusion, rerank; not indexing) over the run's queries.

    .venv/bin/python bench/eval_table.py bench/results/eval/*.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from chunkwise.evaluation.items import QueryRun, Retrieved, Span
from chunkwise.evaluation.metrics import parse_metric
from chunkwise.evaluation.report import verify

SPAN_COLUMNS = ("recall@{k}", "iou@{k}", "recall@400t", "recall@1000t", "mrr@{k}")
DOC_COLUMNS = ("doc_recall@{k}", "mrr@{k}", "ndcg@{k}")
INDEX_STAGES = ("index", "embed")


def runs(config: dict[str, Any]) -> list[QueryRun]:
    """The per-query rows of one configuration as metric inputs."""
    return [
        QueryRun(
            row["qid"],
            tuple(Retrieved(r["doc_id"], r["start"], r["end"], r["score"]) for r in row["retrieved"]),
            tuple(Span(s["doc_id"], s["start"], s["end"]) for s in row["gold"]["spans"]),
            tuple(row["gold"]["docs"]),
        )
        for row in config["queries"]
    ]


def table(data: dict[str, Any]) -> str:
    """One Markdown table: a row per configuration."""
    k = next(int(m.split("@")[1]) for m in data["metrics"] if "@" in m and not m.endswith("t"))
    spans = any(config["queries"][0]["gold"]["spans"] for config in data["configs"][:1])
    columns = [c.format(k=k) for c in (SPAN_COLUMNS if spans else DOC_COLUMNS)]
    name = data["dataset"]["name"]
    lines = [
        f"**{name}** ({data['dataset']['queries']} queries)",
        "",
        "| configuration | " + " | ".join(columns) + " | s/query |",
        "|---|" + "---:|" * (len(columns) + 1),
    ]
    for config in data["configs"]:
        rows = runs(config)
        values = [math.fsum(parse_metric(c)(run) for run in rows) / len(rows) for c in columns]
        seconds = sum(c["seconds"] for c in config["costs"] if c["stage"] not in INDEX_STAGES) / len(rows)
        cells = " | ".join(f"{v:.3f}" for v in values)
        lines.append(f"| {config['name']} | {cells} | {seconds:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="+")
    args = parser.parse_args()
    for path in args.files:
        data = json.loads(path.read_text(encoding="utf-8"))
        problems = verify(data)
        if problems:
            raise SystemExit(f"{path}: stored aggregates disagree with the rows: {problems}")
        print(table(data), end="\n\n")


if __name__ == "__main__":
    main()
