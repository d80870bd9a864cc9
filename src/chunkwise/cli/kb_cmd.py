"""``chunkwise kb list|delete|check|repair|reembed|copy --kb DIR|URL``: see what a knowledge base holds,
remove documents from it, find and mend a damaged store, move it to another embedder or another store.

``list`` prints the stored documents (id, format, chunks, title) as a table, or with ``--json``
``{"documents": [...]}`` with each one's source and content hash too. ``delete DOC_ID...`` removes
documents and their chunks, one transaction each; an id that is not stored is an ``error:`` line and
exit status 1, the others are deleted all the same.

``check`` reads the whole knowledge base and writes nothing. On a directory: SQLite's integrity check,
the full-text index read whole and each of its rows against its chunk's terms, orphaned rows, every
chunk's offsets against its document's text, a header and a vector per chunk, and the sidecar indexes
(bm25s, HNSW) against the store's generation. On a ``postgresql://`` URL: every chunk's BM25 postings
against its terms, the BM25 statistics, a vector per chunk, and every chunk's and unit's offsets. It
prints one problem a line on stdout and exits 1, or prints ``ok`` with the counts and exits 0.

``repair`` rebuilds what is derived from the stored rows. On a directory, documents that read back whole
and exact are copied into a new database, the full-text index and the sidecar indexes are rebuilt, and
every document that could not be kept is named (``removed DOC (reason): ingest FILE again``), never
dropped silently; the old database is kept beside it as ``kb.sqlite.bak`` when anything was lost. On
PostgreSQL, the BM25 postings and statistics and the HNSW index are rebuilt. It prints what it did,
checks the result, and exits 0 when the store is sound, 1 when problems remain. Run it while nothing
else uses the knowledge base.

Both exit 2 with one ``error:`` line when the location holds no store they can open at all (not a
directory, an empty or overwritten ``kb.sqlite``, a server that does not answer): nothing in it can be
read, so the way out is to start over (or to start the server). ``--json`` prints ``{"problems": [...]}``
(``check``) or ``{"done": [...], "problems": [...]}``.

``reembed [--embedder SPEC]`` embeds every stored chunk (and passage window) again with the embedder
``SPEC`` names (as ``[models] embedder`` does; default: the configured one), in place: without the
source files and without chunking again (:mod:`chunkwise.ingest.reembed`). A progress bar on stderr,
then one summary line with the embedder's calls, tokens and cost (``--json``: the report, its
``accounting`` as an ingest's, and the store's counts); ``--max-cost`` and ``--max-tokens`` bound those
calls as they bound an ingest's. It is one transaction: an error (exit status 2 with an ``error:``
line), a spent budget or Ctrl-C (130) leaves the knowledge base as it was.
Writers wait for it (a SQLite writer for a minute, then fails): run it while nothing ingests into the
knowledge base.

``copy --to DIR|URL`` copies every stored document as it is (text, units, chunks, headers, summary,
fingerprint, vectors and passage windows' vectors), with the recorded embedder and configuration, into
another knowledge base, created when absent: a directory to PostgreSQL or back, without the source files
and without calling any model (:mod:`chunkwise.ingest.copy`). Each document is its own transaction;
those the target already holds alike are skipped, so a copy stopped part-way (Ctrl-C: 130) goes on
where it stopped when run again. A progress bar on stderr, then one summary line with the target's
counts (``--json``: the copied, skipped and failed counts, each failure, and the target's counts). A
document that fails is an ``error:`` line and exit status 1, the others are copied all the same; a
target that records another embedder is one ``error:`` line naming both and exit status 2, with nothing
written.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.table import Column, Table

from chunkwise.cli.kb_options import KB_HELP, MaxCostOption, MaxTokensOption, RequiredKbOption
from chunkwise.cli.progress import time_left_progress
from chunkwise.cli.terminal import error_line, json_line, markup_literal, printable, rich_console
from chunkwise.config import load_config
from chunkwise.errors import ConfigError, StoreError
from chunkwise.ingest.report import IngestEvent
from chunkwise.kb import KnowledgeBase, store_settings, stored_config
from chunkwise.store import Store, StoreSettings, open_store

KbJsonOption = Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")]

kb_app = typer.Typer(
    help="List, delete, check or repair a knowledge base's documents, embed them again, or copy them.",
    no_args_is_help=True,
)


@kb_app.command("list")
def list_command(*, kb: RequiredKbOption, as_json: KbJsonOption = False) -> None:
    """List the stored documents: id, format, chunks and title."""
    with open_store(kb, read_only=True) as store:
        documents = store.documents()
    if as_json:
        sys.stdout.write(json_line({"documents": [info.to_dict() for info in documents]}) + "\n")
        return
    # an id is folded, never cut: it is what `kb delete` takes (cut with an ellipsis, the middle of a
    # long path was lost at 80 columns)
    table = Table(
        Column("doc_id", overflow="fold"),
        Column("format", no_wrap=True),
        Column("chunks", justify="right", no_wrap=True),
        Column("title", overflow="fold"),
        box=None,
    )
    for info in documents:
        table.add_row(
            *(markup_literal(cell) for cell in (info.doc_id, info.format, str(info.chunks), info.title or ""))
        )
    rich_console().print(table)


@kb_app.command("delete")
def delete_command(
    doc_ids: Annotated[
        list[str], typer.Argument(metavar="DOC_ID...", help="Ids of the documents to remove.")
    ],
    *,
    kb: RequiredKbOption,
    as_json: KbJsonOption = False,
) -> None:
    """Remove documents and their chunks (exit status 1 when an id is not stored)."""
    deleted: list[str] = []
    missing: list[str] = []
    with open_store(kb, create=False) as store:
        for doc_id in dict.fromkeys(doc_ids):
            (deleted if store.delete(doc_id) else missing).append(doc_id)
    for doc_id in missing:
        error_line(f"{doc_id}: not stored")
    _print({"deleted": deleted, "missing": missing}, [f"deleted {doc_id}" for doc_id in deleted], as_json)
    if missing:
        raise typer.Exit(1)


@kb_app.command("check")
def check_command(*, kb: RequiredKbOption, as_json: KbJsonOption = False) -> None:
    """List what is wrong with a knowledge base (exit status 1 when anything is)."""
    with open_store(kb, read_only=True, damaged_ok=True) as store:
        problems = store.check()
        summary = "" if problems else _summary(store)
    _print({"problems": problems}, problems or [summary], as_json)
    if problems:
        raise typer.Exit(1)


@kb_app.command("repair")
def repair_command(*, kb: RequiredKbOption, as_json: KbJsonOption = False) -> None:
    """Rebuild a knowledge base's indexes from its stored rows, naming every document it cannot keep."""
    with open_store(kb, create=False, damaged_ok=True) as store:
        store.settings = _recorded_settings(store)
        done = store.repair()
        problems = store.check()
    _print({"done": done, "problems": problems}, done + problems, as_json)
    if problems:
        raise typer.Exit(1)


