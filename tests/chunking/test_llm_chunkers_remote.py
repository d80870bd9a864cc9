"""LLM-driven chunkers against a real OpenAI-compatible HTTP server on 127.0.0.1, and through the CLI.

The loopback server is scripted to answer invalid W-RAC plans (unknown ids, duplicates, out of order, a
split table, non-JSON, truncated JSON): each must be caught, re-asked once and, if still wrong, repaired,
with the outcome recorded. The CLI runs every LLM chunker on real Markdown files with the same server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chunkwise.chunking import Chunk, get_chunker, get_counter
from chunkwise.chunking.agentic import SEPARATOR
from chunkwise.chunking.llm_report import REPAIRED, VALID, VALID_AFTER_REPROMPT
from chunkwise.cli.main import app
from chunkwise.document import Document
from chunkwise.models import Models
from chunkwise.models.config import ModelsConfig
from chunkwise.parsing import parse_file
from tests.support.contract import check_contract
from tests.support.documents import sample_doc
from tests.support.openai_server import OpenAIServer, Reply, word_count

DOC = sample_doc()
CHARS = get_counter("chars")
GOOD = json.dumps(
    {"chunks": [["u1", "u2"], ["u1", "u3", "u4", "u5", "u6"], ["u7", "u8", "u9", "u10", "u11", "u12"]]}
)
ALL_UNITS = ["u2", "u4", "u6", "u8", "u9", "u10", "u11", "u12"]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def remote_models(server: OpenAIServer) -> Models:
    """A run's model context whose LLM is the loopback server's ``test-model``."""
    config = ModelsConfig(
        llm="openai:test-model", base_url=server.base_url, cache=False, structured_attempts=1
    )
    return Models(config)


def _plan(*chunks: list[str]) -> str:
    return json.dumps({"chunks": list(chunks)})


INVALID_PLANS = {
    "unknown ids": (_plan(["u2", "u4", "u77"], ["u6", "u8", "u9", "u10", "u11", "u12"]), "unknown id 'u77'"),
    "duplicates": (
        _plan(["u2", "u4"], ["u4", "u6"], ["u8", "u9", "u10", "u11", "u12"]),
        "u4 appears in chunks 1 and 2",
    ),
    "out of order": (_plan(["u4", "u6"], ["u2"], ["u8", "u9", "u10", "u11", "u12"]), "u2 comes after u6"),
    "split table": (_plan(["u2", "u4", "u6"], ["u6", "u8", "u9", "u10", "u11", "u12"]), "table u6 is split"),
    "non-JSON": ("Sure! The chunks are u1 to u4, then u5 to u12.", "no valid JSON plan"),
    "truncated JSON": ('{"chunks": [["u1", "u2", "u3", "u4"], ["u5", "u6"', "in no chunk: u8"),
    "nested past the decoder's depth": ('{"chunks": ' + "[" * 5000 + "]" * 5000 + "}", "too deeply"),
}


@pytest.mark.parametrize("case", list(INVALID_PLANS))
def test_invalid_plan_is_caught_and_fixed_by_the_reprompt(server: OpenAIServer, case: str) -> None:
    bad, issue = INVALID_PLANS[case]
    server.script(Reply.answer(bad), Reply.answer(GOOD))
    models = remote_models(server)
    run = get_chunker("wrac", models=models, max_size=400, min_size=0).run(DOC)
    window = run.report.windows[0]
    assert window.outcome == VALID_AFTER_REPROMPT
    assert any(issue in i for i in window.issues), window.issues
    reprompt = server.requests[1].json["messages"][-1]["content"]
    if case not in ("non-JSON",):
        assert issue in reprompt
    assert models.ledger.totals().calls == 2
    check_contract(DOC, run.chunks, CHARS, 400)


@pytest.mark.parametrize("case", list(INVALID_PLANS))
def test_invalid_plan_twice_is_repaired_by_structure_rules(server: OpenAIServer, case: str) -> None:
    bad, issue = INVALID_PLANS[case]
    server.script(Reply.answer(bad), Reply.answer(bad))
    run = get_chunker("wrac", models=remote_models(server), max_size=400, min_size=0).run(DOC)
    window = run.report.windows[0]
    assert window.outcome == REPAIRED
    assert any(i.startswith("after re-prompt:") and issue in i for i in window.issues), window.issues
    structure = get_chunker("structure", max_size=400, min_size=0).chunk(DOC)
    assert [(c.start, c.end) for c in run.chunks] == [(c.start, c.end) for c in structure]


def test_valid_plan_first_time_makes_one_call(server: OpenAIServer) -> None:
    server.script(Reply.answer(GOOD))
    models = remote_models(server)
    run = get_chunker("wrac", models=models, max_size=400, min_size=0, preview_words=4).run(DOC)
    assert run.report.outcomes() == {VALID: 1}
    assert len(server.requests) == 1
    prompt = server.requests[0].json["messages"][-1]["content"]
    assert "u6 table parent=u5" in prompt
    assert DOC.unit("u4").text not in prompt  # the planner sees a preview, never the text


def test_agentic_over_http_aligns_the_rewritten_text(server: OpenAIServer) -> None:
    cut = DOC.unit("u7").start
    server.script(Reply.answer(f"{DOC.text[:cut]}\n{SEPARATOR}\n{DOC.text[cut:]}"))
    models = remote_models(server)
    run = get_chunker("agentic", models=models, max_size=400, min_size=0).run(DOC)
    assert run.report.stats["exact"] == 2
    assert cut in [c.start for c in run.chunks]
    totals = models.ledger.totals()
    assert totals.output_tokens == len(DOC.text.split()) + 1  # the server counts words


def test_logprob_over_http_reads_echoed_prompt_logprobs(server: OpenAIServer) -> None:
    text = "\n\n".join(f"Part {i} says this and that about subject {i} in some words" for i in range(30))
    doc = Document(id="parts", text=text)
    # The loopback server lists "." among the alternatives at every position; the text has no ".".
    run = get_chunker("logprob", models=remote_models(server), max_size=200, min_size=20, marker=".").run(doc)
    assert server.paths() == ["/v1/completions"]
    assert server.requests[0].json["echo"] is True
    assert run.curve is not None
    assert len(run.curve.offsets) > 100
    check_contract(doc, run.chunks, CHARS, 200)


def _completion(**choice: object) -> Reply:
    body = {"choices": [{"index": 0, "text": "x", **choice}], "usage": {"prompt_tokens": 2}}
    return Reply.raw(json.dumps(body))


_ECHO_TOKENS = {"tokens": ["Part", " 1"], "token_logprobs": [None, -1.0]}
WRONG_SHAPES = {
    "echo: top_logprobs entry a list of pairs": (
        ("echo",),
        [_completion(logprobs={**_ECHO_TOKENS, "top_logprobs": [None, [[" 1", -1.0]]]})],
    ),
    "echo: top_logprobs entry a string": (
        ("echo",),
        [_completion(logprobs={**_ECHO_TOKENS, "top_logprobs": [None, " 1"]})],
    ),
    "prompt_logprobs: position a list": (
        ("prompt_logprobs",),
        [_completion(), _completion(prompt_logprobs=[None, [{"logprob": -1.0, "decoded_token": " 1"}]])],
    ),
    "prompt_logprobs: entry a number": (
        ("prompt_logprobs",),
        [_completion(), _completion(prompt_logprobs=[None, {"7": -1.0}])],
    ),
}


@pytest.mark.parametrize("case", list(WRONG_SHAPES))
def test_logprobs_of_the_wrong_shape_are_retried_as_unreadable(case: str) -> None:
    styles, replies = WRONG_SHAPES[case]
    doc = Document(id="parts", text="\n\n".join(f"Part {i} is about subject {i}" for i in range(6)))
    with OpenAIServer(styles=styles) as server:
        server.script(*replies)
        chunker = get_chunker("logprob", models=remote_models(server), max_size=100, min_size=0, marker=".")
        run = chunker.run(doc)
    # The malformed answer was refused and asked again; the server's next, valid, answer was used.
    assert len(server.requests) == len(replies) + 1
    check_contract(doc, run.chunks, CHARS, 100)


def test_sections_over_http(server: OpenAIServer) -> None:
    line = DOC.text[: DOC.unit("u7").start].count("\n")
    answer = {"sections": [{"title": "Allowance", "start_line": 0}, {"title": "Checked", "start_line": line}]}
    server.script(Reply.answer(json.dumps(answer)))
    run = get_chunker("sections", models=remote_models(server), max_size=400, min_size=0).run(DOC)
    assert run.report.outcomes() == {VALID: 1}
    assert [c.section[0] for c in run.chunks][-1] == "Checked"


# --- the CLI ----------------------------------------------------------------------------------------

FILES = ["Baggage Allowance.md", "Boarding Process.md"]


@pytest.fixture
def cli_env(server: OpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The environment of a CLI run against the loopback server; returns a scratch directory."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("CHUNKWISE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


@pytest.mark.parametrize("chunker", ["wrac", "agentic", "logprob", "sections"])
@pytest.mark.parametrize("name", FILES)
def test_cli_chunks_markdown_with_every_llm_chunker(
    cli_env: Path, data_dir: Path, chunker: str, name: str
) -> None:
    path = data_dir / "formats" / name
    args = [
        "chunk",
        str(path),
        "--chunker",
        chunker,
        "--llm",
        "openai:test-model",
        "--max-size",
        "300",
        "--json",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    doc = parse_file(path)
    chunks = [Chunk.from_dict({**row, "doc_id": doc.id}) for row in body["chunks"]]
    check_contract(doc, chunks, CHARS, 300)
    assert body["stats"]["coverage"] == 1.0
    assert body["llm_report"]["chunker"] == chunker
    assert sum(body["llm_report"]["outcomes"].values()) == len(body["llm_report"]["windows"]) >= 1


def test_cli_exports_the_score_curve(cli_env: Path, data_dir: Path) -> None:
    path = data_dir / "formats" / "Boarding Process.md"
    out = cli_env / "curve.csv"
    args = ["chunk", str(path), "--chunker", "logprob", "--llm", "openai:test-model", "--scores", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = out.read_text().splitlines()
    assert rows[0] == "offset,logprob,baseline,score,chosen"
    assert len(rows) > 100
    refused = CliRunner().invoke(app, ["chunk", str(path), "--chunker", "recursive", "--scores", str(out)])
    assert refused.exit_code != 0


def test_cli_chunk_json_accounts_what_the_server_reported(
    cli_env: Path, server: OpenAIServer, data_dir: Path
) -> None:
    """``chunk --json`` carries the run's accounting: W-RAC's calls and tokens, as the server counted."""
    path = data_dir / "formats" / "Boarding Process.md"
    args = ["chunk", str(path), "--chunker", "wrac", "--llm", "openai:test-model", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    accounting = json.loads(result.stdout)["accounting"]
    chats = [r.json for r in server.requests if r.path == "/v1/chat/completions"]
    total = accounting["total"]
    assert total["calls"] == len(chats) >= 1
    assert total["input_tokens"] == sum(word_count(m["content"]) for p in chats for m in p["messages"])
    assert total["output_tokens"] == sum(word_count(server.answer(p)) for p in chats) > 0
    assert set(accounting["by_role"]) == {"llm"}
    again = CliRunner().invoke(app, args[:-1])  # the table view; every call is now a cache hit
    assert f"model calls: 0 (+{total['calls']} cached)" in again.stdout
