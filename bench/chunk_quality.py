"""Chunk shape and boundary quality on the chroma corpora, chunkwise next to its peers.

For each chunker at the same size (512 characters, no overlap): the chunk-size distribution, and where
the boundaries fall. A boundary is judged against an independent reference, pysbd's sentence spans
(chunkwise's own splitter would grade its own homework): the share of chunks that end at a sentence
end, the share that start at a sentence start, and the share that end inside a word (a letter or digit
on both sides of the cut). Peers that return strings (langchain, semchunk) are located in the text in
order, so their offsets are exact too.

It also times the sentence splitters on the same text: pysbd against chunkwise's rule-based splitter.

The ``semantic`` chunker embeds every sentence with the local MiniLM (about 75 sentences/s on this
machine), so it runs on the State of the Union corpus only, where every other chunker is also reported.

Run: ``.venv/bin/python bench/chunk_quality.py``. Writes ``bench/results/chunk_quality.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_data import add_data_option

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RESULTS = Path(__file__).parent / "results" / "chunk_quality.json"
SIZE = 512
SEMANTIC_CORPUS = "state_of_the_union"

Spans = list[tuple[int, int]]


def locate(text: str, pieces: list[str]) -> Spans:
    """Offsets of string chunks found in order (whitespace-stripped, as the peers strip)."""
    spans: Spans = []
    pos = 0
    for raw in pieces:
        piece = raw.strip()
        start = text.find(piece, pos) if piece else -1
        if start < 0:
            continue
        spans.append((start, start + len(piece)))
        pos = start + 1
    return spans


def chunkers() -> dict[str, Callable[[str], Spans]]:
    """Name -> text to chunk spans, for chunkwise's chunkers and the peers."""
    import semchunk
    from chonkie import RecursiveChunker, SentenceChunker, TokenChunker
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from chunkwise.chunking import get_chunker
    from chunkwise.document import Document

    def ours(name: str, **params: Any) -> Callable[[str], Spans]:
        chunker = get_chunker(name, max_size=SIZE, **params)
        return lambda text: [(c.start, c.end) for c in chunker.chunk(Document(id="q", text=text))]

    def chonkie(chunker: Any) -> Callable[[str], Spans]:
        return lambda text: [(c.start_index, c.end_index) for c in chunker.chunk(text)]

    langchain = RecursiveCharacterTextSplitter(chunk_size=SIZE, chunk_overlap=0)
    semchunker = semchunk.chunkerify(len, SIZE)
    return {
        "chunkwise fixed": ours("fixed"),
        "chonkie TokenChunker": chonkie(
            TokenChunker(tokenizer="character", chunk_size=SIZE, chunk_overlap=0)
        ),
        "chunkwise recursive": ours("recursive"),
        "chonkie RecursiveChunker": chonkie(RecursiveChunker(tokenizer="character", chunk_size=SIZE)),
        "semchunk": lambda text: locate(text, semchunker(text)),
        "langchain RecursiveCharacterTextSplitter": lambda text: locate(text, langchain.split_text(text)),
        "chunkwise sentence": ours("sentence"),
        "chonkie SentenceChunker": chonkie(
            SentenceChunker(tokenizer="character", chunk_size=SIZE, chunk_overlap=0)
        ),
        "chunkwise structure": ours("structure"),
        "chunkwise semantic (θ=0.8)": ours("semantic"),
        "chunkwise semantic (percentile 95)": ours("semantic", breakpoint="percentile"),
        "chunkwise semantic (cluster)": ours("semantic", method="cluster"),
    }


def reference_sentences(text: str) -> tuple[list[int], set[int], set[int]]:
    """pysbd sentence starts (sorted) and the sets of sentence starts and (trimmed) ends."""
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    starts: set[int] = set()
    ends: set[int] = set()
    for span in segmenter.segment(text):
        piece = text[span.start : span.end]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece.rstrip())
        if trail > lead:
            starts.add(span.start + lead)
            ends.add(span.start + trail)
    return sorted(starts), starts, ends


