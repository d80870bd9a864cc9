"""The progress bar of the long-running commands (``eval``, ``tune``): done of total and time left."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from chunkwise.cli.terminal import rich_console


def time_left_progress() -> Progress:
    """A rich progress display on stderr, so that stdout stays free for results."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=rich_console(stderr=True),
    )
