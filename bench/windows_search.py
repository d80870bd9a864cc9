"""Dense search with passage windows: exact against approximate, in SQLite and in PostgreSQL.

A chunk with passage windows (``retrieval.windows``) scores its best vector, whole or window. With the
default windows (64 tokens end to end, no whole-chunk embedding) a chunk's vector is the normalised mean
of its windows'. Above ``hnsw_threshold`` SQLite's HNSW graph of those vectors proposes
``WINDOW_BREADTH`` candidates per wanted hit, each scored exactly by its windows; PostgreSQL has an HNSW
index of the windows themselves beside the chunks'.

Part ``real``: each set's corpus (``--sets``) ingested with the default windows, once into SQLite and
once into a private PostgreSQL + pgvector started for the run, each store from scratch (embeddings come
from the model cache when an earlier run computed them, so the ingest times are the stores' own work).
The first ``--queries`` questions of the set are searched for their top 10 chunks by dense retrieval
alone: SQLite exact (the reference) and through its graph, PostgreSQL exact and through its two HNSW
indexes (every approximate search forced by a threshold of 1); for each, the share of the reference's
top 10 found and the p50 latency; and PostgreSQL's ingest time without windows and with them.

Part ``scale``: SQLite over synthetic 384-d chunks of 8 windows each (what the default gives a
2,000-character chunk), each chunk's vector the mean of its windows, 30 queries each near one window:
exact and graph p50, the share of the exact top 10 the graph path finds, and the share of queries
whose window's chunk it ranks first, at 10k, 50k and 100k chunks. The chunks lie around 1,000 topic
centres and their windows around the chunk's direction, so that a window's cosine to its chunk's
vector is about 0.87, as on the dev sets (0.88-0.91, in part ``real``): uniformly random windows (cosine
0.35) would make the exact top 10 a draw of noise that no index reproduces.

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
            chunk_vectors = index.matrix[np.searchsorted(index.keys, index.owners)]
            row["window_to_chunk_cosine"] = float(np.mean(np.sum(index.windows * chunk_vectors, axis=1)))
            exact, row["sqlite_exact_ms"] = timed(lambda q: [k for k, _ in index.exact(q, TOP)], queries)
            reference = chunk_ids(sqlite, exact)
            index.graph()  # built before the clock starts, as a saved graph is loaded
            found, row["sqlite_hnsw_ms"] = timed(
                lambda q: [k for k, _ in index.search(q, TOP, approximate=True)], queries
            )
            row["sqlite_hnsw_agreement"] = agreement(chunk_ids(sqlite, found), reference)
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
    """Part ``scale``: SQLite's exact and graph search over ``chunks`` synthetic chunks of 8 windows."""
    rng = np.random.default_rng(seed)

    def unit(vectors: np.ndarray) -> np.ndarray:
        return (vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)).astype(np.float32)

    def noise(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32) / np.sqrt(384)

    centres = noise(1000, 384)
    directions = centres[rng.integers(0, 1000, chunks)] + 0.5 * noise(chunks, 384)
    windows = unit(directions[:, None, :] + 0.7 * noise(chunks, 8, 384))
    pooled = unit(windows.mean(axis=1))
    keys = np.arange(1, chunks + 1, dtype=np.int64)
    rows = rng.integers(0, chunks * 8, 30)
    queries = unit(windows.reshape(-1, 384)[rows] + 0.3 * noise(30, 384))
    with tempfile.TemporaryDirectory() as tmp:
        index = DenseIndex(
            keys, pooled, 1, Path(tmp), save=False, windows=(np.repeat(keys, 8), windows.reshape(-1, 384))
        )
        exact, exact_ms = timed(lambda q: [k for k, _ in index.exact(q, TOP)], queries)
        index.graph()
        found, hnsw_ms = timed(lambda q: [k for k, _ in index.search(q, TOP, approximate=True)], queries)
    owners = keys[rows // 8]
    return {
        "chunks": chunks,
        "windows": chunks * 8,
        "window_to_chunk_cosine": float(np.mean(np.sum(windows * pooled[:, None, :], axis=-1))),
        "exact_p50_ms": exact_ms,
        "hnsw_p50_ms": hnsw_ms,
        "hnsw_agreement": agreement([list(map(str, f)) for f in found], [list(map(str, e)) for e in exact]),
        "hnsw_first_found": float(np.mean([hits[0] == o for hits, o in zip(found, owners, strict=True)])),
    }


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
    scaled = [scale(n) for n in (10_000, 50_000, 100_000)]
    body = {
        "data": shown(args.data),
        "real": rows,
        "scale": scaled,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    RESULTS.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    print(
        "| set | chunks | windows | SQLite exact ms | SQLite HNSW: top 10 found | ms | "
        "PostgreSQL exact: found | ms | PostgreSQL HNSW: found | ms | PG ingest s, no windows | with |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['set']} | {r['chunks']} | {r['windows']} | {r['sqlite_exact_ms']:.1f} | "
            f"{r['sqlite_hnsw_agreement']:.3f} | {r['sqlite_hnsw_ms']:.1f} | "
            f"{r['pg_exact_agreement']:.3f} | {r['pg_exact_ms']:.1f} | {r['pg_hnsw_agreement']:.3f} | "
            f"{r['pg_hnsw_ms']:.1f} | {r['pg_ingest_s_windows_0']:.1f} | {r['pg_ingest_s_windows_64']:.1f} |"
        )
    print()
    print(
        "| chunks | windows | SQLite exact p50 ms | HNSW p50 ms | HNSW: top 10 found | "
        "the window's chunk first |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for s in scaled:
        print(
            f"| {s['chunks']:,} | {s['windows']:,} | {s['exact_p50_ms']:.1f} | {s['hnsw_p50_ms']:.1f} "
            f"| {s['hnsw_agreement']:.3f} | {s['hnsw_first_found']:.3f} |"
        )


if __name__ == "__main__":
    main()
