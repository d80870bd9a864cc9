"""Documents for the tests, built with the parsers' own DocumentBuilder."""

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


def sample_doc() -> Document:
    """Three heading levels, paragraphs, a numbered procedure, a table and a code block."""
    b = DocumentBuilder()
    b.heading("Baggage Allowance", 1)  # u1
    b.paragraph("CloudWay 24 lets every passenger bring luggage within the limits below.")  # u2
    b.heading("Cabin Baggage", 2)  # u3
    b.paragraph("One cabin bag and one personal item are allowed on every fare.")  # u4
    b.heading("Size Limits", 3)  # u5
    b.table([["Class", "Weight"], ["Economy", "7 kg"], ["Business", "10 kg"]])  # u6
    b.heading("Checked Baggage", 2)  # u7
    b.list_item("Go to the baggage drop counter.", number=1)  # u8
    b.list_item("Show your boarding pass.", number=2)  # u9
    b.list_item("Tag and hand over the bag.", number=3)  # u10
    b.paragraph("Overweight bags cost extra at the counter, paid by card only.")  # u11
    b.code("fee = 25 * kilograms_over\nprint(fee)", "python")  # u12
    return b.build("baggage.md", source="baggage.md", fmt="markdown")
