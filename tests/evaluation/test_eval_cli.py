"""``chunkwise eval`` through the command line (subprocesses, the bundled local embedder)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chunkwise.evaluation import verify
from tests.support.cli import run_chunkwise

pytestmark = pytest.mark.slow


def test_eval_two_configurations_writes_json_and_html(data_dir: Path, tmp_path: Path) -> None:
    small = tmp_path / "small.toml"
    small.write_text('[chunking]\nname = "recursive"\nparams = { max_size = 300 }\n', encoding="utf-8")
    large = tmp_path / "large.toml"
    large.write_text('[chunking]\nname = "fixed"\nparams = { max_size = 900 }\n', encoding="utf-8")
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    done = run_chunkwise(
        "eval", "--data", str(data_dir / "eval" / "rmc_mini"), "--config", str(small), "--config", str(large),
        "--limit", "5", "--seed", "3", "-k", "3", "--json", str(out), "--html", str(page),
        cache=tmp_path / "cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [c["name"] for c in data["configs"]] == ["small", "large"]
    assert data["metrics"] == ["doc_recall@3", "doc_precision@3", "mrr@3", "ndcg@3"]
    assert data["meta"]["limit"] == 5
    assert all(len(c["queries"]) == 5 for c in data["configs"])
    assert verify(data) == []
    assert "small" in done.stdout
    assert "doc_recall@3" in done.stdout
    html = page.read_text(encoding="utf-8")
    assert html.count("<svg") == 4
    # the index cache went under $XDG_CACHE_HOME
    assert len(list((tmp_path / "cache" / "chunkwise" / "eval" / "indexes").iterdir())) == 2


def test_eval_refuses_a_config_that_is_not_utf8_on_one_line(data_dir: Path, tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes("# caf\u00e9\n".encode("latin-1"))
    done = run_chunkwise(
        "eval", "--data", str(data_dir / "eval" / "rmc_mini"), "--config", str(latin1), "--json",
        str(tmp_path / "r.json"), cache=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {latin1}: cannot read the configuration: not UTF-8 text")
    assert "byte 0xe9 at offset 5 (line 1)" in done.stderr
    assert "Traceback" not in done.stderr


def test_eval_reports_bad_input_on_one_line(data_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[retrieval]\nwieght = 0.3\n", encoding="utf-8")
    done = run_chunkwise(
        "eval", "--data", str(data_dir / "eval" / "rmc_mini"), "--config", str(bad), "--json",
        str(tmp_path / "r.json"), cache=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    assert "wieght" in done.stderr
    done = run_chunkwise(
        "eval", "--data", str(data_dir / "eval" / "rmc_mini"), "--metric", "iou@5", "--json",
        str(tmp_path / "r.json"), cache=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert "span gold" in done.stderr
    assert not (tmp_path / "r.json").exists()
    missing = tmp_path / "no such folder"
    for option in ("--json", "--html"):  # refused before any work, not after it
        outputs = {"--json": str(tmp_path / "r.json"), option: str(missing / "r.out")}
        arguments = [x for pair in outputs.items() for x in pair]
        done = run_chunkwise(
            "eval", "--data", str(data_dir / "eval" / "rmc_mini"), *arguments, cache=tmp_path
        )
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            f"error: {option} {missing / 'r.out'}: the folder {missing} does not exist"
        ]
    done = run_chunkwise(
        "chunk",
        str(data_dir / "formats" / "Baggage Allowance.md"),
        "--chunker",
        "logprob",
        "--scores",
        str(missing / "s.json"),
    )
    assert done.returncode == 2
    assert f"--scores {missing / 's.json'}: the folder {missing} does not exist" in done.stderr


def test_an_output_is_never_another_output_or_a_file_the_command_reads(
    data_dir: Path, tmp_path: Path
) -> None:
    """``--json out.json --html out.json`` kept the HTML alone and lost the results, and ``--json
    DATA/queries.jsonl`` overwrote the queries; both are refused before any work, the files untouched."""
    data = tmp_path / "rmc"
    shutil.copytree(data_dir / "eval" / "rmc_mini", data)
    queries = (data / "queries.jsonl").read_bytes()
    config = tmp_path / "bm25.toml"
    config.write_text("[retrieval]\ndense = false\n", encoding="utf-8")
    same = tmp_path / "out.json"
    cases = [
        (["eval", "--json", str(same), "--html", str(same)], f"--html {same}: --json writes the same file"),
        (
            ["eval", "--json", str(data / "queries.jsonl")],
            f"--json {data / 'queries.jsonl'}: the command reads",
        ),
        (["eval", "--json", str(config), "--config", str(config)], f"--json {config}: the command reads"),
        (
            ["tune", "--grid", "size=400,800", "--json", str(data / "corpus.jsonl")],
            "the command reads this file",
        ),
    ]
    for arguments, message in cases:
        done = run_chunkwise(arguments[0], "--data", str(data), *arguments[1:], cache=tmp_path)
        assert done.returncode == 2, arguments
        assert message in done.stderr.splitlines()[0], done.stderr
    assert (data / "queries.jsonl").read_bytes() == queries
    assert not same.exists()
    document = data_dir / "formats" / "Baggage Allowance.md"
    done = run_chunkwise("chunk", str(document), "--chunker", "logprob", "--scores", str(document))
    assert (done.returncode, done.stderr.splitlines()[0]) == (
        2,
        f"error: --scores {document}: the command reads this file; write to another",
    )
