"""Pure parts of the LLM chunkers: W-RAC plan checks, section repair, alignment, the logprob curve."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.chunking.alignment import align_pieces
from chunkwise.chunking.logprob_curve import BoundaryCurve, local_peaks, normalise_decay, pick_boundaries
from chunkwise.chunking.sections_plan import SectionStart, line_starts, numbered_lines, repair_sections
from chunkwise.chunking.wrac_plan import check_plan, describe, list_runs, parse_plan, plan_boundaries
from chunkwise.document import Document
from tests.support.documents import sample_doc

DOC = sample_doc()
SIZES = {u.id: len(u.text) for u in DOC.units}
GOOD = [["u1", "u2"], ["u1", "u3", "u4", "u5", "u6"], ["u1", "u7", "u8", "u9", "u10", "u11", "u12"]]


def _codes(plan: list[list[str]], max_size: int = 1000) -> list[str]:
    return [i.code for i in check_plan(plan, DOC.units, DOC.text, SIZES, max_size).issues]


def test_a_good_plan_passes_and_resolves_to_cuts_before_the_headings() -> None:
    check = check_plan(GOOD, DOC.units, DOC.text, SIZES, 1000)
    assert check.ok
    assert check.groups == (("u2",), ("u4", "u6"), ("u8", "u9", "u10", "u11", "u12"))
    cuts = plan_boundaries(check.groups, DOC.units)
    # The heading between two chunks opens the next chunk: cuts are at the headings u3 and u7.
    assert cuts == [DOC.unit("u3").start, DOC.unit("u7").start]


@pytest.mark.parametrize(
    ("plan", "code", "words"),
    [
        ([["u1", "u2", "u99"], *GOOD[1:]], "unknown_id", "'u99'"),
        ([["u2", "u4"], ["u4", "u6"], GOOD[2]], "duplicate", "u4 appears in chunks 1 and 2"),
        ([["u2", "u2"], *GOOD[1:]], "duplicate", "listed twice"),
        ([["u4", "u6"], ["u2"], GOOD[2]], "order", "u2 comes after u6"),
        ([["u2", "u6"], ["u4", "u6"], GOOD[2]], "split_atomic", "table u6 is split between chunks 1 and 2"),
        ([GOOD[0], GOOD[1], ["u8", "u9"], ["u10", "u11", "u12"]], "split_list", "list u8-u10"),
        ([GOOD[0], GOOD[1]], "missing", "u8, u9, u10, u11, u12"),
    ],
)
def test_each_rule_violation_is_named(plan: list[list[str]], code: str, words: str) -> None:
    issues = check_plan(plan, DOC.units, DOC.text, SIZES, 1000).issues
    assert code in [i.code for i in issues]
    assert any(words in i.message for i in issues), [i.message for i in issues]


def test_a_plan_of_many_invented_long_ids_makes_a_bounded_reprompt() -> None:
    """Each unknown id is an issue, quoted cut short; the re-prompt lists thirty and counts the rest."""
    invented = [f"u{n}-" + "x" * 1_000 for n in range(500)]
    issues = check_plan([[*GOOD[0], *invented], *GOOD[1:]], DOC.units, DOC.text, SIZES, 1000).issues
    assert [i.code for i in issues].count("unknown_id") == 500
    text = describe(issues)
    assert len(text) < 3_000
    assert text.splitlines()[-1] == "31. and 470 more issues like these"
    assert "'u0-" + "x" * 37 + "...'" in text


def test_oversize_chunks_are_errors_unless_one_block() -> None:
    assert _codes(GOOD, max_size=100) == ["oversize", "oversize"]
    # The list run alone is over the limit: it may stand alone, and may then even be split.
    tight = [["u2"], ["u4"], ["u6"], ["u8", "u9", "u10"], ["u11"], ["u12"]]
    assert _codes(tight, max_size=90) == []


def test_missing_parent_headings_are_filled_as_notes_not_errors() -> None:
    check = check_plan(
        [["u2"], ["u4", "u6"], ["u8", "u9", "u10", "u11", "u12"]], DOC.units, DOC.text, SIZES, 1000
    )
    assert check.ok
    assert check.notes[1] == "chunk 2: parent headings u3, u1, u5 filled in as context"


@pytest.mark.parametrize(
    ("value", "issue"),
    [
        ("not json", 'no "chunks" array'),
        ({"chunks": "u1"}, 'no "chunks" array'),
        ({"chunks": [["u2"], "u4"]}, "chunk 2 is not an array"),
        ({"chunks": [["u2", 4]]}, "not id strings"),
    ],
)
def test_malformed_answers_are_reported(value: object, issue: str) -> None:
    _, issues = parse_plan(value)
    assert any(issue in i.message for i in issues)


def test_list_runs_are_consecutive_items_only() -> None:
    assert [[u.id for u in run] for run in list_runs(DOC.units, DOC.text)] == [["u8", "u9", "u10"]]


def _with_endings(doc: Document, ending: str) -> Document:
    """``doc`` with every ``\\n`` written as ``ending`` and its units moved to match."""

    def moved(offset: int) -> int:
        return offset + doc.text.count("\n", 0, offset) * (len(ending) - 1)

    units = tuple(
        dataclasses.replace(u, start=moved(u.start), end=moved(u.end), text=u.text.replace("\n", ending))
        for u in doc.units
    )
    return dataclasses.replace(doc, text=doc.text.replace("\n", ending), units=units)


@pytest.mark.parametrize("ending", ["\r", "\r\n"])
def test_list_runs_are_the_same_whatever_the_line_endings(ending: str) -> None:
    """Items separated by one ``\\r\\n`` or one lone ``\\r`` form a list, as with ``\\n``."""
    doc = _with_endings(DOC, ending)
    assert [[u.id for u in run] for run in list_runs(doc.units, doc.text)] == [["u8", "u9", "u10"]]


def test_section_repair_drops_sorts_dedupes_and_anchors_the_first() -> None:
    value = {
        "sections": [
            {"title": "Late", "start_line": 30},
            {"title": "Early", "start_line": 12},
            {"title": "Again", "start_line": 12},
            {"title": "Out", "start_line": 400},
            {"title": "Bad", "start_line": "x"},
            {"title": True, "start_line": True},
        ]
    }
    sections, issues = repair_sections(value, 10, 40)
    assert sections == [SectionStart(10, ""), SectionStart(12, "Early"), SectionStart(30, "Late")]
    assert len(issues) == 5


def test_section_repair_accepts_a_valid_answer_unchanged() -> None:
    value = {"sections": [{"title": "A", "start_line": 0}, {"title": "B", "start_line": 5}]}
    assert repair_sections(value, 0, 9) == ([SectionStart(0, "A"), SectionStart(5, "B")], [])
    assert repair_sections("garbage", 0, 9)[0] == [SectionStart(0, "")]


def test_numbered_lines_skip_blank_lines_but_keep_numbers() -> None:
    text = "# Title\n\nfirst line\nsecond\n"
    starts = line_starts(text)
    assert starts == [0, 8, 9, 20]
    assert numbered_lines(text, starts, 0, 3) == "[0] # Title\n[2] first line\n[3] second"


def test_lone_carriage_returns_number_lines_too() -> None:
    """An old Mac OS file's lone ``\\r`` ends its lines: the model sees each numbered, without breaks."""
    text = "# Title\r\rfirst line\rsecond\r"
    starts = line_starts(text)
    assert starts == [0, 8, 9, 20]
    assert numbered_lines(text, starts, 0, 3) == "[0] # Title\n[2] first line\n[3] second"
    crlf = "# Title\r\n\r\nfirst line\r\nsecond\r\n"
    assert line_starts(crlf) == [0, 9, 11, 23]
    assert numbered_lines(crlf, line_starts(crlf), 0, 3) == "[0] # Title\n[2] first line\n[3] second"


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.sampled_from("ab \n"), max_size=40), ending=st.sampled_from(["\r", "\r\n"]))
def test_lines_are_numbered_alike_whatever_the_line_endings(text: str, ending: str) -> None:
    """The same lines, whether they end in ``\\n``, ``\\r\\n`` or a lone ``\\r``; every start is an offset
    into the text as given, just after its line break."""
    other = text.replace("\n", ending)
    starts, other_starts = line_starts(text), line_starts(other)
    assert len(other_starts) == len(starts)
    assert all(other[s - 1] in "\r\n" for s in other_starts[1:])
    last = len(starts) - 1
    assert numbered_lines(other, other_starts, 0, last) == numbered_lines(text, starts, 0, last)


