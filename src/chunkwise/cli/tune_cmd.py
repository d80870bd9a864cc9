"""``chunkwise tune --data DIR --chunker fixed --grid 'size=100,200;overlap=0,0.1' --metric iou@5``.

Scores every grid point (or ``--trials`` random points of the grid with ``--search random``) on the
tuning part of the queries, picks the best, and reports it on the ``--holdout`` part the choice never
saw. ``--config`` gives the base pipeline the grid varies (default: the preset's). The JSON holds every
point's score and both parts' per-query results, so every number can be recomputed. ``--dry-run``
prints the estimated model calls and tokens and exits without running anything.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.table import Table

from chunkwise.cli.dry_run import estimate_table
from chunkwise.cli.eval_cmd import default_workdir, load_configs
from chunkwise.cli.output_files import check_outputs
from chunkwise.cli.progress import time_left_progress
from chunkwise.cli.terminal import markup_literal, plain, rich_console
from chunkwise.evaluation.datasets import dataset_files, load_dataset
from chunkwise.evaluation.estimate import estimate_run
from chunkwise.evaluation.metrics import parse_metric
from chunkwise.evaluation.scoring import require_span_gold
from chunkwise.evaluation.tuning import (
    TuningProgress,
    TuningResult,
    checked_points,
    parse_grid,
    point_name,
    split_queries,
    tune,
)


def result_table(result: TuningResult) -> Table:
    """Every point's tuning score, the chosen one marked with its held-back score."""
    tuned = len(result.tuning.configs[0].queries)
    held = len(result.held.configs[0].queries)
    table = Table(title=f"{result.metric}: {tuned} tuning queries, {held} held-back queries")
    table.add_column("setting")
    table.add_column(f"tuning {result.metric}", justify="right")
    table.add_column(f"held-back {result.metric}", justify="right")
    for index, (point, score) in enumerate(zip(result.points, result.scores, strict=True)):
        chosen = index == result.best
        table.add_row(
            plain(point_name(point) + (" (chosen)" if chosen else "")),
            f"{score:.4f}",
            f"{result.held_out:.4f}" if chosen else "",
            style="bold" if chosen else None,
        )
    return table


def tune_command(
    *,
    data: Annotated[Path, typer.Option("--data", help="Folder with corpus.jsonl and queries.jsonl.")],
    grid: Annotated[str, typer.Option("--grid", help="Values to try, e.g. 'size=100,200;overlap=0,0.1'.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Where to write the JSON results.")] = None,
    chunker: Annotated[str | None, typer.Option("--chunker", help="Chunker (default: the config's).")] = None,
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            help="Metric to maximise, e.g. iou@5 (the default), or doc_recall@5 (the default for data "
            "with document gold only).",
        ),
    ] = None,
    search: Annotated[
        str, typer.Option("--search", help="grid (every point) or random (--trials points).")
    ] = "grid",
    trials: Annotated[int | None, typer.Option("--trials", help="Points of a random search.", min=1)] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split, the draw and --limit.")] = 0,
    holdout: Annotated[float, typer.Option("--holdout", help="Share of queries held back.")] = 0.3,
    config: Annotated[Path | None, typer.Option("--config", help="Base pipeline configuration.")] = None,
    preset: Annotated[str | None, typer.Option("--preset", help="Preset under the configuration.")] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Use a random subset of queries.", min=1)
    ] = None,
    workdir: Annotated[Path | None, typer.Option("--workdir", help="Index cache directory.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the estimated model calls and tokens, run nothing.")
    ] = False,
) -> None:
    """Tune numeric pipeline settings on part of the queries; report the best on the rest."""
    if search not in ("grid", "random"):
        raise typer.BadParameter("--search must be grid or random")
    mode: Literal["grid", "random"] = "random" if search == "random" else "grid"
    if trials is not None and mode == "grid":
        raise typer.BadParameter("--trials needs --search random (a grid search scores every point)")
    check_outputs({"--json": json_out}, [*dataset_files(data), *([config] if config else [])])
    dataset = load_dataset(data, limit=limit, seed=seed)
    base = load_configs([config] if config else [], preset)[0][1]
    if chunker is not None:
        base = replace(base, chunking=replace(base.chunking, name=chunker))
    axes = parse_grid(grid, base.chunking.name)
    without_spans = [q.qid for q in dataset.queries if not q.spans]
    if metric is None:
        metric = "doc_recall@5" if without_spans else "iou@5"
    # a bad name, or a span metric on document gold, fails a dry run too, not only the real run
    require_span_gold([parse_metric(metric)], without_spans)
    checked = checked_points(base, axes, search=mode, trials=trials, seed=seed)  # before any progress
    if dry_run:
        configs = [config for _, config in checked]
        tuning_part, _ = split_queries(dataset, holdout, seed)
        estimate = estimate_run(dataset, configs, queries=tuning_part)
        queries = len(tuning_part.queries)
        title = f"estimate: {len(configs)} points on {queries} tuning queries (+ 1 held-back run)"
        rich_console().print(estimate_table(estimate, title))
        return
    if json_out is None:
        raise typer.BadParameter("--json is required (except with --dry-run)")
    with time_left_progress() as progress:
        points_task = progress.add_task("settings", total=None)
        phase_task = progress.add_task("", total=None)

        def on_progress(event: TuningProgress) -> None:
            progress.update(points_task, completed=event.done, total=event.total)
            if event.event is not None:
                progress.update(
                    phase_task,
                    description=f"{markup_literal(event.event.config)}: {event.event.phase}",
                    completed=event.event.done,
                    total=event.event.total,
                )

        result = tune(
            dataset,
            base,
            axes,
            metric=metric,
            workdir=workdir or default_workdir(),
            search=mode,
            trials=trials,
            seed=seed,
            holdout=holdout,
            on_progress=on_progress,
        )
    result.write(json_out)
    rich_console().print(result_table(result))


def register(app: typer.Typer) -> None:
    """Add the ``tune`` command to the CLI."""
    app.command("tune")(tune_command)
