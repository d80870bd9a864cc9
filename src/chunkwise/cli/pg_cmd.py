"""``chunkwise pg start DIR`` / ``chunkwise pg stop DIR``: a private PostgreSQL with pgvector, for trying
the PostgreSQL store with nothing installed (:mod:`chunkwise.store.pgserver`; the ``[postgres]`` extra).

``start`` prints the server's URL (add ``&schema=NAME`` to keep several knowledge bases apart) for
``--kb``; the server keeps running until ``stop``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from chunkwise.store import pgserver
from chunkwise.store.pgurl import redact

pg_app = typer.Typer(help="A local PostgreSQL with pgvector for the PostgreSQL store.", no_args_is_help=True)

DirArgument = Annotated[Path, typer.Argument(help="The server's data directory (created on first start).")]


@pg_app.command("start")
def start_command(directory: DirArgument) -> None:
    """Start the server of DIR (creating it the first time) and print its URL."""
    url = pgserver.start(directory)
    sys.stdout.write(redact(url) + "\n")


@pg_app.command("stop")
def stop_command(directory: DirArgument) -> None:
    """Stop the server of DIR."""
    stopped = pgserver.stop(directory)
    sys.stderr.write(("stopped" if stopped else "not running") + f": {directory}\n")


def register(app: typer.Typer) -> None:
    """Add the ``pg`` command group to the CLI."""
    app.add_typer(pg_app, name="pg")
