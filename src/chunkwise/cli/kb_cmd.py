"""``chunkwise kb check --kb DIR`` and ``chunkwise kb repair --kb DIR``: find and mend a damaged store.

``check`` reads the whole knowledge base and writes nothing: SQLite's integrity check, the full-text
index read whole, orphaned rows, every chunk's offsets against its document's text, a header and a
vector per chunk, and the sidecar indexes (bm25s, HNSW) against the store's generation. It prints one
problem a line on stdout and exits 1, or prints ``ok`` with the counts and exits 0.

``repair`` rebuilds the store from the rows it can read: documents that read back whole and exact are
copied into a new database, the full-text index and the sidecar indexes are rebuilt, and every document
that could not be kept is named (``removed DOC (reason): ingest FILE again``), never dropped silently; the
old database is kept beside it as ``kb.sqlite.bak`` when anything was lost. It prints what it did, checks
the result, and exits 0 when the store is sound, 1 when problems remain. Run it while nothing else uses
the knowledge base.

Both exit 2 with one ``error:`` line when the directory holds no store they can open at all (not a
directory, an empty or overwritten ``kb.sqlite``): nothing in it can be read, so the way out is to start
over. ``--json`` prints ``{"problems": [...]}`` (``check``) or ``{"done": [...], "problems": [...]}``.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from chunkwise.cli.kb_options import KbOption
from chunkwise.cli.terminal import json_line, printable
from chunkwise.config import load_config
from chunkwise.errors import ConfigError, StoreError
from chunkwise.kb import stored_config
from chunkwise.store import Store, StoreSettings, open_store

KbJsonOption = Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")]

kb_app = typer.Typer(help="Check or repair a knowledge base.", no_args_is_help=True)


@kb_app.command("check")
def check_command(*, kb: KbOption, as_json: KbJsonOption = False) -> None:
    """List what is wrong with a knowledge base (exit status 1 when anything is)."""
    with open_store(kb, read_only=True, damaged_ok=True) as store:
        problems = store.check()
        summary = "" if problems else _summary(store)
    _print({"problems": problems}, problems or [summary], as_json)
    if problems:
        raise typer.Exit(1)


@kb_app.command("repair")
def repair_command(*, kb: KbOption, as_json: KbJsonOption = False) -> None:
    """Rebuild a knowledge base's indexes from its stored rows, naming every document it cannot keep."""
    with open_store(kb, damaged_ok=True) as store:
        store.settings = _recorded_settings(store)
        done = store.repair()
        problems = store.check()
    _print({"done": done, "problems": problems}, done + problems, as_json)
    if problems:
        raise typer.Exit(1)


def _recorded_settings(store: Store) -> StoreSettings:
    """The index thresholds of the configuration recorded in ``store`` (the defaults when it cannot be
    read: the repair rebuilds the sidecar indexes the store's size calls for)."""
    try:
        retrieval = (stored_config(store) or load_config()).retrieval
    except (StoreError, ConfigError, ValueError):
        retrieval = load_config().retrieval
    return StoreSettings(retrieval.hnsw_threshold, retrieval.bm25s_threshold)


def _summary(store: Store) -> str:
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
