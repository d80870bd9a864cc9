"""``chunkwise eval --data DIR [--config A.toml ...] --json OUT [--html OUT]``: measure pipelines.

Each ``--config`` is a pipeline configuration (TOML, as for ``ingest``), named after its file; with none,
the default pipeline runs (``--preset`` picks another). Every configuration indexes the data set's
documents (cached under ``--workdir``, so configurations that share a chunking embed once), answers
every query, and is scored with ``--metric`` (repeatable; default: span and document metrics at ``-k``).
The JSON holds, per configuration, the aggregate metrics and, per query, the retrieved items, so anyone
can recompute every number; the HTML report adds bootstrap intervals against the first configuration
and figures. Progress bars (with time left) go to stderr; the summary table to stdout. ``--dry-run``
prints the estimated model calls and tokens per stage (:mod:`chunkwise.evaluation.estimate`) and exits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from chunkwise.cli.dry_run import estimate_table
from chunkwise.cli.output_files import check_outputs
from chunkwise.cli.progress import time_left_progress
from chunkwise.cli.terminal import markup_literal, plain, rich_console
from chunkwise.config import PipelineConfig, from_dict, load_config
from chunkwise.errors import ConfigError
from chunkwise.evaluation.datasets import dataset_files, load_dataset
from chunkwise.evaluation.estimate import estimate_run
from chunkwise.evaluation.html_report import render_html
from chunkwise.evaluation.metrics import parse_metrics
from chunkwise.evaluation.report import EvaluationReport
from chunkwise.evaluation.runner import EvalProgress, evaluate
from chunkwise.evaluation.scoring import require_span_gold
from chunkwise.models.config import cache_root


def default_workdir() -> Path:
    """Where indexes are cached: ``eval`` under the cache root (:func:`~chunkwise.models.config.cache_root`:
    ``$CHUNKWISE_CACHE_DIR``, else ``$XDG_CACHE_HOME/chunkwise``, else ``~/.cache/chunkwise``)."""
    return cache_root() / "eval"


def load_configs(paths: list[Path], preset: str | None) -> list[tuple[str, PipelineConfig]]:
    """``(name, config)`` per TOML file (name: the file stem), or the preset's pipeline alone."""
    if not paths:
        return [(preset or "default", from_dict({}, preset))]
    configs: list[tuple[str, PipelineConfig]] = []
    for path in paths:
        configs.append((path.stem, load_config(path, preset)))
    names = [name for name, _ in configs]
    if len(set(names)) != len(names):
        raise ConfigError(f"configuration files need distinct names, got {names}")
    return configs


def summary_table(report: EvaluationReport) -> Table:
    """Aggregate metrics and total seconds: one row per metric, one column per configuration."""
    table = Table(title=plain(f"{report.dataset['name']}: {report.dataset['queries']} queries"))
    table.add_column("metric")
    for config in report.configs:
        table.add_column(plain(config.name), justify="right")
    for metric in report.metrics:
        table.add_row(metric, *(f"{config.metrics[metric]:.4f}" for config in report.configs))
    table.add_row("seconds", *(f"{sum(c.seconds for c in config.costs):.1f}" for config in report.configs))
    return table


def eval_command(
    *,
    data: Annotated[Path, typer.Option("--data", help="Folder with corpus.jsonl and queries.jsonl.")],
    json_out: Annotated[Path, typer.Option("--json", help="Where to write the JSON results.")],
    config: Annotated[
        list[Path] | None, typer.Option("--config", help="Pipeline configuration (TOML); repeatable.")
    ] = None,
    preset: Annotated[str | None, typer.Option("--preset", help="Preset under every configuration.")] = None,
    k: Annotated[int, typer.Option("-k", help="Cut-off of the default metrics.", min=1)] = 5,
    metric: Annotated[
        list[str] | None, typer.Option("--metric", help="Metric such as iou@5 or mrr@10; repeatable.")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Evaluate a random subset of queries.", min=1)
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the --limit subset and the bootstrap.")] = 0,
    distractors: Annotated[
        int, typer.Option("--distractors", help="With --limit: other documents kept beside the gold.", min=0)
    ] = 0,
    html_out: Annotated[Path | None, typer.Option("--html", help="Where to write the HTML report.")] = None,
    workdir: Annotated[Path | None, typer.Option("--workdir", help="Index cache directory.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the estimated model calls and tokens, run nothing.")
    ] = False,
) -> None:
    """Evaluate pipeline configurations on a retrieval data set."""
    check_outputs({"--json": json_out, "--html": html_out}, [*dataset_files(data), *(config or [])])
    if distractors and limit is None:  # every document is kept without --limit: none to add
        raise typer.BadParameter("--distractors needs --limit (without it every document is kept)")
    dataset = load_dataset(data, limit=limit, seed=seed, distractors=distractors)
    configs = load_configs(config or [], preset)
    # a bad name, or a span metric on document gold, fails a dry run too, not only the real run
    require_span_gold(parse_metrics(metric or []), (q.qid for q in dataset.queries if not q.spans))
    if dry_run:
        estimate = estimate_run(dataset, [pipeline for _, pipeline in configs])
        title = f"estimate: {len(configs)} configuration(s) on {len(dataset.queries)} queries"
        rich_console().print(estimate_table(estimate, title))
        return
    with time_left_progress() as progress:
        tasks: dict[tuple[str, str], Any] = {}

        def on_progress(event: EvalProgress) -> None:
            key = (event.config, event.phase)
            if key not in tasks:
                tasks[key] = progress.add_task(
                    f"{markup_literal(event.config)}: {event.phase}", total=event.total
                )
            progress.update(tasks[key], completed=event.done, total=event.total)

        report = evaluate(
            dataset,
            configs,
            workdir=workdir or default_workdir(),
            metrics=metric,
            k=k,
            meta={"limit": limit, "seed": seed, "distractors": distractors},
            on_progress=on_progress,
        )
    report.write(json_out)
    if html_out is not None:
        partial = html_out.with_name(html_out.name + ".partial")
        partial.write_text(render_html(report, seed=seed), encoding="utf-8")
        partial.replace(html_out)
    rich_console().print(summary_table(report))


def register(app: typer.Typer) -> None:
    """Add the ``eval`` command to the CLI."""
    app.command("eval")(eval_command)
