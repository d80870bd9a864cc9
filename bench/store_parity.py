"""Do the SQLite and PostgreSQL stores retrieve alike on the dev sets?

For each data set: its corpus ingested into a SQLite knowledge base and into a PostgreSQL one (a private
server from the ``postgres`` extra, in a temporary directory) with the same configuration and the same
``Models`` (the second ingest reads the first's vectors from the model cache), then every query
searched in both. Prints, per set, document recall@k of each store, their difference, and the share of
queries whose top-k chunks are the same in the same order; writes the figures to
``bench/results/store_parity.json``.

    python bench/store_parity.py [--sets chroma rmc_dev ...] [--preset fast] [--k 6]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from bench_data import REPO, add_data_option, shown
from chunkwise import KnowledgeBase, Models, load_config
from chunkwise.evaluation.datasets import Dataset, load_dataset
from chunkwise.evaluation.metrics import doc_recall
from chunkwise.store import pgserver

RESULTS = REPO / "bench" / "results" / "store_parity.json"
DEV_SETS = ("chroma", "rmc_dev", "qmsum_val", "xquad_en", "anthropic_code")


def with_schema(url: str, schema: str) -> str:
    """``url`` with its ``schema`` query parameter set."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query["schema"] = schema
    return urlunsplit(parts._replace(query=urlencode(query)))


def compare(dataset: Dataset, locations: dict[str, str], preset: str, k: int) -> dict[str, object]:
    """Ingest ``dataset`` into each store of ``locations`` and search every query in each."""
    config = load_config(preset=preset)
    models = Models(config.models)
    rankings: dict[str, list[list[str]]] = {}
    recalls: dict[str, list[float]] = {}
    chunks: dict[str, int] = {}
    for store, location in locations.items():
        with KnowledgeBase(location, config, models=models) as kb:
            kb.add_documents(list(dataset.documents))
            chunks[store] = kb.store.counts()["chunks"]
            rankings[store], recalls[store] = [], []
            for query in dataset.queries:
                hits = kb.search(query.query, k=k)
                gold = set(query.gold_docs) or {span.doc_id for span in query.spans}
                rankings[store].append([hit.chunk_id for hit in hits])
                recalls[store].append(doc_recall(hits, gold))
    same = sum(a == b for a, b in zip(rankings["sqlite"], rankings["postgres"], strict=True))
    sqlite, postgres = statistics.fmean(recalls["sqlite"]), statistics.fmean(recalls["postgres"])
    return {
        "set": dataset.name,
        "queries": len(dataset.queries),
        "chunks": chunks,
        f"doc_recall@{k}": {"sqlite": round(sqlite, 4), "postgres": round(postgres, 4)},
        "difference_points": round(100 * (postgres - sqlite), 2),
        "same_top_k_share": round(same / len(dataset.queries), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(parser)
    parser.add_argument("--sets", nargs="+", default=list(DEV_SETS))
    parser.add_argument("--preset", default="fast")
    parser.add_argument("--k", type=int, default=6)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        url = pgserver.start(Path(work) / "pg")
        try:
            for name in args.sets:
                started = time.perf_counter()
                dataset = load_dataset(args.data / name)
                locations = {
                    "sqlite": str(Path(work) / f"{name}-sqlite"),
                    "postgres": with_schema(url, name),
                }
                row = compare(dataset, locations, args.preset, args.k)
                row["seconds"] = round(time.perf_counter() - started, 1)
                rows.append(row)
        finally:
            pgserver.stop(Path(work) / "pg")
    key = f"doc_recall@{args.k}"
    print(f"| set | queries | chunks | {key} SQLite | {key} PostgreSQL | difference (points) ", end="")
    print(f"| same top {args.k} |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        recall = row[key]
        assert isinstance(recall, dict)
        chunks = row["chunks"]
        assert isinstance(chunks, dict)
        print(
            f"| {row['set']} | {row['queries']} | {chunks['sqlite']} | {recall['sqlite']:.4f} | "
            f"{recall['postgres']:.4f} | {row['difference_points']:+.2f} | {row['same_top_k_share']:.1%} |"
        )
    body = {"data": shown(args.data), "preset": args.preset, "k": args.k, "sets": rows}
    RESULTS.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