@kb_app.command("reembed")
def reembed_command(
    *,
    kb: RequiredKbOption,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            metavar="SPEC",
            help="The new embedder, as \\[models] embedder names it (local:bge-small, openai:MODEL); "
            "default: the configured one.",
        ),
    ] = None,
    max_cost: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    as_json: KbJsonOption = False,
) -> None:
    """Embed every stored chunk again with another embedder, in place (one transaction)."""
    with open_store(kb, create=False) as store:
        config = stored_config(store) or load_config()
    with KnowledgeBase(kb, config.with_budget(max_cost, max_tokens)) as base:
        base.models.embedder(embedder)  # loaded first: a spec it does not know is an error line alone
        with time_left_progress(disable=as_json) as progress:
            task = progress.add_task("reembed", total=None)

            def on_progress(event: IngestEvent) -> None:
                progress.update(task, completed=event.done, total=event.total)

            report = base.reembed(embedder, on_progress)
        counts = base.store.counts()
    if as_json:
        sys.stdout.write(json_line({**report.to_dict(), "counts": counts}) + "\n")
        return
    was = f" (was {report.previous})" if report.previous else ""
    total = report.accounting["total"]
    sys.stdout.write(
        printable(
            f"re-embedded {report.documents} documents ({report.chunks} chunks, {report.windows} passage "
            f"windows) with {report.embedder}{was} in {report.seconds:.1f} s "
            f"({report.embed_seconds:.1f} s embedding); model calls: {total['calls']} "
            f"(+{total['cache_hits']} cached), input tokens: {total['input_tokens']}, "
            f"cost: ${total['cost']:.6f}"
        )
        + "\n"
    )


@kb_app.command("copy")
def copy_command(
    *,
    kb: RequiredKbOption,
    to: Annotated[str, typer.Option("--to", help=f"{KB_HELP} to copy into, created when absent.")],
    as_json: KbJsonOption = False,
) -> None:
    """Copy every document with its chunks and vectors into another knowledge base (no model is called)."""
    with KnowledgeBase(kb, read_only=True) as base:
        progress = time_left_progress(disable=as_json)
        task = progress.add_task("copy", total=None)

        def on_progress(event: IngestEvent) -> None:
            progress.start()  # at the first document: a copy refused before it is its error line alone
            progress.update(task, completed=event.done, total=event.total)

        try:
            report = base.copy_to(to, on_progress)
        finally:
            if progress.live.is_started:
                progress.stop()
    for doc_id, reason in report.failed:
        error_line(f"{doc_id}: {reason}")
    if as_json:
        sys.stdout.write(json_line(report.to_dict()) + "\n")
    else:
        counts = report.counts
        sys.stdout.write(
            printable(
                f"copied {len(report.copied)}, skipped {len(report.skipped)}, failed {len(report.failed)}; "
                f"{report.chunks} chunks, {report.windows} passage windows in {report.seconds:.1f} s. "
                f"Target: {counts['documents']} documents, {counts['chunks']} chunks."
            )
            + "\n"
        )
    if report.failed:
        raise typer.Exit(1)


def _recorded_settings(store: Store) -> StoreSettings:
    """The store settings of the configuration recorded in ``store`` (the defaults when it cannot be
    read: the repair rebuilds the sidecar indexes the store's size calls for)."""
    try:
        config = stored_config(store) or load_config()
    except (StoreError, ConfigError, ValueError):
        config = load_config()
    return store_settings(config)


def _summary(store: Store) -> str:
    """One line with the store's counts, for a sound store."""
    counts = store.counts()
    return f"ok: {counts['documents']} documents, {counts['chunks']} chunks, {counts['vectors']} vectors"


def _print(body: dict[str, list[str]], lines: list[str], as_json: bool) -> None:
    """``body`` as JSON, or ``lines`` one a line."""
    if as_json:
        sys.stdout.write(json_line(body) + "\n")
    else:
        sys.stdout.write("".join(f"{printable(line)}\n" for line in lines))


def register(app: typer.Typer) -> None:
    """Add the ``kb`` command group to the CLI."""
    app.add_typer(kb_app, name="kb")
