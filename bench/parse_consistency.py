"""Cross-format parse consistency: does every rendering of a document parse like its Markdown original?

For each document of ``data/formats/<organisation>/md/`` the HTML, DOCX, PDF and PPTX renderings are parsed
with :func:`chunkwise.parsing.parse_file` and compared with the Markdown parse by
:func:`chunkwise.parsing.consistency.compare`: multiset token F1 after lower-casing and dropping
punctuation and whitespace, whether the heading titles come out in the same order, and the share of the
Markdown headings found in order (LCS ratio).

Peer: the plain text extraction of the library each format is usually read with (selectolax ``text()``,
python-docx paragraphs and table cells, pdfplumber ``extract_text``, python-pptx shape text). It has no
structure, so only its F1 is compared (``F1 ratio`` = chunkwise / peer).

Usage: ``python bench/parse_consistency.py [--data ../shared/data/formats]``; prints a Markdown table and
writes ``bench/results/parse_consistency.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_data import DEFAULT_DATA, add_data_option, shown
from chunkwise.errors import ChunkwiseError
from chunkwise.parsing import parse_file
from chunkwise.parsing.consistency import compare, token_f1

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "parse_consistency.json"
FORMATS = ("html", "docx", "pdf", "pptx")


def peer_html(path: Path) -> str:
    from selectolax.lexbor import LexborHTMLParser

    return LexborHTMLParser(path.read_bytes()).text(separator=" ")


def peer_docx(path: Path) -> str:
    import docx

    document = docx.Document(str(path))
    cells = [cell.text for table in document.tables for row in table.rows for cell in row.cells]
    return "\n".join([p.text for p in document.paragraphs] + cells)


def peer_pdf(path: Path) -> str:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        return "\n".join(page.extract_text() or "" for page in pdf.pages)


def peer_pptx(path: Path) -> str:
    import pptx

    parts: list[str] = []
    for slide in pptx.Presentation(str(path)).slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                parts.append(shape.text_frame.text)
            if getattr(shape, "has_table", False) and shape.has_table:
                parts.extend(cell.text for row in shape.table.rows for cell in row.cells)
    return "\n".join(parts)


PEERS: dict[str, tuple[str, Callable[[Path], str]]] = {
    "html": ("selectolax (lexbor) text()", peer_html),
    "docx": ("python-docx text", peer_docx),
    "pdf": ("pdfplumber extract_text", peer_pdf),
    "pptx": ("python-pptx text", peer_pptx),
}


def run(data: Path) -> dict[str, Any]:
    """Compare every rendering with its Markdown parse; return summaries and per-document rows."""
    markdown_files = sorted(data.glob("*/md/*.md"))
    summary: dict[str, Any] = {}
    documents: dict[str, list[dict[str, Any]]] = {}
    references = {md: parse_file(md) for md in markdown_files}
    for fmt in FORMATS:
        rows: list[dict[str, Any]] = []
        failures: list[str] = []
        ours_seconds = peer_seconds = 0.0
        for md, reference in references.items():
            path = md.parent.parent / fmt / f"{md.stem}.{fmt}"
            name = str(path.relative_to(data))
            started = time.perf_counter()
            try:
                parsed = parse_file(path)
            except (ChunkwiseError, OSError) as exc:
                failures.append(f"{name}: {exc}")
                continue
            ours_seconds += time.perf_counter() - started
            started = time.perf_counter()
            peer_f1 = token_f1(PEERS[fmt][1](path), reference.text)
            peer_seconds += time.perf_counter() - started
            result = compare(parsed, reference)
            rows.append(
                {
                    "document": name,
                    "f1": result.f1,
                    "headings_identical": result.headings_identical,
                    "heading_lcs": result.heading_lcs,
                    "headings": result.candidate_headings,
                    "reference_headings": result.reference_headings,
                    "peer_f1": peer_f1,
                }
            )
        documents[fmt] = rows
        mean_f1 = statistics.mean(r["f1"] for r in rows) if rows else 0.0
        peer_mean = statistics.mean(r["peer_f1"] for r in rows) if rows else 0.0
        summary[fmt] = {
            "documents": len(rows) + len(failures),
            "mean_f1": mean_f1,
            "min_f1": min((r["f1"] for r in rows), default=0.0),
            "identical_heading_order": statistics.mean(r["headings_identical"] for r in rows)
            if rows
            else 0.0,
            "mean_heading_lcs": statistics.mean(r["heading_lcs"] for r in rows) if rows else 0.0,
            "failures": failures,
            "seconds": ours_seconds,
            "peer": PEERS[fmt][0],
            "peer_mean_f1": peer_mean,
            "f1_ratio": mean_f1 / peer_mean if peer_mean else None,
            "peer_seconds": peer_seconds,
        }
    return {
        "data": shown(data),
        "measure": "multiset token F1 vs the Markdown parse",
        "summary": summary,
        "documents": documents,
    }


def markdown_table(summary: dict[str, Any]) -> str:
    """The summary as the Markdown table the README shows."""
    lines = [
        "| format | documents | mean F1 | min F1 | identical heading order | mean heading LCS | failures "
        "| peer | peer mean F1 | F1 ratio | seconds (peer) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fmt, s in summary.items():
        ratio = f"{s['f1_ratio']:.3f}" if s["f1_ratio"] is not None else "n/a"
        lines.append(
            f"| {fmt} | {s['documents']} | {s['mean_f1']:.4f} | {s['min_f1']:.4f} | "
            f"{s['identical_heading_order']:.1%} | {s['mean_heading_lcs']:.3f} | {len(s['failures'])} | "
            f"{s['peer']} | {s['peer_mean_f1']:.4f} | {ratio} | "
            f"{s['seconds']:.1f} ({s['peer_seconds']:.1f}) |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(parser, DEFAULT_DATA / "formats")
    args = parser.parse_args()
    result = run(args.data)
    print(markdown_table(result["summary"]))
    for fmt, s in result["summary"].items():
        for failure in s["failures"]:
            print(f"failed ({fmt}): {failure}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
