"""Knowledge-base speed: ingest throughput and query latency per stage, on real data and at scale.

Part 1, real data, the ``--preset`` pipeline (``default``: BM25 + dense hybrid with bge-small; ``fast``:
the same with MiniLM; ``quality``: ``default`` plus the cross-encoder; no LLM in any of them):

- ingest the 75 Markdown files of ``../shared/data/formats/*/md`` through ``KnowledgeBase.add`` (parse,
  chunk, headers, embed, store) and two Chroma corpora (``wikitexts`` and ``state_of_the_union`` of
  ``../shared/data/chroma``) through ``add_documents``: documents/s, chunks/s, share of time embedding;
- query each with its data set's questions (``rmc_dev`` for the formats documents, the Chroma questions
  for the Chroma corpora): p50/p95 per stage (bm25, dense including the query embedding, fusion,
  redundancy or rerank where the preset has them), of the whole search, and of relevant segment
  extraction on top. Ingest speed is also given per CPU-second of this process, the steadier figure on a
  shared machine.

Part 2, synthetic scale (10k and 100k chunks; text sampled from the Chroma corpora's word stream,
clustered unit vectors of 384 dimensions, stored through ``SQLiteStore.put``): p50/p95 of BM25 by SQLite FTS5
and by the bm25s sidecar (with its build time), exact dense search, HNSW search (usearch) with its
recall@10 against exact, and hybrid search with the default thresholds (BM25 + dense + fusion +
redundancy; the query vector is precomputed, so embedding is excluded: its cost is part 1's). Peers in
the same run: bm25s (the fastest BM25 library installed) on the same chunks, and dsRAG's own segment
search (``dsrag.rse.get_best_segments``, installed with ``--no-deps``) against
``chunkwise.query.segments.best_segments`` on the same values (their segments are checked equal).

    .venv/bin/python bench/pipeline_latency.py                 # prints Markdown tables, writes the JSON
    .venv/bin/python bench/pipeline_latency.py --sizes 10000   # quicker
    .venv/bin/python bench/pipeline_latency.py --preset quality --sizes --queries 30  # real data only
    .venv/bin/python bench/pipeline_latency.py --config bench/eval_configs/former-default.toml --sizes
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench_data import add_data_option
from chunkwise.chunking.chunk import make_chunk
from chunkwise.config import RSE_PRESETS, from_dict
from chunkwise.document import Document
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from chunkwise.parsing.text import text_document
from chunkwise.query.segments import best_segments, chunk_values
from chunkwise.query.trace import Trace
from chunkwise.store import Store, StoreSettings
from chunkwise.store.sqlite import SQLiteStore

RESULTS = Path(__file__).resolve().parent / "results" / "pipeline_latency.json"
CHROMA_DOCS = ("wikitexts", "state_of_the_union")
STAGES = ("bm25", "dense", "fusion", "redundancy", "rerank")
DIM = 384


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile in milliseconds of values given in seconds."""
    return float(np.percentile(np.asarray(values) * 1000, q)) if values else float("nan")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def query_latency(kb: KnowledgeBase, queries: Sequence[str]) -> dict[str, dict[str, float]]:
    """p50/p95 (ms) per stage, for the whole search, and for segment extraction after it."""
    per_stage: dict[str, list[float]] = {stage: [] for stage in (*STAGES, "search", "segments")}
    kb.search(queries[0], k=10)  # load the embedder before timing
    for query in queries:
        trace = Trace()
        kb.search(query, k=10, trace=trace)
        for report in trace.stages:
            per_stage[report.stage].append(report.seconds)
        per_stage["search"].append(trace.totals()["seconds"])
        trace = Trace()
        kb.segments(query, trace)
        per_stage["segments"].append(trace.get("segments").seconds)
    return {stage: {"p50_ms": pct(v, 50), "p95_ms": pct(v, 95)} for stage, v in per_stage.items() if v}


