"""Ingest speed: chunkwise against LlamaIndex and LangChain, with the same embedding model and chunk size.

Documents: the 75 Markdown files of ``../shared/data/formats/*/md`` and the Nike 10-K
(``../shared/data/long_docs/nike_2023_annual_report.txt``). Each framework ingests all of them:

* **chunkwise**: ``KnowledgeBase(<temp dir>, config).add(paths)``: parse, ``recursive`` chunks, embed,
  and store (SQLite with the FTS5 BM25 index and the vectors). The ``fast`` preset with contextual
  headers off, because the frameworks embed a chunk's text alone.
* **LlamaIndex**: ``IngestionPipeline([SentenceSplitter(...), embedding]).run(documents=...)``.
* **LangChain**: ``RecursiveCharacterTextSplitter.split_documents`` and ``InMemoryVectorStore.add_documents``.

All three embed with the bundled int8 ONNX all-MiniLM-L6-v2 (``OnnxEmbedder``, wrapped as a LlamaIndex
``BaseEmbedding`` and a LangChain ``Embeddings``), and cut chunks of at most ``--chunk-size``
characters without overlap (LlamaIndex's splitter measures with a character tokenizer). The frameworks
read the files as text; chunkwise parses the Markdown into its document model, as its ingest does.
Each framework runs in a fresh subprocess; the model is loaded and warmed up before the clock starts.

Reported per framework: chunks, seconds (wall clock; the process's CPU seconds beside them, all
threads: the embedder runs on every core), chunks per second, seconds per MB of input (UTF-8 bytes of
the files), the peak resident memory of the subprocess (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` in
the process that started it, which also counts the model), the share of the time spent inside the
embedder, and the characters and tokens handed to it (counted after the clock stops). The ratio
compares the time to ingest the same input (MB/s, chunkwise over the faster framework), not chunks/s:
the three splitters cut slightly different numbers of chunks. With one embedder for all three, which
takes nearly all of every ingest, the ratio follows the tokens each one hands to the model.

Run: ``.venv/bin/python bench/ingest_speed.py [--data ../shared/data] [--chunk-size 800] [--repeat 2]``
(frameworks from the ``bench`` extra). Writes ``bench/results/ingest_speed.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_data import add_data_option

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RESULTS = Path(__file__).parent / "results" / "ingest_speed.json"
FRAMEWORKS = ("chunkwise", "llamaindex", "langchain")
#: Modules each framework imports, loaded before the clock starts.
MODULES = {
    "chunkwise": ("chunkwise.kb", "chunkwise.config", "chunkwise.parsing"),
    "llamaindex": ("llama_index.core", "llama_index.core.ingestion", "llama_index.core.node_parser"),
    "langchain": ("langchain_core.vectorstores", "langchain_text_splitters"),
}


def input_files(data: Path) -> list[Path]:
    """The Markdown originals of ``formats/`` and the Nike 10-K, sorted."""
    return [*sorted(data.glob("formats/*/md/*.md")), data / "long_docs" / "nike_2023_annual_report.txt"]


class TimedEmbedder:
    """The ONNX embedder, timing every call: chunkwise's ``Embedder`` and the wrappers' backend.

    :attr:`seconds` is the time during which at least one call was running, so calls made at once from
    several threads (chunkwise's ingest makes two) are not counted twice."""

    def __init__(self) -> None:
        from chunkwise.models.onnx_embedder import OnnxEmbedder

        self.inner = OnnxEmbedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.seconds = 0.0
        self.texts: list[str] = []
        self._lock = threading.Lock()
        self._running = 0
        self._busy_since = 0.0
        self.inner.embed(["warm up"])

    def embed(self, texts: Sequence[str]) -> Any:
        """Vectors of ``texts``; the time while calls run is added to :attr:`seconds`."""
        with self._lock:
            if self._running == 0:
                self._busy_since = time.perf_counter()
            self._running += 1
        try:
            vectors = self.inner.embed(texts)
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self.seconds += time.perf_counter() - self._busy_since
                self.texts.extend(texts)
        return vectors

    def tokens(self) -> int:
        """Tokens of every text embedded so far, as the model sees them (truncated, no special
        tokens); counted after the clock stops."""
        return sum(self.inner.count_tokens(text) for text in self.texts)


def run_chunkwise(files: list[Path], embedder: TimedEmbedder, chunk_size: int, workdir: Path) -> int:
    """chunkwise's ingest into a new knowledge base; the number of chunks stored."""
    from chunkwise.config import from_dict
    from chunkwise.kb import KnowledgeBase
    from chunkwise.models import Models

    chunking = {"name": "recursive", "params": {"max_size": chunk_size}}
    config = from_dict({"preset": "fast", "chunking": chunking, "headers": {"enabled": False}})
    with KnowledgeBase(workdir / "kb", config, models=Models(config.models, embedder=embedder)) as kb:
        report = kb.add(files)
    if report.failed:
        raise RuntimeError(f"chunkwise failed on {report.failed}")
    return report.chunks


def run_llamaindex(files: list[Path], embedder: TimedEmbedder, chunk_size: int) -> int:
    """LlamaIndex's ingestion pipeline; the number of nodes embedded."""
    from llama_index.core import Document
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from pydantic import PrivateAttr

    class OnnxEmbedding(BaseEmbedding):  # type: ignore[misc]
        """The ONNX embedder as a LlamaIndex embedding (all texts of a call in one batch)."""

        _backend: TimedEmbedder = PrivateAttr()

        def __init__(self, backend: TimedEmbedder, **kwargs: Any) -> None:
            super().__init__(model_name=backend.name, embed_batch_size=256, **kwargs)
            self._backend = backend

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._backend.embed(texts).tolist()  # type: ignore[no-any-return]

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._get_text_embeddings([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

    documents = [Document(text=f.read_text(encoding="utf-8"), id_=str(f)) for f in files]
    splitter = SentenceSplitter(
        chunk_size=chunk_size, chunk_overlap=0, tokenizer=list, include_metadata=False
    )
    pipeline = IngestionPipeline(transformations=[splitter, OnnxEmbedding(embedder)])
    nodes = pipeline.run(documents=documents)
    return len(nodes)


def run_langchain(files: list[Path], embedder: TimedEmbedder, chunk_size: int) -> int:
    """LangChain's splitter and in-memory vector store; the number of chunks stored."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    class OnnxEmbeddings(Embeddings):
        """The ONNX embedder as LangChain embeddings."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed(texts).tolist()  # type: ignore[no-any-return]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    documents = [
        Document(page_content=f.read_text(encoding="utf-8"), metadata={"source": str(f)}) for f in files
    ]
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=0)
    chunks = splitter.split_documents(documents)
    store = InMemoryVectorStore(OnnxEmbeddings())
    store.add_documents(chunks)
    return len(chunks)


def worker(framework: str, data: Path, chunk_size: int) -> dict[str, Any]:
    """One ingest (run in its own process): chunks, seconds and seconds inside the embedder."""
    files = input_files(data)
    for module in MODULES[framework]:
        importlib.import_module(module)
    embedder = TimedEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CHUNKWISE_CACHE_DIR"] = tmp  # no model cache shared between runs
        start, cpu = time.perf_counter(), time.process_time()
        if framework == "chunkwise":
            chunks = run_chunkwise(files, embedder, chunk_size, Path(tmp))
        elif framework == "llamaindex":
            chunks = run_llamaindex(files, embedder, chunk_size)
        else:
            chunks = run_langchain(files, embedder, chunk_size)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {
        "chunks": chunks,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "embed_seconds": embedder.seconds,
        "embedded_chars": sum(len(text) for text in embedder.texts),
        "embedded_tokens": embedder.tokens(),
    }


def measure(framework: str, data: Path, chunk_size: int) -> dict[str, Any]:
    """:func:`worker` in a subprocess started by a fresh intermediate process, so that the latter's
    ``RUSAGE_CHILDREN`` peak is this run's alone."""
    args = [sys.executable, __file__, "--parent", framework, str(data), str(chunk_size)]
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def parent(framework: str, data: str, chunk_size: str) -> dict[str, Any]:
    """Run the worker and add its peak RSS (Linux reports ``ru_maxrss`` in KiB, macOS in bytes)."""
    args = [sys.executable, __file__, "--worker", framework, data, chunk_size]
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result["peak_rss_mb"] = round(peak / (1e6 if sys.platform == "darwin" else 1e3), 1)
    return result


def summarise(framework: str, runs: list[dict[str, Any]], megabytes: float) -> dict[str, Any]:
    """The fastest run of a framework, with its rates."""
    best = min(runs, key=lambda r: r["seconds"])
    return {
        "framework": framework,
        "chunks": best["chunks"],
        "seconds": round(best["seconds"], 2),
        "cpu_seconds": round(best["cpu_seconds"], 2),
        "chunks_per_s": round(best["chunks"] / best["seconds"], 1),
        "embedded_chars": best["embedded_chars"],
        "embedded_tokens": best["embedded_tokens"],
        "seconds_per_mb": round(best["seconds"] / megabytes, 2),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "embed_share": round(best["embed_seconds"] / best["seconds"], 3),
    }


def markdown(rows: list[dict[str, Any]], ratio: float | None) -> str:
    """The result table."""
    lines = [
        "| framework | chunks | tokens embedded | seconds | chunks/s | s per MB | peak RSS MB "
        "| embedding share |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['framework']} | {r['chunks']} | {r['embedded_tokens']} | {r['seconds']} | "
            f"{r['chunks_per_s']} | {r['seconds_per_mb']} | {r['peak_rss_mb']} | {r['embed_share']:.0%} |"
        )
    if ratio is not None:
        lines.append(f"\nchunkwise over the faster framework (MB/s of the same input): {ratio:.2f}")
    return "\n".join(lines)


def main() -> None:
    """Measure every framework ``--repeat`` times in alternation, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_data_option(parser)
    parser.add_argument("--chunk-size", type=int, default=800, help="maximum chunk size in characters")
    parser.add_argument("--repeat", type=int, default=2, help="runs per framework, in alternation")
    args = parser.parse_args()
    files = input_files(args.data)
    megabytes = sum(f.stat().st_size for f in files) / 1e6
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in FRAMEWORKS}
    for _ in range(args.repeat):
        for name in FRAMEWORKS:
            runs[name].append(measure(name, args.data, args.chunk_size))
            print(f"  {name}: {runs[name][-1]}", file=sys.stderr)
    rows = [summarise(name, runs[name], megabytes) for name in FRAMEWORKS]
    # Speed over the same input (MB/s), not chunks/s: the splitters cut different numbers of chunks.
    ratio = round(min(r["seconds"] for r in rows[1:]) / rows[0]["seconds"], 2)
    print(markdown(rows, ratio))
    settings = {
        "chunk_size": args.chunk_size,
        "repeat": args.repeat,
        "files": len(files),
        "megabytes": round(megabytes, 3),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"settings": settings, "frameworks": rows, "ratio_to_faster_framework": ratio}, indent=2)
        + "\n"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))))
    elif len(sys.argv) > 1 and sys.argv[1] == "--parent":
        print(json.dumps(parent(*sys.argv[2:5])))
    else:
        main()
