"""``chunkwise segments "QUERY" --kb DIR``: the relevant segments for a query (dsRAG's RSE).

A segment is a run of consecutive chunks of one document, an exact span of it. Without ``--json``, a
table (rank, value, document, offsets, text preview). With ``--json``, one object: ``query``,
``segments`` (id, doc_id, start, end, text, first and last chunk, value), ``trace``, ``totals`` and
``accounting``, built by :func:`chunkwise.results.segments_body` (what the server's
``POST /v1/segments`` returns).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.table import Table

from chunkwise.cli.kb_options import (
    ConfigOption,
    JsonOption,
    KbOption,
    MaxCostOption,
    MaxTokensOption,
    PresetOption,
    open_kb,
)
from chunkwise.cli.terminal import json_line, plain, rich_console
from chunkwise.results import segments_body

#: Characters of a segment's text shown in the table.
PREVIEW_CHARS = 80


def segments_command(
    query: Annotated[str, typer.Argument(help="The search query.")],
    *,
    kb: KbOption,
    rse: Annotated[
        str | None, typer.Option("--rse", help="Segment preset (default: the configuration's).")
    ] = None,
    config: ConfigOption = None,
    preset: PresetOption = None,
    max_cost: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    as_json: JsonOption = False,
) -> None:
    """Relevant segments for a query: runs of consecutive chunks, best first."""
    with open_kb(kb, config, preset, create=False, max_cost=max_cost, max_tokens=max_tokens) as base:
        body = segments_body(base.query, query, rse)
    if as_json:
        sys.stdout.write(json_line(body) + "\n")
        return
    table = Table(title=plain(query))
    for column in ("#", "value", "document", "span", "text"):
        table.add_column(column, overflow="fold")
    for rank, segment in enumerate(body["segments"], 1):
        preview = " ".join(segment["text"].split())
        table.add_row(
            str(rank),
            f"{segment['value']:.3f}",
            plain(segment["doc_id"]),
            f"{segment['start']}-{segment['end']}",
            plain(preview if len(preview) <= PREVIEW_CHARS else preview[: PREVIEW_CHARS - 1] + "…"),
        )
    rich_console().print(table)


def register(app: typer.Typer) -> None:
    """Add the ``segments`` command to the CLI."""
    app.command("segments")(segments_command)