def ingest_real(
    data: Path, workdir: Path, max_queries: int, preset: str, overrides: dict[str, Any]
) -> list[dict[str, Any]]:
    """Part 1: the formats Markdown files and two Chroma corpora, with ``preset`` and ``overrides`` (a
    TOML-shaped mapping, as a ``--config`` file gives)."""
    rows = []
    models = {**overrides.get("models", {}), "cache": False}  # measure the models, not the cache
    config = from_dict({**overrides, "models": models}, preset)
    md_files = sorted(data.glob("formats/*/md/*.md"))
    rmc = [q["query"] for q in read_jsonl(data / "rmc_dev" / "queries.jsonl")][:max_queries]
    corpus = {d["doc_id"]: d["text"] for d in read_jsonl(data / "chroma" / "corpus.jsonl")}
    chroma_docs = [text_document(doc_id, corpus[doc_id]) for doc_id in CHROMA_DOCS]
    chroma_queries = [
        q["query"]
        for q in read_jsonl(data / "chroma" / "queries.jsonl")
        if q["spans"][0]["doc_id"] in CHROMA_DOCS
    ][:max_queries]
    jobs: list[tuple[str, Callable[[KnowledgeBase], Any], int, int, list[str]]] = [
        (
            f"formats md ({len(md_files)} files)",
            lambda kb: kb.add(md_files),
            len(md_files),
            sum(p.stat().st_size for p in md_files),
            rmc,
        ),
        (
            "chroma wikitexts + state_of_the_union",
            lambda kb: kb.add_documents(chroma_docs),
            len(chroma_docs),
            sum(len(d.text) for d in chroma_docs),
            chroma_queries,
        ),
    ]
    for name, ingest, documents, size, queries in jobs:
        with KnowledgeBase(workdir / name.split()[0], config) as kb:
            cpu = time.process_time()
            report = ingest(kb)
            cpu = time.process_time() - cpu
            latency = query_latency(kb, queries)
            rows.append(
                {
                    "corpus": name,
                    "documents": documents,
                    "characters_or_bytes": size,
                    "chunks": report.chunks,
                    "failed": len(report.failed),
                    "ingest_s": report.seconds,
                    "embed_s": report.embed_seconds,
                    "docs_per_s": documents / report.seconds,
                    "chunks_per_s": report.chunks / report.seconds,
                    "chunks_per_cpu_s": report.chunks / cpu,
                    "embed_share": report.embed_seconds / report.seconds,
                    "queries": len(queries),
                    "latency": latency,
                    "peak_rss_mb": peak_rss_mb(),
                }
            )
    return rows


class FixedQueryEmbedder:
    """Synthetic-scale stand-in: every text maps to one precomputed unit vector (no model cost)."""

    name = "synthetic"
    dim = DIM

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector.astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.repeat(self.vector[None, :], len(texts), axis=0)


CENTRES = np.random.default_rng(0).normal(size=(1000, DIM)).astype(np.float32)


