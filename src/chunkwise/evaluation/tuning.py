"""Tune numeric pipeline parameters on part of the queries and report the choice on the rest.

LlamaChunk's NaiveChunk tuning pipeline, generalised: a grid (``"size=100,200,400;overlap=0,0.25"``)
names any numeric setting of any stage, either by its configuration path (``chunking.max_size``,
``retrieval.weight``, ``relevance.max_candidates``) or by a short alias of the chunker's parameters
(:data:`ALIASES`). Every grid point (or ``trials`` points drawn from the grid with ``search="random"``)
is scored on the tuning part of the queries; the best point, the first in grid order on a tie, is then
scored on the held-back part, and that figure is the honest one: the tuning score of the winner is
biased upwards by the choice itself.

The split is deterministic (:func:`split_queries`, by the same hash draw as :func:`subsample`), both
parts search the whole corpus, and every point runs through :func:`~chunkwise.evaluation.runner.evaluate`,
so points that differ only in retrieval settings share one cached index and embed nothing again. Each
part's evaluation report is kept in the result, so :func:`verify_tuning` can recompute every number.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from chunkwise.chunking import chunker_class
from chunkwise.chunking.base import ChunkerParams
from chunkwise.config import PipelineConfig, check_config
from chunkwise.errors import ConfigError
from chunkwise.evaluation.datasets import Dataset, subsample
from chunkwise.evaluation.metrics.registry import parse_metric
from chunkwise.evaluation.report import EvaluationReport, recompute, verify, write_json
from chunkwise.evaluation.runner import EvalProgress, ProgressFn, evaluate
from chunkwise.models.context import Models

FORMAT_VERSION = 1

#: Short grid keys and the configuration path each stands for.
ALIASES: dict[str, str] = {
    "size": "chunking.max_size",
    "max_size": "chunking.max_size",
    "min_size": "chunking.min_size",
    "overlap": "chunking.overlap",
    "threshold": "chunking.threshold",
    "percentile": "chunking.percentile",
    "weight": "retrieval.weight",
    "bm25_weight": "retrieval.weight",
    "retrieval.bm25_weight": "retrieval.weight",
    "candidates": "retrieval.candidates",
}

Search = Literal["grid", "random"]
Number = int | float


@dataclass(frozen=True, slots=True)
class Axis:
    """One tuned setting: the key as written, its configuration path, and the values to try."""

    key: str
    path: str
    values: tuple[Number, ...]


@dataclass(frozen=True, slots=True)
class TuningProgress:
    """Progress of a tuning run: points done out of ``total``, and the current evaluation's event."""

    done: int
    total: int
    event: EvalProgress | None = None


TuningProgressFn = Callable[[TuningProgress], None]


@dataclass(frozen=True, slots=True)
class TuningResult:
    """Scores of every point on the tuning part, and of the chosen point on the held-back part."""

    metric: str
    search: str
    seed: int
    holdout: float
    axes: tuple[Axis, ...]
    points: tuple[dict[str, Number], ...]
    scores: tuple[float, ...]
    best: int
    held_out: float
    tuning: EvaluationReport
    held: EvaluationReport

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping holding both parts' full evaluation reports."""
        return {
            "format_version": FORMAT_VERSION,
            "metric": self.metric,
            "search": self.search,
            "seed": self.seed,
            "holdout": self.holdout,
            "axes": [{"key": a.key, "path": a.path, "values": list(a.values)} for a in self.axes],
            "points": [
                {"name": point_name(p), "params": p, "tuning": s}
                for p, s in zip(self.points, self.scores, strict=True)
            ],
            "best": {
                "name": point_name(self.points[self.best]),
                "params": self.points[self.best],
                "tuning": self.scores[self.best],
                "held_out": self.held_out,
            },
            "tuning_report": self.tuning.to_dict(),
            "held_out_report": self.held.to_dict(),
        }

    def write(self, path: str | Path) -> None:
        """Write the JSON file (see :func:`~chunkwise.evaluation.report.write_json`)."""
        write_json(path, self.to_dict())


def parse_grid(text: str, chunker: str) -> tuple[Axis, ...]:
    """Axes from ``"key=v1,v2;key=v3"``; each key must name a numeric setting (:class:`ConfigError`)."""
    axes: list[Axis] = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, sep, raw = part.partition("=")
        key = key.strip()
        if not sep or not raw.strip():
            raise ConfigError(f"grid entry {part!r}: expected key=value,value,...")
        values = tuple(_number(key, v.strip()) for v in raw.split(",") if v.strip())
        if not values:
            raise ConfigError(f"grid entry {part!r}: expected key=value,value,...")
        path = resolve_key(key, chunker)
        if any(axis.path == path for axis in axes):
            raise ConfigError(f"grid key {key!r}: {path} is already on the grid")
        axes.append(Axis(key, path, tuple(dict.fromkeys(values))))
    if not axes:
        raise ConfigError("the grid is empty")
    return tuple(axes)


