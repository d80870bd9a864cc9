"""Dense search with passage windows: exact against approximate, in SQLite and in PostgreSQL.

A chunk with passage windows (``retrieval.windows``) scores its best vector, whole or window. An HNSW
index of the whole vectors alone proposes the chunks near the query's whole-chunk vector, so a chunk
that only one of its windows brings near is missed however exactly the candidates are then scored.

Part ``real``: each set's corpus (``--sets``) ingested with 64-token windows, once into SQLite and once
into a private PostgreSQL + pgvector started for the run, each store from scratch (embeddings come from
the model cache when an earlier run computed them, so the ingest times are the stores' own work). The
first ``--queries`` questions of the set are searched for their top 10 chunks by dense retrieval alone:

- SQLite exact (the reference), and the way the SQLite store searched a windowed store above its
  threshold before it searched them exactly: the whole vectors' HNSW graph proposes four times ten
  chunks, each scored exactly by its best vector;
- PostgreSQL exact, and through its two HNSW indexes (whole vectors and windows; threshold forced to 1);
- for each: the share of the reference's top 10 found, and p50 latency;
- PostgreSQL's ingest time without windows and with them (rows and their HNSW index).

Part ``scale``: SQLite's exact search of synthetic 384-d vectors with 16 windows a chunk (what 64-token
windows give a 2,000-character chunk), p50 over 30 queries, at 10k and 50k chunks.

Run: ``.venv/bin/python bench/windows_search.py [--data ../shared/data] [--sets anthropic_code chroma]
[--queries 200]``. Prints Markdown tables and writes ``bench/results/windows_search.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench_data import add_data_option, shown
from chunkwise import KnowledgeBase
from chunkwise.config import from_dict
from chunkwise.evaluation.datasets import load_dataset
from chunkwise.models import Models
from chunkwise.store import StoreSettings, pgserver
from chunkwise.store.dense import DenseIndex

RESULTS = Path(__file__).parent / "results" / "windows_search.json"
WINDOWS = 64
TOP = 10
#: Chunks per wanted hit the whole vectors' graph proposed (the former SQLite path).
CANDIDATES = 4
EXACT = StoreSettings(hnsw_threshold=10**12)
APPROXIMATE = StoreSettings(hnsw_threshold=1)

Search = Callable[[np.ndarray], list[int]]


def with_schema(url: str, schema: str) -> str:
    """The store URL of ``schema`` on the server at ``url``."""
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def chunk_ids(kb: KnowledgeBase, found: list[list[int]]) -> list[list[str]]:
    """The chunk ids of found chunk keys (keys differ between stores, ids do not)."""
    keys = sorted({key for keys in found for key in keys})
    ids = {chunk.key: chunk.chunk_id for chunk in kb.store.chunks(keys)}
    return [[ids[key] for key in keys] for keys in found]


def timed(search: Search, queries: np.ndarray) -> tuple[list[list[int]], float]:
    """Each query's top keys, and the p50 of the searches in milliseconds (after one warm-up search)."""
    search(queries[0])
    found, seconds = [], []
    for query in queries:
        began = time.perf_counter()
        found.append(search(query))
        seconds.append(time.perf_counter() - began)
    return found, 1000 * statistics.median(seconds)


def agreement(found: Sequence[list[str]], reference: Sequence[list[str]]) -> float:
    """The mean share of each reference top list that ``found`` holds."""
    return float(np.mean([len(set(f) & set(r)) / len(r) for f, r in zip(found, reference, strict=True)]))


def whole_graph_search(index: DenseIndex) -> Search:
    """The former SQLite path: the whole vectors' graph proposes ``CANDIDATES`` x ``TOP`` chunks, each
    scored exactly by its best vector, whole or window."""
    graph = index.graph()

    def search(query: np.ndarray) -> list[int]:
        proposed = np.asarray(graph.search(query, CANDIDATES * TOP).keys, dtype=np.int64)
        best = dict(index.exact(query, len(index)))
        return sorted(proposed.tolist(), key=lambda key: -best[key])[:TOP]

    return search


def ingest(location: str | Path, docs: list[Any], windows: int) -> tuple[KnowledgeBase, float]:
    """A knowledge base at ``location`` holding ``docs``, with ``windows``; the seconds it took."""
    kb = KnowledgeBase(location, from_dict({"retrieval": {"windows": windows}}))
    began = time.perf_counter()
    kb.add_documents(docs)
    return kb, time.perf_counter() - began


