"""``chunkwise chunk FILE``: parse a file, chunk it with a named chunker, print the chunks.

With ``--json`` the output is one JSON object: ``doc_id``, ``chunker``, ``params``, ``chunks`` (id, start,
end, text, unit_ids, section, tokens, plus context where a chunker records one) and ``stats`` (count,
mean/min/max size in the chunker's unit, and coverage: the share of the document's non-whitespace
characters inside some chunk) and ``accounting`` (model calls, cache hits, input/output tokens, cost and
seconds, in total, per stage and per role: what ``search`` and ``ask`` report too). The LLM-driven
chunkers add ``llm_report``: per window the outcome (``valid``, ``valid_after_reprompt``, ``repaired``,
``fallback``) and the problems found in the model's answers; ``logprob`` adds ``curve``, its boundary
score curve. The body is built by :func:`chunkwise.results.chunk_result`, which the server's
``POST /v1/chunk`` returns too. Without ``--json``, a table with the totals. ``--max-bytes`` and
``--max-chars`` bound the parse and ``--max-chunks`` the chunks of the document
(:mod:`chunkwise.chunking.limits`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from chunkwise.chunking import CHUNKERS, get_chunker
from chunkwise.chunking.limits import MAX_CHUNKS
from chunkwise.cli.output_files import check_outputs
from chunkwise.cli.parse_cmd import DEFAULT_LIMITS, MaxBytesOption, MaxCharsOption
from chunkwise.cli.terminal import json_line, plain, rich_console
from chunkwise.errors import ConfigError
from chunkwise.models.context import Models
from chunkwise.parsing import ParseLimits
from chunkwise.results import chunk_result


def parse_settings(pairs: list[str]) -> dict[str, str]:
    """``key=value`` strings into a mapping (values stay strings; the chunker types them)."""
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {pair!r}")
        settings[key.strip()] = value.strip()
    return settings


def register(app: typer.Typer) -> None:
    """Add the ``chunk`` command to ``app``."""

    @app.command("chunk")
    def chunk_command(
        file: Annotated[Path, typer.Argument(help="The document to chunk (md, txt, html, pdf, docx, pptx).")],
        *,
        chunker: Annotated[str, typer.Option("--chunker", "-c", help=f"One of: {', '.join(CHUNKERS)}.")] = (
            "recursive"
        ),
        max_size: Annotated[int | None, typer.Option("--max-size", help="Hard maximum chunk size.")] = None,
        min_size: Annotated[
            int | None, typer.Option("--min-size", help="Merge chunks smaller than this.")
        ] = None,
        overlap: Annotated[
            float | None, typer.Option("--overlap", help="Overlap: units if >= 1, else a fraction of max.")
        ] = None,
        unit: Annotated[
            str | None,
            typer.Option("--unit", help="chars, tokens, hf:<tokenizer.json>, tiktoken:<encoding>."),
        ] = None,
        settings: Annotated[
            list[str] | None, typer.Option("--set", help="Chunker parameter key=value (repeatable).")
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
        llm: Annotated[
            str | None,
            typer.Option(
                "--llm", help="LLM spec for wrac, agentic, logprob, sections (local, openai:<model>)."
            ),
        ] = None,
        scores: Annotated[
            Path | None,
            typer.Option("--scores", help="logprob: write the boundary score curve (.json, else CSV)."),
        ] = None,
        max_bytes: MaxBytesOption = DEFAULT_LIMITS.max_bytes,
        max_chars: MaxCharsOption = DEFAULT_LIMITS.max_chars,
        max_chunks: Annotated[
            int, typer.Option("--max-chunks", help="Refuse a document that becomes more chunks.", min=1)
        ] = MAX_CHUNKS,
    ) -> None:
        """Chunk FILE and print the chunks with their offsets."""
        from chunkwise.parsing import parse_file

        check_outputs({"--scores": scores}, [file])

        try:
            params: dict[str, Any] = parse_settings(settings or [])
            options = {
                "max_size": max_size,
                "min_size": min_size,
                "overlap": overlap,
                "unit": unit,
                "llm": llm,
            }
            params.update({key: value for key, value in options.items() if value is not None})
            models = Models()
            built = get_chunker(chunker, models=models, **params)
        except ConfigError as exc:
            raise ConfigError(f"{file}: {exc}") from exc
        doc = parse_file(file, limits=ParseLimits(max_bytes=max_bytes, max_chars=max_chars))
        result = chunk_result(doc, built, params, models, max_chunks)
        if scores is not None:
            if result.curve is None:
                raise ConfigError(f"{file}: --scores needs --chunker logprob")
            result.curve.write(scores)
        report = result.to_dict()
        if as_json:
            typer.echo(json_line(report))
            return
        _print_table(report)


def _print_table(report: dict[str, Any]) -> None:
    """The chunks as a rich table, with the stats underneath."""
    from rich.table import Table

    table = Table(title=plain(f"{report['doc_id']} · {report['chunker']}"))
    for column in ("#", "start", "end", "size", "section", "text"):
        table.add_column(column, overflow="fold")
    for i, row in enumerate(report["chunks"]):
        preview = " ".join(row["text"].split())
        table.add_row(
            str(i),
            str(row["start"]),
            str(row["end"]),
            str(row["tokens"]),
            plain(" > ".join(row["section"])),
            plain(preview if len(preview) <= 80 else preview[:77] + "..."),
        )
    console = rich_console()
    console.print(table)
    console.print(", ".join(f"{k}: {v}" for k, v in report["stats"].items()))
    total = report["accounting"]["total"]
    if total["calls"] or total["cache_hits"]:
        console.print(
            f"model calls: {total['calls']} (+{total['cache_hits']} cached), input tokens: "
            f"{total['input_tokens']}, output tokens: {total['output_tokens']}, cost: ${total['cost']:.6f}, "
            f"{total['latency_s']:.2f} s"
        )
    if "llm_report" in report:
        llm_report = report["llm_report"]
        outcomes = ", ".join(f"{k}: {v}" for k, v in llm_report["outcomes"].items())
        console.print(
            f"windows: {outcomes}; " + ", ".join(f"{k}: {v}" for k, v in llm_report["stats"].items())
        )
