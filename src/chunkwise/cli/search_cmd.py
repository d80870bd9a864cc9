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

#: Console columns a table of five columns takes beside its cells: six borders and a space either side of
#: each cell.
TABLE_FRAME = 16
#: Characters of a document id shown at most (its end: the file name); longer ids are cut at the front.
DOC_CHARS = 30
#: Characters the document and the text preview keep however narrow the terminal.
NARROWEST = 8


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
    ranks = [str(rank) for rank in range(1, len(hits) + 1)]
    scores = [f"{hit.score:.3f}" for hit in hits]
    spans = [f"{hit.start}-{hit.end}" for hit in hits]
    # the rank, score and span are shown whole; the document and the text share what the terminal has
    # left (a third at most for the document), cut with an ellipsis
    fixed = [
        max([len(name), *map(len, cells)])
        for name, cells in (("#", ranks), ("score", scores), ("span", spans))
    ]
    room = console.width - TABLE_FRAME - sum(fixed)
    longest = max([len("document"), *(len(hit.doc_id) for hit in hits)])
    doc_chars = max(min(DOC_CHARS, longest, room // 3), NARROWEST)
    preview_chars = max(room - doc_chars, NARROWEST)
    table = Table(
        title=plain(f"{query}  ({', '.join(trace.names())}; {trace.totals()['seconds'] * 1000:.0f} ms)")
    )
    widths = (fixed[0], fixed[1], doc_chars, fixed[2], preview_chars)
    for column, width in zip(("#", "score", "document", "span", "text"), widths, strict=True):
        table.add_column(column, no_wrap=True, overflow="ellipsis", width=width)
    for rank, score, span, hit in zip(ranks, scores, spans, hits, strict=True):
        table.add_row(
            rank, score, plain(cut_front(hit.doc_id, doc_chars)), span, plain(cut(hit.text, preview_chars))
        )
    console.print(table)


def cut(text: str, chars: int) -> str:
    """``text`` on one line (runs of whitespace as one space), cut to ``chars`` with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= chars else line[: chars - 1] + "…"


def cut_front(text: str, chars: int) -> str:
    """``text`` cut to its last ``chars`` characters behind an ellipsis (a path keeps its file name)."""
    return text if len(text) <= chars else "…" + text[-chars + 1 :]


def register(app: typer.Typer) -> None:
    """Add the ``search`` command to the CLI."""
    app.command("search")(search_command)