def resolve_key(key: str, chunker: str) -> str:
    """The configuration path of a grid key; the setting must exist and be numeric."""
    path = ALIASES.get(key, key)
    section, _, name = path.partition(".")
    if section == "chunking" and name:
        name = name.removeprefix("params.")
        hints = _chunker_param_hints(chunker)
        if name in hints and _numeric(hints[name]):
            return f"chunking.{name}"
        raise ConfigError(f"grid key {key!r}: {chunker} has no numeric parameter {name!r}")
    section_type = typing.get_type_hints(PipelineConfig).get(section)
    if name and dataclasses.is_dataclass(section_type):
        hint = typing.get_type_hints(section_type).get(name)
        if hint is not None and _numeric(hint):
            return path
    raise ConfigError(f"grid key {key!r} is not a numeric configuration setting (e.g. chunking.max_size)")


def grid_points(
    axes: Sequence[Axis], *, search: Search = "grid", trials: int | None = None, seed: int = 0
) -> list[dict[str, Number]]:
    """Every combination (grid order: the last axis varies fastest), or ``trials`` of them drawn with
    ``seed`` without repetition (random search), kept in grid order."""
    combos = [
        dict(zip((a.path for a in axes), values, strict=True))
        for values in itertools.product(*(a.values for a in axes))
    ]
    if search == "grid":
        return combos
    if trials is None or trials < 1:
        raise ConfigError("random search needs trials >= 1")
    picked = sorted(random.Random(seed).sample(range(len(combos)), min(trials, len(combos))))
    return [combos[i] for i in picked]


def checked_points(
    base: PipelineConfig,
    axes: Sequence[Axis],
    *,
    search: Search = "grid",
    trials: int | None = None,
    seed: int = 0,
) -> list[tuple[dict[str, Number], PipelineConfig]]:
    """Each point of the search (:func:`grid_points`) with its configuration, every one checked as a
    configuration file is (:func:`~chunkwise.config.check_config`) before anything runs: a grid value
    out of range (``weight=2``, ``candidates=0``) is a :class:`ConfigError` naming the point, in a dry
    run too, not a crash or a silent score in the middle of the run."""
    checked = []
    for point in grid_points(axes, search=search, trials=trials, seed=seed):
        config = apply_point(base, point)
        try:
            check_config(config)
        except ConfigError as exc:
            raise ConfigError(f"grid point {point_name(point)!r}: {exc}") from None
        checked.append((point, config))
    return checked


def apply_point(config: PipelineConfig, point: dict[str, Number]) -> PipelineConfig:
    """``config`` with each path of ``point`` set (integers where the setting is an integer)."""
    for path, value in point.items():
        section, name = path.split(".", 1)
        if section == "chunking":
            params = {**config.chunking.params, name: value}
            config = replace(config, chunking=replace(config.chunking, params=params))
            continue
        current = getattr(config, section)
        hint = typing.get_type_hints(type(current))[name]
        typed: Number = _as_int(path, value) if _base(hint) is int else float(value)
        config = replace(config, **{section: replace(current, **{name: typed})})
    return config


def split_queries(dataset: Dataset, holdout: float, seed: int = 0) -> tuple[Dataset, Dataset]:
    """(tuning part, held-back part): ``holdout`` of the queries drawn with ``seed``; both keep every
    document, so both search the same corpus (and share its cached index)."""
    if not 0 < holdout < 1:
        raise ConfigError(f"holdout must be between 0 and 1, got {holdout}")
    count = len(dataset.queries)
    held_count = min(max(1, round(holdout * count)), count - 1)
    if held_count < 1:
        raise ConfigError(f"{dataset.path}: tuning needs at least two queries")
    held = subsample(dataset, held_count, seed=seed, distractors=len(dataset.documents))
    held = replace(held, documents=dataset.documents)
    held_ids = {q.qid for q in held.queries}
    tuning = replace(dataset, queries=tuple(q for q in dataset.queries if q.qid not in held_ids))
    return tuning, held


