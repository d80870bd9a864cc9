"""Every LLM-driven part against a real OpenAI-compatible server: ``transformers serve`` with SmolLM2-135M.

The server is started once per session (``real_server`` in ``conftest.py``); each test talks to it through
a :class:`~support.transformers_server.RecordingProxy`, so the accounting can be compared with the
``usage`` the server reported. A 135M model answers poorly: the tests check contracts (valid chunks,
outcomes reported, the fallback taken when the answer is unusable, accounting equal to the server's
usage), never the quality of an answer. Faults are tested against the scripted loopback server instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkwise.chunking import get_chunker, get_counter
from chunkwise.chunking.llm_report import FALLBACK, REPAIRED, VALID, VALID_AFTER_REPROMPT, ChunkingRun
from chunkwise.config import from_dict
from chunkwise.errors import LogprobsUnavailableError
from chunkwise.kb import KnowledgeBase
from chunkwise.models import Models
from chunkwise.models.accounting import Ledger
from chunkwise.models.config import ModelsConfig
from chunkwise.query.answer import NOT_FOUND
from tests.support.contract import check_contract
from tests.support.documents import sample_doc
from tests.support.transformers_server import RecordingProxy, RunningServer

pytestmark = pytest.mark.slow

DOC = sample_doc()
CHARS = get_counter("chars")
NO_LOGPROBS = "returns no prompt logprobs (tried echo + logprobs and prompt_logprobs on /completions)"
ADVICE = "logprob chunking needs a server that scores prompts, such as vLLM, or the local model"


@pytest.fixture
def proxy(real_server: RunningServer) -> Iterator[RecordingProxy]:
    with RecordingProxy(real_server.base_url) as running:
        yield running


def models_config(proxy: RecordingProxy, real_server: RunningServer) -> ModelsConfig:
    """The server as the LLM: no cache (every call reaches it), one structured attempt per call."""
    return ModelsConfig(
        llm=f"openai:{real_server.model}",
        base_url=proxy.base_url,
        cache=False,
        timeout=600,
        max_attempts=2,
        structured_attempts=1,
    )


def real_models(proxy: RecordingProxy, real_server: RunningServer) -> Models:
    """A run's model context whose LLM is the server (through the recording proxy)."""
    return Models(models_config(proxy, real_server))


def check_accounting(ledger: Ledger, proxy: RecordingProxy) -> None:
    """The ledger holds one call per request, with the tokens the server reported."""
    totals = ledger.by_role()["llm"]
    assert totals.calls == len(proxy.exchanges) > 0
    assert (totals.input_tokens, totals.output_tokens) == proxy.usage()
    assert all(e.status == 200 for e in proxy.exchanges)


def check_run(run: ChunkingRun, max_size: int) -> None:
    """Valid chunks, one outcome per window, and every outcome but ``valid`` explained by its issues."""
    check_contract(DOC, run.chunks, CHARS, max_size)
    assert run.report.windows
    for window in run.report.windows:
        assert window.outcome in (VALID, VALID_AFTER_REPROMPT, REPAIRED, FALLBACK)
        if window.outcome != VALID:
            assert window.issues, window


@pytest.mark.parametrize("chunker", ["wrac", "agentic", "sections"])
def test_llm_chunkers(chunker: str, proxy: RecordingProxy, real_server: RunningServer) -> None:
    models = real_models(proxy, real_server)
    run = get_chunker(chunker, models=models, max_size=400, min_size=0).run(DOC)
    check_run(run, 400)
    check_accounting(models.ledger, proxy)
    paths = {e.path for e in proxy.exchanges}
    assert paths == {"/v1/chat/completions"}


def test_logprob_chunker_says_the_server_gives_no_prompt_logprobs(
    proxy: RecordingProxy, real_server: RunningServer
) -> None:
    chunker = get_chunker("logprob", models=real_models(proxy, real_server), max_size=400, min_size=0)
    with pytest.raises(LogprobsUnavailableError) as raised:
        chunker.run(DOC)
    message = str(raised.value)
    assert message == f"openai:{real_server.model}: {proxy.base_url} {NO_LOGPROBS}; {ADVICE}"
    # transformers serve ignored echo (answered with text, no logprobs) and refused prompt_logprobs.
    assert [(e.status, "echo" in e.request) for e in proxy.exchanges] == [(200, True), (422, False)]
    assert "logprobs" not in proxy.exchanges[0].answer["choices"][0]


def test_logprob_chunker_error_is_one_line_on_the_command_line(
    real_server: RunningServer, data_dir: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "OPENAI_BASE_URL": real_server.base_url, "CHUNKWISE_CACHE_DIR": str(tmp_path)}
    path = data_dir / "formats" / "Boarding Process.md"
    command = [str(Path(sys.executable).with_name("chunkwise")), "chunk", str(path), "--chunker", "logprob"]
    result = subprocess.run(
        [*command, "--llm", f"openai:{real_server.model}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: openai:{real_server.model}: {real_server.base_url} {NO_LOGPROBS}; "
        "logprob chunking needs a server that scores prompts, such as vLLM, or the local model"
    ]


def test_chunkrag_query_and_summary_headers(
    proxy: RecordingProxy, real_server: RunningServer, data_dir: Path, tmp_path: Path
) -> None:
    settings = {
        "models": {
            "llm": f"openai:{real_server.model}",
            "base_url": proxy.base_url,
            "cache": False,
            "timeout": 600,
            "max_attempts": 2,
            "structured_attempts": 1,
        },
        "chunking": {"name": "recursive", "params": {"max_size": 600}},
        "headers": {"enabled": True, "summary": True, "llm": True},
        "relevance": {"max_candidates": 3},
        "answer": {"sources": 3},
    }
    config = from_dict(settings, preset="chunkrag")
    files = [data_dir / "formats" / "Baggage Allowance.md", data_dir / "formats" / "Boarding Process.md"]
    with KnowledgeBase(tmp_path / "kb", config) as kb:
        report = kb.add(files)
        assert not report.failed
        summaries = kb.models.ledger.by_stage()["summary"]
        assert summaries.calls == len(files)  # one summary per document, written by the server's model
        answer = kb.answer("How many cabin bags may I bring?")
        check_accounting(kb.models.ledger, proxy)

    trace = answer.trace
    assert trace.names()[0] == "rewrite"
    assert trace.get("rewrite").calls == 1
    relevance = trace.get("relevance")
    scored = relevance.inputs - relevance.notes["not_scored"]  # the first max_candidates are scored
    assert 0 < scored <= 3
    assert relevance.calls == 3 * scored  # base score, self-reflection, critic
    for steps in relevance.notes["steps"].values():
        assert all(0.0 <= s <= 1.0 for s in steps)
    unparsed = relevance.notes.get("unparsed", [])
    assert all(note["step"] in ("base", "reflect", "critic") for note in unparsed)  # neutral score, listed
    notes = trace.get("answer").notes
    if answer.found:
        assert answer.grounding.grounded
        assert answer.citations
    else:
        assert answer.text == NOT_FOUND
        assert "model_answer" in notes or "error" in notes  # the model's words stay in the trace
