"""The progress bar of the long-running commands (``eval``, ``tune``, ``kb reembed``, ``kb copy``): done
of total and time left."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from chunkwise.cli.terminal import rich_console


def time_left_progress(*, disable: bool = False) -> Progress:
    """A rich progress display on stderr, so that stdout stays free for results (none when
    ``disable``: a ``--json`` run)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=rich_console(stderr=True),
        disable=disable,
    )