def grade(text: str, spans: Spans, reference: tuple[list[int], set[int], set[int]]) -> dict[str, Any]:
    """Size distribution and boundary shares of one chunking of ``text``."""
    _, starts, ends = reference
    # Peers may keep the whitespace around a chunk (chonkie's end_index does): grade trimmed spans.
    spans = [(a + len(text[a:b]) - len(text[a:b].lstrip()), a + len(text[a:b].rstrip())) for a, b in spans]
    spans = [(a, b) for a, b in spans if b > a]
    sizes = sorted(b - a for a, b in spans)
    cuts = spans[:-1]  # the document's own end is not a choice
    mid_word = sum(1 for _, b in cuts if b < len(text) and text[b - 1].isalnum() and text[b].isalnum())
    return {
        "chunks": len(spans),
        "sizes": sizes,
        "end_at_sentence": sum(1 for _, b in cuts if b in ends),
        "start_at_sentence": sum(1 for a, _ in spans[1:] if a in starts),
        "mid_word": mid_word,
        "cuts": len(cuts),
    }


def summarise(name: str, corpus: str, graded: list[dict[str, Any]]) -> dict[str, Any]:
    """One table row from the per-document grades."""
    sizes = sorted(s for g in graded for s in g["sizes"])
    cuts = sum(g["cuts"] for g in graded) or 1
    return {
        "chunker": name,
        "corpus": corpus,
        "chunks": sum(g["chunks"] for g in graded),
        "mean": round(statistics.fmean(sizes), 1),
        "p10": sizes[len(sizes) // 10],
        "median": sizes[len(sizes) // 2],
        "max": sizes[-1],
        "end_at_sentence": round(sum(g["end_at_sentence"] for g in graded) / cuts, 3),
        "start_at_sentence": round(sum(g["start_at_sentence"] for g in graded) / cuts, 3),
        "mid_word": round(sum(g["mid_word"] for g in graded) / cuts, 3),
    }


def main() -> None:
    """Grade every chunker, print the table, write the JSON."""
    from chunkwise.chunking.sentences import split_sentences

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(parser)
    args = parser.parse_args()
    with (args.data / "chroma" / "corpus.jsonl").open(encoding="utf-8") as handle:
        docs = {d["doc_id"]: d["text"] for d in map(json.loads, handle)}
    start = time.perf_counter()
    references = {doc_id: reference_sentences(text) for doc_id, text in docs.items()}
    pysbd_seconds = time.perf_counter() - start
    start = time.perf_counter()
    ours = sum(len(split_sentences(text)) for text in docs.values())
    ours_seconds = time.perf_counter() - start
    chars = sum(len(text) for text in docs.values())
    splitters = {
        "pysbd": {
            "sentences": sum(len(r[1]) for r in references.values()),
            "mb_per_s": chars / pysbd_seconds / 1e6,
        },
        "chunkwise": {"sentences": ours, "mb_per_s": chars / ours_seconds / 1e6},
    }
    rows = []
    for name, chunk in chunkers().items():
        scopes = [SEMANTIC_CORPUS] if "semantic" in name else ["all", SEMANTIC_CORPUS]
        per_doc = {
            doc_id: grade(text, chunk(text), references[doc_id])
            for doc_id, text in docs.items()
            if "semantic" not in name or doc_id == SEMANTIC_CORPUS
        }
        for scope in scopes:
            graded = [g for doc_id, g in per_doc.items() if scope in ("all", doc_id)]
            rows.append(summarise(name, "chroma (5 corpora)" if scope == "all" else scope, graded))
    rows.sort(key=lambda r: r["corpus"] != "chroma (5 corpora)")
    lines = [
        f"Chunk size {SIZE} characters, no overlap. Boundary shares are over the cuts between chunks;",
        "sentence ends and starts are pysbd's.",
        "",
        "| corpus | chunker | chunks | mean | p10 | median | max | end at sentence end | start at sentence "
        "start | cut inside a word |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['corpus']} | {r['chunker']} | {r['chunks']} | {r['mean']} | {r['p10']} | {r['median']} | "
            f"{r['max']} | {r['end_at_sentence']:.1%} | {r['start_at_sentence']:.1%} | {r['mid_word']:.1%} |"
        )
    lines += ["", "| sentence splitter | sentences | MB/s |", "|---|---:|---:|"]
    lines += [f"| {name} | {v['sentences']} | {v['mb_per_s']:.2f} |" for name, v in splitters.items()]
    print("\n".join(lines))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"size": SIZE, "rows": rows, "splitters": splitters}, indent=2) + "\n")


if __name__ == "__main__":
    main()
