"""Chunking speed: chunkwise against chonkie, semchunk and langchain-text-splitters, in one run.

Every implementation chunks the same text with the same size setting: 512 characters, and 128 tokens of
the bundled all-MiniLM-L6-v2 WordPiece tokenizer (no special tokens, no truncation), no overlap. Texts:
the Nike 10-K from ``data/long_docs/`` repeated to ``--mb`` MB (``--token-mb`` for the token setting,
where the peers re-tokenise many times), and the five ``data/chroma/`` corpora one document at a time.

Kinds and their peers:

* ``fixed``: chonkie ``TokenChunker``; langchain ``CharacterTextSplitter`` on spaces (its closest
  fixed-size mode).
* ``recursive``: chonkie ``RecursiveChunker``, semchunk, langchain ``RecursiveCharacterTextSplitter``.
* ``sentence``: chonkie ``SentenceChunker`` (langchain's sentence splitters need NLTK or spaCy data that
  cannot be downloaded here; semchunk has none).

Each measurement runs in a fresh subprocess: MB/s is the best of ``--repeat`` runs (one for runs over
10 s) of the chunking call alone, each run with a freshly built chunker so that no memoised token
counts carry over (tokenizer loading excluded), and a measurement still running after
``--timeout`` seconds is cut off and reported as an upper bound. Peak memory is the growth of the
process's peak RSS during chunking, which also sees memory allocated by native code (Rust tokenizers,
chonkie-core). chunkwise's timing
includes building full ``Chunk`` objects (exact offsets, content-hash ids, sections); the peers return
strings or their own chunk objects.

A second table times the ``semantic`` chunker (cold, uncached local embedder) on the State of the Union
corpus: sentences (or pieces) per second, and the share of the time spent inside the embedder.

Run: ``.venv/bin/python bench/chunk_speed.py [--mb 20] [--token-mb 2] [--repeat 3]``. Installs nothing;
the peers come from the ``bench`` extra. Writes ``bench/results/chunk_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_data import DEFAULT_DATA

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DATA = DEFAULT_DATA
NIKE = DATA / "long_docs" / "nike_2023_annual_report.txt"
CHROMA = DATA / "chroma" / "corpus.jsonl"
RESULTS = Path(__file__).parent / "results" / "chunk_speed.json"

#: A measurement slower than this is not repeated (its noise is small next to its length).
SLOW_SECONDS = 10.0

CHAR_SIZE = 512
TOKEN_SIZE = 128

#: (kind, implementation) pairs measured for each unit; "chunkwise" is ours, the rest are peers.
CASES: dict[str, list[str]] = {
    "fixed": ["chunkwise", "chonkie", "langchain"],
    "recursive": ["chunkwise", "chonkie", "semchunk", "langchain"],
    "sentence": ["chunkwise", "chonkie"],
}

Chunk = Callable[[str], Sequence[Any]]


def load_texts(corpus: str, mb: float) -> list[str]:
    """The Nike 10-K repeated to ``mb`` MB (one text), or the chroma corpora (five texts)."""
    if corpus == "nike":
        base = NIKE.read_text(encoding="utf-8")
        target = int(mb * 1_000_000)
        return [(base * (target // len(base) + 1))[:target]]
    with CHROMA.open(encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle]


def minilm_tokenizer() -> Any:
    """The bundled MiniLM tokenizer with truncation and padding off."""
    from tokenizers import Tokenizer

    from chunkwise.models.bundled import minilm_dir

    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def build(impl: str, kind: str, unit: str) -> Chunk:
    """A ``text -> chunks`` function for one implementation, kind and unit."""
    size = CHAR_SIZE if unit == "chars" else TOKEN_SIZE
    if impl == "chunkwise":
        from chunkwise.chunking import get_chunker
        from chunkwise.document import Document

        chunker = get_chunker(kind, max_size=size, unit="chars" if unit == "chars" else "minilm")
        return lambda text: chunker.chunk(Document(id="bench", text=text))
    tokenizer = "character" if unit == "chars" else minilm_tokenizer()
    if unit == "chars":
        count: Callable[[str], int] = len
    else:
        count = lambda text: len(tokenizer.encode(text, add_special_tokens=False))  # noqa: E731
    if impl == "chonkie":
        from chonkie import RecursiveChunker, SentenceChunker, TokenChunker

        if kind == "fixed":
            chonkie_chunker: Any = TokenChunker(tokenizer=tokenizer, chunk_size=size, chunk_overlap=0)
        elif kind == "recursive":
            chonkie_chunker = RecursiveChunker(tokenizer=tokenizer, chunk_size=size)
        else:
            chonkie_chunker = SentenceChunker(tokenizer=tokenizer, chunk_size=size, chunk_overlap=0)
        return chonkie_chunker.chunk  # type: ignore[no-any-return]
    if impl == "semchunk":
        import semchunk

        return semchunk.chunkerify(count, size)  # type: ignore[no-any-return]
    from langchain_text_splitters import CharacterTextSplitter, RecursiveCharacterTextSplitter

    if kind == "fixed":
        splitter: Any = CharacterTextSplitter(
            separator=" ", chunk_size=size, chunk_overlap=0, length_function=count
        )
    else:
        splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0, length_function=count)
    return splitter.split_text  # type: ignore[no-any-return]


def _rss_mb() -> float:
    """Current resident set size in MB."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _reset_peak() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM) so that loading the text does not count."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        pass