def test_alignment_exact_fuzzy_and_failed_pieces() -> None:
    source = "Alpha beta gamma.\n\nDelta epsilon zeta eta theta and more.\n\nIota kappa lambda mu."
    pieces = [
        "Alpha  beta\ngamma.",
        "Delta epsilon zeta ETA theta and more.",
        "Completely invented sentence here.",
    ]
    result = align_pieces(source, pieces)
    assert (result.exact, result.fuzzy, result.failed) == (1, 1, 1)
    assert result.starts == (0, source.index("Delta"))
    assert result.unaligned_chars == len("ETA") + len("Completely invented sentence here.")


def test_decay_normalisation_removes_a_power_law_and_keeps_the_peaks() -> None:
    positions = np.arange(1, 401, dtype=np.float64)
    logprobs = -3.0 - 1.5 * np.log(positions)
    peaks = [40, 150, 330]
    logprobs[peaks] += 4.0
    fit = normalise_decay(logprobs)
    assert fit.slope == pytest.approx(-1.5, abs=0.1)
    assert sorted(np.argsort(fit.scores)[-3:].tolist()) == peaks
    # Raw log-probabilities favour early positions; residuals do not.
    assert np.argmax(logprobs) == 0
    assert fit.scores[peaks].min() > 3.0
    assert normalise_decay(np.array([-np.inf, -2.0])).scores.tolist() == pytest.approx([-1.0, 1.0])