def tune(
    dataset: Dataset,
    base: PipelineConfig,
    axes: Sequence[Axis],
    *,
    metric: str,
    workdir: str | Path,
    search: Search = "grid",
    trials: int | None = None,
    seed: int = 0,
    holdout: float = 0.3,
    models: Models | None = None,
    on_progress: TuningProgressFn | None = None,
) -> TuningResult:
    """Score every point on the tuning part, pick the best, re-score it on the held-back part."""
    parse_metric(metric)
    checked = checked_points(base, axes, search=search, trials=trials, seed=seed)
    points = [point for point, _ in checked]
    configs = [(point_name(point), config) for point, config in checked]
    tuning_part, held_part = split_queries(dataset, holdout, seed)
    total = len(configs) + 1

    def forward(done: int) -> ProgressFn:
        def notify(event: EvalProgress) -> None:
            if on_progress is not None:
                on_progress(TuningProgress(done, total, event))

        return notify

    reports = []
    for done, named in enumerate(configs):
        reports.append(
            evaluate(
                tuning_part,
                [named],
                workdir=workdir,
                metrics=[metric],
                models=models,
                on_progress=forward(done),
            )
        )
    tuning_report = replace(reports[0], configs=tuple(r.configs[0] for r in reports))
    scores = tuple(result.metrics[metric] for result in tuning_report.configs)
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    held_report = evaluate(
        held_part,
        [configs[best]],
        workdir=workdir,
        metrics=[metric],
        models=models,
        on_progress=forward(total - 1),
    )
    if on_progress is not None:
        on_progress(TuningProgress(total, total))
    return TuningResult(
        metric=metric,
        search=search,
        seed=seed,
        holdout=holdout,
        axes=tuple(axes),
        points=tuple(points),
        scores=scores,
        best=best,
        held_out=held_report.configs[0].metrics[metric],
        tuning=tuning_report,
        held=held_report,
    )


def verify_tuning(data: dict[str, Any], tolerance: float = 1e-9) -> list[str]:
    """The numbers of a tuning result's JSON that its per-query rows do not reproduce (empty if none):
    each point's tuning score, the choice of the best point, and its held-back score."""
    problems = verify(data["tuning_report"], tolerance) + verify(data["held_out_report"], tolerance)
    metric = data["metric"]
    tuned = recompute(data["tuning_report"])
    scores = []
    for point in data["points"]:
        value = tuned[point["name"]][metric]
        scores.append(value)
        if not abs(point["tuning"] - value) <= tolerance:  # a stored NaN is reported too
            problems.append(f"{point['name']}: tuning {metric} stored {point['tuning']}, recomputed {value}")
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    if data["points"][best]["name"] != data["best"]["name"]:
        problems.append(f"best point is {data['points'][best]['name']!r}, not {data['best']['name']!r}")
    held_names = [config["name"] for config in data["held_out_report"]["configs"]]
    if held_names != [data["best"]["name"]]:
        problems.append(f"the held-back run scored {held_names}, not the best point {data['best']['name']!r}")
    held = recompute(data["held_out_report"])[held_names[0]][metric] if held_names else math.nan
    if not abs(data["best"]["held_out"] - held) <= tolerance:
        problems.append(f"held-out {metric} stored {data['best']['held_out']}, recomputed {held}")
    return problems


def point_name(point: dict[str, Number]) -> str:
    """A point's label, e.g. ``max_size=200 overlap=0.1`` (the last path component of each setting).

    Names key the points in the reports and in :func:`verify_tuning`, so distinct values must print
    distinctly: the short ``g`` form where it reads back as the value, the exact one otherwise
    (``1000001``, not ``1e+06`` like ``1000000``).
    """
    return " ".join(f"{path.rsplit('.', 1)[-1]}={_value_text(value)}" for path, value in point.items())


def _value_text(value: Number) -> str:
    """``value`` as :func:`point_name` prints it: ``g`` form if exact, else the full value."""
    short = f"{value:g}"
    return short if float(short) == value else str(value)


def _params_class(chunker: str) -> type[ChunkerParams] | None:
    """The chunker's parameter dataclass (``None`` for a chunker that declares none)."""
    params = getattr(chunker_class(chunker), "Params", None)
    return params if isinstance(params, type) and issubclass(params, ChunkerParams) else None


def _chunker_param_hints(chunker: str) -> dict[str, Any]:
    """Type hints of the chunker's parameters (empty for a chunker that declares none)."""
    params = _params_class(chunker)
    return typing.get_type_hints(params) if params is not None else {}


def _number(key: str, text: str) -> Number:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"grid key {key!r}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"grid key {key!r}: {text!r} is not a finite number")
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def _as_int(path: str, value: Number) -> int:
    if float(value).is_integer():
        return int(value)
    raise ConfigError(f"grid key {path!r} takes integers, got {value}")


def _base(hint: Any) -> Any:
    """``int`` for ``int`` or ``int | None``, ``float`` likewise; anything else unchanged."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else hint
    return hint


def _numeric(hint: Any) -> bool:
    return _base(hint) in (int, float)
