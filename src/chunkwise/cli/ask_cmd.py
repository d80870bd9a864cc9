"""``chunkwise ask "QUESTION" --kb DIR``: a grounded answer with citations from the knowledge base.

The answer cites its sources (chunk or segment ids) with exact quotes, each checked against the cited
span; when the documents do not support an answer it says "not found in the documents". ``--json`` prints
the answer, citations (with document offsets), grounding verdict, trace, totals and accounting
(:func:`chunkwise.results.answer_body`, what the server's ``POST /v1/answer`` returns).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

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
from chunkwise.results import answer_body


def ask_command(
    question: Annotated[str, typer.Argument(help="The question.")],
    *,
    kb: KbOption = None,
    config: ConfigOption = None,
    preset: PresetOption = None,
    max_cost: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    as_json: JsonOption = False,
    yes: YesOption = False,
) -> None:
    """Answer a question from a knowledge base, with citations."""
    with (
        open_kb(kb, config, preset, create=False, max_cost=max_cost, max_tokens=max_tokens) as base,
        measured(base.models),
    ):
        confirm_query(base.config, question, answers=True, yes=yes)
        if as_json:
            sys.stdout.write(json_line(answer_body(base.query, question)) + "\n")
            return
        answer = base.answer(question)
    console = rich_console()
    console.print(plain(answer.text, keep_newlines=True))
    for number, citation in enumerate(answer.citations, 1):
        quote = " ".join(citation.quote.split())
        console.print(plain(f"[{number}] {citation.doc_id} {citation.start}-{citation.end}: “{quote}”"))
    verdict = "grounded" if answer.grounding.grounded else "not grounded"
    console.print(f"({verdict}; {len(answer.trace.stages)} stages, {answer.trace.totals()['seconds']:.2f} s)")


def register(app: typer.Typer) -> None:
    """Add the ``ask`` command to the CLI."""
    app.command("ask")(ask_command)
