"""Scale-out: serial vs Ray ingest, PostgreSQL vs SQLite query latency, and pgvector HNSW at 1M vectors.

Everything runs on this machine against a private PostgreSQL 18 + pgvector started for the run
(``chunkwise.store.pgserver``, the ``[postgres]`` extra) and, for part 1, a local Ray cluster of this
machine's CPUs. Each ratio below comes from one run of one part.

Part ``ingest``: the first ``--files`` Markdown files of ``../shared/data/formats/*/md`` through
``KnowledgeBase.add`` into PostgreSQL, fast preset (the bundled int8 MiniLM, the default embedder when
the results were recorded), embedding cache off: once serially (one process, the model on every core)
and once with ``ray="auto"`` (Ray started here: prepare tasks, an actor pool of one embedding actor per
CPU). Ray's total includes starting the cluster, which is also reported apart.

Part ``scale``: 10k and 100k synthetic chunks (``bench/pipeline_latency.py``'s generator: 120 words from
the Chroma corpora, clustered 384-d unit vectors; the same chunks in both stores), queried with the
Chroma questions through the default configuration with redundancy removal on, as the default had it
when the results were recorded (BM25 + dense + fusion + redundancy; the query vector precomputed, so
embedding is excluded): p50/p95 per stage, SQLite (FTS5 or the bm25s sidecar, exact or usearch HNSW, as
the thresholds pick) against PostgreSQL (BM25 in SQL over the postings table or, at or above the same
``bm25s_threshold``, over the postings in memory; pgvector exact or HNSW). Also PostgreSQL's write rate
and table sizes, its HNSW recall@10 against its exact search, the first BM25 search (which builds the
in-memory postings) and BM25 right after another writer replaced a document. ``--stores postgres``
fills and queries PostgreSQL alone (the SQLite rows of an earlier run stay in the results).

Part ``million``: 1M clustered 384-d vectors copied into a pgvector table, an HNSW index built (m=16,
ef_construction=64, two maintenance workers, a 20-minute statement timeout), then recall@10 against
exact search and p50/p95 at ``ef_search`` 100.

    .venv/bin/python bench/scale.py                        # all parts; JSON + Markdown tables
    .venv/bin/python bench/scale.py --parts scale --sizes 10000
    .venv/bin/python bench/scale.py --parts scale --stores postgres   # PostgreSQL latency alone
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench_data import add_data_option
from chunkwise.config import from_dict
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from chunkwise.store import StoreSettings, open_store, pgserver
from chunkwise.store.sqlite import SQLiteStore
from pipeline_latency import (
    DIM,
    FixedQueryEmbedder,
    clustered_vectors,
    fill_synthetic,
    pct,
    query_latency,
    read_jsonl,
    timed,
)

RESULTS = Path(__file__).resolve().parent / "results" / "scale.json"
STAGES = ("bm25", "dense", "fusion", "redundancy", "search", "segments")
MILLION_TIMEOUT_MIN = 20


def ingest_part(data: Path, url: str, n_files: int) -> dict[str, Any]:
    """Serial vs Ray ingest of the same files into two schemas of the same server."""
    import ray

    files = sorted(data.glob("formats/*/md/*.md"))[:n_files]
    config = from_dict({"models": {"cache": False}}, preset="fast")
    with KnowledgeBase(f"{url}&schema=ingest_serial", config) as kb:
        serial = kb.add(files)
    began = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="WARNING")
    startup = time.perf_counter() - began
    try:
        with KnowledgeBase(f"{url}&schema=ingest_ray", config) as kb:
            distributed = kb.add(files, ray="auto")
    finally:
        ray.shutdown()
    ray_total = startup + distributed.seconds
    return {
        "files": len(files),
        "chunks": serial.chunks,
        "same_documents": sorted(serial.added) == sorted(distributed.added),
        "serial_s": serial.seconds,
        "serial_embed_s": serial.embed_seconds,
        "ray_startup_s": startup,
        "ray_run_s": distributed.seconds,
        "ray_total_s": ray_total,
        "ratio_ray_over_serial": ray_total / serial.seconds,
        "ratio_without_startup": distributed.seconds / serial.seconds,
        "serial_chunks_per_s": serial.chunks / serial.seconds,
        "ray_chunks_per_s": distributed.chunks / ray_total,
    }


def relation_sizes(url: str, schema: str) -> dict[str, float]:
    """MB on disk of each table of ``schema`` with its indexes."""
    import psycopg

    with psycopg.connect(url.split("&schema=", maxsplit=1)[0]) as conn:
        rows = conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n"
            " ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (schema,),
        ).fetchall()
    return {name: size / 1e6 for name, size in rows}


def vacuum(url: str, schema: str) -> None:
    """VACUUM ANALYZE the schema's tables after a bulk load (autovacuum does this in steady state)."""
    import psycopg

    with psycopg.connect(url.split("&schema=", maxsplit=1)[0], autocommit=True) as conn:
        for (table,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall():
            conn.execute(f'VACUUM ANALYZE "{schema}"."{table}"')


def scale_part(
    workdir: Path, url: str, n: int, queries: list[str], words: np.ndarray, *, stores: list[str]
) -> dict[str, Any]:
    """The same ``n`` synthetic chunks in SQLite and PostgreSQL (or those of ``stores``), queried alike."""
    schema = f"synthetic_{n}"
    pg_url = f"{url}&schema={schema}"
    row: dict[str, Any] = {"chunks": n}
    if "sqlite" in stores:
        sqlite = SQLiteStore(workdir / schema, StoreSettings(hnsw_threshold=10**9, bm25s_threshold=None))
        _, sqlite_write_s = fill_synthetic(sqlite, n, words, np.random.default_rng(n))
        sqlite.close()
        row["sqlite_write_chunks_per_s"] = n / sqlite_write_s
    with open_store(pg_url) as store:
        _, pg_write_s = fill_synthetic(store, n, words, np.random.default_rng(n))
    vacuum(url, schema)
    row["postgres_write_chunks_per_s"] = n / pg_write_s
    row["postgres_mb"] = relation_sizes(url, schema)
    qvecs = clustered_vectors(len(queries), np.random.default_rng(n + 1))
    config = from_dict({"redundancy": {"enabled": True}})
    for name, location in (("sqlite", str(workdir / schema)), ("postgres", pg_url)):
        if name not in stores:
            continue
        models = Models(config.models, embedder=FixedQueryEmbedder(qvecs[0]))
        with KnowledgeBase(location, config, models=models) as kb:
            first_bm25_s = timed(lambda: kb.store.bm25(queries[0], 50), 1)[0]  # loads or builds its index
            row[name] = {
                "dense_method": kb.store.dense_method(),
                "first_bm25_ms": first_bm25_s * 1000,
                "latency": query_latency(kb, queries),
                "bm25_alone": summary(timed_each(lambda q: kb.store.bm25(q, 50), queries)),
            }
            if name == "postgres":
                row[name]["bm25_after_a_write"] = summary(bm25_after_writes(pg_url, kb, queries, words))
    with open_store(pg_url, StoreSettings(hnsw_threshold=1)) as store:
        hnsw = timed_each(lambda v: store.dense(v, 50), list(qvecs))
        approximate = [{k for k, _ in store.dense(v, 10)} for v in qvecs]
        store.settings = StoreSettings(hnsw_threshold=10**12)
        exact_times = timed_each(lambda v: store.dense(v, 50), list(qvecs))
        exact = [{k for k, _ in store.dense(v, 10)} for v in qvecs]
    row["postgres_hnsw"] = {
        **summary(hnsw),
        "recall@10": float(np.mean([len(a & e) / 10 for a, e in zip(approximate, exact, strict=True)])),
    }
    row["postgres_exact"] = summary(exact_times)
    return row


def bm25_after_writes(url: str, kb: KnowledgeBase, queries: list[str], words: np.ndarray) -> list[float]:
    """Seconds of a BM25 search right after another connection replaced a 100-chunk document, ten
    times: what an ingest running beside the searches costs them (PostgreSQL's in-memory postings
    follow the store by chunk key)."""
    seconds = []
    with open_store(url) as writer:
        for i in range(10):
            fill_synthetic(writer, 100, words, np.random.default_rng(10**6 + i))
            seconds.append(timed(lambda i=i: kb.store.bm25(queries[i], 50), 1)[0])
    return seconds


def timed_each(fn: Any, items: list[Any]) -> list[float]:
    """Seconds of ``fn(item)`` for each item."""
    return [timed(lambda item=item: fn(item), 1)[0] for item in items]


def summary(seconds: list[float]) -> dict[str, float]:
    """p50/p95 in milliseconds."""
    return {"p50_ms": pct(seconds, 50), "p95_ms": pct(seconds, 95)}


def million_part(url: str, n: int, queries: int) -> dict[str, Any]:
    """HNSW over ``n`` clustered vectors in pgvector: build time, recall@10, latency."""
    import psycopg
    from pgvector.psycopg import register_vector

    base = url.split("&schema=", maxsplit=1)[0]
    row: dict[str, Any] = {"vectors": n, "dim": DIM, "m": 16, "ef_construction": 64, "ef_search": 100}
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        conn.execute(f"DROP TABLE IF EXISTS million; CREATE TABLE million (id bigint, v vector({DIM}))")
        rng = np.random.default_rng(1)
        began = time.perf_counter()
        with conn.cursor() as cur:
            for start in range(0, n, 50_000):
                block = clustered_vectors(min(50_000, n - start), rng)
                with cur.copy("COPY million (id, v) FROM STDIN WITH (FORMAT BINARY)") as copy:
                    copy.set_types(["int8", "vector"])
                    for i, vector in enumerate(block, start):
                        copy.write_row((i, vector))
        row["load_s"] = time.perf_counter() - began
        conn.execute("VACUUM ANALYZE million")
        conn.execute("SET maintenance_work_mem = '8GB'")
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute(f"SET statement_timeout = '{MILLION_TIMEOUT_MIN}min'")
        began = time.perf_counter()
        try:
            conn.execute("CREATE INDEX million_hnsw ON million USING hnsw (v vector_cosine_ops)")
        except psycopg.errors.QueryCanceled:
            row["built"] = False
            row["build_s"] = time.perf_counter() - began
            return row
        row["built"] = True
        row["build_s"] = time.perf_counter() - began
        conn.execute("SET statement_timeout = 0")
        row["index_mb"] = conn.execute("SELECT pg_relation_size('million_hnsw')").fetchone()[0] / 1e6
        row["table_mb"] = conn.execute("SELECT pg_total_relation_size('million')").fetchone()[0] / 1e6
        probes = clustered_vectors(queries, np.random.default_rng(2))
        sql = "SELECT id FROM million ORDER BY v <=> %s LIMIT 10"
        conn.execute("SET hnsw.ef_search = 100")
        times, found = [], []
        for vector in probes:
            began = time.perf_counter()
            found.append({r[0] for r in conn.execute(sql, (vector,))})
            times.append(time.perf_counter() - began)
        conn.execute("SET enable_indexscan = off")
        exact = [{r[0] for r in conn.execute(sql, (vector,))} for vector in probes]
        row.update(summary(times))
        row["recall@10"] = float(np.mean([len(a & e) / 10 for a, e in zip(found, exact, strict=True)]))
        conn.execute("DROP TABLE million")
    return row


def markdown(result: dict[str, Any]) -> str:
    """The results as Markdown tables."""
    lines = []
    if "ingest" in result:
        r = result["ingest"]
        lines += [
            f"Ingest of {r['files']} Markdown files ({r['chunks']} chunks) into PostgreSQL, "
            f"{result['machine']['cpus']} cores:",
            "",
            "| run | seconds | chunks/s | × serial |",
            "|---|---:|---:|---:|",
            f"| serial (one process) | {r['serial_s']:.1f} | {r['serial_chunks_per_s']:.2f} | 1.00 |",
            f"| Ray, cluster start included | {r['ray_total_s']:.1f} | {r['ray_chunks_per_s']:.2f} "
            f"| {r['ratio_ray_over_serial']:.2f} |",
            f"| Ray, after the cluster started ({r['ray_startup_s']:.1f} s) | {r['ray_run_s']:.1f} | "
            f"{r['chunks'] / r['ray_run_s']:.2f} | {r['ratio_without_startup']:.2f} |",
            "",
        ]
    if result.get("scale"):
        lines += [
            "Query latency per stage at scale, ms p50 / p95 (query embedding excluded):",
            "",
            "| chunks | store | dense | " + " | ".join(STAGES) + " |",
            "|---:|---|---|" + "---:|" * len(STAGES),
        ]
        for row in result["scale"]:
            for name in ("sqlite", "postgres"):
                if name not in row:
                    continue
                latency = row[name]["latency"]
                cells = [f"{latency[s]['p50_ms']:.1f} / {latency[s]['p95_ms']:.1f}" for s in STAGES]
                lines.append(
                    f"| {row['chunks']} | {name} | {row[name]['dense_method']} | " + " | ".join(cells) + " |"
                )
        lines += [
            "",
            "| chunks | PostgreSQL write chunks/s | SQLite write chunks/s | pgvector HNSW p50 / p95 ms "
            "| recall@10 | exact p50 ms | PostgreSQL MB (tables + indexes) |",
            "|---:|---:|---:|---:|---:|---:|---|",
        ]
        for row in result["scale"]:
            hnsw = row["postgres_hnsw"]
            sizes = ", ".join(f"{k} {v:.0f}" for k, v in sorted(row["postgres_mb"].items()))
            lines.append(
                f"| {row['chunks']} | {row['postgres_write_chunks_per_s']:.0f} "
                f"| {row.get('sqlite_write_chunks_per_s', float('nan')):.0f} "
                f"| {hnsw['p50_ms']:.1f} / {hnsw['p95_ms']:.1f} "
                f"| {hnsw['recall@10']:.3f} | {row['postgres_exact']['p50_ms']:.1f} | {sizes} |"
            )
        for row in result["scale"]:
            pg = row.get("postgres", {})
            if "bm25_after_a_write" in pg:
                after = pg["bm25_after_a_write"]
                lines.append(
                    f"PostgreSQL BM25 at {row['chunks']} chunks: first search {pg['first_bm25_ms']:.0f} ms "
                    f"(above the threshold it builds the in-memory postings), right after another "
                    f"writer replaced a 100-chunk document {after['p50_ms']:.1f} / {after['p95_ms']:.1f} ms "
                    "p50 / p95."
                )
        lines.append("")
    if "million" in result:
        m = result["million"]
        if m.get("built"):
            lines += [
                f"pgvector HNSW over {m['vectors']:,} vectors of {m['dim']} dimensions: loaded in "
                f"{m['load_s']:.0f} s, index built in {m['build_s'] / 60:.1f} min ({m['index_mb']:.0f} MB), "
                f"recall@10 {m['recall@10']:.3f}, p50 / p95 {m['p50_ms']:.1f} / {m['p95_ms']:.1f} ms "
                f"(ef_search {m['ef_search']}).",
            ]
        else:
            lines.append(
                f"pgvector HNSW over {m['vectors']:,} vectors: not built within {MILLION_TIMEOUT_MIN} "
                f"minutes (stopped after {m['build_s'] / 60:.1f} min)."
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="*", default=["ingest", "scale", "million"])
    parser.add_argument("--files", type=int, default=60, help="Markdown files for the ingest part")
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--stores", nargs="*", default=["sqlite", "postgres"], help="stores the scale part fills and queries"
    )
    parser.add_argument("--million", type=int, default=1_000_000, help="vectors for the HNSW part")
    add_data_option(parser)
    args = parser.parse_args()
    result: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    result["machine"] = {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    workdir = Path(tempfile.mkdtemp(prefix="chunkwise-scale-"))
    try:
        url = pgserver.start(workdir / "pg")
        if "ingest" in args.parts:
            result["ingest"] = ingest_part(args.data, url, args.files)
            result["ingest"]["load_average"] = os.getloadavg()
        if "scale" in args.parts:
            corpus = {d["doc_id"]: d["text"] for d in read_jsonl(args.data / "chroma" / "corpus.jsonl")}
            words = np.array(" ".join(corpus.values()).split())
            queries = [q["query"] for q in read_jsonl(args.data / "chroma" / "queries.jsonl")][: args.queries]
            fresh = [scale_part(workdir, url, n, queries, words, stores=args.stores) for n in args.sizes]
            earlier = {row["chunks"]: row for row in result.get("scale", [])}  # kept for stores not rerun
            result["scale"] = [{**earlier.get(row["chunks"], {}), **row} for row in fresh]
            result["scale_load_average"] = os.getloadavg()
        if "million" in args.parts:
            result["million"] = million_part(url, args.million, 50)
            result["million"]["load_average"] = os.getloadavg()
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(markdown(result))
    finally:
        pgserver.stop(workdir / "pg")
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
