"""An LLM preset on the bundled local model says what it will cost before its first call: the dry-run
estimate, the expected minutes and the CHUNKWISE_LLM hint on stderr; a terminal is asked, ``--yes`` and
a run without a terminal go on; the measured seconds calibrate the next estimate."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from chunkwise.models.accounting import CallRecord
from chunkwise.models.local_rates import (
    DECODE_TOKENS_PER_S,
    PREFILL_TOKENS_PER_S,
    RATES_FILE,
    LocalRates,
    load_local_rates,
    record_local_calls,
)
from tests.support.cli import run_chunkwise

QUESTION = "How heavy may a checked bag be in CloudSaver economy?"
#: One candidate scored, so a run with the real model stays short.
SMALL_CHUNKRAG = "[retrieval]\ncandidates = 2\n[relevance]\nmax_candidates = 1\n[rerank]\nenabled = false\n"


def call(latency: float, *, backend: str = "local", cached: bool = False, role: str = "llm") -> CallRecord:
    """A recorded call of 300 prompt and 10 reply tokens (two seconds at the default rates)."""
    return CallRecord(role, backend, "smollm2", "chat", "relevance", 300, 10, 0, latency, 0.0, cached)


def test_default_rates_predict_prefill_and_decode() -> None:
    expected = 300 / PREFILL_TOKENS_PER_S + 10 / DECODE_TOKENS_PER_S
    assert LocalRates().seconds(300, 10) == pytest.approx(expected)


def test_measured_calls_calibrate_and_others_are_left_out(tmp_path: Path) -> None:
    path = tmp_path / RATES_FILE
    assert load_local_rates(path) == LocalRates()
    others = [call(1.0, cached=True), call(1.0, backend="openai"), call(1.0, role="embedder")]
    counted = record_local_calls([call(4.0), call(8.0), *others], path)
    assert counted == 2
    rates = load_local_rates(path)
    assert rates.calls == 2
    assert rates.calibration == pytest.approx(12.0 / 4.0)  # measured 12 s where 2 x 2 s were predicted
    record_local_calls([call(2.0)], path)
    assert load_local_rates(path).calibration == pytest.approx(14.0 / 6.0)


def test_an_unreadable_rates_file_means_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / RATES_FILE
    path.write_text("{not json", encoding="utf-8")
    assert load_local_rates(path) == LocalRates()


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    kb = tmp_path_factory.mktemp("notice") / "kb"
    files = sorted(str(p) for p in (data_dir / "formats").glob("*.md"))
    run_chunkwise("ingest", *files, "--kb", str(kb), check=True)
    return kb


def local_env() -> dict[str, str]:
    """The bundled model as the LLM, whatever the environment says."""
    return {"CHUNKWISE_LLM": "local"}


def test_fast_preset_says_nothing(kb_dir: Path, tmp_path: Path) -> None:
    done = run_chunkwise("search", QUESTION, "--kb", str(kb_dir), env=local_env(), cache=tmp_path, check=True)
    assert "estimate before any call" not in done.stderr


def test_notice_comes_before_the_first_call(kb_dir: Path, tmp_path: Path) -> None:
    # A one-token budget refuses the first LLM call: the notice must already be on stderr by then.
    done = run_chunkwise(
        "ask", QUESTION, "--kb", str(kb_dir), "--preset", "chunkrag", "--max-tokens", "1",
        env=local_env(), cache=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    notice, _, error = done.stderr.partition("error:")
    assert "local runs on this machine's CPU: estimate before any call" in notice
    for stage in ("rewrite", "relevance", "answer", "total llm"):
        assert stage in notice
    assert "expected time: about" in notice
    assert "(default rates)" in notice
    assert "CHUNKWISE_LLM=openai:<model>" in notice
    assert "budget" in error


def test_a_real_run_goes_on_without_a_terminal_and_calibrates(kb_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "small.toml"
    config.write_text('preset = "chunkrag"\n' + SMALL_CHUNKRAG, encoding="utf-8")
    done = run_chunkwise(
        "search", QUESTION, "--kb", str(kb_dir), "--config", str(config), "--json",
        env=local_env(), cache=tmp_path, check=True,
    )  # fmt: skip
    assert "estimate before any call" in done.stderr
    calls = json.loads(done.stdout)["accounting"]["by_role"]["llm"]["calls"]
    assert calls > 0
    rates = json.loads((tmp_path / "chunkwise" / RATES_FILE).read_text(encoding="utf-8"))
    assert rates["calls"] == calls
    assert rates["measured_s"] > 0
    assert rates["predicted_s"] > 0
    again = run_chunkwise(
        "search", "baggage", "--kb", str(kb_dir), "--config", str(config), "--max-tokens", "1",
        env=local_env(), cache=tmp_path,
    )  # fmt: skip
    assert f"calibrated by {calls} earlier calls" in again.stderr


def on_terminal(args: list[str], answer: bytes, cache: Path) -> tuple[int, str]:
    """Run ``chunkwise ARGS`` with stdin and stderr on a pseudo-terminal, typing ``answer``."""
    leader, follower = os.openpty()
    env = {**os.environ, **local_env(), "XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1"}
    env.pop("CHUNKWISE_CACHE_DIR", None)
    with subprocess.Popen(
        [sys.executable, "-m", "chunkwise", *args],
        stdin=follower, stderr=follower, stdout=subprocess.DEVNULL, env=env,
    ) as process:  # fmt: skip
        os.close(follower)
        os.write(leader, answer)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: the process has ended
                break
            if not chunk:
                break
            seen += chunk
        returncode = process.wait(timeout=600)
    os.close(leader)
    return returncode, seen.decode("utf-8", "replace")


def test_a_terminal_is_asked_and_no_stops_before_any_call(kb_dir: Path, tmp_path: Path) -> None:
    args = ["ask", QUESTION, "--kb", str(kb_dir), "--preset", "chunkrag"]
    returncode, seen = on_terminal(args, b"n\n", tmp_path)
    assert "Go on?" in seen
    assert "stopped before any model call" in seen
    assert returncode == 1
    assert not (tmp_path / "chunkwise" / RATES_FILE).exists()  # no call was made


def test_yes_skips_the_question(kb_dir: Path, tmp_path: Path) -> None:
    args = ["ask", QUESTION, "--kb", str(kb_dir), "--preset", "chunkrag", "--yes", "--max-tokens", "1"]
    returncode, seen = on_terminal(args, b"", tmp_path)
    assert "estimate before any call" in seen
    assert "Go on?" not in seen
    assert returncode == 2  # went on, to the budget's refusal of the first call


def test_ingest_with_llm_headers_says_so_before_the_first_call(data_dir: Path, tmp_path: Path) -> None:
    doc = data_dir / "formats" / "Boarding Process.md"
    done = run_chunkwise(
        "ingest", str(doc), "--kb", str(tmp_path / "kb"), "--preset", "dsrag", "--max-tokens", "1",
        env=local_env(), cache=tmp_path,
    )  # fmt: skip
    notice = done.stderr.partition("error:")[0]
    assert "estimate before any call" in notice
    assert "headers" in notice
    kb = str(tmp_path / "plain")
    plain = run_chunkwise("ingest", str(doc), "--kb", kb, env=local_env(), cache=tmp_path)
    assert plain.returncode == 0
    assert "estimate before any call" not in plain.stderr


def test_the_ingest_estimate_leaves_out_files_past_the_configured_limits(
    data_dir: Path, tmp_path: Path
) -> None:
    """The estimate parses under the configuration's ``[limits]``, as the ingest does: a file the ingest
    will refuse as too large costs no header calls in it (two calls a document with ``dsrag``)."""
    config = tmp_path / "small.toml"
    config.write_text("[limits]\nmax_chars = 3000\n", encoding="utf-8")
    small, large = (
        data_dir / "formats" / name for name in ("Boarding Process.md", "Careers at CloudWay 24.md")
    )
    assert len(small.read_text(encoding="utf-8")) <= 3000 < len(large.read_text(encoding="utf-8"))
    done = run_chunkwise(
        "ingest", str(small), str(large), "--kb", str(tmp_path / "kb"), "--preset", "dsrag",
        "--config", str(config), "--max-tokens", "1", env=local_env(), cache=tmp_path,
    )  # fmt: skip
    notice = done.stderr.partition("error:")[0]
    assert re.search(r"headers\s*│\s*llm\s*│\s*2\s*│", notice), notice
