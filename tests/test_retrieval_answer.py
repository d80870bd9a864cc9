"""Grounded answers: the verbatim-quote check, and both answer modes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.chunking.sentences import split_sentences
from chunkwise.chunking.tables import table_header
from chunkwise.errors import BudgetExceededError, ModelCallError
from chunkwise.models import Models
from chunkwise.models.config import ModelsConfig
from chunkwise.query import Trace
from chunkwise.query.answer import (
    NOT_FOUND,
    AnswerGenerator,
    Source,
    check_citations,
)
from chunkwise.query.grounding import locate_quote
from tests.support.fakes import FakeLLM, on_prompt
from tests.support.openai_server import OpenAIServer, Reply

TEXT = "Checked bags may weigh up to 23 kg.\nOverweight bags cost\n  50 EUR each. Pets travel in the hold."
SOURCES = [
    Source("doc", 100, 100 + len(TEXT), "S1", "chunk-1", TEXT),
    Source("doc", 0, 9, "S2", "chunk-2", "Other bit"),
]


def test_exact_and_whitespace_normalised_quotes():
    assert locate_quote("may weigh up to 23 kg", TEXT) == (13, 34)
    start, end = locate_quote("Overweight bags cost 50 EUR each.", TEXT)
    assert TEXT[start:end] == "Overweight bags cost\n  50 EUR each."
    assert locate_quote("overweight bags cost 50 EUR", TEXT) is None  # case matters
    assert locate_quote("bags cost 60 EUR", TEXT) is None
    assert locate_quote("23 kg", TEXT) is None  # too short to prove anything


@given(st.text(alphabet="ab \n.", min_size=1, max_size=60), st.data())
def test_any_long_enough_substring_is_located(text, data):
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    quote = text[start:end]
    found = locate_quote(quote, text, min_chars=1)
    if quote.strip():
        assert found is not None
        assert " ".join(text[found[0] : found[1]].split()) == " ".join(quote.split())


def test_check_citations_maps_to_document_offsets_and_rejects():
    cited, grounding = check_citations(
        [("S1", "Pets travel in the hold."), ("[S2]", "Pets travel in the hold."), ("S9", "Other bit here")],
        SOURCES,
    )
    assert len(cited) == 1
    assert cited[0].start == 100 + TEXT.index("Pets")
    assert cited[0].end - cited[0].start == len("Pets travel in the hold.")
    assert [r["reason"] for r in grounding.rejected] == [
        "quote not found in the cited source",
        "unknown source",
    ]
    assert not grounding.grounded


def test_llm_answer_grounded():
    llm = FakeLLM(
        structured_fn=on_prompt(
            lambda p: {
                "answer": "Up to 23 kg.",
                "citations": [{"source": "S1", "quote": "Checked bags may weigh up to 23 kg."}],
            }
        )
    )
    answer = AnswerGenerator(llm).answer("How heavy may a bag be?", SOURCES, Trace())
    assert answer.text == "Up to 23 kg."
    assert answer.grounding.grounded
    assert answer.found
    assert "[S1]\nChecked bags" in llm.prompts[0]
    assert "How heavy may a bag be?" in llm.prompts[0]


def test_llm_answer_with_invented_quote_becomes_not_found():
    llm = FakeLLM(
        structured_fn=on_prompt(
            lambda p: {
                "answer": "Bags may weigh 40 kg.",
                "citations": [{"source": "S1", "quote": "Checked bags may weigh up to 40 kg."}],
            }
        )
    )
    trace = Trace()
    answer = AnswerGenerator(llm).answer("How heavy?", SOURCES, trace)
    assert answer.text == NOT_FOUND
    assert answer.citations == []
    assert not answer.grounding.grounded
    assert trace.get("answer").notes["model_answer"] == "Bags may weigh 40 kg."


GROUNDED_REPLY = json.dumps(
    {
        "answer": "Up to 23 kg.",
        "citations": [{"source": "S1", "quote": "Checked bags may weigh up to 23 kg."}],
    }
)


@pytest.fixture
def answer_server() -> Iterator[OpenAIServer]:
    with OpenAIServer(answer=lambda request: GROUNDED_REPLY) as server:
        yield server


def remote_answerer(server: OpenAIServer, tmp_path: Path, max_tokens: int | None = None) -> AnswerGenerator:
    """An answer stage on the production remote LLM (HTTP client, retries, ledger, budget) of ``server``."""
    config = ModelsConfig(
        base_url=server.base_url,
        timeout=1.0,
        max_attempts=2,
        backoff_base=0.0,
        structured_attempts=2,
        cache=False,
        cache_dir=str(tmp_path / "cache"),
        max_tokens=max_tokens,
    )
    return AnswerGenerator(Models(config).llm("openai:gpt-test"))


def test_remote_llm_answer_is_grounded(answer_server: OpenAIServer, tmp_path: Path) -> None:
    answer = remote_answerer(answer_server, tmp_path).answer("How heavy?", SOURCES, Trace())
    assert answer.found
    assert answer.grounding.grounded


@pytest.mark.parametrize(
    ("replies", "status"),
    [
        ((Reply.error(401),), 401),  # a refused key: not retried
        ((Reply.error(429, retry_after=0), Reply.error(429, retry_after=0)), 429),
        ((Reply.hang(3), Reply.hang(3)), None),  # timeouts past the attempts
    ],
)
def test_a_failed_answer_call_raises_instead_of_not_found(
    answer_server: OpenAIServer, tmp_path: Path, replies: tuple[Reply, ...], status: int | None
) -> None:
    answer_server.script(*replies)
    with pytest.raises(ModelCallError) as raised:
        remote_answerer(answer_server, tmp_path).answer("How heavy?", SOURCES, Trace())
    assert raised.value.status == status


def test_an_answer_past_the_token_budget_raises(answer_server: OpenAIServer, tmp_path: Path) -> None:
    with pytest.raises(BudgetExceededError, match="token budget"):
        remote_answerer(answer_server, tmp_path, max_tokens=20).answer("How heavy?", SOURCES, Trace())
    assert answer_server.requests == []  # refused before it was sent


def test_an_answer_never_in_the_schema_is_not_found(answer_server: OpenAIServer, tmp_path: Path) -> None:
    answer_server.script(Reply.answer("I think about 23 kg"), Reply.answer("roughly 23 kg, I believe"))
    trace = Trace()
    answer = remote_answerer(answer_server, tmp_path).answer("How heavy?", SOURCES, trace)
    assert not answer.found
    assert "error" in trace.get("answer").notes


def test_no_sources_means_not_found_without_a_call():
    llm = FakeLLM()
    answer = AnswerGenerator(llm).answer("Anything?", [], Trace())
    assert answer.text == NOT_FOUND
    assert llm.prompts == []


def test_extractive_answer_cites_best_sentences():
    answer = AnswerGenerator(None, "extractive", max_sentences=1).answer(
        "What do overweight bags cost?", SOURCES, Trace()
    )
    assert answer.text == "Overweight bags cost\n  50 EUR each."
    assert answer.grounding.grounded
    assert answer.citations[0].ref == "chunk-1"
    assert AnswerGenerator(None, "extractive").answer("zebra stripes?", SOURCES, Trace()).text == NOT_FOUND
    with pytest.raises(Exception, match="needs an LLM"):
        AnswerGenerator(None, "llm")


def test_extractive_answer_quotes_a_sentence_two_sources_share_once_and_cites_both():
    """The same policy stored as Markdown and as DOCX: its sentence is the answer once, cited from each
    document, and the second sentence of the answer is another one (it was the same sentence twice)."""
    text = "Boarding gates close 20 minutes before departure. Gates open 60 minutes before departure."
    sources = [
        Source("policy.docx", 0, len(text), "S1", "chunk-1", text),
        Source("policy.md", 0, len(text), "S2", "chunk-2", text),
    ]
    answer = AnswerGenerator(None, "extractive", max_sentences=2).answer(
        "When do boarding gates close?", sources, Trace()
    )
    assert answer.text == (
        "Boarding gates close 20 minutes before departure. Gates open 60 minutes before departure."
    )
    first = "Boarding gates close 20 minutes before departure."
    assert [(c.doc_id, c.quote) for c in answer.citations] == [
        ("policy.docx", first),
        ("policy.md", first),
        ("policy.docx", "Gates open 60 minutes before departure."),
        ("policy.md", "Gates open 60 minutes before departure."),
    ]
    assert answer.grounding.grounded


def test_split_sentences():
    text = "One. Two!\n\n- item\n- Three?\nwrapped line"
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "One.",
        "Two!",
        "- item",
        "- Three?",
        "wrapped line",
    ]


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_extractive_answer_reads_a_table_row_with_its_header(eol: str) -> None:
    """The header row is quoted alone, without its delimiter row or line break, whatever ends lines."""
    table = (
        "Checked baggage:\n\n| Class | Bags | Max weight |\n|---|---|---|\n"
        "| First | 3 | 32 kg |\n| Economy | 1 | 23 kg |"
    ).replace("\n", eol)
    sources = [Source("doc", 0, len(table), "S1", "chunk-9", table)]
    answer = AnswerGenerator(None, "extractive", max_sentences=1).answer(
        "What is the max weight in Economy?", sources, Trace()
    )
    assert answer.text == "| Class | Bags | Max weight |\n| Economy | 1 | 23 kg |"
    assert [c.quote for c in answer.citations] == ["| Class | Bags | Max weight |", "| Economy | 1 | 23 kg |"]
    assert answer.grounding.grounded
    # the header and delimiter rows, as a chunk's context; a CRLF row keeps its CR, as the row does
    header = f"| Class | Bags | Max weight |{eol}|---|---|---|" + ("\r" if eol == "\r\n" else "")
    assert table_header(table, table.index("| First")) == header
    assert table_header(table, table.index("|---")) == ""
    assert table_header(table, table.index("| Class")) == ""
    assert table_header(table, 0) == ""
