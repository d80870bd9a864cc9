"""``chunkwise ingest PATH... --kb DIR``: parse, chunk, add headers, embed and store files.

Directories are searched (recursively) for supported files. A rich progress bar shows the files done
(and, inside a long document, its chunks embedded so far); each file that fails is reported as
``error: <file>: <reason>`` on stderr and the batch goes on (exit status 2 if any failed). Unchanged
files are skipped, changed ones replaced. ``--json`` prints the ingest report (added, replaced, skipped,
failed, chunks, seconds, embed_seconds) and accounting totals.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from chunkwise.cli.kb_options import (
    ConfigOption,
    JsonOption,
    KbOption,
    MaxCostOption,
    MaxTokensOption,
    PresetOption,
    open_kb,
)
from chunkwise.cli.local_llm_notice import YesOption, confirm_ingest, measured
from chunkwise.cli.terminal import error_line, json_line, markup_literal
from chunkwise.ingest.paths import expand_paths
from chunkwise.ingest.report import IngestEvent
from chunkwise.results import ingest_body


def ingest_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories to ingest.")],
    *,
    kb: KbOption,
    config: ConfigOption = None,
    preset: PresetOption = None,
    max_cost: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    as_json: JsonOption = False,
    yes: YesOption = False,
) -> None:
    """Add documents to a knowledge base (one transaction per document)."""
    console = Console(stderr=True)
    with open_kb(kb, config, preset, create=True, max_cost=max_cost, max_tokens=max_tokens) as base:
        files = expand_paths(paths)
        confirm_ingest(base.config, files, yes=yes)
        total = len(files)
        with Progress(
            TextColumn("[bold]ingest"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=console,
            disable=as_json,
        ) as progress:
            task = progress.add_task("", total=total)

            def on_progress(event: IngestEvent) -> None:
                if event.status == "embedding":  # inside a long document
                    name = markup_literal(event.source)
                    description = f"embedding {name}: {event.embedded}/{event.chunks} chunks"
                else:
                    description = f"{event.status}: {markup_literal(event.source)}"
                progress.update(task, completed=event.done, description=description)

            with measured(base.models):
                report = base.add(paths, on_progress=on_progress)
        for source, reason in report.failed:
            error_line(f"{source}: {reason}")
        if as_json:
            sys.stdout.write(json_line(ingest_body(report, base.models, base.store)) + "\n")
        else:
            counts = base.store.counts()
            Console().print(
                f"added {len(report.added)}, replaced {len(report.replaced)}, skipped {len(report.skipped)}, "
                f"failed {len(report.failed)}; {report.chunks} chunks in {report.seconds:.1f} s "
                f"({report.embed_seconds:.1f} s embedding). Store: {counts['documents']} documents, "
                f"{counts['chunks']} chunks."
            )
    if report.failed:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add the ``ingest`` command to the CLI."""
    app.command("ingest")(ingest_command)