def clustered_vectors(n: int, rng: np.random.Generator, noise: float = 0.5) -> np.ndarray:
    """Unit vectors around 1,000 random topic centres: neighbours have cosines of about 0.6-0.8, as
    sentence embeddings of related passages do (uniformly random vectors would have none)."""
    vectors = CENTRES[rng.integers(0, len(CENTRES), n)] + noise * rng.normal(size=(n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def fill_synthetic(
    store: Store, n: int, words: np.ndarray, rng: np.random.Generator
) -> tuple[list[str], float]:
    """Write ``n`` synthetic chunks (120 words each, 100 per document) into ``store``; returns the chunk
    texts and the seconds spent writing. The same ``rng`` seed gives the same chunks in any store."""
    store.check_embedder("synthetic", DIM)
    texts: list[str] = []
    began = time.perf_counter()
    per_doc = 100
    for d in range(n // per_doc):
        starts = rng.integers(0, words.size - 120, per_doc)
        pieces = [" ".join(words[s : s + 120]) for s in starts]
        text = "\n\n".join(pieces)
        doc = Document(f"synthetic-{d}", text)
        chunks, at = [], 0
        for piece in pieces:
            chunks.append(make_chunk(doc, at, at + len(piece)))
            at += len(piece) + 2
        vectors = clustered_vectors(per_doc, rng)
        store.put(doc, chunks, [""] * per_doc, vectors, fingerprint="synthetic")
        texts.extend(pieces)
    return texts, time.perf_counter() - began


def synthetic_store(
    directory: Path, n: int, words: np.ndarray, rng: np.random.Generator
) -> tuple[SQLiteStore, list[str], float]:
    """A SQLite store of ``n`` synthetic chunks (:func:`fill_synthetic`); returns it, the chunk texts
    and the seconds spent writing."""
    store = SQLiteStore(directory, StoreSettings(hnsw_threshold=10**9, bm25s_threshold=None))
    texts, seconds = fill_synthetic(store, n, words, rng)
    return store, texts, seconds


def timed(fn: Callable[[], Any], repeats: int) -> list[float]:
    """Wall-clock seconds of ``repeats`` calls."""
    out = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        out.append(time.perf_counter() - began)
    return out


def rse_peer(n: int, rng: np.random.Generator) -> dict[str, Any]:
    """Segment search on ``n`` chunks (20 documents, 200 ranked hits, balanced preset): chunkwise vs dsRAG."""
    params = RSE_PRESETS["balanced"]
    ranks = np.full(n, np.nan)
    hits = rng.choice(n, 200, replace=False)
    hits[:40] = np.arange(n // 2, n // 2 + 40)  # one relevant run, as real rankings have
    ranks[hits] = np.arange(200)
    relevance = np.where(np.isnan(ranks), 0.0, rng.uniform(0.3, 1.0, n))
    values = chunk_values(ranks, relevance, [700] * n, params)
    doc_ends = list(range(n // 20, n + 1, n // 20))
    ours = timed(
        lambda: best_segments(
            values, doc_ends, params.max_length, params.overall_max_length, params.minimum_value
        ),
        20,
    )
    row: dict[str, Any] = {"chunks": n, "chunkwise_p50_ms": pct(ours, 50)}
    try:
        from dsrag.rse import get_best_segments
    except ImportError:
        row["dsrag"] = "not installed (pip install --no-deps dsrag)"
        return row
    listed = values.tolist()
    limits = (params.max_length, params.overall_max_length, params.minimum_value)
    peer = timed(lambda: get_best_segments([listed], doc_ends, *limits), 3)
    mine = best_segments(values, doc_ends, *limits)
    theirs, _ = get_best_segments([listed], doc_ends, *limits)
    row.update(
        dsrag_p50_ms=pct(peer, 50),
        speedup=pct(peer, 50) / pct(ours, 50),
        same_segments=[(s, e) for s, e, _ in mine] == [tuple(t) for t in theirs],
        segments=len(mine),
    )
    return row


def scale(workdir: Path, n: int, queries: Sequence[str], words: np.ndarray) -> dict[str, Any]:
    """Part 2 at ``n`` chunks."""
    rng = np.random.default_rng(n)
    store, texts, write_s = synthetic_store(workdir / f"synthetic-{n}", n, words, rng)
    row: dict[str, Any] = {"chunks": n, "write_s": write_s, "chunks_per_s_stored": n / write_s}
    qvecs = clustered_vectors(len(queries), rng)
    bm25 = [timed(lambda q=q: store.bm25(q, 50), 1)[0] for q in queries]
    index = store.dense_index()
    exact = [timed(lambda v=v: index.exact(v, 50), 1)[0] for v in qvecs]
    row["bm25_fts5"] = {"p50_ms": pct(bm25, 50), "p95_ms": pct(bm25, 95)}
    began = time.perf_counter()
    store.lexical_index()
    sidecar_build_s = time.perf_counter() - began
    sidecar = [timed(lambda q=q: store.lexical_index().search(q, 50), 1)[0] for q in queries]
    row["bm25_sidecar"] = {"p50_ms": pct(sidecar, 50), "p95_ms": pct(sidecar, 95), "build_s": sidecar_build_s}
    row["dense_exact"] = {"p50_ms": pct(exact, 50), "p95_ms": pct(exact, 95)}
    began = time.perf_counter()
    index.search(qvecs[0], 10, approximate=True)
    build_s = time.perf_counter() - began
    hnsw = [timed(lambda v=v: index.search(v, 50, approximate=True), 1)[0] for v in qvecs]
    recall = np.mean(
        [
            len({k for k, _ in index.search(v, 10, approximate=True)} & {k for k, _ in index.exact(v, 10)})
            / 10
            for v in qvecs
        ]
    )
    row["dense_hnsw"] = {
        "p50_ms": pct(hnsw, 50),
        "p95_ms": pct(hnsw, 95),
        "build_s": build_s,
        "recall@10": float(recall),
    }
    store.close()
    config = from_dict({})  # the defaults: HNSW and the bm25s sidecar at these sizes where they apply
    models = Models(config.models, embedder=FixedQueryEmbedder(qvecs[0]))
    with KnowledgeBase(workdir / f"synthetic-{n}", config, models=models) as kb:
        kb.search(queries[0], k=10)
        hybrid = [timed(lambda q=q: kb.search(q, k=10), 1)[0] for q in queries]
        segments = [timed(lambda q=q: kb.segments(q), 1)[0] for q in queries]
    row["hybrid_search"] = {"p50_ms": pct(hybrid, 50), "p95_ms": pct(hybrid, 95)}
    row["hybrid_plus_rse"] = {"p50_ms": pct(segments, 50), "p95_ms": pct(segments, 95)}
    try:
        import bm25s
    except ImportError:
        row["bm25s"] = "not installed"
    else:
        began = time.perf_counter()
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        index_s = time.perf_counter() - began
        peer = [
            timed(
                lambda q=q: retriever.retrieve(
                    bm25s.tokenize([q], stopwords="en", show_progress=False), k=50, show_progress=False
                ),
                1,
            )[0]
            for q in queries
        ]
        row["bm25s"] = {"p50_ms": pct(peer, 50), "p95_ms": pct(peer, 95), "index_s": index_s}
        row["bm25_ratio_bm25s_over_fts5_p50"] = pct(peer, 50) / pct(bm25, 50)
    row["peak_rss_mb"] = peak_rss_mb()
    return row


def markdown(result: dict[str, Any]) -> str:
    """The result as Markdown tables."""
    lines = [
        f"Ingest ({result['preset']} preset, bundled models on the CPU):",
        "",
        "| corpus | docs | chunks | ingest s | docs/s | chunks/s | chunks/CPU-s | embedding share "
        "| peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["real"]:
        lines.append(
            f"| {row['corpus']} | {row['documents']} | {row['chunks']} | {row['ingest_s']:.1f} "
            f"| {row['docs_per_s']:.2f} | {row['chunks_per_s']:.1f} | {row['chunks_per_cpu_s']:.1f} "
            f"| {row['embed_share']:.0%} "
            f"| {row['peak_rss_mb']:.0f} |"
        )
    lines += ["", "Query latency per stage, ms (p50 / p95):", ""]
    # the stages the preset runs ("default" has no redundancy stage, "quality" has a rerank stage)
    real = result["real"]
    stages = [s for s in (*STAGES, "search", "segments") if all(s in row["latency"] for row in real)]
    lines.append("| corpus | queries | " + " | ".join(stages) + " |")
    lines.append("|---|---:|" + "---:|" * len(stages))
    for row in result["real"]:
        cells = [f"{row['latency'][s]['p50_ms']:.1f} / {row['latency'][s]['p95_ms']:.1f}" for s in stages]
        lines.append(f"| {row['corpus']} | {row['queries']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Synthetic scale (query embedding excluded), ms p50 / p95:",
        "",
        "| chunks | BM25 FTS5 | BM25 sidecar | bm25s (peer) | dense exact | HNSW | HNSW recall@10 | hybrid "
        "| hybrid + RSE |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["scale"]:
        peer = row["bm25s"]
        peer_cell = f"{peer['p50_ms']:.1f} / {peer['p95_ms']:.1f}" if isinstance(peer, dict) else peer
        cells = [
            f"{row[k]['p50_ms']:.1f} / {row[k]['p95_ms']:.1f}"
            for k in (
                "bm25_fts5",
                "bm25_sidecar",
                "dense_exact",
                "dense_hnsw",
                "hybrid_search",
                "hybrid_plus_rse",
            )
        ]
        lines.append(
            f"| {row['chunks']} | {cells[0]} | {cells[1]} | {peer_cell} | {cells[2]} | {cells[3]} "
            f"| {row['dense_hnsw']['recall@10']:.3f} | {cells[4]} | {cells[5]} |"
        )
    rse = result["rse"]
    lines += ["", "Relevant segment extraction (balanced preset, 200 ranked hits), ms p50:", ""]
    lines += [
        "| chunks | chunkwise | dsRAG get_best_segments | speed-up | same segments |",
        "|---:|---:|---:|---:|---|",
    ]
    for row in rse:
        if "dsrag_p50_ms" in row:
            lines.append(
                f"| {row['chunks']} | {row['chunkwise_p50_ms']:.3f} | {row['dsrag_p50_ms']:.1f} "
                f"| {row['speedup']:.0f}x | {row['same_segments']} |"
            )
        else:
            lines.append(f"| {row['chunks']} | {row['chunkwise_p50_ms']:.3f} | {row['dsrag']} | | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100, help="queries per corpus")
    parser.add_argument("--preset", default="default", help="pipeline preset of part 1")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON")
    parser.add_argument("--config", type=Path, help="a TOML file of settings over the preset's (part 1)")
    add_data_option(parser)
    args = parser.parse_args()
    corpus = {d["doc_id"]: d["text"] for d in read_jsonl(args.data / "chroma" / "corpus.jsonl")}
    words = np.array(" ".join(corpus.values()).split())
    chroma_queries = [q["query"] for q in read_jsonl(args.data / "chroma" / "queries.jsonl")][: args.queries]
    with tempfile.TemporaryDirectory(prefix="chunkwise-bench-") as tmp:
        workdir = Path(tmp)
        overrides = tomllib.loads(args.config.read_text(encoding="utf-8")) if args.config else {}
        real = ingest_real(args.data, workdir, args.queries, args.preset, overrides)
        scaled = [scale(workdir, n, chroma_queries, words) for n in args.sizes]
    rse = [rse_peer(n, np.random.default_rng(7)) for n in (1_000, 10_000)]
    result = {
        "preset": args.preset,
        "config": args.config.as_posix() if args.config else None,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
        },
        "load_average": os.getloadavg(),
        "real": real,
        "scale": scaled,
        "rse": rse,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