def real(data: Path, name: str, count: int, server: str) -> dict[str, Any]:
    """Part ``real`` for set ``name`` (see the module docstring)."""
    dataset = load_dataset(data / name)
    docs = list(dataset.documents)
    queries = (
        Models(from_dict({}).models).embedder().embed_queries([q.query for q in dataset.queries[:count]])
    )
    row: dict[str, Any] = {"set": name, "queries": len(queries)}
    with tempfile.TemporaryDirectory() as tmp:
        sqlite, _ = ingest(Path(tmp) / "kb", docs, WINDOWS)
        with sqlite:
            index = sqlite.store.dense_index()
            row["chunks"], row["windows"] = len(index), int(index.owners.size)
            exact, row["sqlite_exact_ms"] = timed(lambda q: [k for k, _ in index.exact(q, TOP)], queries)
            whole_graph = whole_graph_search(index)
            found = [whole_graph(query) for query in queries]
            reference = chunk_ids(sqlite, exact)
            row["sqlite_whole_graph_agreement"] = agreement(chunk_ids(sqlite, found), reference)
    for windows in (0, WINDOWS):
        kb, row[f"pg_ingest_s_windows_{windows}"] = ingest(
            with_schema(server, f"{name}_w{windows}"), docs, windows
        )
        with kb:
            if windows:
                row.update(pg_searches(kb, queries, reference))
    return row


def pg_searches(kb: KnowledgeBase, queries: np.ndarray, reference: list[list[str]]) -> dict[str, float]:
    """PostgreSQL's exact and HNSW top 10: the share of the reference found, and p50 ms."""
    row = {}
    for label, settings in (("exact", EXACT), ("hnsw", APPROXIMATE)):
        kb.store.settings = settings
        found, row[f"pg_{label}_ms"] = timed(lambda q: [k for k, _ in kb.store.dense(q, TOP)], queries)
        row[f"pg_{label}_agreement"] = agreement(chunk_ids(kb, found), reference)
    return row


def scale(chunks: int, seed: int = 0) -> dict[str, Any]:
    """Part ``scale``: SQLite's exact search over ``chunks`` synthetic chunks of 16 windows each."""
    rng = np.random.default_rng(seed)

    def unit(rows: int) -> np.ndarray:
        vectors = rng.standard_normal((rows, 384), dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    keys = np.arange(1, chunks + 1, dtype=np.int64)
    owners = np.repeat(keys, 16)
    with tempfile.TemporaryDirectory() as tmp:
        index = DenseIndex(keys, unit(chunks), 1, Path(tmp), save=False, windows=(owners, unit(owners.size)))
        _, p50 = timed(lambda q: [k for k, _ in index.exact(q, 50)], unit(30))
    return {"chunks": chunks, "windows": int(owners.size), "exact_p50_ms": p50}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_data_option(parser)
    parser.add_argument("--sets", nargs="+", default=["anthropic_code", "chroma"])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as server_dir:
        server = pgserver.start(server_dir)
        try:
            rows = [real(args.data, name, args.queries, server) for name in args.sets]
        finally:
            pgserver.stop(server_dir)
    scaled = [scale(n) for n in (10_000, 50_000)]
    body = {
        "data": shown(args.data),
        "real": rows,
        "scale": scaled,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    RESULTS.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    print(
        "| set | chunks | windows | SQLite exact ms | whole-vector graph: top 10 found | "
        "PostgreSQL exact: found | ms | PostgreSQL HNSW: found | ms | PG ingest s, no windows | with |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['set']} | {r['chunks']} | {r['windows']} | {r['sqlite_exact_ms']:.1f} | "
            f"{r['sqlite_whole_graph_agreement']:.3f} | "
            f"{r['pg_exact_agreement']:.3f} | {r['pg_exact_ms']:.1f} | {r['pg_hnsw_agreement']:.3f} | "
            f"{r['pg_hnsw_ms']:.1f} | {r['pg_ingest_s_windows_0']:.1f} | {r['pg_ingest_s_windows_64']:.1f} |"
        )
    print()
    print("| chunks | windows | SQLite exact p50 ms |")
    print("|---:|---:|---:|")
    for s in scaled:
        print(f"| {s['chunks']:,} | {s['windows']:,} | {s['exact_p50_ms']:.1f} |")


if __name__ == "__main__":
    main()