def _peak_mb() -> float:
    """Peak resident set size since :func:`_reset_peak`, in MB (falls back to the lifetime peak)."""
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1e3
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def worker(impl: str, kind: str, unit: str, corpus: str, *, mb: float, repeat: int) -> dict[str, Any]:
    """One measurement (run in its own process)."""
    texts = load_texts(corpus, mb)
    best = float("inf")
    count = 0
    peak = 0.0
    for _ in range(repeat):
        # A fresh chunker per run: peers that memoise token counts (semchunk) must not start warm.
        chunk = build(impl, kind, unit)
        chunk("Warm up. " * 50)
        _reset_peak()
        before = _rss_mb()
        start = time.perf_counter()
        count = sum(len(chunk(text)) for text in texts)
        best = min(best, time.perf_counter() - start)
        peak = max(peak, _peak_mb() - before)
        if best > SLOW_SECONDS:
            break
    chars = sum(len(t) for t in texts)
    return result_row(
        impl, kind, unit, corpus, chars, chunks=count, seconds=best, peak_mb=round(max(0.0, peak), 1)
    )


def result_row(
    impl: str,
    kind: str,
    unit: str,
    corpus: str,
    chars: int,
    *,
    chunks: int | None,
    seconds: float,
    peak_mb: float | None,
    timed_out: bool = False,
) -> dict[str, Any]:
    """One result row. A timed-out run has no time of its own: ``seconds`` is the limit, so its speed
    is an upper bound."""
    row: dict[str, Any] = {
        "impl": impl,
        "kind": kind,
        "unit": unit,
        "corpus": corpus,
        "chars": chars,
        "chunks": chunks,
        "seconds": None if timed_out else round(seconds, 4),
        "mb_per_s": round(chars / seconds / 1e6, 3),
        "peak_mb": peak_mb,
    }
    if timed_out:
        row["timed_out"] = True
    return row


def measure(
    impl: str, kind: str, unit: str, corpus: str, *, mb: float, repeat: int, timeout: float
) -> dict[str, Any]:
    """Run :func:`worker` in a fresh interpreter; past ``timeout`` seconds, record an upper bound."""
    args = [sys.executable, __file__, "--worker", impl, kind, unit, corpus, str(mb), str(repeat)]
    try:
        out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        chars = sum(len(t) for t in load_texts(corpus, mb))
        return result_row(
            impl, kind, unit, corpus, chars, chunks=None, seconds=timeout, peak_mb=None, timed_out=True
        )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add each row's speed ratio to the fastest peer of the same kind, unit and corpus."""
    for row in rows:
        peers = [
            r["mb_per_s"]
            for r in rows
            if r["impl"] != "chunkwise"
            and (r["kind"], r["unit"], r["corpus"]) == (row["kind"], row["unit"], row["corpus"])
        ]
        row["ratio_to_fastest_peer"] = round(row["mb_per_s"] / max(peers), 2) if peers else None
    return rows


