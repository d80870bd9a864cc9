"""The ``--dry-run`` view shared by ``eval`` and ``tune``: the estimated model use, as a table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from chunkwise.evaluation.estimate import RunEstimate


def estimate_table(estimate: RunEstimate, title: str, models: Sequence[str] = ("llm", "embedder")) -> Table:
    """One row per stage and one total per model of ``models``: calls, input and output tokens."""
    table = Table(title=title)
    for column in ("stage", "model", "calls", "input tokens", "output tokens"):
        table.add_column(column, justify="left" if column in ("stage", "model") else "right")
    for stage in estimate.stages:
        table.add_row(
            stage.stage,
            stage.model,
            f"{stage.calls:,}",
            f"{stage.input_tokens:,}",
            f"{stage.output_tokens:,}",
        )
    for model in models:
        total = estimate.total(model)
        table.add_row(
            f"total {model}",
            model,
            f"{total.calls:,}",
            f"{total.input_tokens:,}",
            f"{total.output_tokens:,}",
            style="bold",
        )
    return table