def test_decay_normalisation_clips_nonsense_logprobs_to_the_valid_range() -> None:
    values = np.array([-1.0, np.inf, -2.0, np.nan, -np.inf, 3.0, -4.0])
    fit = normalise_decay(values)
    assert np.isfinite(fit.scores).all()
    assert np.isfinite(fit.baseline).all()
    clipped = normalise_decay(np.array([-1.0, 0.0, -2.0, -30.0, -30.0, 0.0, -4.0]))
    assert np.allclose(fit.scores, clipped.scores)


def test_peak_picking_respects_min_and_max_sizes() -> None:
    scores = np.zeros(100)
    scores[[10, 12, 60]] = 5.0
    sizes = np.arange(100)
    assert pick_boundaries(sizes, scores, 100, threshold=2.0, min_size=5, max_size=90) == [10, 60]
    # The peak at 12 is too close to 10 for min_size 5; a max of 40 forces a cut between 10 and 60.
    chosen = pick_boundaries(sizes, scores, 100, threshold=2.0, min_size=5, max_size=40)
    bounds = [0, *chosen, 100]
    assert all(b - a <= 40 for a, b in itertools.pairwise(bounds))
    assert 10 in chosen
    assert local_peaks(np.array([1.0, 3.0, 3.0, 1.0]), 2.0).tolist() == [False, False, True, False]


def test_curve_export_csv_and_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    curve = BoundaryCurve((5, 9), (-3.0, -1.0), (-2.0, -2.5), (-1.0, 1.5), (9,), "§", 1.0)
    curve.write(tmp_path / "c.csv")
    assert (tmp_path / "c.csv").read_text().splitlines()[2] == "9,-1.0000,-2.5000,1.5000,1"
    curve.write(tmp_path / "c.json")
    assert '"chosen": [9]' in (tmp_path / "c.json").read_text()
