"""``chunkwise search "QUERY" --kb DIR -k N``: the best chunks for a query after every enabled stage.

Without ``--json``, a table (rank, score, document, offsets, text preview). With ``--json``, one object:
``query``, ``hits`` (chunk_id, doc_id, start, end, score, per-stage scores, header, text), ``trace`` (one
entry per stage: inputs, outputs, seconds, calls, tokens, scores, notes), ``totals`` and ``accounting``,
built by :func:`chunkwise.results.search_body` (what the server's ``POST /v1/search`` returns).
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
from chunkwise.cli.local_llm_notice import YesOption, confirm_query, measured
from chunkwise.cli.terminal import json_line, plain, rich_console
from chunkwise.query.trace import Trace
from chunkwise.results import search_body

#: Console columns the rank, score, document and span columns and the borders take at most.
PREVIEW_RESERVED = 70
#: Characters of a document id shown (its end: the file name); longer ids are cut at the front.
DOC_CHARS = 30


def search_command(
    query: Annotated[str, typer.Argument(help="The search query.")],
    *,
    kb: KbOption = None,
    k: Annotated[int, typer.Option("-k", help="Number of hits.", min=1)] = 5,
    config: ConfigOption = None,
    preset: PresetOption = None,
    max_cost: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    as_json: JsonOption = False,
    yes: YesOption = False,
) -> None:
    """Search a knowledge base."""
    with (
        open_kb(kb, config, preset, create=False, max_cost=max_cost, max_tokens=max_tokens) as base,
        measured(base.models),
    ):
        confirm_query(base.config, query, answers=False, yes=yes)
        if as_json:
            sys.stdout.write(json_line(search_body(base.query, query, k)) + "\n")
            return
        trace = Trace()
        hits = base.search(query, k=k, trace=trace)
    console = rich_console()
    preview_chars = max(console.width - PREVIEW_RESERVED, 20)
    table = Table(
        title=plain(f"{query}  ({', '.join(trace.names())}; {trace.totals()['seconds'] * 1000:.0f} ms)")
    )
    for column in ("#", "score", "document", "span", "text"):
        table.add_column(
            column, no_wrap=True, overflow="ellipsis", max_width=None if column == "text" else 30
        )
    for rank, hit in enumerate(hits, 1):
        preview = " ".join(hit.text.split())
        if len(preview) > preview_chars:
            preview = preview[: preview_chars - 1] + "…"
        document = hit.doc_id if len(hit.doc_id) <= DOC_CHARS else "…" + hit.doc_id[-DOC_CHARS + 1 :]
        table.add_row(
            str(rank), f"{hit.score:.3f}", plain(document), f"{hit.start}-{hit.end}", plain(preview)
        )
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add the ``search`` command to the CLI."""
    app.command("search")(search_command)
