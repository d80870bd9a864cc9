"""The tuning pipeline: grid parsing, the query split, and a real tuning run on a committed data set."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.config import from_dict
from chunkwise.errors import ConfigError
from chunkwise.evaluation import load_dataset
from chunkwise.evaluation.runner import evaluate
from chunkwise.evaluation.tuning import (
    apply_point,
    grid_points,
    parse_grid,
    point_name,
    split_queries,
    tune,
    verify_tuning,
)
from chunkwise.models import Models
from tests.support.fakes import CountingEmbedder

#: BM25 only, no headers, no redundancy filter: the fastest pipeline, so a tuning run takes seconds.
BM25_ONLY: dict[str, Any] = {
    "headers": {"enabled": False},
    "retrieval": {"dense": False},
    "redundancy": {"enabled": False},
}


def test_grid_aliases_and_paths() -> None:
    axes = parse_grid("size=100,200, 400;overlap=0,0.1;retrieval.weight=0.3,0.7", "fixed")
    assert [(a.key, a.path) for a in axes] == [
        ("size", "chunking.max_size"),
        ("overlap", "chunking.overlap"),
        ("retrieval.weight", "retrieval.weight"),
    ]
    assert axes[0].values == (100, 200, 400)
    assert all(isinstance(v, int) for v in axes[0].values)
    assert axes[1].values == (0, 0.1)
    assert parse_grid("chunking.params.threshold=0.5", "semantic")[0].path == "chunking.threshold"
    assert parse_grid("retrieval.bm25_weight=0.2", "fixed")[0].path == "retrieval.weight"


@pytest.mark.parametrize(
    ("grid", "named"),
    [
        ("sise=100", "'sise'"),  # unknown alias
        ("retrieval.wieght=0.5", "'retrieval.wieght'"),  # unknown field
        ("retrieval.fusion=1", "'retrieval.fusion'"),  # not numeric
        ("threshold=0.5", "'threshold'"),  # fixed has no threshold
        ("nosection.x=1", "'nosection.x'"),
        ("size=abc", "'size'"),
        ("size", "'size'"),
        ("size=1;max_size=2", "'max_size'"),  # same setting twice
    ],
)
def test_bad_grid_keys_name_the_key(grid: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        parse_grid(grid, "fixed")


def test_grid_and_random_points() -> None:
    axes = parse_grid("size=100,200,400;overlap=0,0.25", "fixed")
    points = grid_points(axes)
    assert len(points) == 6
    assert points[:2] == [
        {"chunking.max_size": 100, "chunking.overlap": 0},
        {"chunking.max_size": 100, "chunking.overlap": 0.25},
    ]
    drawn = grid_points(axes, search="random", trials=3, seed=7)
    assert drawn == grid_points(axes, search="random", trials=3, seed=7)
    assert len(drawn) == 3
    assert all(p in points for p in drawn)
    assert drawn == [p for p in points if p in drawn]  # grid order kept
    assert grid_points(axes, search="random", trials=50, seed=1) == points
    with pytest.raises(ConfigError, match="trials"):
        grid_points(axes, search="random")


def test_apply_point_types_settings() -> None:
    base = from_dict({"chunking": {"name": "fixed", "params": {"max_size": 300, "unit": "chars"}}})
    config = apply_point(
        base, {"chunking.max_size": 200, "retrieval.candidates": 10.0, "retrieval.weight": 1}
    )
    assert config.chunking.params == {"max_size": 200, "unit": "chars"}
    assert config.retrieval.candidates == 10
    assert isinstance(config.retrieval.candidates, int)
    assert config.retrieval.weight == 1.0
    assert isinstance(config.retrieval.weight, float)
    with pytest.raises(ConfigError, match="integers"):
        apply_point(base, {"retrieval.candidates": 10.5})


def test_distinct_points_have_distinct_names() -> None:
    # the short form where it is exact; the exact value where six significant digits would merge two points
    assert point_name({"chunking.max_size": 200, "chunking.overlap": 0.1}) == "max_size=200 overlap=0.1"
    assert point_name({"retrieval.weight": 1.0}) == "weight=1"
    assert point_name({"chunking.max_size": 1000000}) != point_name({"chunking.max_size": 1000001})
    assert point_name({"retrieval.weight": 0.1234561}) == "weight=0.1234561"


@given(st.lists(st.floats(0, 1e7, allow_nan=False) | st.integers(0, 10**7), unique=True, max_size=20))
def test_point_names_never_collide(values: list[float]) -> None:
    names = {point_name({"retrieval.weight": v}) for v in values}
    assert len(names) == len({float(v) for v in values})


@settings(max_examples=30, deadline=None)
@given(holdout=st.floats(0.05, 0.95), seed=st.integers(0, 1000))
def test_split_is_deterministic_and_disjoint(data_dir: Path, holdout: float, seed: int) -> None:
    dataset = load_dataset(data_dir / "eval" / "xquad_mini")
    tuning, held = split_queries(dataset, holdout, seed)
    tuned_ids = [q.qid for q in tuning.queries]
    held_ids = [q.qid for q in held.queries]
    assert set(tuned_ids).isdisjoint(held_ids)
    assert sorted(tuned_ids + held_ids) == sorted(q.qid for q in dataset.queries)
    assert tuned_ids
    assert held_ids
    assert tuning.documents == held.documents == dataset.documents
    assert abs(len(held_ids) - holdout * len(dataset.queries)) <= 1
    assert split_queries(dataset, holdout, seed) == (tuning, held)


def test_split_rejects_bad_holdout(data_dir: Path) -> None:
    dataset = load_dataset(data_dir / "eval" / "xquad_mini")
    with pytest.raises(ConfigError, match="holdout"):
        split_queries(dataset, 1.0)


@pytest.mark.slow
def test_tune_picks_best_on_tuning_and_reports_held_out(
    data_dir: Path, tmp_path: Path, embedder: Any
) -> None:
    dataset = load_dataset(data_dir / "eval" / "xquad_mini")
    base = from_dict({"chunking": {"name": "fixed", "params": {"unit": "chars"}}, **BM25_ONLY})
    axes = parse_grid("size=100,400,1600", "fixed")
    models = Models(embedder=embedder)
    result = tune(dataset, base, axes, metric="iou@5", workdir=tmp_path, holdout=0.3, seed=1, models=models)
    tuning, held = split_queries(dataset, 0.3, 1)
    assert [len(c.queries) for c in result.tuning.configs] == [len(tuning.queries)] * 3
    assert len(result.held.configs[0].queries) == len(held.queries)
    # the chosen setting is the best on the tuning part (and the scores differ: the grid matters)
    assert result.scores[result.best] == max(result.scores)
    assert len(set(result.scores)) > 1
    chosen = result.points[result.best]["chunking.max_size"]
    # re-running the chosen setting on the held-back queries alone gives the reported figure
    direct = evaluate(
        held,
        [("again", apply_point(base, result.points[result.best]))],
        workdir=tmp_path / "fresh",
        metrics=["iou@5"],
        models=models,
    )
    assert direct.configs[0].metrics["iou@5"] == pytest.approx(result.held_out)
    # the JSON recomputes, and survives a round trip through a file
    out = tmp_path / "tune.json"
    result.write(out)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert verify_tuning(data) == []
    assert data["best"]["params"] == {"chunking.max_size": chosen}
    assert data["best"]["held_out"] == result.held_out
    # and a tampered choice or held-back figure is caught
    data["best"]["name"] = data["points"][(result.best + 1) % 3]["name"]
    data["best"]["held_out"] += 0.01
    problems = verify_tuning(data)
    assert any("best point" in p for p in problems)
    assert any("held-out" in p for p in problems)
    # a point's tuning score stored as NaN is caught, not passed by a comparison that NaN always fails
    data["points"][0]["tuning"] = math.nan
    assert any(p.startswith(f"{data['points'][0]['name']}: tuning") for p in verify_tuning(data))


@pytest.mark.slow
def test_retrieval_only_grid_embeds_chunks_once(data_dir: Path, tmp_path: Path, embedder: Any) -> None:
    dataset = load_dataset(data_dir / "eval" / "xquad_mini")
    counting = CountingEmbedder(embedder)
    base = from_dict(  # one vector a chunk (no passage windows): the texts an index embeds are its chunks
        {
            "chunking": {"name": "fixed", "params": {"max_size": 400}},
            "headers": {"enabled": False},
            "retrieval": {"windows": 0},
        }
    )
    result = tune(
        dataset,
        base,
        parse_grid("retrieval.weight=0,0.5,1", "fixed"),
        metric="iou@5",
        workdir=tmp_path,
        models=Models(embedder=counting),
    )
    chunks = result.tuning.configs[0].chunks
    assert chunks is not None
    queries = len(dataset.queries)
    # chunks embedded once for all four runs; each run embeds its queries (one batch) and nothing else
    tuned = len(result.tuning.configs[0].queries)
    assert counting.texts == chunks.count + 3 * tuned + (queries - tuned)
    assert [p["retrieval.weight"] for p in result.points] == [0, 0.5, 1]