def semantic_rows() -> list[dict[str, Any]]:
    """Sentences per second and embedding share of the semantic chunker, cold, on one corpus."""
    from chunkwise.chunking import get_chunker
    from chunkwise.document import Document
    from chunkwise.models.local_embedder import LocalEmbedder

    class TimedEmbedder:
        """Counts the texts and the seconds spent in the wrapped embedder."""

        def __init__(self, inner: LocalEmbedder) -> None:
            self.inner, self.name, self.dim = inner, inner.name, inner.dim
            self.seconds, self.texts = 0.0, 0

        def embed(self, texts: Sequence[str]) -> Any:
            start = time.perf_counter()
            out = self.inner.embed(texts)
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)
            return out

    with CHROMA.open(encoding="utf-8") as handle:
        doc = next(
            Document(id=d["doc_id"], text=d["text"])
            for d in map(json.loads, handle)
            if d["doc_id"] == "state_of_the_union"
        )
    base = LocalEmbedder()
    base.embed(["warm up"])
    rows = []
    for label, options in (
        ("threshold 0.8 (ChunkRAG)", {}),
        ("percentile 95 (SemanticChunk)", {"breakpoint": "percentile"}),
        ("cluster (Chroma)", {"method": "cluster", "max_size": 800}),
    ):
        timed = TimedEmbedder(base)
        chunker = get_chunker("semantic", embedder=timed, **options)
        start = time.perf_counter()
        chunks = chunker.chunk(doc)
        total = time.perf_counter() - start
        rows.append(
            {
                "rule": label,
                "chars": len(doc.text),
                "embedded_texts": timed.texts,
                "chunks": len(chunks),
                "seconds": round(total, 2),
                "texts_per_s": round(timed.texts / total, 1),
                "embed_share": round(timed.seconds / total, 3),
            }
        )
    return rows


def markdown(rows: list[dict[str, Any]], semantic: list[dict[str, Any]]) -> str:
    """The two result tables."""
    lines = [
        "| corpus | kind | size | implementation | MB/s | peak MB | chunks | ratio to fastest peer |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        size = f"{CHAR_SIZE} chars" if r["unit"] == "chars" else f"{TOKEN_SIZE} tokens"
        name = f"**{r['impl']}**" if r["impl"] == "chunkwise" else r["impl"]
        ratio = "" if r["ratio_to_fastest_peer"] is None else f"{r['ratio_to_fastest_peer']:.2f}"
        corpus = (
            f"nike {r['chars'] / 1e6:.1f} MB"
            if r["corpus"] == "nike"
            else f"chroma {r['chars'] / 1e6:.2f} MB"
        )
        if r.get("timed_out"):
            speed = f"< {r['mb_per_s']:.2f} (cut off) | | "
        else:
            speed = f"{r['mb_per_s']:.2f} | {r['peak_mb']:.1f} | {r['chunks']}"
        lines.append(f"| {corpus} | {r['kind']} | {size} | {name} | {speed} | {ratio} |")
    lines += [
        "",
        "| semantic rule | chars | embedded texts | chunks | seconds | texts/s | embedding share |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in semantic:
        lines.append(
            f"| {s['rule']} | {s['chars']} | {s['embedded_texts']} | {s['chunks']} | {s['seconds']} | "
            f"{s['texts_per_s']} | {s['embed_share']:.0%} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Run every case, print the tables, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--mb", type=float, default=20.0, help="size of the repeated Nike text (characters setting)"
    )
    parser.add_argument(
        "--token-mb", type=float, default=2.0, help="size of the Nike text for the token setting"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    parser.add_argument(
        "--timeout", type=float, default=240.0, help="seconds before a measurement is cut off (upper bound)"
    )
    parser.add_argument("--skip-semantic", action="store_true", help="leave out the semantic table")
    args = parser.parse_args()
    rows = []
    for corpus in ("nike", "chroma"):
        for unit in ("chars", "tokens"):
            mb = args.mb if unit == "chars" else args.token_mb
            repeat = args.repeat
            for kind, impls in CASES.items():
                for impl in impls:
                    rows.append(measure(impl, kind, unit, corpus, mb=mb, repeat=repeat, timeout=args.timeout))
                    print(f"  {corpus} {unit} {kind} {impl}: {rows[-1]['mb_per_s']} MB/s", file=sys.stderr)
    rows = with_ratios(rows)
    semantic = [] if args.skip_semantic else semantic_rows()
    print(markdown(rows, semantic))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    settings = {
        "mb": args.mb,
        "token_mb": args.token_mb,
        "repeat": args.repeat,
        "char_size": CHAR_SIZE,
        "token_size": TOKEN_SIZE,
    }
    RESULTS.write_text(
        json.dumps({"settings": settings, "speed": rows, "semantic": semantic}, indent=2) + "\n"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        impl, kind, unit, corpus, mb, repeat = sys.argv[2:8]
        print(json.dumps(worker(impl, kind, unit, corpus, mb=float(mb), repeat=int(repeat))))
    else:
        main()
