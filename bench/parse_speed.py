"""Parse speed per format: documents/s and MB/s, chunkwise against markitdown on the same files.

Inputs: every file of ``../shared/data/formats/`` (75 documents in each of md, html, docx, pdf, pptx),
the two long documents of ``../shared/data/long_docs/`` (the Nike 10-K as text, the Levels of AGI PDF),
and the QMSum training corpus (``corpus.jsonl``, 10.5 M characters) turned into documents with
:func:`chunkwise.parsing.text.text_document`, as the evaluation loaders do.

Each group is parsed ``--rounds`` times in full and the fastest round is reported (the usual way to
discount warm-up and noise). MB/s counts input file bytes (UTF-8 bytes of the texts for the corpus row).
The peer is markitdown (Microsoft's any-format-to-Markdown converter, ``MarkItDown().convert(path)``),
the strongest general document converter installed; ``ratio`` is chunkwise's speed over markitdown's.

    .venv/bin/python bench/parse_speed.py            # prints a Markdown table, writes the JSON
    .venv/bin/python bench/parse_speed.py --rounds 1 # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from bench_data import add_data_option
from chunkwise.errors import ChunkwiseError
from chunkwise.parsing import parse_file
from chunkwise.parsing.text import text_document

RESULTS = Path(__file__).resolve().parent / "results" / "parse_speed.json"
FORMAT_DIRS: tuple[str, ...] = ("md", "html", "docx", "pdf", "pptx")


@dataclass
class Row:
    """Speed of one group of inputs, for chunkwise and for the peer."""

    group: str
    documents: int
    megabytes: float
    seconds: float
    docs_per_s: float
    mb_per_s: float
    failures: int
    peer_seconds: float | None
    peer_mb_per_s: float | None
    ratio: float | None


def _best_time(work: Callable[[], int], rounds: int) -> tuple[float, int]:
    """Fastest of ``rounds`` runs of ``work`` (which returns its failure count), and that count."""
    best = float("inf")
    failures = 0
    for _ in range(rounds):
        start = time.perf_counter()
        failures = work()
        best = min(best, time.perf_counter() - start)
    return best, failures


def _parse_all(paths: list[Path]) -> Callable[[], int]:
    def work() -> int:
        failures = 0
        for path in paths:
            try:
                parse_file(path)
            except ChunkwiseError:
                failures += 1
        return failures

    return work


def _peer_all(paths: list[Path]) -> Callable[[], int] | None:
    try:
        from markitdown import MarkItDown
    except ImportError:
        return None
    converter = MarkItDown(enable_plugins=False)

    def work() -> int:
        failures = 0
        for path in paths:
            try:
                converter.convert(str(path))
            except Exception:  # the peer's own failures are counted, not fatal
                failures += 1
        return failures

    return work


def _row(
    group: str,
    *,
    documents: int,
    size: int,
    rounds: int,
    ours: Callable[[], int],
    peer: Callable[[], int] | None,
) -> Row:
    """Time ``ours`` and ``peer`` on one group and derive the rates."""
    seconds, failures = _best_time(ours, rounds)
    megabytes = size / 1e6
    peer_seconds = _best_time(peer, rounds)[0] if peer is not None else None
    peer_mb = megabytes / peer_seconds if peer_seconds else None
    return Row(
        group=group,
        documents=documents,
        megabytes=round(megabytes, 3),
        seconds=round(seconds, 4),
        docs_per_s=round(documents / seconds, 1),
        mb_per_s=round(megabytes / seconds, 2),
        failures=failures,
        peer_seconds=round(peer_seconds, 4) if peer_seconds else None,
        peer_mb_per_s=round(peer_mb, 2) if peer_mb else None,
        ratio=round(peer_seconds / seconds, 2) if peer_seconds else None,
    )


def _corpus_row(corpus: Path, rounds: int) -> Row:
    docs = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    size = sum(len(d["text"].encode("utf-8")) for d in docs)

    def work() -> int:
        for d in docs:
            text_document(d["doc_id"], d["text"])
        return 0

    group = f"{corpus.parent.name} corpus.jsonl (text_document)"
    return _row(group, documents=len(docs), size=size, rounds=rounds, ours=work, peer=None)


def run(data: Path, rounds: int) -> list[Row]:
    """Measure every group; files are read from disk in each round, as a user's parse would."""
    rows: list[Row] = []
    for fmt in FORMAT_DIRS:
        paths = sorted(p for p in data.glob(f"formats/*/{fmt}/*") if p.is_file())
        size = sum(p.stat().st_size for p in paths)
        rows.append(
            _row(
                f"formats/{fmt}",
                documents=len(paths),
                size=size,
                rounds=rounds,
                ours=_parse_all(paths),
                peer=_peer_all(paths),
            )
        )
    for path in sorted((data / "long_docs").iterdir()):
        size = path.stat().st_size
        rows.append(
            _row(
                f"long_docs/{path.name}",
                documents=1,
                size=size,
                rounds=rounds,
                ours=_parse_all([path]),
                peer=_peer_all([path]),
            )
        )
    rows.append(_corpus_row(data / "qmsum_train" / "corpus.jsonl", rounds))
    return rows


def markdown_table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""

    def show(value: float | None, suffix: str = "") -> str:
        return "—" if value is None else f"{value:g}{suffix}"

    lines = [
        "| input | docs | MB | chunkwise docs/s | chunkwise MB/s | markitdown MB/s | speed ratio "
        "| failures |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.group} | {r.documents} | {r.megabytes:g} | {r.docs_per_s:g} | {r.mb_per_s:g} | "
            f"{show(r.peer_mb_per_s)} | {show(r.ratio, '×')} | {r.failures} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Run the benchmark, print the table, write ``bench/results/parse_speed.json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="full passes per group; the fastest counts")
    add_data_option(parser)
    args = parser.parse_args()
    rows = run(args.data, args.rounds)
    table = markdown_table(rows)
    print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "parse_speed",
                "rounds": args.rounds,
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": sys.version.split()[0],
                    "platform": platform.platform(),
                },
                "peer": "markitdown",
                "rows": [asdict(r) for r in rows],
                "table": table,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
