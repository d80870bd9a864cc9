"""ingest -> search -> ask through the command line (subprocesses), on the local defaults, and the
ChunkRAG preset with its LLM stages served by the loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.cli import run_chunkwise
from tests.support.openai_server import OpenAIServer

QUESTION = "How heavy may a checked bag be in CloudSaver economy?"


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory, data_dir):
    kb = tmp_path_factory.mktemp("cli") / "kb"
    files = sorted(str(p) for p in (data_dir / "formats").glob("*.md"))
    done = run_chunkwise("ingest", *files, "--kb", str(kb), "--json", check=True)
    report = json.loads(done.stdout)
    assert len(report["added"]) == 4
    assert report["failed"] == []
    assert report["counts"]["chunks"] == report["chunks"]
    return kb


def test_ingest_again_skips_and_reports_bad_files(kb_dir, data_dir, tmp_path):
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7 not really")
    done = run_chunkwise(
        "ingest", str(data_dir / "formats"), str(broken), "--kb", str(kb_dir), "--json", check=False
    )
    report = json.loads(done.stdout)
    assert done.returncode == 2
    assert f"error: {broken}" in done.stderr
    assert len(report["skipped"]) == 4  # the Markdown files are unchanged
    assert len(report["added"]) == 16  # the other four formats of the same documents


def test_search_json_has_hits_trace_and_totals(kb_dir):
    body = json.loads(
        run_chunkwise("search", QUESTION, "--kb", str(kb_dir), "-k", "3", "--json", check=True).stdout
    )
    assert len(body["hits"]) == 3
    assert "Baggage Allowance" in body["hits"][0]["doc_id"]
    assert [s["stage"] for s in body["trace"]] == ["bm25", "dense", "fusion"]
    assert body["totals"]["calls"] == 0  # no LLM stage in the default preset


def test_ask_extractive_with_citations(kb_dir):
    body = json.loads(run_chunkwise("ask", QUESTION, "--kb", str(kb_dir), "--json", check=True).stdout)
    assert body["found"]
    assert body["grounding"]["grounded"]
    assert body["citations"]
    assert body["trace"][-1]["stage"] == "answer"


def test_missing_kb_is_a_clean_error(tmp_path):
    done = run_chunkwise("search", "x", "--kb", str(tmp_path / "none"), check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    assert "no knowledge base here" in done.stderr


def _script(payload):
    prompt = payload["messages"][-1]["content"]
    if prompt.startswith("You are an AI assistant that improves user queries"):
        return "CloudSaver economy checked baggage weight limit"
    if "[S1]" in prompt:
        first = prompt.split("[S1]\n", 1)[1].split("\n")[0][:50]
        return json.dumps({"answer": "See the policy.", "citations": [{"source": "S1", "quote": first}]})
    if "Relevance Score" in prompt:
        chunk = prompt.split("Chunk:", 1)[1].split("User Query:", 1)[0]
        return "0.9" if re.search(r"(?i)baggage", chunk) else "0.1"
    return "0.5"


def test_chunkrag_preset_through_the_cli(kb_dir, tmp_path):
    with OpenAIServer(answer=_script) as server:
        config = tmp_path / "chunkrag.toml"
        config.write_text(
            f'preset = "chunkrag"\n[models]\nllm = "openai:test-model"\nreranker = "rerank:test-model"\n'
            f'base_url = "{server.base_url}"\nrerank_url = "{server.url}"\n[relevance]\nmax_candidates = 8\n',
            encoding="utf-8",
        )
        body = json.loads(
            run_chunkwise(
                "ask", QUESTION, "--kb", str(kb_dir), "--config", str(config), "--json", check=True
            ).stdout
        )
    stages = [s["stage"] for s in body["trace"]]
    assert stages == ["rewrite", "bm25", "dense", "fusion", "redundancy", "relevance", "rerank", "answer"]
    rewrite = body["trace"][0]["notes"]
    assert rewrite["rewritten"] == "CloudSaver economy checked baggage weight limit"
    relevance = body["trace"][5]
    assert relevance["calls"] == 8 * 3
    assert body["grounding"]["grounded"]
    assert body["answer"] == "See the policy."
    assert body["accounting"]["total"]["calls"] >= 1 + 8 * 3 + 1
    assert body["accounting"]["total"]["input_tokens"] > 0


def test_text_output_in_process(kb_dir):
    from typer.testing import CliRunner

    from chunkwise.cli.main import app

    runner = CliRunner()
    table = runner.invoke(app, ["search", QUESTION, "--kb", str(kb_dir), "-k", "2"])
    assert table.exit_code == 0
    assert "fusion" in table.stdout  # the trace table names each stage
    assert "Baggage Allowance" in table.stdout  # the same document exists in five formats
    answer = runner.invoke(app, ["ask", "zebra quantum chromodynamics", "--kb", str(kb_dir)])
    assert answer.exit_code == 0
    assert answer.stdout.startswith("not found in the documents")


def test_token_budget_stops_ask_cleanly(kb_dir, tmp_path):
    with OpenAIServer(answer=_script) as server:
        config = tmp_path / "budget.toml"
        config.write_text(
            f'preset = "chunkrag"\n[models]\nllm = "openai:test-model"\nreranker = "rerank:test-model"\n'
            f'base_url = "{server.base_url}"\nrerank_url = "{server.url}"\n',
            encoding="utf-8",
        )
        # a cache of its own: the session's may hold these very calls (same model name, same prompts)
        # from another test, and a cached call costs no tokens
        done = run_chunkwise(
            "ask",
            QUESTION,
            "--kb",
            str(kb_dir),
            "--config",
            str(config),
            "--max-tokens",
            "50",
            check=False,
            cache=tmp_path / "cache",
        )
        requests = len(server.requests)
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    assert "budget" in done.stderr.lower()
    assert "Traceback" not in done.stderr
    # the rewrite fits the budget; the calls after it are refused before they are sent
    assert requests <= 1


def test_token_budget_stops_ingest_and_leaves_only_whole_documents(data_dir, tmp_path):
    from chunkwise.store.sqlite import SQLiteStore

    kb = tmp_path / "kb"
    files = sorted(str(p) for p in (data_dir / "formats").glob("*.md"))
    with OpenAIServer(answer=lambda request: "A policy of the airline about its passengers.") as server:
        config = tmp_path / "summaries.toml"
        config.write_text(
            f'[models]\nllm = "openai:test-model"\nbase_url = "{server.base_url}"\n'
            "[headers]\nsummary = true\nllm = true\n",
            encoding="utf-8",
        )
        done = run_chunkwise(  # a cache of its own, as above
            "ingest",
            *files,
            "--kb",
            str(kb),
            "--config",
            str(config),
            "--max-tokens",
            "1500",
            check=False,
            cache=tmp_path / "cache",
        )
    assert done.returncode == 2
    assert "budget" in done.stderr.lower()
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1  # the batch stops instead of failing file by file
    store = SQLiteStore(kb)
    try:
        assert store.check() == []
        # whatever was stored is whole; the documents past the budget are not there at all
        assert len(store.documents()) < len(files)
    finally:
        store.close()


def test_ask_past_the_token_budget_in_the_answer_step_is_an_error_not_not_found(data_dir, tmp_path):
    """A budget that stops the answer call itself (no LLM stage before it) ends ``ask`` with the budget
    error, not with "not found in the documents"; all models are the loopback server's, none loads."""
    from chunkwise.config import from_dict
    from chunkwise.kb import KnowledgeBase

    reply = json.dumps({"answer": "23 kg.", "citations": []})
    with OpenAIServer(answer=lambda request: reply) as server:
        models = {"llm": "openai:test-model", "embedder": "openai:test-model", "base_url": server.base_url}
        with KnowledgeBase(tmp_path / "kb", from_dict({"models": {**models, "cache": False}})) as kb:
            assert kb.add([data_dir / "formats" / "Baggage Allowance.md"]).added
        config = tmp_path / "remote.toml"
        toml_models = "".join(f'{key} = "{value}"\n' for key, value in models.items())
        config.write_text(f'[models]\n{toml_models}cache = false\n[answer]\nmode = "llm"\n', encoding="utf-8")
        kb_args = ("--kb", str(tmp_path / "kb"), "--config", str(config), "--yes")
        answered = run_chunkwise("ask", QUESTION, *kb_args, "--json", check=True)
        stopped = run_chunkwise("ask", QUESTION, *kb_args, "--max-tokens", "20")
    assert json.loads(answered.stdout)["trace"][-1]["calls"] == 1  # the answer step did call the model
    assert stopped.returncode == 2
    assert stopped.stderr.startswith("error: ")
    assert "token budget exceeded" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert "not found in the documents" not in stopped.stdout
