"""``chunkwise parse FILE...``: parse files into documents and show their units.

With ``--json`` each document is printed as one JSON object per line: ``doc_id``, ``title``, ``format``,
``text`` and ``units`` (``id``, ``kind``, ``level``, ``start``, ``end``, ``page``, ``parent``), where
``text[start:end]`` is the unit's text. Without it, a table of units per file.

A file that cannot be parsed is reported as one line ``error: <file>: <reason>`` on stderr and the batch
goes on with the next file; the exit status is 2 when any file failed, else 0.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import JustifyMethod
from rich.table import Table

from chunkwise.cli.terminal import error_line, json_line, plain, rich_console
from chunkwise.document import Document
from chunkwise.errors import ChunkwiseError
from chunkwise.parsing import ParseLimits, parse_file

#: Console columns the table's fixed columns, borders and padding take; the text preview gets the rest.
FIXED_COLUMNS_WIDTH = 56

#: The parse limits a user may change (defaults first), shared with ``chunk``.
DEFAULT_LIMITS = ParseLimits()
MaxBytesOption = Annotated[int, typer.Option(help="Refuse files larger than this many bytes.", min=1)]
MaxCharsOption = Annotated[
    int, typer.Option(help="Refuse documents whose text is longer than this many characters.", min=1)
]


def document_json(doc: Document) -> dict[str, Any]:
    """The ``--json`` form of a parsed document."""
    return {
        "doc_id": doc.id,
        "title": doc.title,
        "format": doc.format,
        "text": doc.text,
        "units": [unit.to_dict() for unit in doc.units],
    }


def units_table(doc: Document, width: int) -> Table:
    """A rich table of the document's units with a one-line preview of each, ``width`` columns wide."""
    preview_chars = max(width - FIXED_COLUMNS_WIDTH, 12)
    table = Table(title=plain(f"{doc.id} ({doc.format}, {len(doc.units)} units, {len(doc.text)} chars)"))
    for column, min_width in (("id", 5), ("kind", 9), ("level", 5), ("start", 6), ("end", 6), ("page", 4)):
        justify: JustifyMethod = "left" if column in ("id", "kind") else "right"
        table.add_column(column, no_wrap=True, min_width=min_width, justify=justify)
    table.add_column("text", no_wrap=True)
    for unit in doc.units:
        preview = " ".join(unit.text.split())
        if len(preview) > preview_chars:
            preview = preview[: preview_chars - 1] + "…"
        page = "" if unit.page is None else str(unit.page)
        table.add_row(
            unit.id, unit.kind.value, str(unit.level), str(unit.start), str(unit.end), page, plain(preview)
        )
    return table


def parse_command(
    files: Annotated[list[Path], typer.Argument(help="Files to parse (txt, md, html, pdf, docx, pptx).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per document per line.")] = False,
    max_bytes: MaxBytesOption = DEFAULT_LIMITS.max_bytes,
    max_chars: MaxCharsOption = DEFAULT_LIMITS.max_chars,
) -> None:
    """Parse files into documents; print their units as a table, or as JSON lines with --json."""
    limits = ParseLimits(max_bytes=max_bytes, max_chars=max_chars)
    console = rich_console()
    failed = 0
    for path in files:
        try:
            doc = parse_file(path, limits=limits)
        except ChunkwiseError as exc:
            failed += 1
            error_line(str(exc))
            continue
        except Exception as exc:  # a parser bug must not end the batch either; it is reported as such
            failed += 1
            error_line(f"{path.as_posix()}: unexpected {type(exc).__name__}: {exc}")
            continue
        if as_json:
            sys.stdout.write(json_line(document_json(doc)) + "\n")
            sys.stdout.flush()
        else:
            console.print(units_table(doc, console.width))
    if failed:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add the ``parse`` command to the CLI."""
    app.command("parse")(parse_command)
