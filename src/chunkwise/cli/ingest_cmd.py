"""``chunkwise ingest PATH... --kb DIR|URL``: parse, chunk, add headers, embed and store files.

Directories are searched (recursively) for supported files. A rich progress bar shows the files done
(and, inside a long document, its chunks embedded so far); each file that fails is reported as
``error: <file>: <reason>`` on stderr and the batch goes on (exit status 2 if any failed). Unchanged
files are skipped, changed ones replaced. ``--ray auto|ADDRESS`` runs the same steps on a Ray cluster
(:mod:`chunkwise.ingest.ray_ingest`). ``--json`` prints the ingest report (added, replaced, skipped,
failed, chunks, seconds, embed_seconds) and accounting totals. ``--prune`` then deletes the stored
documents of files gone from the given directories (:mod:`chunkwise.ingest.prune`), reported as
``pruned``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
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
from chunkwise.cli.terminal import error_line, json_line, markup_literal, rich_console
from chunkwise.document import path_id
from chunkwise.ingest.paths import expand_paths
from chunkwise.ingest.prune import stale_documents
from chunkwise.ingest.report import IngestEvent
from chunkwise.kb import KnowledgeBase
from chunkwise.results import ingest_body


def ingest_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories to ingest.")],
    *,
    kb: KbOption = None,
    config: ConfigOption = None,
    preset: PresetOption = None,
    max_cost: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    as_json: JsonOption = False,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="auto|ADDRESS",
            help="Ingest on a Ray cluster (pip install 'chunkwise\\[ray]'): auto (the running one, else a "
            "new local one) or its address; parse and chunk in tasks, embed in an actor pool.",
        ),
    ] = None,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="Also delete the stored documents of files gone from the given directories (the store "
            "mirrors them).",
        ),
    ] = False,
    yes: YesOption = False,
) -> None:
    """Add documents to a knowledge base (one transaction per document)."""
    console = rich_console(stderr=True)
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
                report = base.add(paths, on_progress=on_progress, ray=ray)
        pruned = _prune(base, paths, files) if prune else []
        for source, reason in report.failed:
            error_line(f"{source}: {reason}")
        if as_json:
            body = ingest_body(report, base.models, base.store)
            sys.stdout.write(json_line({**body, "pruned": pruned} if prune else body) + "\n")
        else:
            counts = base.store.counts()
            pruned_count = f", pruned {len(pruned)}" if prune else ""
            rich_console().print(
                f"added {len(report.added)}, replaced {len(report.replaced)}, skipped {len(report.skipped)}, "
                f"failed {len(report.failed)}{pruned_count}; {report.chunks} chunks in "
                f"{report.seconds:.1f} s ({report.embed_seconds:.1f} s embedding). "
                f"Store: {counts['documents']} documents, {counts['chunks']} chunks.",
                soft_wrap=True,  # one line whatever the width, for scripts that read it
            )
    if report.failed:
        raise typer.Exit(2)


def _prune(base: KnowledgeBase, paths: list[Path], files: list[Path]) -> list[str]:
    """Delete the documents of files gone from the directories among ``paths`` (``files``: what the
    ingest found in them); their ids, in order."""
    walked = {path_id(file.as_posix()) for file in files}
    folders = [path for path in paths if path.is_dir()]
    stale = stale_documents((info.doc_id for info in base.documents()), folders, walked)
    return [doc_id for doc_id in stale if base.delete(doc_id)]


def register(app: typer.Typer) -> None:
    """Add the ``ingest`` command to the CLI."""
    app.command("ingest")(ingest_command)
