"""LLM-driven chunkers with a scripted in-process LLM: checks, repairs, fallbacks, invariants."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.chunking import get_chunker, get_counter
from chunkwise.chunking.agentic import SEPARATOR
from chunkwise.chunking.llm_report import FALLBACK, REPAIRED, VALID, VALID_AFTER_REPROMPT
from chunkwise.chunking.logprob import choose_marker
from chunkwise.chunking.sections import DERIVED_TITLE_CHARS, _derived_title
from chunkwise.document import Document
from chunkwise.errors import ChunkingError, ConfigError, LLMResponseError
from chunkwise.models.protocols import Message
from chunkwise.parsing.builder import DocumentBuilder
from chunkwise.parsing.text import text_document
from tests.support.contract import check_contract
from tests.support.documents import sample_doc
from tests.support.fakes import FakeLLM

DOC = sample_doc()
CHARS = get_counter("chars")
GOOD = {
    "chunks": [["u1", "u2"], ["u1", "u3", "u4", "u5", "u6"], ["u1", "u7", "u8", "u9", "u10", "u11", "u12"]]
}
BAD = {"chunks": [["u2", "u99"], ["u6", "u4"], ["u8", "u9"], ["u10", "u11", "u12"]]}
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OUTCOMES = {VALID, VALID_AFTER_REPROMPT, REPAIRED, FALLBACK}


def _wrac(llm: FakeLLM, **params: Any):  # type: ignore[no-untyped-def]
    sizes = {"max_size": params.pop("max_size", 400), "min_size": params.pop("min_size", 10)}
    return get_chunker("wrac", llm=llm, **sizes, **params)


# --- wrac -------------------------------------------------------------------------------------------


def test_wrac_valid_plan_first_time() -> None:
    run = _wrac(FakeLLM([GOOD])).run(DOC)
    assert run.report.outcomes() == {VALID: 1}
    assert [c.start for c in run.chunks] == [0, DOC.unit("u3").start, DOC.unit("u7").start]
    check_contract(DOC, run.chunks, CHARS, 400)
    assert run.chunks[2].section == ("Baggage Allowance", "Checked Baggage")


def test_wrac_reprompt_names_the_exact_errors_and_accepts_the_fix() -> None:
    llm = FakeLLM([BAD, GOOD])
    run = _wrac(llm).run(DOC)
    window = run.report.windows[0]
    assert window.outcome == VALID_AFTER_REPROMPT
    reprompt = llm.calls[1][1][-1].content
    assert "unknown id 'u99'" in reprompt
    assert "u4 comes after u6" in reprompt
    assert "list u8-u10 is split between chunks 3 and 4" in reprompt
    assert llm.calls[1][1][-2] == Message(
        "assistant", '{"chunks": [["u2", "u99"], ["u6", "u4"], ["u8", "u9"], ["u10", "u11", "u12"]]}'
    )
    assert any("unknown id" in issue for issue in window.issues)
    check_contract(DOC, run.chunks, CHARS, 400)


def test_wrac_repairs_by_structure_rules_when_the_reprompt_fails_too() -> None:
    run = _wrac(FakeLLM([BAD, BAD])).run(DOC)
    window = run.report.windows[0]
    assert window.outcome == REPAIRED
    assert sum(issue.startswith("after re-prompt:") for issue in window.issues) == 3
    structure = get_chunker("structure", max_size=400, min_size=10).chunk(DOC)
    assert [c.start for c in run.chunks] == [c.start for c in structure]


def test_wrac_non_json_answers_are_recorded_and_repaired() -> None:
    error = LLMResponseError("fake", "no valid JSON for the schema after 3 attempts: not JSON")
    run = _wrac(FakeLLM([error, error])).run(DOC)
    window = run.report.windows[0]
    assert window.outcome == REPAIRED
    assert window.issues[0].startswith("no valid JSON plan")
    check_contract(DOC, run.chunks, CHARS, 400)


def test_wrac_without_reprompt_repairs_at_once() -> None:
    llm = FakeLLM([BAD, GOOD])
    run = _wrac(llm, reprompt=False).run(DOC)
    assert run.report.outcomes() == {REPAIRED: 1}
    assert len(llm.calls) == 1


def _plan_for_outline(messages: Sequence[Message]) -> dict[str, Any]:
    """A valid plan for whatever outline is shown: every unit of the window in one chunk."""
    ids = re.findall(r"^(u\d+) ", messages[-1].content, flags=re.MULTILINE)
    return {"chunks": [ids]}


def test_wrac_plans_long_documents_in_windows() -> None:
    b = DocumentBuilder()
    for section in range(12):
        b.heading(f"Part {section}", 2)
        for p in range(4):
            b.paragraph(f"Paragraph {p} of part {section} says something about topic {section}.")
    doc = b.build("long.md")
    llm = FakeLLM(structured_fn=_plan_for_outline)
    run = _wrac(llm, window_size=120, max_size=2000).run(doc)
    assert len(run.report.windows) > 3
    assert run.report.outcomes() == {VALID: len(run.report.windows)}
    for window in run.report.windows[1:]:
        assert doc.text[window.start :].startswith("## Part"), "windows start at headings"
    assert "Paragraph" not in llm.calls[0][1][-1].content.split("\n")[0]
    check_contract(doc, run.chunks, CHARS, 2000)


def test_wrac_outline_shows_ids_kinds_levels_parents_sizes_and_previews() -> None:
    llm = FakeLLM([GOOD])
    _wrac(llm, preview_words=3).run(DOC)
    outline = llm.calls[0][1][-1].content
    assert "u3 heading L2 parent=u1 size=16: ## Cabin Baggage" in outline
    assert "u6 table parent=u5 size=" in outline
    assert "CloudWay 24 lets every" not in outline  # previews are three words long
    assert "u2 paragraph parent=u1 size=71: CloudWay 24 lets" in outline


# --- agentic ----------------------------------------------------------------------------------------


def test_agentic_aligns_pieces_and_reports_hallucinated_text() -> None:
    first, second = DOC.text[: DOC.unit("u7").start], DOC.text[DOC.unit("u7").start :]
    answer = f"{first}\n{SEPARATOR}\nThis sentence was never in the document at all.\n{SEPARATOR}\n{second}"
    run = get_chunker("agentic", llm=FakeLLM(chat=[answer]), max_size=400, min_size=0).run(DOC)
    stats = run.report.stats
    assert (stats["pieces"], stats["exact"], stats["failed"]) == (3, 2, 1)
    assert stats["unaligned_chars"] == len("This sentence was never in the document at all.")
    assert DOC.unit("u7").start in [c.start for c in run.chunks]
    check_contract(DOC, run.chunks, CHARS, 400)


def test_agentic_empty_answer_still_gives_valid_chunks() -> None:
    run = get_chunker("agentic", llm=FakeLLM(chat=[""]), max_size=100, min_size=0).run(DOC)
    assert run.report.windows[0].outcome == REPAIRED
    assert "the answer holds no text" in run.report.windows[0].issues
    check_contract(DOC, run.chunks, CHARS, 100)


# --- logprob ----------------------------------------------------------------------------------------


def test_logprob_marker_is_one_token_and_absent_from_the_text() -> None:
    llm = FakeLLM()
    assert choose_marker(llm, "plain text") == "段"
    assert choose_marker(llm, "text with 段 and ¶") == "§"
    with pytest.raises(ChunkingError):
        choose_marker(llm, "ab", candidates=("a", "b"))


def test_logprob_cuts_where_the_marker_is_likely() -> None:
    text = "\n\n".join(f"Paragraph {i} " + "word " * 30 for i in range(6)).strip()
    doc = Document(id="p", text=text)
    run = get_chunker("logprob", llm=FakeLLM(), max_size=1000, min_size=10, threshold=3.0).run(doc)
    starts = [c.start for c in run.chunks]
    assert starts == [0, *(m.start() + 2 for m in re.finditer("\n\n", text))]
    assert run.curve is not None
    assert run.curve.marker == "段"
    assert run.report.stats["scored_tokens"] > 0


def test_logprob_windows_overlap_and_each_offset_is_scored_once() -> None:
    text = " ".join(f"w{i}" for i in range(600))
    run = get_chunker(
        "logprob", llm=FakeLLM(), max_size=300, min_size=0, window_chars=500, overlap_chars=100
    ).run(Document(id="w", text=text))
    assert len(run.report.windows) > 5
    assert run.curve is not None
    assert list(run.curve.offsets) == sorted(set(run.curve.offsets))
    check_contract(Document(id="w", text=text), run.chunks, CHARS, 300)


def test_logprob_scores_a_boundary_inside_a_token_with_one_extra_evaluation() -> None:
    text = "alpha beta gamma STOP.Next words follow here and go on and on for a while longer."

    def score(full: str, offset: int) -> float:
        return -0.5 if full[:offset].endswith("STOP.") else -12.0

    llm = FakeLLM(score=score, token_pattern=r"\.\w+|\w+|\s+|[^\w\s]", head_logprob=-1.0)
    run = get_chunker("logprob", llm=llm, max_size=1000, min_size=0, threshold=3.0).run(
        Document(id="t", text=text)
    )
    assert run.report.stats["extra_evaluations"] == 1
    assert [c.text for c in run.chunks] == [
        "alpha beta gamma STOP.",
        "Next words follow here and go on and on for a while longer.",
    ]


def test_logprob_partial_tokens_below_the_gate_cost_nothing() -> None:
    llm = FakeLLM(token_pattern=r"\.\w+|\w+|\s+|[^\w\s]", head_logprob=-7.5)
    run = get_chunker("logprob", llm=llm, max_size=1000, min_size=0).run(Document(id="t", text="a.b c.d e"))
    assert run.report.stats["extra_evaluations"] == 0
    assert len([c for c in llm.calls if c[0] == "logprobs"]) == 1


# --- sections ---------------------------------------------------------------------------------------


def _sections(llm: FakeLLM, **params: Any):  # type: ignore[no-untyped-def]
    return get_chunker("sections", llm=llm, max_size=params.pop("max_size", 400), min_size=0, **params)


def test_sections_become_boundaries_and_head_the_section_path() -> None:
    checked = DOC.unit("u7").start
    line = DOC.text[:checked].count("\n")
    answer = {
        "sections": [{"title": "Allowance", "start_line": 0}, {"title": "Checked bags", "start_line": line}]
    }
    run = _sections(FakeLLM([answer]), inner="recursive").run(DOC)
    assert run.report.outcomes() == {VALID: 1}
    assert checked in [c.start for c in run.chunks]
    assert all(c.section[0] == ("Allowance" if c.start < checked else "Checked bags") for c in run.chunks)
    check_contract(DOC, run.chunks, CHARS, 400)


def test_section_starts_snap_to_the_unit_they_fall_in() -> None:
    table_line = DOC.text[: DOC.unit("u6").start].count("\n") + 1  # the second line of the table
    answer = {"sections": [{"title": "A", "start_line": 0}, {"title": "B", "start_line": table_line}]}
    run = _sections(FakeLLM([answer])).run(DOC)
    assert DOC.unit("u6").start in [c.start for c in run.chunks]
    assert run.report.windows[0].outcome == VALID


def test_sections_repair_bad_answers_and_fall_back_to_headings() -> None:
    bad_order = {
        "sections": [{"title": "B", "start_line": 16}, {"title": "A", "start_line": 0}, {"start_line": 999}]
    }
    run = _sections(FakeLLM([bad_order])).run(DOC)
    assert run.report.windows[0].outcome == REPAIRED
    garbage = LLMResponseError("fake", "not JSON")
    run = _sections(FakeLLM([garbage])).run(DOC)
    assert run.report.windows[0].outcome == FALLBACK
    titles = {c.section[0] for c in run.chunks}
    assert {"Baggage Allowance", "Cabin Baggage", "Size Limits", "Checked Baggage"} <= titles


def test_sections_fall_back_to_fixed_spans_without_headings() -> None:
    text = "\n".join(f"Line {i} of a document that has no headings at all." for i in range(60))
    doc = Document(id="flat", text=text)
    run = _sections(FakeLLM([{"sections": []}]), max_size=300).run(doc)
    assert run.report.windows[0].outcome == FALLBACK
    assert run.report.stats["sections"] > 5
    check_contract(doc, run.chunks, CHARS, 300)


def test_sections_place_starts_on_the_lines_of_an_old_mac_text() -> None:
    """Plain text keeps a lone ``\\r`` as its line ending: the model is shown its lines numbered one by
    one, and a section start it places on one of them cuts there."""
    text = "Baggage rules apply to all flights.\rEach passenger has an allowance.\r\r"
    text += "Pets travel in the cabin.\rA pet carrier counts as one bag.\r"
    doc = text_document("old-mac.txt", text)
    answer = {"sections": [{"title": "Baggage", "start_line": 0}, {"title": "Pets", "start_line": 3}]}
    llm = FakeLLM([answer])
    run = _sections(llm).run(doc)
    assert llm.prompts[0].split("\n")[:2] == [
        "[0] Baggage rules apply to all flights.",
        "[1] Each passenger has an allowance.",
    ]
    assert run.report.outcomes() == {VALID: 1}
    assert [c.section[0] for c in run.chunks] == ["Baggage", "Pets"]
    assert run.chunks[1].start == text.index("Pets")
    check_contract(doc, run.chunks, CHARS, 400)


@pytest.mark.parametrize("separator", ["\u2028", "\x0c", "\x85", "\x1e"], ids=["U+2028", "FF", "NEL", "RS"])
def test_a_section_without_a_title_is_named_by_its_first_line(separator: str) -> None:
    """A section the model gives no title is named by its first non-blank line, a line as the chunkers
    see it (ended by ``\\n``, ``\\r\\n`` or a lone ``\\r``): a line separator, form feed or other
    character that ``str.splitlines`` breaks at is inside the line."""
    title = f"Pets{separator}in the cabin"
    text = f"Baggage rules apply to all flights.\nEach passenger has an allowance.\n\n\r\n{title}\r\n"
    text += "A pet carrier counts as one bag.\n"
    doc = text_document("pets.txt", text)
    answer = {"sections": [{"title": "Baggage", "start_line": 0}, {"title": "", "start_line": 3}]}
    run = _sections(FakeLLM([answer])).run(doc)
    assert run.report.outcomes() == {VALID: 1}
    assert [c.section[0] for c in run.chunks] == ["Baggage", title]
    check_contract(doc, run.chunks, CHARS, 400)


_BREAKS = st.sampled_from(["\n", "\r\n", "\r"])
#: Characters ``str.splitlines`` breaks at but a chunker's line does not, whitespace among them.
_NOT_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


_IN_LINE = st.text(st.characters(blacklist_characters="\n\r"), max_size=40)


@PROPERTY
@given(
    blank=st.lists(st.text(" \t" + _NOT_BREAKS, max_size=3), max_size=3),
    breaks=st.lists(_BREAKS, min_size=4, max_size=4),
    line=st.tuples(_IN_LINE.filter(str.strip), st.sampled_from(_NOT_BREAKS), _IN_LINE).map("".join),
    rest=st.text(max_size=20),
)
def test_a_derived_title_is_the_first_non_blank_line_as_chunkers_see_it(
    blank: list[str], breaks: list[str], line: str, rest: str
) -> None:
    """Blank lines (whitespace that ``str.splitlines`` may break at included), then a line holding such
    a character, ended by ``\\n``, ``\\r\\n`` or a lone ``\\r``: the title is all of that line."""
    text = "".join(b + breaks[i] for i, b in enumerate(blank)) + line + breaks[-1] + rest
    assert _derived_title(text) == line.strip().lstrip("#").strip()[:DERIVED_TITLE_CHARS]


def test_sections_rejects_itself_as_inner_chunker() -> None:
    with pytest.raises(ConfigError):
        get_chunker("sections", llm=FakeLLM(), inner="sections")


# --- invariants whatever the model answers ----------------------------------------------------------

_WORD = st.text(alphabet=st.sampled_from("abcxyz 12.|-"), min_size=1, max_size=40)


@st.composite
def documents(draw: st.DrawFn) -> Document:
    b = DocumentBuilder()
    for kind, text, level in draw(
        st.lists(
            st.tuples(st.sampled_from(["h", "p", "li", "table", "code"]), _WORD, st.integers(1, 3)),
            max_size=25,
        )
    ):
        if kind == "h":
            b.heading(text, level)
        elif kind == "p":
            b.paragraph(text)
        elif kind == "li":
            b.list_item(text, number=level)
        elif kind == "table":
            b.table([[text, "x"], ["1", text]])
        else:
            b.code(text)
    return b.build("doc")


_IDS = st.sampled_from([f"u{i}" for i in range(1, 30)] + ["", "u0", "x"])
_PLANS = st.one_of(
    st.builds(lambda chunks: {"chunks": chunks}, st.lists(st.lists(_IDS, max_size=8), max_size=8)),
    st.just("not json"),
    st.just(LLMResponseError("fake", "truncated")),
    st.lists(st.lists(_IDS)),
)


@PROPERTY
@given(doc=documents(), plans=st.lists(_PLANS, min_size=2, max_size=2), max_size=st.integers(20, 300))
def test_wrac_keeps_the_contract_whatever_the_plan(doc: Document, plans: list[Any], max_size: int) -> None:
    run = _wrac(FakeLLM(plans), max_size=max_size, min_size=0).run(doc)
    check_contract(doc, run.chunks, CHARS, max_size)
    assert {w.outcome for w in run.report.windows} <= OUTCOMES


@PROPERTY
@given(doc=documents(), data=st.data(), max_size=st.integers(20, 300))
def test_agentic_keeps_the_contract_whatever_is_written(
    doc: Document, data: st.DataObject, max_size: int
) -> None:
    n = len(doc.text)
    bounds = data.draw(st.lists(st.tuples(st.integers(0, n), st.integers(0, n)), max_size=6))
    junk = data.draw(st.lists(_WORD, max_size=3))
    pieces = [doc.text[min(a, b) : max(a, b)] for a, b in bounds] + junk
    answer = f"\n{SEPARATOR}\n".join(data.draw(st.permutations(pieces)))
    run = get_chunker("agentic", llm=FakeLLM(chat=[answer] * 50), max_size=max_size, min_size=0).run(doc)
    check_contract(doc, run.chunks, CHARS, max_size)


@PROPERTY
@given(
    doc=documents(),
    seed=st.integers(0, 2**32 - 1),
    max_size=st.integers(20, 300),
    min_size=st.integers(0, 50),
    threshold=st.floats(-5, 10),
)
def test_logprob_keeps_the_contract_whatever_the_curve(
    doc: Document, seed: int, max_size: int, min_size: int, threshold: float
) -> None:
    def score(full: str, offset: int) -> float:
        return -float(hash((seed, offset)) % 2000) / 100

    llm = FakeLLM(score=score)
    params = {"max_size": max_size, "min_size": min(min_size, max_size), "threshold": threshold}
    run = get_chunker("logprob", llm=llm, window_chars=300, overlap_chars=50, **params).run(doc)
    check_contract(doc, run.chunks, CHARS, max_size)


_ANY_FLOAT = st.one_of(st.floats(), st.sampled_from([float("nan"), float("inf"), -float("inf"), 5.0]))


@PROPERTY
@given(doc=documents(), values=st.lists(_ANY_FLOAT, min_size=1, max_size=8), head=_ANY_FLOAT)
def test_logprob_curve_stays_finite_whatever_logprobs_the_model_returns(
    doc: Document, values: list[float], head: float
) -> None:
    def score(full: str, offset: int) -> float:
        return values[offset % len(values)]

    llm = FakeLLM(score=score, head_logprob=head)
    run = get_chunker("logprob", llm=llm, window_chars=300, overlap_chars=50, max_size=80, min_size=0).run(
        doc
    )
    check_contract(doc, run.chunks, CHARS, 80)
    assert run.curve is not None
    columns = (run.curve.logprobs, run.curve.baseline, run.curve.scores)
    assert all(math.isfinite(v) for column in columns for v in column)
    json.loads(json.dumps(run.curve.to_dict(), allow_nan=False))


_SECTION_ANSWERS = st.one_of(
    st.builds(
        lambda items: {"sections": items},
        st.lists(
            st.fixed_dictionaries({"start_line": st.integers(-5, 80)}, optional={"title": _WORD}), max_size=10
        ),
    ),
    st.just(LLMResponseError("fake", "not JSON")),
    st.just({"sections": "nope"}),
)


@PROPERTY
@given(
    doc=documents(),
    answer=_SECTION_ANSWERS,
    max_size=st.integers(20, 300),
    inner=st.sampled_from(["structure", "recursive"]),
)
def test_sections_keep_the_contract_whatever_the_sections(
    doc: Document, answer: Any, max_size: int, inner: str
) -> None:
    run = _sections(FakeLLM([answer]), max_size=max_size, inner=inner).run(doc)
    check_contract(doc, run.chunks, CHARS, max_size)


def test_wrac_windows_never_cut_inside_a_list() -> None:
    b = DocumentBuilder()
    b.heading("Steps", 1)
    for number in range(5):
        b.paragraph(f"Intro text {number} before the procedure.")
    for step in range(1, 9):
        b.list_item(f"Step number {step} of the procedure", number=step)
    doc = b.build("steps.md")
    llm = FakeLLM(structured_fn=_plan_for_outline)
    run = _wrac(llm, window_size=200, max_size=2000).run(doc)
    assert len(run.report.windows) == 2
    assert doc.text[run.report.windows[1].start :].startswith("1. Step number 1")
