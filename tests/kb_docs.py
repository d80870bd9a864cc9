"""Documents for the store and knowledge-base tests, built with the parsers' own DocumentBuilder."""

from __future__ import annotations

from pathlib import Path

from chunkwise.document import Document
from chunkwise.parsing.builder import DocumentBuilder


def doc_from_markdown_lines(doc_id: str, text: str) -> Document:
    """A document whose ``#`` lines are headings and other non-empty lines paragraphs."""
    builder = DocumentBuilder()
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            level = len(stripped) - len(stripped.lstrip("#"))
            builder.heading(stripped.lstrip("#").strip(), min(level, 6))
        elif stripped:
            builder.paragraph(stripped)
    return builder.build(doc_id, source=doc_id, fmt="markdown")


def format_docs(data_dir: Path) -> list[Document]:
    """The four Markdown fixtures of ``tests/data/formats`` as documents."""
    return [
        doc_from_markdown_lines(path.name, path.read_text(encoding="utf-8"))
        for path in sorted((data_dir / "formats").glob("*.md"))
    ]
