"""``chunkwise tune`` and ``--dry-run`` through the command line (subprocesses, real files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkwise.evaluation.tuning import verify_tuning
from tests.support.cli import run_chunkwise

BM25_ONLY = "[headers]\nenabled = false\n[retrieval]\ndense = false\n[redundancy]\nenabled = false\n"


@pytest.mark.slow
def test_tune_end_to_end(data_dir: Path, tmp_path: Path) -> None:
    base = tmp_path / "bm25.toml"
    base.write_text('[chunking]\nparams = { unit = "chars" }\n' + BM25_ONLY, encoding="utf-8")
    out = tmp_path / "tune.json"
    done = run_chunkwise(
        "tune", "--data", str(data_dir / "eval" / "xquad_mini"), "--chunker", "fixed",
        "--grid", "size=100,400,1600;overlap=0,0.25", "--metric", "iou@5", "--search", "random",
        "--trials", "3", "--seed", "2", "--holdout", "0.3", "--config", str(base), "--json", str(out),
        cache=tmp_path / "cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert verify_tuning(data) == []
    assert len(data["points"]) == 3
    best = max(data["points"], key=lambda p: p["tuning"])
    assert data["best"]["tuning"] == best["tuning"]
    assert data["tuning_report"]["configs"][0]["config"]["chunking"]["name"] == "fixed"
    assert "(chosen)" in done.stdout
    assert f"{data['best']['held_out']:.4f}" in done.stdout
    assert "held-back iou@5" in done.stdout


def test_tune_unknown_grid_key_is_one_line(data_dir: Path, tmp_path: Path) -> None:
    done = run_chunkwise(
        "tune", "--data", str(data_dir / "eval" / "xquad_mini"), "--chunker", "fixed",
        "--grid", "sise=100,200", "--json", str(tmp_path / "t.json"), cache=tmp_path / "cache",
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    assert "'sise'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ("size=400;weight=0.5,2", "grid point 'max_size=400 weight=2': retrieval.weight: BM25's share"),
        ("candidates=5,0", "grid point 'candidates=0': retrieval.candidates: must be at least 1, got 0"),
        ("size=,", "grid entry 'size=,': expected key=value,value,..."),
        ("size=200;weight= , ", "grid entry 'weight= ,': expected key=value,value,..."),
    ],
    ids=["weight-above-1", "no-candidates", "no-values", "blank-values"],
)
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_a_grid_value_a_configuration_file_could_not_hold_is_one_line_before_any_work(
    data_dir: Path, tmp_path: Path, grid: str, message: str, dry_run: bool
) -> None:
    """A grid point is checked as a configuration file is, before anything is indexed, in a dry run
    too: ``weight=2`` crashed with a traceback after indexing, ``candidates=0`` was scored and could be
    chosen, and a key without values crashed with an IndexError."""
    out = tmp_path / "t.json"
    done = run_chunkwise(
        "tune", "--data", str(data_dir / "eval" / "xquad_mini"), "--grid", grid,
        *(["--dry-run"] if dry_run else ["--json", str(out)]), cache=tmp_path / "cache",
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"error: {message}")
    assert "Traceback" not in done.stderr
    assert not out.exists()
    assert not (tmp_path / "cache" / "chunkwise" / "eval").exists()


def test_dry_runs_print_estimates_and_spend_nothing(data_dir: Path, tmp_path: Path) -> None:
    preset = tmp_path / "chunkrag.toml"
    preset.write_text('preset = "chunkrag"\n', encoding="utf-8")
    evaluated = run_chunkwise(
        "eval", "--data", str(data_dir / "eval" / "rmc_mini"), "--config", str(preset),
        "--json", str(tmp_path / "e.json"), "--dry-run", cache=tmp_path / "cache",
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    for stage in ("rewrite", "relevance", "chunking.embed", "embed", "total llm", "total embedder"):
        assert stage in evaluated.stdout
    tuned = run_chunkwise(
        "tune", "--data", str(data_dir / "eval" / "xquad_mini"),
        "--grid", "size=200,400;retrieval.weight=0,1", "--dry-run", cache=tmp_path / "cache",
    )  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr
    assert "4 points" in tuned.stdout
    assert "total llm" in tuned.stdout
    assert not (tmp_path / "e.json").exists()
    assert not (tmp_path / "cache" / "chunkwise" / "eval").exists()


@pytest.mark.parametrize("command", ["eval", "tune"])
def test_a_span_metric_on_document_gold_is_refused_before_a_dry_run(
    data_dir: Path, tmp_path: Path, command: str
) -> None:
    """rmc_mini has document gold only: ``iou@5`` is refused before anything is estimated or run (a dry
    run passed, and the real run failed after indexing)."""
    grid = ["--grid", "size=400,800"] if command == "tune" else []
    done = run_chunkwise(
        command, "--data", str(data_dir / "eval" / "rmc_mini"), *grid, "--metric", "iou@5",
        "--json", str(tmp_path / "out.json"), "--dry-run", cache=tmp_path / "cache",
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("error: metric iou@5: needs span gold, and query 'rmc-")


def test_tune_maximises_document_recall_on_document_gold_by_default(data_dir: Path, tmp_path: Path) -> None:
    """``tune``'s default metric, iou@5, needs span gold; on a data set of document gold the default is
    doc_recall@5, so ``tune`` without ``--metric`` runs there (it failed on every such set)."""
    base = tmp_path / "bm25.toml"
    base.write_text(BM25_ONLY, encoding="utf-8")
    out = tmp_path / "tune.json"
    done = run_chunkwise(
        "tune", "--data", str(data_dir / "eval" / "rmc_mini"), "--grid", "size=400,1600",
        "--config", str(base), "--json", str(out), cache=tmp_path / "cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["metric"] == "doc_recall@5"
    assert verify_tuning(data) == []


def test_a_bad_value_in_one_of_several_configuration_files_names_the_file(
    data_dir: Path, tmp_path: Path
) -> None:
    """``eval --config a.toml --config b.toml --config typo.toml``: the error named the key, not which
    file holds it."""
    files = []
    for name, text in (("a", BM25_ONLY), ("b", BM25_ONLY), ("typo", "[chunking]\nnmae = 'fixed'\n")):
        files += ["--config", str(tmp_path / f"{name}.toml")]
        (tmp_path / f"{name}.toml").write_text(text, encoding="utf-8")
    done = run_chunkwise(
        "eval", "--data", str(data_dir / "eval" / "rmc_mini"), *files, "--json", str(tmp_path / "e.json"),
        "--dry-run", cache=tmp_path / "cache",
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        f"error: {tmp_path / 'typo.toml'}: chunking: unknown setting(s) nmae; known: name, params"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["eval", "--distractors", "2", "--json", "e.json"], "--distractors needs --limit"),
        (["tune", "--grid", "size=400,800", "--trials", "1"], "--trials needs --search random"),
    ],
    ids=["distractors", "trials"],
)
def test_an_option_that_would_be_ignored_is_refused(
    data_dir: Path, tmp_path: Path, arguments: list[str], message: str
) -> None:
    """``--distractors`` without ``--limit`` was ignored (and recorded in the results as if used),
    ``--trials`` of a grid search likewise."""
    done = run_chunkwise(
        arguments[0], "--data", str(data_dir / "eval" / "rmc_mini"), *arguments[1:], "--dry-run",
        cache=tmp_path / "cache", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert message in done.stderr.splitlines()[0]
