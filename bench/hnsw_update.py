"""The first dense search after a write to a large SQLite store: the HNSW graph built whole against the
saved graph brought up to date (``chunkwise.store.dense``).

A SQLite store of ``--chunks`` synthetic chunks (100 a document, clustered 384-d unit vectors as in
``bench/pipeline_latency.py``, no passage windows) is searched once, which builds and saves its graph.
Then, each time timing the first search after the write (the vectors read again and the graph made
current, as a user's next query pays it):

- one document added, searched by the store object that wrote it, which holds the graph in memory: its
  chunks are scored exactly beside the graph's hits (pending, ``DenseIndex.follow``), the graph left as
  it is;
- the same write, searched by another store object (another process): the saved graph brought up to
  date;
- one document removed: the saved graph brought up to date;
- one more document added with the saved graph deleted first: built whole, as every write had it before
  the graph followed the store.

Each build or update includes finding the graph's strays (``chunkwise.store.dense.strays``), whose
number is reported beside the time.

After each, recall@10 of ``--queries`` searches through the graph against the exact search.

Part ``churn``, behind ``UPDATE_SHARE`` (how much may change before the graph is built whole): a usearch
graph of ``--churn-nodes`` vectors built as the store builds it, then 5% of its nodes replaced (removed,
and as many new ones added) at a time, saved and loaded between steps as a store's graph is; recall@10
against exact search after 10%, 25% and 50% replaced, and of a graph built whole from the final vectors.
On clustered 384-d vectors (as embeddings lie) and on near-uniform 128-d ones (a graph with little
recall to spare). Prints Markdown tables and writes ``bench/results/hnsw_update.json``.

    .venv/bin/python bench/hnsw_update.py                  # 100k chunks: a few minutes
    .venv/bin/python bench/hnsw_update.py --chunks 20000   # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from chunkwise.chunking.chunk import make_chunk
from chunkwise.document import Document
from chunkwise.store import StoreSettings
from chunkwise.store.dense import EXPANSION_SEARCH, GRAPH, SERIAL_START, STAMP, STRAYS, usearch_index
from chunkwise.store.sqlite import SQLiteStore
from pipeline_latency import DIM, clustered_vectors

RESULTS = Path(__file__).resolve().parent / "results" / "hnsw_update.json"
PER_DOC = 100


def put_document(store: SQLiteStore, number: int, rng: np.random.Generator) -> None:
    """Store synthetic document ``number``: :data:`PER_DOC` chunks of a short text, clustered vectors."""
    pieces = [f"document {number} chunk {i}" for i in range(PER_DOC)]
    doc = Document(f"synthetic-{number}", "\n\n".join(pieces))
    chunks, at = [], 0
    for piece in pieces:
        chunks.append(make_chunk(doc, at, at + len(piece)))
        at += len(piece) + 2
    store.put(doc, chunks, [""] * PER_DOC, clustered_vectors(PER_DOC, rng), fingerprint="synthetic")


def first_search(store: SQLiteStore, query: np.ndarray) -> float:
    """Seconds of the first dense search (top 10) after a write."""
    began = time.perf_counter()
    store.dense(query, 10)
    return time.perf_counter() - began


def recall_at_10(store: SQLiteStore, queries: np.ndarray) -> float:
    """The share of the exact top 10 that searches through the graph find, averaged over ``queries``."""
    index = store.dense_index()
    found = [
        len({k for k, _ in store.dense(q, 10)} & {k for k, _ in index.exact(q, 10)}) / 10 for q in queries
    ]
    return float(np.mean(found))


def graph_stamp(directory: Path) -> dict[str, Any]:
    """What the graph's stamp records: ``counts`` (``changed``: chunks changed since it was built whole)
    and ``lists`` (``strays``: the nodes no search of the graph reaches, scored exactly beside its hits)."""
    stamp: dict[str, Any] = json.loads((directory / STAMP).read_text(encoding="utf-8"))
    return stamp


def run(directory: Path, chunks: int, queries: int) -> dict[str, Any]:
    """Fill a store of ``chunks`` chunks, build its graph, then time the first search after each write."""
    rng = np.random.default_rng(chunks)
    store = SQLiteStore(directory, StoreSettings(hnsw_threshold=min(50_000, chunks), bm25s_threshold=None))
    store.check_embedder("synthetic", DIM)
    began = time.perf_counter()
    documents = chunks // PER_DOC
    for number in range(documents):
        put_document(store, number, rng)
    row: dict[str, Any] = {"chunks": chunks, "write_s": time.perf_counter() - began}
    probes = clustered_vectors(queries, rng)
    row["initial_build_s"] = first_search(store, probes[0])
    row["initial_strays"] = len(graph_stamp(directory)["lists"][STRAYS])
    steps: list[dict[str, Any]] = []

    def step(name: str, searcher: SQLiteStore = store) -> None:
        seconds = first_search(searcher, probes[0])
        stamp = graph_stamp(directory)
        steps.append(
            {
                "write": name,
                "first_search_s": seconds,
                "changed_since_build": stamp["counts"]["changed"],
                "strays": len(stamp["lists"][STRAYS]),
                "pending": int(searcher.dense_index().pending().size),
                "recall@10": recall_at_10(searcher, probes),
            }
        )
        print(f"{name}: {seconds:.2f} s", file=sys.stderr, flush=True)

    put_document(store, documents, rng)
    step("one document added, searched by the process that holds the graph (its chunks pending)")
    with SQLiteStore(directory, store.settings) as other:
        step("the same write, another process's first search (the saved graph brought up to date)", other)
    store.delete("synthetic-0")
    step("one document removed (graph brought up to date)")
    put_document(store, documents + 1, rng)
    (directory / GRAPH).unlink()
    with SQLiteStore(directory, store.settings) as other:
        step("one document added, saved graph deleted, another process (built whole, as before)", other)
    store.close()
    row["steps"] = steps
    return row


def churn(nodes: int, dim: int, noise: float, queries: int) -> dict[str, Any]:
    """Recall@10 of a graph of ``nodes`` vectors (``dim`` dimensions around 1,000 centres, ``noise``
    times a normal draw off them) as 5% of its nodes are replaced at a time, against a graph built whole."""
    new_graph = usearch_index()
    rng = np.random.default_rng(dim)
    centres = rng.normal(size=(1000, dim))

    def draw(n: int) -> np.ndarray:
        vectors = (centres[rng.integers(0, 1000, n)] + noise * rng.normal(size=(n, dim))).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def built(keys: np.ndarray, vectors: np.ndarray) -> Any:
        graph = new_graph(ndim=dim, metric="cos", dtype="f32", expansion_search=EXPANSION_SEARCH)
        graph.add(keys[:SERIAL_START], vectors[:SERIAL_START], threads=1)
        graph.add(keys[SERIAL_START:], vectors[SERIAL_START:])
        return graph

    probes = draw(queries)

    def recall(graph: Any, live: dict[int, np.ndarray]) -> float:
        keys = np.array(sorted(live))
        scores = probes @ np.stack([live[int(k)] for k in keys]).T
        found = [
            len(
                set(keys[np.argpartition(-row, 10)[:10]].tolist())
                & set(np.asarray(graph.search(q, 10).keys).tolist())
            )
            / 10
            for q, row in zip(probes, scores, strict=True)
        ]
        return float(np.mean(found))

    vectors = draw(nodes)
    live = {key: vectors[key - 1] for key in range(1, nodes + 1)}
    graph = built(np.arange(1, nodes + 1), vectors)
    row: dict[str, Any] = {"nodes": nodes, "dim": dim, "noise": noise, "built whole": recall(graph, live)}
    step, next_key = nodes // 20, nodes + 1
    with tempfile.TemporaryDirectory(prefix="chunkwise-bench-") as tmp:
        for replaced in range(1, 11):
            gone = rng.choice(np.array(sorted(live)), step, replace=False)
            for key in gone.tolist():
                del live[key]
            added, new = np.arange(next_key, next_key + step), draw(step)
            next_key += step
            live.update(zip(added.tolist(), new, strict=True))
            graph.remove(gone)
            graph.add(added, new)
            graph.save(f"{tmp}/graph")
            graph = new_graph(ndim=dim, metric="cos", dtype="f32", expansion_search=EXPANSION_SEARCH)
            graph.load(f"{tmp}/graph")
            if replaced in (2, 5, 10):
                row[f"{replaced * 5}% replaced"] = recall(graph, live)
    keys = np.array(sorted(live))
    row["final vectors built whole"] = recall(built(keys, np.stack([live[int(k)] for k in keys])), live)
    print(f"churn at {dim} dimensions: {row}", file=sys.stderr, flush=True)
    return row


def markdown(row: dict[str, Any]) -> str:
    """The result as a Markdown table."""
    lines = [
        f"{row['chunks']:,} chunks (graph built first in {row['initial_build_s']:.1f} s, "
        f"{row['initial_strays']} strays):",
        "",
        "| write | first search s | chunks changed since built whole | strays | pending | recall@10 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for step in row["steps"]:
        lines.append(
            f"| {step['write']} | {step['first_search_s']:.3f} | {step['changed_since_build']} "
            f"| {step['strays']} | {step['pending']} | {step['recall@10']:.3f} |"
        )
    columns = [key for key in row["churn"][0] if key not in ("nodes", "dim", "noise")]
    lines += [
        "",
        f"Recall@10 of a graph of {row['churn'][0]['nodes']:,} nodes as 5% of them are replaced at a time:",
        "",
        "| vectors | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for part in row["churn"]:
        cells = " | ".join(f"{part[key]:.3f}" for key in columns)
        lines.append(f"| {part['dim']}-d, noise {part['noise']} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100, help="queries for recall@10")
    parser.add_argument("--churn-nodes", type=int, default=10_000, help="graph size of part churn")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chunkwise-bench-") as tmp:
        row = run(Path(tmp), args.chunks, args.queries)
    row["churn"] = [
        churn(args.churn_nodes, DIM, 0.5, args.queries),
        churn(args.churn_nodes, 128, 3.0, args.queries),
    ]
    result = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
        },
        "load_average": os.getloadavg(),
        **row,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(markdown(row))


if __name__ == "__main__":
    main()
